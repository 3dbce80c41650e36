#!/usr/bin/env python3
"""crawleval's deterministic Whittle epoch against an afternoon's C++ peer and the floor.

For each N, in rounds that interleave the sizes, runs `bench_cpu --paired N 1 EPOCHS THREADS
BURN_IN`: in one process on N synthetic sources (M = N / 100, fresh start, BURN_IN epochs before
the measured ones: 300 by default, the steady state), crawleval's CPU engine (its measured epochs
only), the C++ OpenMP peer with a parallel radix select (bench_cpu.cpp's Peer, checked first
against crawleval's reward in every measured epoch: the run fails otherwise) and the 40-byte
read-modify-write floor kernel (the bytes a pass over every source moves with unit costs), one
after the other, with the load average. Prints per N the median and range of ms per epoch, the
share of source-epochs crawleval's pass left out (dormant sources), the bytes it moved per source
(40 B per live source), the share of the 40-byte floor (floor / crawleval: above 100% where
crawleval takes less time than a pass over every source can), the share of the floor of the bytes
it moved, and the ratio to each peer; --json writes every round with the CPU model and the commit.

With --python PYTHON (an interpreter with numpy, numba and torch: scripts/setup-bench makes
.venv-bench), each round also runs the Python peers named by --peers (default numba, numpy and
torch: bench/numba_peer.py, numpy_peer.py, torch_peer.py) on the same inputs (bench_cpu --dump),
each checked against crawleval's rewards before it is timed, right after the paired run.

Usage: bench/floor_compare.py [--n 1e5 1e6 1e7] [--rounds 3] [--epochs 40] [--threads 2]
                              [--burn-in 300] [--build build]
                              [--python PYTHON [--peers numba numpy torch]] [--json FILE]
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


def paired(build, n, epochs, threads, burn_in):
    out = subprocess.run([os.path.join(build, "bench", "bench_cpu"), "--paired", str(n), "1",
                          str(epochs), str(threads), str(burn_in)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def python_peer_ms(python, peer, build, n, epochs, threads, burn_in, dumps):
    if n not in dumps:
        d = tempfile.mkdtemp(prefix="crawleval-peer-")
        subprocess.run([os.path.join(build, "bench", "bench_cpu"), "--dump", str(n), str(epochs),
                        d, str(burn_in)], check=True, capture_output=True)
        dumps[n] = d
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [python, os.path.join(here, f"{peer}_peer.py"), dumps[n]]
    if peer != "numpy":  # numpy's whole-array operations run on one thread
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])[f"{peer}_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--burn-in", type=int, default=300)
    ap.add_argument("--build", default="build")
    ap.add_argument("--python")
    ap.add_argument("--peers", nargs="+", default=["numba", "numpy", "torch"])
    ap.add_argument("--json")
    a = ap.parse_args()
    rounds = {int(n): [] for n in a.n}
    dumps = {}
    for _ in range(a.rounds):
        for n in rounds:
            r = paired(a.build, n, a.epochs, a.threads, a.burn_in)
            for peer in a.peers if a.python else []:
                r[f"{peer}_ms"] = python_peer_ms(a.python, peer, a.build, n, a.epochs, a.threads,
                                                 a.burn_in, dumps)
            rounds[n].append(r)
    for d in dumps.values():
        shutil.rmtree(d, ignore_errors=True)
    rows = []
    med = statistics.median
    peers = a.peers if a.python else []
    print("| N | crawleval ms/epoch | dormant | B/source moved | 40-B floor | % of 40-B floor | "
          "% of its bytes' floor | C++ radix peer | " +
          "".join(f"{p} peer | " for p in peers) + "vs C++ | " +
          "".join(f"vs {p} | " for p in peers) + "load |")
    print("|---" * (10 + 2 * len(peers)) + "|")
    span = lambda v: f"{med(v):.3f} ({min(v):.3f}-{max(v):.3f})"
    for n, rs in rounds.items():
        e = [r["crawleval_ms"] for r in rs]
        f = [r["floor_ms"] for r in rs]
        live = [1.0 - r.get("dormant", 0.0) for r in rs]
        loads = [r["load"] for r in rs]
        rows.append({"n": n, "rounds": rs})
        times = {"peer": [r["peer_ms"] for r in rs]}
        times.update({p: [r[f"{p}_ms"] for r in rs] for p in peers})
        # ratios per round (paired), then their median
        ratio = lambda v: f"{med([y / x for x, y in zip(e, v)]):.2f}x"
        print(f"| {n:.0e} | {span(e)} | {100 * (1 - med(live)):.0f}% | {40 * med(live):.1f} | "
              f"{med(f):.3f} | {100 * med([x / y for x, y in zip(f, e)]):.0f}% | "
              f"{100 * med([x * l / y for x, l, y in zip(f, live, e)]):.0f}% | "
              f"{span(times['peer'])} | " +
              "".join(f"{span(times[p])} | " for p in peers) + f"{ratio(times['peer'])} | " +
              "".join(f"{ratio(times[p])} | " for p in peers) +
              f"{min(loads):.2f}-{max(loads):.2f} |", flush=True)
    if a.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_model(), "commit": commit, "threads": a.threads,
                       "epochs": a.epochs, "burn_in": a.burn_in, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
