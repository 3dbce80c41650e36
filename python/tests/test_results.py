"""Results as data (issue 29): numbers handed over without JSON text, per-replication and
per-epoch arrays, DataFrames, reprs, seeds, keyword-named errors, the OpenMP wait policy and the
MPI note, the sync-bandit experiment as a DataFrame; each against the CLI where it has the number."""

import csv
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import crawleval as ce


def _python(code, **env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK", "PMIX_RANK")}
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)


def test_wait_policy_is_passive_before_the_engine_loads():
    # libgomp prints the policy it read at load time (OMP_DISPLAY_ENV): passive, as the CLI's.
    p = _python("import crawleval, os; print(os.environ['OMP_WAIT_POLICY'])",
                OMP_DISPLAY_ENV="true")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "passive"
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in p.stdout + p.stderr
    # A policy the user chose is kept.
    p = _python("import crawleval", OMP_DISPLAY_ENV="true", OMP_WAIT_POLICY="active")
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in p.stdout + p.stderr


def test_mpi_launch_is_said_once():
    p = _python("import crawleval", OMPI_COMM_WORLD_SIZE="3", OMPI_COMM_WORLD_RANK="0")
    assert p.returncode == 0, p.stderr
    assert "started by an MPI launcher (3 processes)" in p.stderr
    assert "every process runs the whole evaluation" in p.stderr
    # Other ranks stay quiet; one process is not a launch worth a note.
    assert "MPI" not in _python("import crawleval", OMPI_COMM_WORLD_SIZE="3",
                                OMPI_COMM_WORLD_RANK="1").stderr
    assert "MPI" not in _python("import crawleval", OMPI_COMM_WORLD_SIZE="1").stderr
    assert "MPI" not in _python("import crawleval").stderr


def _stochastic():
    return ce.Population.synthetic(3000, seed=4, costs="lognormal")


@pytest.mark.parametrize("policy", ["whittle", "greedy", "whittle_mixed", "user"])
def test_record_matches_the_summaries(policy):
    pop = _stochastic()
    user = ("user", lambda s, a, p: s * p.inv_cost)
    r = ce.evaluate(pop, 30, user if policy == "user" else policy, model="stochastic",
                    epochs=40, burn_in="auto", replications=3, record=True, backend="cpu")
    name = "user" if policy == "user" else policy
    rec = r.record(name)
    b = rec["burn_in"]
    assert b == r[name]["burn_in"]
    assert rec["reward"].shape == rec["cost"].shape == (3, b + 40)
    assert not rec["reward"].flags.writeable
    # Every epoch's reward and cost, averaged over the measured epochs, are the replications'.
    reps = r.replication_rewards(name)
    assert reps.shape == (3,) and reps.dtype == np.float64
    assert rec["reward"][:, b:].mean(axis=1) == pytest.approx(reps, rel=1e-12)
    assert rec["cost"][:, b:].mean() == pytest.approx(r[name]["mean_cost_per_epoch"], rel=1e-12)
    assert np.all(rec["cost"] <= 30 * (1 + 1e-12)) and np.all(rec["cost"] > 0)
    df = r.to_dataframe("epochs")
    assert len(df) == 3 * (b + 40)
    assert list(df.columns) == ["policy", "replication", "epoch", "reward", "cost", "measured"]
    assert df["measured"].sum() == 3 * 40


def test_record_equals_the_cli_trace(cli, tmp_path):
    trace = tmp_path / "trace.csv"
    rc, _, err = cli("run", "--paper-example", "--budget", 2, "--epochs", 30, "--burn-in", 5,
                     "--policy", "whittle", "--backend", "reference", "--trace", trace)
    assert rc == 0, err
    per_epoch = {}
    with open(trace) as f:
        for row in csv.DictReader(f):
            per_epoch[int(row["epoch"])] = float(row["epoch_reward"])
    r = ce.evaluate(ce.Population.paper_example(), 2, "whittle", epochs=30, burn_in=5,
                    backend="reference", record=True)
    rec = r.record("whittle")["reward"][0]
    assert len(rec) == len(per_epoch) == 35
    assert rec == pytest.approx([per_epoch[t] for t in range(35)], rel=1e-12, abs=1e-12)


def test_record_needs_asking():
    r = ce.evaluate(ce.Population.paper_example(), 1, "whittle", epochs=20)
    with pytest.raises(KeyError, match="record=True"):
        r.record("whittle")
    with pytest.raises(ValueError, match="record=True"):
        r.to_dataframe("epochs")


def test_replication_rewards_are_the_cli_json(cli_json):
    py = ce.evaluate(_stochastic(), 25, ["whittle", "random"], model="stochastic", epochs=30,
                     burn_in=5, replications=4, backend="cpu", seed=4)
    cli = cli_json("run", "--synthetic", 3000, "--seed", 4, "--synthetic-costs", "lognormal",
                   "--budget", 25, "--model", "stochastic", "--epochs", 30, "--burn-in", 5,
                   "--replications", 4, "--backend", "cpu", "--policy", "whittle", "random")
    for p in cli["policies"]:
        assert py.replication_rewards(p["name"]).tolist() == p["replication_rewards"]
        assert py[p["name"]]["mean_reward"] == p["mean_reward"]
    df = py.to_dataframe("replications")
    assert df[df.policy == "random"]["reward"].tolist() == cli["policies"][1]["replication_rewards"]
    assert json.loads(py.to_json())["policies"][0]["replication_rewards"] == \
        cli["policies"][0]["replication_rewards"]


