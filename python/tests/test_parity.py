"""evaluate(), bound() and optimal() give the command line's numbers (same engine, same JSON)."""

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
                     epochs=40, replications=2, target_ci=0.002, backend="cpu", seed=3)
    cli = cli_json("run", "--synthetic", 3000, "--seed", 3, "--budget", 30, "--model",
                   "stochastic", "--observe", "belief", "--epochs", 40, "--replications", 2, "--target-ci", 0.002, "--backend", "cpu",
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
