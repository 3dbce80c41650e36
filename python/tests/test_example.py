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
