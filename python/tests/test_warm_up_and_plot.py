"""Honest defaults (the measured warm-up), the version, and the figures: Result.plot() and
`crawleval plot`, which draw the same JSON with the same code."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import crawleval as ce

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_defaults_discard_the_measured_warm_up():
    # 10,000 synthetic sources, all empty at the start, budget 1%: the old default (no burn-in)
    # averaged the transient in; the default now measures it and lands within its interval of
    # the long-run value.
    pop = ce.Population.synthetic(10_000, seed=1)
    now = ce.evaluate(pop, 100, ["whittle"], epochs=500)["whittle"]
    long_run = ce.evaluate(pop, 100, ["whittle"], burn_in=2000, epochs=8000)["whittle"]
    old = ce.evaluate(pop, 100, ["whittle"], epochs=500, burn_in=0)
    assert now["warm_up"]["automatic"] and now["burn_in"] > 0
    assert now["burn_in"] == 2 * now["warm_up"]["mser5_truncation"]
    assert abs(now["mean_reward"] - long_run["mean_reward"]) <= (
        now["ci95_half_width"] + long_run["ci95_half_width"])
    # The old default is below the long run by more than its own half-width, and says so.
    o = old["whittle"]
    assert long_run["mean_reward"] - o["mean_reward"] > 2.0
    assert o["warm_up"]["window_check"]["transient"]
    assert old.warnings and "still hold a transient" in old.warnings[0]
    with pytest.raises(ValueError, match="burn_in= must be 'auto' or a whole number"):
        ce.evaluate(pop, 100, ["whittle"], burn_in="long")


def test_version_is_the_build_version(cli):
    rc, out, _ = cli("--version")
    assert rc == 0 and out.startswith(f"crawleval {ce.__version__} (")
    res = ce.evaluate(ce.Population.paper_example(), 1, ["whittle"], epochs=100)
    assert res.to_dict()["version"] == ce.__version__
    assert res.to_dict()["context"]["version"] == ce.__version__


def _series_and_span(ax):
    """The line an axis draws and its shaded span's x extent."""
    line = ax.get_lines()[0]
    spans = [p for p in ax.patches]
    return line.get_xdata(), line.get_ydata(), spans


def test_result_plot_draws_the_json(tmp_path):
    res = ce.evaluate(ce.Population.paper_example(), 1, ["whittle", "round_robin"], epochs=200)
    fig = res.plot()
    # One axis of rewards with intervals, one per policy with its reward per epoch.
    assert len(fig.axes) == 3
    rewards = fig.axes[0]
    assert [t.get_text() for t in rewards.get_yticklabels()] == ["whittle", "round_robin"]
    bound = res.bound["value"]
    assert any(list(l.get_xdata()) == [bound, bound] for l in rewards.get_lines())
    for ax, name in zip(fig.axes[1:], ["whittle", "round_robin"]):
        p = res[name]
        xs, ys, spans = _series_and_span(ax)
        values = p["reward_series"]["values"]
        assert list(ys) == values  # one point per epoch here (under 400 epochs)
        assert list(xs) == list(range(len(values)))
        assert len(spans) == 1  # the discarded warm-up, [0, burn_in)
        x0, x1 = spans[0].get_x(), spans[0].get_x() + spans[0].get_width()
        assert (x0, x1) == (0, p["burn_in"])
    path = tmp_path / "fig.png"
    res.plot(path=str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _run_json(cli, tmp_path, name, *args):
    path = tmp_path / name
    rc, _, err = cli(*args, "--no-progress", "--json", path)
    assert rc == 0, err
    return path


def test_cli_plot_one_result_a_sweep_and_a_fresh_run(cli, tmp_path):
    env = dict(os.environ, CRAWLEVAL_PYTHON=sys.executable)
    binary = os.environ["CRAWLEVAL_BIN"]
    runs = [_run_json(cli, tmp_path, f"m{m}.json", "run", "--paper-example", "--budget", m,
                      "--epochs", 100, "--policy", "whittle,greedy") for m in (1, 2, 3)]
    fresh = _run_json(cli, tmp_path, "fresh.json", "fresh", "run", "--synthetic", 300,
                      "--budget-fraction", 0.2, "--epochs", 60)

    def plot(*args):
        return subprocess.run([binary, "plot", *map(str, args)], capture_output=True, text=True,
                              env=env)

    p = plot(runs[0], "--out", tmp_path / "one.png")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "one.png").read_bytes()[:4] == b"\x89PNG"
    p = plot(*runs, "--out", tmp_path / "sweep.svg", "--title", "budget sweep")
    assert p.returncode == 0, p.stderr
    assert b"<svg" in (tmp_path / "sweep.svg").read_bytes()[:400]
    p = plot(fresh)  # default name: the result's, with .png
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "fresh.png").exists()
    # The sweep's curves are the results' numbers (drawn by the same module, from Python).
    from crawleval import plot as cp

    data = [json.loads(Path(r).read_text()) for r in runs]
    fig = cp.figure(data, "sweep")
    curves = {l.get_label(): l for l in fig.axes[0].get_lines()}
    assert list(curves["whittle"].get_xdata()) == [1.0, 2.0, 3.0]
    assert list(curves["whittle"].get_ydata()) == [d["policies"][0]["mean_reward"] for d in data]
    assert list(curves["bound"].get_ydata()) == [d["bound"]["value"] for d in data]
    # Bad input: exit 2 and a message naming the file; nothing written.
    bad = tmp_path / "bad.json"
    bad.write_text('{"tool": "other"}')
    p = plot(bad, "--out", tmp_path / "bad.png")
    assert p.returncode == 2 and "not a crawleval result" in p.stderr
    assert not (tmp_path / "bad.png").exists()
    p = plot(runs[0], "--kind", "sweep")
    assert p.returncode == 2 and "two or more results" in p.stderr
    p = plot(tmp_path / "missing.json")
    assert p.returncode == 2 and "missing.json: cannot read" in p.stderr


