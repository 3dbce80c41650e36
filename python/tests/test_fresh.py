"""The freshness model from Python (crawleval.fresh) against the command line's JSON and files,
field for field: evaluate, the bound, the importer, populations from DataFrames, the schedulers'
rates, the change-rate estimates."""

import math

import numpy as np
import pandas as pd
import pytest

import crawleval as ce
from crawleval import fresh

TIMING = {"seconds", "loop_seconds", "comm_seconds", "source_epochs_per_second",
          "warm_up_seconds"}


def same_fresh(py, cli, origin=True):
    pp, cp = dict(py["population"]), dict(cli["population"])
    if not origin:
        pp.pop("origin"), cp.pop("origin")
    assert pp == cp
    assert py["parameters"] == cli["parameters"]
    assert py["command"] == cli["command"] == "fresh run"
    assert py["backend"] == cli["backend"]
    assert [p["name"] for p in py["policies"]] == [p["name"] for p in cli["policies"]]
    for a, b in zip(py["policies"], cli["policies"]):
        a = {k: v for k, v in a.items() if k not in TIMING}
        b = {k: v for k, v in b.items() if k not in TIMING}
        assert a == b, a["name"]
    pb, cb = dict(py.get("bound") or {}), dict(cli.get("bound") or {})
    pb.pop("seconds", None), cb.pop("seconds", None)
    assert pb == cb
    assert set(py) == set(cli)


@pytest.mark.parametrize("extra", [
    dict(),
    dict(host_cap=1, objective="binary", burn_in=5, replications=3),
    dict(start="fresh", burn_in=10, learn=True, relearn=3),
    dict(burn_in=5, target_ci=0.05, max_replications=9),
])
def test_evaluate_equals_cli_json(cli_json, extra):
    policies = ["index", "greedy", "lambda-crawl", "lambda-crawl-approx", "binary-lambda-crawl",
                "uniform", "proportional", "random"]
    pop = fresh.Population.synthetic(1500, seed=5)
    py = fresh.evaluate(pop, budget_fraction=0.2, policies=policies, epochs=40, seed=5,
                        backend="cpu", **extra)
    args = ["fresh", "run", "--synthetic", 1500, "--seed", 5, "--budget-fraction", 0.2,
            "--epochs", 40, "--backend", "cpu", "--policy", ",".join(policies)]
    flags = {"host_cap": "--host-cap", "objective": "--objective", "burn_in": "--burn-in",
             "replications": "--replications", "start": "--start", "relearn": "--relearn",
             "target_ci": "--target-ci", "max_replications": "--max-replications"}
    for k, v in extra.items():
        if k == "learn":
            args.append("--learn")
        else:
            args += [flags[k], v]
    cli = cli_json(*args)
    same_fresh(py.to_dict(), cli)
    # The arrays behind the summaries.
    for p in py.policies:
        reps = p["replication_freshness"]
        assert reps.shape == (p["replications"],)
        if "target_ci" in extra:  # replications added until the interval is narrow enough
            assert 3 <= p["replications"] <= 9
            assert p["target_ci_reached"] == (p["ci95_half_width"] <= 0.05 * abs(p["mean_reward"]))
        if len(reps) >= 2:
            assert reps.mean() == pytest.approx(p["metrics"]["freshness"]["mean"], rel=1e-12)
    df = py.to_dataframe()
    assert df.loc["index", "freshness"] == cli["policies"][0]["metrics"]["freshness"]["mean"]


def test_slice_above_2_to_32_equals_cli_json(cli_json, tmp_path):
    """A slice of a population larger than one process holds (it crosses 2**32, and its crowded
    hosts bind the cap of 1): the CLI's numbers, and its global ids in the JSON."""
    pop = fresh.Population.synthetic(4300000000, seed=3, slice=(4294950000, 30000))
    assert len(pop) == 30000 and pop.first == 4294950000
    assert pop.id[0] == 4294950000 and pop.id[-1] == 4294979999
    policies = ["index", "random", "lambda-crawl"]
    py = fresh.evaluate(pop, budget_fraction=0.2, host_cap=1, policies=policies, epochs=6,
                        burn_in=1, seed=3, backend="cpu")
    cli = cli_json("fresh", "run", "--synthetic", 4300000000, "--slice", "4294950000:30000",
                   "--seed", 3, "--budget-fraction", 0.2, "--host-cap", 1, "--epochs", 6,
                   "--burn-in", 1, "--backend", "cpu", "--policy", ",".join(policies))
    same_fresh(py.to_dict(), cli)
    assert cli["population"]["first_id"] == 4294950000
    # Row i of a slice is row first + i of the whole.
    whole = fresh.Population.synthetic(3000, seed=4)
    part = fresh.Population.synthetic(3000, seed=4, slice=(1000, 500))
    assert np.array_equal(part.rate, whole.rate[1000:1500])
    assert np.array_equal(part.host, whole.host[1000:1500])
    with pytest.raises(ce.InputError, match="cannot keep a slice's first global id"):
        part.write(tmp_path / "never.csv")
    assert not (tmp_path / "never.csv").exists()
    for bad, message in [((2999, 2), "pass the end of n=3000"), ((0, 0), "slice count"),
                         ((0,), "must be \\(first, count\\)"), ((-1, 5), "slice first")]:
        with pytest.raises(ce.InputError, match=message):
            fresh.Population.synthetic(3000, slice=bad)
    with pytest.raises(ce.InputError, match="n= must lie in"):
        fresh.Population.synthetic(2**63 + 1, slice=(0, 5))


