"""evaluate(), bound() and optimal() give the command line's numbers (same engine, same JSON)."""

import re

import numpy as np
import pytest

import crawleval as ce

# Fields that measure time, not results.
TIMING = {"seconds", "loop_seconds", "comm_seconds", "source_epochs_per_second",
          "warm_up_seconds"}


def same_results(py, cli):
    assert py["population"] == cli["population"]
    assert py["parameters"] == cli["parameters"]
    assert py["backend"] == cli["backend"]
    assert py["processes"] == cli["processes"] == 1
    assert [p["name"] for p in py["policies"]] == [p["name"] for p in cli["policies"]]
    for a, b in zip(py["policies"], cli["policies"]):
        assert {k: v for k, v in a.items() if k not in TIMING} == {
            k: v for k, v in b.items() if k not in TIMING
        }, a["name"]
    pb, cb = dict(py.get("bound") or {}), dict(cli.get("bound") or {})
    pb.pop("seconds", None), cb.pop("seconds", None)
    assert pb == cb
    assert set(py) == set(cli)


def test_paper_example_equals_cli(cli_json):
    policies = ["whittle", "greedy", "round_robin", "random", "static"]
    py = ce.evaluate(ce.Population.paper_example(), 1, policies, epochs=3000, backend="cpu")
    cli = cli_json("run", "--paper-example", "--budget", 1, "--epochs", 3000, "--backend", "cpu",
                   "--policy", *policies)
    same_results(py.to_dict(), cli)
    # The papers' value (docs/reproduction.md): Whittle ~260.4 at M = 1, at the bound.
    assert py["whittle"]["mean_reward"] == pytest.approx(260.4, abs=0.5)
    assert py.bound["value"] == pytest.approx(260.39, abs=0.01)


def test_synthetic_stochastic_with_costs_equals_cli(cli_json):
    # 5000 sources: the CPU backend's wide engine (above 2048), random costs, 3 replications.
    pop = ce.Population.synthetic(5000, seed=7, costs="lognormal")
    kw = dict(model="stochastic", epochs=60, burn_in=5, replications=3, seed=7, backend="cpu")
    py = ce.evaluate(pop, 50, ["whittle", "greedy", "random"], **kw)
    cli = cli_json("run", "--synthetic", 5000, "--synthetic-costs", "lognormal", "--seed", 7,
                   "--budget", 50, "--model", "stochastic", "--epochs", 60, "--burn-in", 5,
                   "--replications", 3, "--backend", "cpu", "--policy", "whittle", "greedy",
                   "random")
    # The origin names the population the same way; the rest must be equal.
    same_results(py.to_dict(), cli)


def test_belief_target_ci_equals_cli(cli_json):
    pop = ce.Population.synthetic(3000, seed=3)
    py = ce.evaluate(pop, 30, ["whittle", "greedy"], model="stochastic", observe="belief",
                     epochs=40, replications=2, target_ci=0.01, backend="cpu", seed=3)
    cli = cli_json("run", "--synthetic", 3000, "--seed", 3, "--budget", 30, "--model",
                   "stochastic", "--observe", "belief", "--epochs", 40, "--replications", 2, "--target-ci", 0.01, "--backend", "cpu",
                   "--policy", "whittle", "greedy")
    same_results(py.to_dict(), cli)
    assert py["whittle"]["replications"] > 2  # the target added replications


def test_bound_equals_cli_and_exact_optimum(cli_json):
    pop = ce.Population.paper_example()
    b = ce.bound(pop, 1)
    cli = cli_json("bound", "--paper-example", "--budget", 1)
    for key in ("seconds", "context"):  # the time it took; the date and the machine's load
        b.pop(key), cli.pop(key)
    assert b == cli
    # At M = 1 the bound is attained (research report): it equals the exact optimum.
    opt = ce.optimal(pop, 1)
    assert opt["converged"]
    assert b["value"] == pytest.approx(opt["optimal_reward"], rel=1e-6)
    cli_opt = cli_json("optimal", "--paper-example", "--budget", 1)
    opt.pop("context"), cli_opt.pop("context")
    assert opt == cli_opt


def test_bound_not_applicable_to_stochastic_full():
    b = ce.bound(ce.Population.paper_example(), 1, model="stochastic")
    assert b["applicable"] is False and "stochastic" in b["note"]


