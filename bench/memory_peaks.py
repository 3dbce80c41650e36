#!/usr/bin/env python3
"""Peak resident memory of `crawleval run` against the estimate it states before it starts.

For each N in --n and each configuration below, runs `crawleval run --synthetic N --budget N/100
--epochs E --burn-in 5 --backend cpu ...` under `/usr/bin/time -v` and reports the peak
(`Maximum resident set size`), the bytes per source it makes (with the fixed part), the estimate
the run printed ("crawleval: memory: about X GiB ... (B bytes each ...)") and the estimate's
error. The configurations: the deterministic Whittle policy with and without the bound (compact
columns, docs/cpu-design.md), the four default policies, and the stochastic Whittle policy (every
column held). Issue 30's target: <= 60 B per source for a deterministic run, the estimate within
10% of the peak.

Usage: bench/memory_peaks.py [--n 1e6 1e7] [--epochs 60] [--build build] [--json FILE]
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

CONFIGS = [
    ("deterministic whittle, no bound", ["--policy", "whittle", "--no-bound"]),
    ("deterministic whittle, bound", ["--policy", "whittle"]),
    ("deterministic, four policies, bound", []),
    ("stochastic whittle, no bound", ["--policy", "whittle", "--no-bound", "--model", "stochastic"]),
]


def measure(binary, n, epochs, extra):
    cmd = ["/usr/bin/time", "-v", binary, "run", "--synthetic", str(n), "--budget",
           str(max(1, n // 100)), "--epochs", str(epochs), "--burn-in", "5", "--backend", "cpu"]
    r = subprocess.run(cmd + extra, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"failed: {' '.join(cmd + extra)}\n{r.stderr}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    est = re.search(r"crawleval: memory: about ([0-9.]+) GiB for \d+ sources \((\d+) bytes each",
                    r.stderr)
    peak = peak_kb * 1024
    estimate = float(est.group(1)) * 2**30
    return {"peak_bytes": peak, "peak_gib": peak / 2**30, "bytes_per_source": peak / n,
            "estimate_gib": float(est.group(1)), "estimate_bytes_per_source": int(est.group(2)),
            "estimate_error": (estimate - peak) / peak}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--build", default="build")
    ap.add_argument("--json")
    a = ap.parse_args()
    binary = os.path.join(a.build, "crawleval")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    rows = []
    print(f"{'N':>10} {'run':38} {'peak GiB':>9} {'B/source':>9} {'estimate':>9} {'error':>7}")
    for n in [int(x) for x in a.n]:
        for name, extra in CONFIGS:
            load = os.getloadavg()[0]
            m = measure(binary, n, a.epochs, extra)
            m.update({"n": n, "run": name, "args": extra, "load_before": load})
            rows.append(m)
            print(f"{n:>10} {name:38} {m['peak_gib']:9.3f} {m['bytes_per_source']:9.1f} "
                  f"{m['estimate_gib']:9.2f} {100 * m['estimate_error']:+6.1f}%", flush=True)
    out = {"tool": "bench/memory_peaks.py", "commit": commit,
           "date": time.strftime("%Y-%m-%d %H:%M"), "cpu": platform.processor() or platform.machine(),
           "epochs": a.epochs, "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