def test_population_from_dataframe_equals_the_csv(cli_json, tmp_path):
    rng = np.random.default_rng(3)
    n = 800
    df = pd.DataFrame({
        "id": rng.permutation(n) * 3 + 1,
        "host": rng.integers(0, 40, n),
        "importance": rng.exponential(2.0, n),
        "rate": rng.exponential(0.5, n),
        "cost": rng.uniform(0.5, 2.0, n),
        "complete": (rng.random(n) < 0.1).astype(int),
        "constrained": (rng.random(n) < 0.3).astype(int),
    })
    csv = tmp_path / "fresh.csv"
    df.to_csv(csv, index=False)
    pop = fresh.Population.from_dataframe(df, origin=str(csv))
    assert len(pop) == n and np.all(np.diff(pop.id.astype(np.int64)) > 0)
    py = fresh.evaluate(pop, budget=150, epochs=30, burn_in=4, host_cap=2, backend="cpu")
    cli = cli_json("fresh", "run", "-p", csv, "--budget", 150, "--epochs", 30, "--burn-in", 4,
                   "--host-cap", 2, "--backend", "cpu")
    same_fresh(py.to_dict(), cli)
    # Read back from the CSV: the same population, column for column.
    back = fresh.Population.read(csv).to_dataframe()
    pd.testing.assert_frame_equal(back, pop.to_dataframe())
    # And written by the package, read by the CLI.
    out = tmp_path / "written.csv"
    pop.write(out)
    cli2 = cli_json("fresh", "run", "-p", out, "--budget", 150, "--epochs", 30, "--burn-in", 4,
                    "--host-cap", 2, "--backend", "cpu")
    same_fresh(py.to_dict(), cli2, origin=False)


def test_population_errors_name_the_field():
    with pytest.raises(ValueError, match="field 'rate': must be a finite number >= 0"):
        fresh.Population.from_arrays([1.0, 1.0], [0.5, -1.0])
    with pytest.raises(ValueError, match="column 'complete': row 1: must be 0 or 1"):
        fresh.Population.from_arrays([1.0, 1.0], [0.5, 1.0], complete=[0, 2])
    # 2^64 as a float passed the bound float(2^64 - 1), which rounds to it, and became id 0.
    for column in ("id", "host"):
        with pytest.raises(ValueError, match=f"column '{column}': row 0: must be a whole number"):
            fresh.Population.from_arrays([1.0, 1.0], [0.5, 1.0], **{column: [2.0**64, 5.0]})
    assert list(fresh.Population.from_arrays([1.0], [0.5], id=[2.0**63]).to_dataframe()["id"]) == [2**63]
    with pytest.raises(ValueError, match="missing column"):
        fresh.Population.from_dataframe(pd.DataFrame({"rate": [1.0]}))
    pop = fresh.Population.synthetic(100, seed=1)
    with pytest.raises(ValueError, match="budget="):
        fresh.evaluate(pop)
    with pytest.raises(ValueError, match="budget_fraction= must lie"):
        fresh.evaluate(pop, budget_fraction=2)
    with pytest.raises(ValueError, match="policy 'lambda' is not one of"):
        fresh.evaluate(pop, budget=10, policies=["lambda"])