def test_population_read_equals_cli_input(tmp_path, cli_json):
    pop = ce.Population.synthetic(300, seed=5, costs="lognormal")
    path = tmp_path / "pop.csv"
    pop.write(path)
    again = ce.Population.read(path)
    for col in ("lambda_", "xi", "mu", "cost", "id"):
        np.testing.assert_array_equal(getattr(again, col), getattr(pop, col))
    py = ce.evaluate(again, 20, ["whittle"], epochs=50, backend="cpu")
    cli = cli_json("run", "--sources", path, "--budget", 20, "--epochs", 50, "--backend", "cpu",
                   "--policy", "whittle")
    same_results(py.to_dict(), cli)


def test_the_papers_score_function_policies_equal_cli(tmp_path, cli_json):
    # The mixed-observation policies read the observe column (full or belief per source); with
    # the adaptive one and a built-in policy that ignores the column, they run from Python as
    # from the command line: one registry, the same numbers bit for bit.
    path = tmp_path / "mixed.csv"
    path.write_text("id,lambda,xi,mu,observe\n1,2.5,100,0.7,full\n2,2.5,70,0.35,belief\n"
                    "3,2.5,20,0.7,full\n4,2.5,8,0.21,belief\n5,1.5,30,0.5,belief\n")
    policies = ["whittle_mixed", "round_robin", "greedy_mixed", "adaptive_whittle"]
    py = ce.evaluate(ce.Population.read(path), 2, policies, model="stochastic", epochs=150,
                     replications=3, seed=11, backend="cpu")
    cli = cli_json("run", "--sources", path, "--budget", 2, "--model", "stochastic", "--epochs",
                   150, "--replications", 3, "--seed", 11, "--backend", "cpu", "--policy",
                   ",".join(policies))
    same_results(py.to_dict(), cli)
    assert py.names() == policies
    assert py["whittle_mixed"]["replication_rewards"].tolist() != \
        py["greedy_mixed"]["replication_rewards"].tolist()


def test_numerical_index_equals_cli(cli_json):
    # The numerical index on the lattice asked for; both say how it was computed.
    kw = dict(model="stochastic", epochs=100, replications=2, seed=3, backend="cpu")
    py = ce.evaluate(ce.Population.paper_example(), 1, ["whittle", "whittle_numerical"],
                     index_grid=300, **kw)
    cli = cli_json("run", "--paper-example", "--budget", 1, "--model", "stochastic", "--epochs",
                   100, "--replications", 2, "--seed", 3, "--backend", "cpu", "--policy",
                   "whittle,whittle_numerical", "--index-grid", 300)
    same_results(py.to_dict(), cli)
    got = py.to_dict()["stochastic_index"]
    assert {k: got[k] for k in ("grid", "classes", "indexable")} == \
        {"grid": 300, "classes": 3, "indexable": True}
    with pytest.raises(ce.InputError, match=r"index_grid= must lie in \[8, 4000\]"):
        ce.evaluate(ce.Population.paper_example(), 1, "whittle_numerical", index_grid=4, **kw)


def test_the_policy_names_are_the_clis(cli):
    # evaluate() and `run --policy` take exactly the same names, the registry's: the command line
    # lists them in --policy's help and in its refusal, Python in its tuples and its refusal.
    names = ce.BUILTIN_POLICIES + ce.PAPER_POLICIES
    assert {"whittle", "lip"} <= set(ce.BUILTIN_POLICIES)
    assert {"whittle_mixed", "greedy_mixed", "whittle_numerical"} <= set(ce.PAPER_POLICIES)
    assert len(set(names)) == len(names)
    rc, _, err = cli("run", "--paper-example", "--budget", 1, "--policy", "fastest",
                     "--no-progress")
    assert rc == 2, err
    assert re.search(f"is not one of: {re.escape(', '.join(names))}$", err, re.M), err
    rc, help_text, _ = cli("run", "--help")
    assert rc == 0
    assert re.findall(r"^\s*(\w+): ", help_text.split("--policy", 1)[1].split("--backend")[0],
                      re.M) == list(names), help_text
    with pytest.raises(ce.InputError, match=f"policy 'fastest' is not one of: {', '.join(names)}$"):
        ce.evaluate(ce.Population.paper_example(), 1, "fastest", epochs=10)
    # Every name runs from Python (the CLI's runs: the parity tests above).
    result = ce.evaluate(ce.Population.paper_example(), 1, list(names), model="stochastic",
                         epochs=20, burn_in=0, replications=1, backend="cpu", bound=False,
                         index_grid=300)
    assert result.names() == list(names)