def test_cli_plot_without_matplotlib_or_python(cli, tmp_path):
    binary = os.environ["CRAWLEVAL_BIN"]
    result = _run_json(cli, tmp_path, "r.json", "run", "--paper-example", "--budget", 1,
                       "--epochs", 60)
    # A Python whose matplotlib cannot be imported.
    fake = tmp_path / "fake" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = dict(os.environ, CRAWLEVAL_PYTHON=sys.executable, PYTHONPATH=str(fake.parent))
    p = subprocess.run([binary, "plot", str(result)], capture_output=True, text=True, env=env)
    assert p.returncode == 2
    assert "needs matplotlib" in p.stderr and "pip install matplotlib" in p.stderr
    # No Python at all.
    env = dict(os.environ, CRAWLEVAL_PYTHON=str(tmp_path / "no-python"))
    p = subprocess.run([binary, "plot", str(result)], capture_output=True, text=True, env=env)
    assert p.returncode == 2
    assert "needs Python 3 with matplotlib" in p.stderr and "CRAWLEVAL_PYTHON" in p.stderr


def test_sync_instance_family_from_its_columns(tmp_path):
    path = tmp_path / "inst.csv"
    path.write_text("arm,delta,weight\n0,0.5,1.0\n1,1.5,2.0\n")
    inst = ce.SyncInstance.read(str(path))  # no family: the columns say poisson
    assert len(inst) == 2
    j_star, rates = ce.sync_optimum(inst)
    assert j_star > 0 and len(rates) == 2
    with pytest.raises(ValueError, match=r"the columns are a poisson instance's, but the family "
                                         r"asked for \(--family\) is polynomial"):
        ce.SyncInstance.read(str(path), "polynomial")


def test_cli_plot_refuses_what_it_cannot_draw_and_keeps_links(cli, tmp_path):
    env = dict(os.environ, CRAWLEVAL_PYTHON=sys.executable)
    binary = os.environ["CRAWLEVAL_BIN"]
    runs = [_run_json(cli, tmp_path, f"m{m}.json", "run", "--paper-example", "--budget", m,
                      "--epochs", 100, "--policy", "whittle,greedy") for m in (1, 2, 3)]
    fresh = _run_json(cli, tmp_path, "fresh.json", "fresh", "run", "--synthetic", 300,
                      "--budget-fraction", 0.2, "--epochs", 60)

    def plot(*args):
        return subprocess.run([binary, "plot", *map(str, args)], capture_output=True, text=True,
                              env=env)

    # --out through a symbolic link: the link stays and its file gets the figure.
    target = tmp_path / "figures" / "real.png"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "link.png"
    link.symlink_to(target)
    p = plot(runs[0], "--out", link)
    assert p.returncode == 0, p.stderr
    assert link.is_symlink() and target.read_bytes()[:4] == b"\x89PNG"
    dangling = tmp_path / "dangling.png"
    dangling.symlink_to(tmp_path / "missing" / "x.png")
    p = plot(runs[0], "--out", dangling)
    assert p.returncode == 2 and "is a symbolic link to a missing file" in p.stderr
    # Fields of the wrong type: exit 2 naming the file and the field, no traceback.
    data = json.loads(Path(runs[0]).read_text())
    for field, change in (("policies[0].mean_reward", lambda d: d["policies"][0].update(
                              mean_reward="260")),
                          ("policies[1].warm_up", lambda d: d["policies"][1].update(
                              warm_up="auto")),
                          ("policies[0]", lambda d: d["policies"].__setitem__(0, 3.5)),
                          ("parameters.budget", lambda d: d["parameters"].update(budget="1")),
                          ("policies[0].ci95_low", lambda d: d["policies"][0].update(
                              ci95_low=float("inf")))):
        bad = json.loads(json.dumps(data))
        change(bad)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        p = plot(path, "--out", tmp_path / "bad.png")
        assert p.returncode == 2, (field, p.stderr)
        assert f"bad.json: field '{field}' must be" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
        assert not (tmp_path / "bad.png").exists()
    # A reward and a harmonic penalty are not one sweep.
    p = plot(runs[0], fresh, "--out", tmp_path / "mixed.png")
    assert p.returncode == 2 and "a sweep draws results of one kind" in p.stderr, p.stderr
    assert not (tmp_path / "mixed.png").exists()
    # The sweep's title gives the budgets' range, not the first file's budget.
    from crawleval import plot as cp

    fig = cp.figure([json.loads(Path(r).read_text()) for r in runs], "sweep")
    title = fig._suptitle.get_text()
    assert "budgets 1 to 3 (3 results)" in title and "budget 1," not in title, title