def _dataset(tmp_path):
    d = tmp_path / "pc"
    d.mkdir()
    files = {
        "host_hostid_isconstrained.txt": "http://a.example\t10\t1\nhttp://b.example\t11\t0\n",
        "url_urlid_hostid.txt": "http://a.example/x\t5\t10\nhttp://a.example/y\t7\t10\n"
                                "http://b.example/z\t2\t11\nhttp://b.example/w\t9\t11\n",
        "urlid_imp.txt": "5\t120\n7\t3\n2\t48\n",
        "urlid_offset_history.txt": "5\t5.5143\t[[1.10397, 0], [1.47311, 1], [0.9, 1], [1.0, 0]]\n"
                                    "7\t0.25\t[[1.0, 0], [1.0, 0], [2.0, 0]]\n"
                                    "2\t1.0\t[[1.0, 1], [1.0, 1]]\n9\t1.0\t[[1.0, 1]]\n",
        "urlid_chrate_compl_obs_hist.txt": "2\t0.75\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def test_import_politecrawling_equals_the_cli(cli, tmp_path):
    d = _dataset(tmp_path)
    out = tmp_path / "pc.csv"
    rc, _, err = cli("import", "politecrawling", d, "--out", out)
    assert rc == 0, err
    df = fresh.import_politecrawling(d)
    cli_df = fresh.Population.read(out).to_dataframe()
    pd.testing.assert_frame_equal(df, cli_df)
    assert df["id"].tolist() == [2, 5, 7]
    assert df["complete"].tolist() == [1, 0, 0]
    rep = df.attrs["report"]
    assert (rep["urls_read"], rep["urls_written"], rep["hosts"], rep["constrained_hosts"],
            rep["dropped_without_importance"]) == (4, 3, 2, 1, 1)
    # The importer's rates are the estimators': URL 5's history, and URL 2's complete rate.
    e = fresh.estimate_change_rate(*zip(*[[1.10397, 0], [1.47311, 1], [0.9, 1], [1.0, 0]]))
    row = df[df.id == 5].iloc[0]
    assert (e["rate"], e["rate_lo"], e["rate_hi"]) == (row.rate, row.rate_lo, row.rate_hi)
    assert (e["observations"], e["changes"]) == (row.observations, row.changes)
    # A DataFrame from the importer is a population.
    assert len(fresh.Population.from_dataframe(df)) == 3


def test_import_errors_name_the_file_and_line(tmp_path):
    d = _dataset(tmp_path)
    (d / "urlid_offset_history.txt").write_text("5\t0.5\t[[1.0, 1]]\n7\t0.1\t[[2.0, x]]\n")
    with pytest.raises(ValueError, match=r"urlid_offset_history.txt:2: field 'history changed'"):
        fresh.import_politecrawling(d)


def test_bound_is_the_cli_json_bound(cli_json):
    pop = fresh.Population.synthetic(1200, seed=2)
    cli = cli_json("fresh", "run", "--synthetic", 1200, "--seed", 2, "--budget-fraction", 0.3,
                   "--epochs", 5, "--burn-in", 0, "--policy", "uniform", "--backend", "cpu")
    b = fresh.bound(pop, budget_fraction=0.3)
    # The JSON states the harmonic penalty's lower bound as a bound on minus the penalty.
    assert -b["value"] == cli["bound"]["value"]
    assert b["multiplier"] == cli["bound"]["lambda"]
    assert b["period"].shape == (1200,) and np.all(b["period"] >= 0)
    binary = fresh.bound(pop, budget_fraction=0.3, objective="binary")
    assert 0 < binary["value"] <= 1


def test_rates_are_the_simulations(cli_json):
    pop = fresh.Population.synthetic(1000, seed=8)
    cli = cli_json("fresh", "run", "--synthetic", 1000, "--seed", 8, "--budget", 200,
                   "--epochs", 5, "--burn-in", 0, "--backend", "cpu", "--policy",
                   "lambda-crawl,lambda-crawl-approx,binary-lambda-crawl,uniform,proportional")
    for p in cli["policies"]:
        r = fresh.rates(pop, p["name"], 200)
        closed = p["metrics"]["closed_form"]
        assert r.harmonic_penalty == closed["harmonic_penalty"], p["name"]
        assert r.binary_staleness == closed["binary_staleness"], p["name"]
    # The array form: uniform is bandwidth / total cost; proportional spends the bandwidth.
    imp, rate = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 1.0, 2.0, 0.1])
    u = fresh.uniform_rates(imp, rate, 2.0)
    assert u.rho.tolist() == [0.5] * 4
    prop = fresh.proportional_rates(imp, rate, 2.0)
    assert prop.rho.sum() == pytest.approx(2.0, rel=1e-12)
    assert prop.rho / rate == pytest.approx(np.full(4, prop.rho[0] / rate[0]), rel=1e-12)
    lc = fresh.lambda_crawl_rates(imp, rate, 2.0)
    assert lc.rho.sum() == pytest.approx(2.0, rel=1e-9)  # the budget binds
    # LambdaCrawl's optimality condition: w D / (rho (rho + D)) equal for every crawled source.
    crawled = lc.rho > 0
    cond = (imp * rate / (lc.rho * (lc.rho + rate)))[crawled]
    assert cond == pytest.approx(np.full(crawled.sum(), cond[0]), rel=1e-9)
    co = fresh.lambda_crawl_rates(imp, rate, 2.0, complete=[1, 0, 0, 0])
    assert co.rho[0] == 0 and 0 < co.p[0] <= 1
    with pytest.raises(ValueError, match="has no crawl rates"):
        fresh.rates(pop, "index", 200)


