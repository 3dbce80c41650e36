#!/usr/bin/env python3
"""crawleval's deterministic Whittle epoch against an afternoon's C++ peer and the floor.

For each N, in rounds that interleave the sizes, runs `bench_cpu --paired N 1 EPOCHS THREADS`:
in one process on N synthetic sources (M = N / 100, fresh start, 3 burn-in epochs), crawleval's
CPU engine (its measured epochs only), the C++ OpenMP peer with a parallel radix select
(bench_cpu.cpp's Peer, checked first against crawleval's reward in every measured epoch: the run
fails otherwise) and the 40-byte read-modify-write floor kernel (the bytes crawleval's epoch moves
with unit costs), one after the other, with the load average. Prints per N the median and range
of ms per epoch, the share of the floor (floor / crawleval) and the ratio to the peer; --json
writes every round with the CPU model and the commit.

With --numba PYTHON (an interpreter with numba and numpy, e.g. a bench-only virtual env), each
round also runs bench/numba_peer.py on the same inputs (bench_cpu --dump), checked against
crawleval's rewards before it is timed.

Usage: bench/floor_compare.py [--n 1e5 1e6 1e7] [--rounds 3] [--epochs 40] [--threads 2]
                              [--build build] [--numba PYTHON] [--json FILE]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def paired(build, n, epochs, threads):
    out = subprocess.run([os.path.join(build, "bench", "bench_cpu"), "--paired", str(n), "1",
                          str(epochs), str(threads)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def numba_ms(python, build, n, epochs, threads, dumps):
    if n not in dumps:
        d = tempfile.mkdtemp(prefix="crawleval-peer-")
        subprocess.run([os.path.join(build, "bench", "bench_cpu"), "--dump", str(n), str(epochs),
                        d], check=True, capture_output=True)
        dumps[n] = d
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([python, os.path.join(here, "numba_peer.py"), dumps[n], "--threads",
                          str(threads)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["numba_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--build", default="build")
    ap.add_argument("--numba")
    ap.add_argument("--json")
    a = ap.parse_args()
    rounds = {int(n): [] for n in a.n}
    dumps = {}
    for _ in range(a.rounds):
        for n in rounds:
            r = paired(a.build, n, a.epochs, a.threads)
            if a.numba:
                r["numba_ms"] = numba_ms(a.numba, a.build, n, a.epochs, a.threads, dumps)
            rounds[n].append(r)
    for d in dumps.values():
        shutil.rmtree(d, ignore_errors=True)
    rows = []
    med = statistics.median
    print("| N | crawleval ms/epoch | C++ radix peer | numba peer | 40-B floor | % of floor | "
          "vs C++ peer | vs numba | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, rs in rounds.items():
        e = [r["crawleval_ms"] for r in rs]
        p = [r["peer_ms"] for r in rs]
        f = [r["floor_ms"] for r in rs]
        nb = [r["numba_ms"] for r in rs if "numba_ms" in r]
        loads = [r["load"] for r in rs]
        rows.append({"n": n, "rounds": rs})
        numba_cell = f"{med(nb):.3f} ({min(nb):.3f}-{max(nb):.3f})" if nb else "-"
        vs_numba = f"{med([y / x for x, y in zip(e, nb)]):.2f}x" if nb else "-"
        print(f"| {n:.0e} | {med(e):.3f} ({min(e):.3f}-{max(e):.3f}) | {med(p):.3f} "
              f"({min(p):.3f}-{max(p):.3f}) | {numba_cell} | {med(f):.3f} | "
              f"{100 * med([x / y for x, y in zip(f, e)]):.0f}% | "
              f"{med([y / x for x, y in zip(e, p)]):.2f}x | {vs_numba} | "
              f"{min(loads):.2f}-{max(loads):.2f} |", flush=True)
    if a.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_model(), "commit": commit, "threads": a.threads,
                       "epochs": a.epochs, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
