"""The vectorised Whittle index, results as DataFrames, and the sync bandit."""

import json

import numpy as np
import pytest

import crawleval as ce


def test_whittle_index_properties_and_broadcasting():
    lam, xi, mu, cost, T = 250.0, 1.0, 0.7, 2.0, 1.0
    alpha = np.exp(-mu * T)
    u_star = lam * xi / mu
    u = u_star * (1 - alpha)
    assert ce.whittle_index(0.0, lam, xi, mu, cost, T) == 0.0
    # gamma(u) = (1 - alpha) u / C (research report, after Theorem 1)
    assert ce.whittle_index(u, lam, xi, mu, cost, T) == pytest.approx((1 - alpha) * u / cost, rel=1e-14)
    x = np.linspace(0, 0.999 * u_star, 1000)
    g = ce.whittle_index(x, lam, xi, mu, cost, T)
    assert g.shape == (1000,) and np.all(np.diff(g) > 0)
    assert g[-1] == pytest.approx(u_star / cost, rel=1e-2)
    # Broadcasting: a column of states against a row of decay rates.
    grid = ce.whittle_index(np.array([[1.0], [2.0]]), lam, xi, np.array([0.5, 0.7, 0.9]))
    assert grid.shape == (2, 3)
    assert grid[1, 1] == ce.whittle_index(2.0, lam, xi, 0.7)
    with pytest.raises(ValueError, match="element 1: mu must be a finite number > 0"):
        ce.whittle_index([1.0, 1.0], lam, xi, [1.0, 0.0])


def test_result_dataframe_and_json(tmp_path):
    r = ce.evaluate(ce.Population.paper_example(), 2, ["whittle", "round_robin"], epochs=400,
                    replications=3, model="stochastic", observe="belief")
    df = r.to_dataframe()
    assert list(df.index) == ["whittle", "round_robin"]
    assert df.loc["whittle", "mean_reward"] == r["whittle"]["mean_reward"]
    assert df.loc["whittle", "bound"] == r.bound["value"]
    assert (df["ci95_low"] < df["mean_reward"]).all() and (df["mean_reward"] < df["ci95_high"]).all()
    assert len(r["whittle"]["replication_rewards"]) == 3
    path = tmp_path / "r.json"
    r.to_json(path)
    assert json.loads(path.read_text()) == r.to_dict()
    with pytest.raises(KeyError, match="no policy named 'greedy'"):
        r["greedy"]
    assert "whittle" in repr(r)


def test_backend_resolution():
    assert ce.resolve_backend("auto") in ("cpu", "cuda")
    assert ce.resolve_backend("cpu") == "cpu"
    with pytest.raises(ValueError, match="backend 'gpu' is not one of"):
        ce.resolve_backend("gpu")


def test_sync_optimum_equals_cli_and_learner_approaches_it(cli_json):
    inst = ce.SyncInstance.generate("poisson", 100, seed=3)  # the CLI: --seed 3, run 0
    j, rates = ce.sync_optimum(inst)
    assert rates.shape == (100,) and rates.sum() == pytest.approx(inst.budget, rel=1e-9)
    cli = cli_json("syncbandit", "optimum", "--family", "poisson", "--arms", 100, "--seed", 3)
    assert j == cli["j_star"]
    j_eps, _ = ce.sync_optimum(inst, epsilon=0.05)
    curve = ce.sync_learn(inst, "mirrorsync", rounds=120, seed=1)
    assert curve.shape == (121,)
    assert curve[-1] < curve[0]
    assert curve[-1] == pytest.approx(j_eps, rel=0.05)
    with pytest.raises(ValueError, match="algorithm 'sgd' is not one of"):
        ce.sync_learn(inst, "sgd")


def test_sync_learn_runs_the_pseudo_codes_rules(cli_json):
    inst = ce.SyncInstance.generate("polynomial", 40, seed=2)
    mean = ce.sync_learn(inst, rounds=20, seed=1)
    first = ce.sync_learn(inst, rounds=20, seed=1, gradient="first")
    assert first.shape == mean.shape and first[1] != mean[1] and first[0] == mean[0]
    literal = ce.sync_learn(inst, "async-mirrorsync", rounds=60, seed=1, local_budget="paper",
                            reschedule="paper")
    floor = ce.sync_learn(inst, "async-mirrorsync", rounds=60, seed=1)
    assert literal[-1] > floor[-1]
    df = ce.sync_learn(inst, rounds=30, runs=3, seed=1)
    assert 0 < df.attrs["regret_exponent"] < 1
    with pytest.raises(ValueError, match="gradient 'last' is not one of"):
        ce.sync_learn(inst, gradient="last")


def test_lspe_learn_equals_cli(cli_json):
    py = ce.lspe_learn(steps=1500, replications=2, operating="top", top=1, critic="paper",
                       trace=True)
    cli = cli_json("learn", "lspe", "--paper-example", "--steps", 1500, "--replications", 2,
                   "--operating", "top", "--critic", "paper")
    for key in ("mean_reward", "mean_crawls_per_step", "untrained_mean_reward",
                "budget_matched_bound", "whittle_known_parameters_m1"):
        assert py[key] == cli[key], key
    assert py["mean_crawls_per_step"] == 1.0
    assert py["trace"]["state"].shape == (1500 * 4,)
    with pytest.raises(ValueError, match="operating 'greedy' is not one of"):
        ce.lspe_learn(steps=10, operating="greedy")


def test_relaxed_policy_earns_the_bound(cli_json):
    pop = ce.Population.paper_example()
    r = ce.relaxed_policy(pop, 1.5, epochs=2000, replications=3, dual_descent=True, every=10)
    assert r["reward"] == pytest.approx(r["bound"], rel=1e-9)
    assert r["spend"] == pytest.approx(1.5, rel=1e-9)
    assert r["bound"] == pytest.approx(ce.bound(pop, 1.5)["value"], rel=1e-9)
    assert r["curve"]["lambda"].shape == (201,)
    cli = cli_json("relaxed", "--paper-example", "--budget", 1.5, "--epochs", 2000,
                   "--replications", 3, "--dual-descent", "--every", 10)
    for key in ("reward", "simulated_reward", "worst_epoch_spend", "tie_probability"):
        assert r[key] == cli[key], key
    assert r["dual_descent"]["final_lambda"] == cli["dual_descent"]["final_lambda"]


def test_the_papers_policies_run_by_name():
    """The numerical index, the paper's expiry index and the adaptive policy run by name, with any
    utility law, and give the command line's numbers (issue 31)."""
    pop = ce.Population.paper_example()
    r = ce.evaluate(pop, 1, ["whittle", "whittle_numerical", "adaptive_whittle"],
                    model="stochastic", utility="lognormal:2.5", epochs=200, replications=3,
                    bound=False)
    assert r.names() == ["whittle", "whittle_numerical", "adaptive_whittle"]
    assert r.to_dict()["parameters"]["utility"] == "lognormal:2.5"
    assert all(p["replications"] == 3 for p in r.policies)
    with pytest.raises(ValueError, match="the numerical Whittle index is the stochastic model's"):
        ce.evaluate(pop, 1, ["whittle_numerical"], epochs=10)
    with pytest.raises(ValueError, match="tail index a must be in"):
        ce.evaluate(pop, 1, ["whittle"], model="stochastic", utility="pareto:1.2", epochs=10)