def test_change_rate_estimates():
    # Completely observed: changes / time, with the Poisson interval around it.
    e = fresh.estimate_change_rate_complete(5, 10)
    assert e["rate"] == 0.5 and e["rate_lo"] < 0.5 < e["rate_hi"]
    # A history with no change: a rate near 0 whose interval is bounded above.
    none = fresh.estimate_change_rate([1.0] * 20, [0] * 20)
    assert none["rate_lo"] == 0 and none["rate"] < none["rate_hi"] < math.inf
    # Changes in every interval: the penalty keeps the estimate finite, above one change per
    # interval's length, its interval around it.
    every = fresh.estimate_change_rate([1.0] * 5, [1] * 5)
    assert 1.0 < every["rate"] < every["rate_hi"] and every["rate_lo"] < every["rate"]
    assert (every["observations"], every["changes"], every["observed_time"]) == (5, 5, 5.0)
    # Equal intervals of length 1 with k of n changed: the unpenalised MLE is -log(1 - k/n); the
    # estimator's penalty keeps it within its interval and close for long histories.
    k, n = 300, 1000
    big = fresh.estimate_change_rate([1.0] * n, [1] * k + [0] * (n - k))
    assert big["rate"] == pytest.approx(-math.log(1 - k / n), rel=0.01)
    assert big["rate_lo"] < big["rate"] < big["rate_hi"]
    with pytest.raises(ValueError, match="changed=: element 1 must be 0 or 1"):
        fresh.estimate_change_rate([1.0, 1.0], [0, 2])


def test_flags_and_repeated_policies_are_checked():
    # A hostile pass: learn="no" ran the learning variant (bool("no") is True), and a policy given
    # twice ran twice (evaluate refuses it).
    pop = fresh.Population.synthetic(200, seed=1)
    with pytest.raises(ValueError, match=r"learn= must be True or False, got 'no'"):
        fresh.evaluate(pop, budget=5, epochs=5, burn_in=0, learn="no")
    with pytest.raises(ValueError, match="bound= must be True or False"):
        fresh.evaluate(pop, budget=5, epochs=5, burn_in=0, bound="no")
    with pytest.raises(ValueError, match="policy 'index' is given twice"):
        fresh.evaluate(pop, budget=5, epochs=5, burn_in=0, policies=["index", "greedy", "index"])
    with pytest.raises(ValueError, match="bound= must be True or False"):
        ce.evaluate(ce.Population.paper_example(), 1, ["whittle"], epochs=5, burn_in=0, bound=1)


def test_nutch_adaptive_runs_with_its_keywords(cli_json):
    # Nutch's adaptive schedule from Python: the command line's numbers with the same settings,
    # its keywords in the JSON's parameters and checked by name; --backend cuda refuses it.
    pop = fresh.Population.synthetic(1500, seed=5)
    py = fresh.evaluate(pop, budget_fraction=0.2, policies=["nutch-adaptive", "index"], epochs=40,
                        burn_in=5, seed=5, backend="cpu", nutch_start=4, nutch_max=20)
    cli = cli_json("fresh", "run", "--synthetic", 1500, "--seed", 5, "--budget-fraction", 0.2,
                   "--epochs", 40, "--burn-in", 5, "--backend", "cpu", "--policy",
                   "nutch-adaptive,index", "--nutch-start", 4, "--nutch-max", 20)
    same_fresh(py.to_dict(), cli)
    d = py.to_dict()
    assert d["parameters"]["nutch_start"] == 4 and d["parameters"]["nutch_max"] == 20
    nutch = d["policies"][0]
    assert nutch["name"] == "nutch-adaptive"
    assert 0 < nutch["metrics"]["freshness"]["mean"] < 1
    # Every URL due within 4 epochs at first: the budget is spent, not beyond it.
    assert 0 < nutch["mean_cost_per_epoch"] <= 0.2 * 1500 + 1e-9
    # Other settings, other crawls; the defaults are Nutch's 30 and 365 epochs.
    slow = fresh.evaluate(pop, budget_fraction=0.2, policies="nutch-adaptive", epochs=40,
                          burn_in=5, seed=5, backend="cpu")
    assert slow.to_dict()["parameters"]["nutch_start"] == 30
    assert slow.to_dict()["parameters"]["nutch_max"] == 365
    slow_fresh = slow.to_dict()["policies"][0]["metrics"]["freshness"]["mean"]
    assert slow_fresh != nutch["metrics"]["freshness"]["mean"]
    assert "nutch-adaptive" in fresh.POLICIES
    with pytest.raises(ValueError, match=r"nutch_start=: must be a finite number >= 1"):
        fresh.evaluate(pop, budget=5, epochs=5, burn_in=0, policies="nutch-adaptive",
                       nutch_start=0.5)
    with pytest.raises(ValueError, match=r"nutch_max=: must be a finite number >= nutch_start="):
        fresh.evaluate(pop, budget=5, epochs=5, burn_in=0, policies="nutch-adaptive",
                       nutch_start=30, nutch_max=20)
    with pytest.raises(ValueError, match="nutch_start= must be a number"):
        fresh.evaluate(pop, budget=5, epochs=5, burn_in=0, nutch_start="30")
    # backend="cuda" takes it: refused here only for want of a GPU, as any policy would be.
    try:
        fresh.evaluate(pop, budget=5, epochs=5, burn_in=0, policies="nutch-adaptive",
                       backend="cuda")
    except ValueError as e:
        assert "nutch" not in str(e) and "backend" in str(e)