def test_repr_and_html():
    r = ce.evaluate(ce.Population.paper_example(), 1, ["whittle", "greedy"], epochs=200, seed=7)
    text = repr(r)
    assert "4 sources" in text and "seed 7" in text and "whittle" in text and "bound" in text
    assert f"{r['whittle']['mean_reward']:.6g}" in text
    html = r._repr_html_()
    assert "<table" in html and "greedy" in html and f"{r.bound['value']:.6g}" in html


def test_seeds_none_generator_and_seedsequence():
    pop = ce.Population.synthetic(500, seed=2)
    kw = dict(model="stochastic", epochs=20, burn_in=2, backend="cpu", bound=False)
    a = ce.evaluate(pop, 10, "whittle", seed=None, **kw)
    again = ce.evaluate(pop, 10, "whittle", seed=a.seed, **kw)  # the seed reported repeats it
    assert again["whittle"]["mean_reward"] == a["whittle"]["mean_reward"]
    assert a.parameters["seed"] == a.seed
    g = ce.evaluate(pop, 10, "whittle", seed=np.random.default_rng(5), **kw)
    assert g.seed == int(np.random.default_rng(5).integers(0, 2**64 - 1, dtype=np.uint64,
                                                           endpoint=True))
    ss = np.random.SeedSequence(11)
    s = ce.evaluate(pop, 10, "whittle", seed=ss, **kw)
    assert s.seed == int(np.random.SeedSequence(11).generate_state(1, np.uint64)[0])
    with pytest.raises(ValueError, match=r"seed= must be a whole number, None, a numpy"):
        ce.evaluate(pop, 10, "whittle", seed=1.5, **kw)


@pytest.mark.parametrize("kwargs, message", [
    (dict(budget=-1), "budget= must be"),
    (dict(budget="ten"), "budget= must be a number"),
    (dict(epochs=0), "epochs= must be at least 1"),
    (dict(epoch_length=0), "epoch_length= must be"),
    (dict(model=3), "model= must be a string"),
    (dict(replications=0), r"replications= must lie in"),
    (dict(threads=-1), r"threads= must lie in"),
])
def test_errors_name_the_python_keyword(kwargs, message):
    args = dict(budget=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message) as e:
        ce.evaluate(ce.Population.paper_example(), **args)
    assert "--" not in str(e.value)


def test_sync_learn_runs_is_the_cli_curve(cli, tmp_path):
    inst_csv, curve = tmp_path / "inst.csv", tmp_path / "curve.csv"
    rc, _, err = cli("syncbandit", "generate", "--family", "polynomial", "--arms", 20,
                     "--seed", 3, "--out", inst_csv)
    assert rc == 0, err
    rc, _, err = cli("learn", "mirrorsync", "--instance", inst_csv, "--runs", 6, "--rounds", 40,
                     "--seed", 5, "--curve", curve)
    assert rc == 0, err
    inst = ce.SyncInstance.read(str(inst_csv))
    inst.budget, inst.r_min, inst.r_max, inst.noise = 0.4 * len(inst), 0.025, 3.0, 0.1
    # Seed 5, not the learners' default: the CLI once applied --seed after the runs.
    df = ce.sync_learn(inst, "mirrorsync", runs=6, rounds=40, seed=5)
    with open(curve) as f:
        rows = list(csv.DictReader(f))
    assert len(df) == len(rows)
    for col in ("round", "mean_j", "ci95_low", "ci95_high", "regret_mean", "in_policy_regret_mean"):
        assert df[col].tolist() == pytest.approx([float(r[col]) for r in rows], rel=1e-9,
                                                 nan_ok=True), col
    assert df.attrs["runs"] == 6
    assert df.attrs["j_star"] == pytest.approx(float(rows[0]["j_star"]), rel=1e-9)
    # One run of the experiment is sync_learn's single curve.
    one = ce.sync_learn(inst, "mirrorsync", rounds=40, seed=1, run=0)
    assert ce.sync_learn(inst, "mirrorsync", runs=1, rounds=40, seed=1)["mean_j"].tolist() == \
        one.tolist()


def test_arrow_and_parquet_in_and_out(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pop = ce.Population.synthetic(300, seed=2, costs="lognormal")
    table = pop.to_arrow()
    assert isinstance(table, pa.Table) and table.num_rows == 300
    back = ce.Population.from_arrow(table)
    for col in ("lambda_", "xi", "mu", "cost", "id"):
        assert np.array_equal(getattr(back, col), getattr(pop, col)), col
    pop.write_parquet(tmp_path / "pop.parquet")
    again = ce.Population.read_parquet(tmp_path / "pop.parquet")
    assert np.array_equal(again.cost, pop.cost) and again.origin.endswith("pop.parquet")
    r = ce.evaluate(pop, 20, ["whittle", "greedy"], epochs=30, replications=2)
    t = r.to_arrow()
    assert t.column("name").to_pylist() == ["whittle", "greedy"]
    assert t.column("mean_reward").to_pylist() == [r["whittle"]["mean_reward"],
                                                   r["greedy"]["mean_reward"]]
    r.to_parquet(tmp_path / "res.parquet", kind="replications")
    reps = pa.parquet.read_table(tmp_path / "res.parquet").to_pandas()
    assert reps["reward"].tolist() == r.to_dataframe("replications")["reward"].tolist()
    from crawleval import fresh
    fp = fresh.Population.synthetic(200, seed=1)
    fp.write_parquet(tmp_path / "fresh.parquet")
    pd_back = fresh.Population.read_parquet(tmp_path / "fresh.parquet").to_dataframe()
    assert pd_back.equals(fp.to_dataframe())
