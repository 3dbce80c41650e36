"""The example script runs end to end at a small size and writes its figure."""

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "compare_policies.py"


def test_compare_policies_example(tmp_path):
    fig = tmp_path / "fig.png"
    p = subprocess.run(
        [sys.executable, str(EXAMPLE), "--sources", "3000", "--epochs", "20", "--burn-in", "5",
         "--budgets", "0.01,0.05", "--out", str(fig)],
        capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, MPLBACKEND="Agg"))
    assert p.returncode == 0, p.stderr
    assert "rate_times_age" in p.stdout and "whittle" in p.stdout
    assert fig.exists() and fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _run_example(name, *args, cwd):
    p = subprocess.run([sys.executable, str(EXAMPLE.parent / name), *map(str, args)],
                       capture_output=True, text=True, cwd=cwd,
                       env=dict(os.environ, MPLBACKEND="Agg"))
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_freshness_example(tmp_path):
    out = _run_example("freshness_schedulers.py", "--sources", 2000, "--epochs", 20, cwd=tmp_path)
    assert "lambda-crawl" in out and "bound: harmonic penalty at least" in out
    assert "LambdaCrawl: multiplier" in out


def test_learning_policy_example(tmp_path):
    out = _run_example("learning_policy.py", "--sources", 2000, "--epochs", 60, cwd=tmp_path)
    assert "python_learner" in out and "adaptive_whittle" in out and "by window" in out


def test_sync_bandit_example(tmp_path):
    out = _run_example("sync_bandit.py", "--arms", 20, "--runs", 3, "--rounds", 30, cwd=tmp_path)
    for algorithm in ("mirrorsync", "async-mirrorsync", "async-psgd"):
        assert algorithm in out
    assert "J* =" in out