def test_score_functions_run_as_the_built_in_policies():
    """A score function computing the index (fresh.index_scores) gives the built-in index's
    numbers bit for bit; policy objects are reset before every run; errors name the policy."""
    pop = fresh.Population.synthetic(2000, seed=7)
    common = dict(budget_fraction=0.2, host_cap=2, epochs=30, burn_in=5, replications=2, seed=3,
                  backend="cpu", bound=False)
    seen = {}

    def my_index(age, changes, params):
        assert age.dtype == np.uint32 and changes.dtype == np.uint32
        assert not age.flags.writeable
        assert np.all(changes[params.complete == 0] == 0)  # an IO source's changes are hidden
        seen["budget"] = params.budget
        return fresh.index_scores(age, changes, params)

    class Overdue:
        """How overdue relative to the period 1 / rate: the uniform-rate schedule's shape."""

        def reset(self, params):
            self.runs = getattr(self, "runs", 0) + 1
            assert params.epoch == 0

        def __call__(self, age, changes, params):
            return age * params.rate

    obj = Overdue()
    res = fresh.evaluate(pop, policies=["index", my_index, ("overdue", obj)], **common)
    names = [p["name"] for p in res.policies]
    assert names == ["index", "my_index", "overdue"]
    a, b = res.policies[0], res.policies[1]
    assert np.array_equal(a["replication_penalty"], b["replication_penalty"])
    assert a["reward_series"] == b["reward_series"]
    assert obj.runs == 2  # reset before each replication (burn-in given: no pilot)
    assert seen["budget"] == pytest.approx(0.2 * 2000)
    for p in res.policies:
        assert p["backend"] == "cpu"
    # The reference engine runs them too, with the same numbers.
    ref = fresh.evaluate(pop, policies=[my_index], **{**common, "backend": "reference"})
    assert np.array_equal(ref.policies[0]["replication_penalty"], b["replication_penalty"])
    # Errors name the policy; what the engine cannot run with a function is refused.
    with pytest.raises(ValueError, match="'short'.*shape"):
        fresh.evaluate(pop, policies=[("short", lambda age, changes, p: age[:5] * 1.0)], **common)
    # The learning variant: params.rate holds the rates it estimates, so a function returning
    # index_scores is the built-in index under learning too, bit for bit.
    rates = []

    def learned_index(age, changes, params):
        rates.append(params.rate)
        return fresh.index_scores(age, changes, params)

    learned = fresh.evaluate(pop, policies=["index", learned_index], learn=True, relearn=3,
                             **common)
    assert np.array_equal(learned.policies[0]["replication_penalty"],
                          learned.policies[1]["replication_penalty"])
    assert learned.policies[0]["reward_series"] == learned.policies[1]["reward_series"]
    assert not np.array_equal(learned.policies[0]["replication_penalty"], a["replication_penalty"])
    assert not rates[-1].flags.writeable
    assert not np.array_equal(rates[-1], pop.rate)  # estimates, not the truth
    with pytest.raises(ce.InputError, match="given twice"):
        fresh.evaluate(pop, policies=[my_index, my_index], **common)
    with pytest.raises(TypeError, match="instance"):
        fresh.evaluate(pop, policies=[Overdue], **common)
