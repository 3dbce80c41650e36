#!/usr/bin/env python3
"""crawleval's deterministic Whittle epoch against the read-modify-write floor of its bytes.

For each N, in rounds that interleave the two (paired: the same load for both), runs
`bench_cpu --floor N THREADS` (the 40-byte in-place pass over x, alpha, u and a word: the bytes
the engine's epoch moves with unit costs) and `crawleval run --policy whittle` on N synthetic
sources (M = N * m_frac, fresh start, a given burn-in, no bound), whose source_epochs_per_second
covers the measured epochs only. Prints per N the median and range over the rounds of ms per
epoch, the floor's ms, crawleval's share of the floor (floor / crawleval) and the load average of
each round; --json writes everything with the CPU model and the commit.

Usage: bench/floor_compare.py [--n 1e5 1e6 1e7] [--rounds 3] [--epochs 40] [--threads 2]
                              [--m-frac 0.01] [--build build] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def floor_ms(build, n, threads):
    out = subprocess.run([os.path.join(build, "bench", "bench_cpu"), "--floor", str(n),
                          str(threads)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["floor_ms"]


def crawleval_ms(build, n, threads, epochs, m_frac):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        subprocess.run([os.path.join(build, "crawleval"), "run", "--synthetic", str(n),
                        "--budget", str(max(1, int(n * m_frac))), "--policy", "whittle",
                        "--start", "fresh", "--burn-in", "3", "--epochs", str(epochs),
                        "--no-bound", "--no-progress", "--backend", "cpu", "--threads",
                        str(threads), "--json", path], check=True, capture_output=True)
        with open(path) as f:
            rate = json.load(f)["policies"][0]["source_epochs_per_second"]
    return 1e3 * n / rate


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--m-frac", type=float, default=0.01)
    ap.add_argument("--build", default="build")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for n in (int(v) for v in a.n):
        floors, engines, loads = [], [], []
        for _ in range(a.rounds):
            loads.append(load_average())
            floors.append(floor_ms(a.build, n, a.threads))
            engines.append(crawleval_ms(a.build, n, a.threads, a.epochs, a.m_frac))
        row = {"n": n, "floor_ms": floors, "crawleval_ms": engines, "load": loads,
               "share_of_floor": [f / e for f, e in zip(floors, engines)]}
        rows.append(row)
        med = statistics.median
        print(f"N={n:.0e}: crawleval {med(engines):.3f} ms/epoch ({min(engines):.3f}-"
              f"{max(engines):.3f}), floor {med(floors):.3f} ms ({min(floors):.3f}-"
              f"{max(floors):.3f}), {100 * med(row['share_of_floor']):.0f}% of the floor; "
              f"load {min(loads):.2f}-{max(loads):.2f}", flush=True)
    if a.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_model(), "commit": commit, "threads": a.threads,
                       "epochs": a.epochs, "m_frac": a.m_frac, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