def test_the_fresh_policy_names_are_the_clis(cli):
    # crawleval.fresh's names are the engine's table, which `fresh run --policy` lists.
    from crawleval import fresh
    assert fresh.POLICIES == ("index", "greedy", "lambda-crawl", "lambda-crawl-approx",
                              "binary-lambda-crawl", "uniform", "proportional", "random",
                              "nutch-adaptive", "custom")
    assert set(fresh.DEFAULT_POLICIES) <= set(fresh.POLICIES)
    rc, help_text, _ = cli("fresh", "run", "--help")
    assert rc == 0 and ", ".join(fresh.POLICIES) in " ".join(help_text.split()), help_text


def _gpu_or_skip():
    """Skips unless backend="cuda" runs here (a build with CUDA and a visible device)."""
    try:
        ce.evaluate(ce.Population.synthetic(10, seed=1), 1, ["greedy"], epochs=1, backend="cuda")
    except ce.InputError as e:
        pytest.skip(f"backend='cuda' does not run here: {e}")


@pytest.mark.parametrize("model", ["deterministic", "stochastic"])
def test_backend_cuda_equals_the_cli_and_the_cpu(cli_json, model):
    # The matrix's Python front end on the GPU: the command line's --backend cuda JSON exactly (the
    # same engine), the CPU backend's rewards within rounding and its costs. (A user policy on the
    # GPU: test_device_policy.py and the C++ GpuFunctionRollout tests.)
    _gpu_or_skip()
    pop = ce.Population.synthetic(20000, seed=4, costs="lognormal")
    kw = dict(model=model, epochs=30, burn_in=3, seed=4)
    policies = ["whittle", "greedy", "round_robin", "random"]
    gpu = ce.evaluate(pop, 200, policies, backend="cuda", **kw)
    cli = cli_json("run", "--synthetic", 20000, "--synthetic-costs", "lognormal", "--seed", 4,
                   "--budget", 200, "--model", model, "--epochs", 30, "--burn-in", 3,
                   "--backend", "cuda", "--policy", *policies)
    same_results(gpu.to_dict(), cli)
    cpu = ce.evaluate(pop, 200, policies, backend="cpu", **kw)
    for name in policies:
        assert gpu[name]["mean_reward"] == pytest.approx(cpu[name]["mean_reward"], rel=1e-9)
        assert gpu[name]["mean_cost_per_epoch"] == cpu[name]["mean_cost_per_epoch"]


def test_fresh_backend_cuda_equals_the_cli_and_the_cpu(cli_json):
    _gpu_or_skip()
    from crawleval import fresh

    policies = ["index", "greedy", "lambda-crawl", "uniform"]
    pop = fresh.Population.synthetic(20000, seed=6)
    kw = dict(budget_fraction=0.2, host_cap=2, policies=policies, epochs=20, burn_in=3, seed=6)
    gpu = fresh.evaluate(pop, backend="cuda", **kw)
    cli = cli_json("fresh", "run", "--synthetic", 20000, "--seed", 6, "--budget-fraction", 0.2,
                   "--host-cap", 2, "--epochs", 20, "--burn-in", 3, "--backend", "cuda",
                   "--policy", ",".join(policies))
    g, c = gpu.to_dict(), cli
    for a, b in zip(g["policies"], c["policies"]):
        assert {k: v for k, v in a.items() if k not in TIMING} == {
            k: v for k, v in b.items() if k not in TIMING}, a["name"]
    cpu = fresh.evaluate(pop, backend="cpu", **kw).to_dict()
    for a, b in zip(g["policies"], cpu["policies"]):
        assert a["mean_reward"] == pytest.approx(b["mean_reward"], rel=1e-9), a["name"]
        assert a["mean_cost_per_epoch"] == b["mean_cost_per_epoch"], a["name"]
