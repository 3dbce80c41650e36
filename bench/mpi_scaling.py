#!/usr/bin/env python3
"""Weak and strong scaling of a sharded run (`mpirun -np P crawleval run`: every rank runs the CPU
backend's wide engine on its shard, with the selection and reward folds shared), in one run.

For P in --ranks (one thread per rank): strong scaling runs the same population of --n sources on P
ranks; weak scaling gives every rank --n sources (P * n in all). Each configuration runs the
deterministic Whittle policy (unit costs) and the stochastic one, and reports ms per epoch, the ms
per epoch that rank 0 spent inside collectives (histogram allreduces, boundary gathers, the
reward fold; waiting for a slower rank counts here too), the levels (allreduces) per epoch, and
the single-process CPU backend on the same population for reference. It also checks that every
sharded run's mean reward equals the single-process one bit for bit.

--policy names another policy: a score function (whittle_mixed, adaptive_whittle, ...) measures
the function engine over the ranks instead of the wide engine.

Usage: bench/mpi_scaling.py [--n 2e6] [--ranks 1 2] [--epochs 20] [--m-frac 0.01]
                            [--policy whittle] [--build build] [--json FILE]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time


def run(binary, args, np=None):
    cmd = (["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none"] if np else []) + \
        [binary, "run"] + args
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")


def measure(binary, n, m, model, epochs, np, tmp, policy="whittle"):
    out = os.path.join(tmp, "r.json")
    args = ["--synthetic", str(n), "--budget", str(m), "--model", model, "--epochs", str(epochs),
            "--burn-in", "2", "--policy", policy, "--no-bound", "--no-progress",
            "--threads", "1", "--json", out]
    run(binary, args, np)
    with open(out) as f:
        p = json.load(f)["policies"][0]
    total = epochs + 2
    return {"ms_per_epoch": 1e3 * p["loop_seconds"] / total,
            "comm_ms_per_epoch": 1e3 * p["comm_seconds"] / total,
            "mean_reward": p["mean_reward"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, default=2e6, help="sources (strong) or per rank (weak)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--m-frac", type=float, default=0.01)
    ap.add_argument("--policy", default="whittle")
    ap.add_argument("--build", default="build")
    ap.add_argument("--json")
    a = ap.parse_args()
    binary = os.path.join(a.build, "crawleval")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("deterministic", "stochastic"):
            for mode in ("strong", "weak"):
                for p in a.ranks:
                    n = int(a.n) * (p if mode == "weak" else 1)
                    m = max(1, int(n * a.m_frac))
                    one = measure(binary, n, m, model, a.epochs, None, tmp, a.policy)
                    sh = measure(binary, n, m, model, a.epochs, p, tmp, a.policy)
                    row = {"model": model, "scaling": mode, "ranks": p, "n": n, "budget": m,
                           "one_process_ms_per_epoch": one["ms_per_epoch"],
                           "sharded_ms_per_epoch": sh["ms_per_epoch"],
                           "comm_ms_per_epoch": sh["comm_ms_per_epoch"],
                           "identical": one["mean_reward"] == sh["mean_reward"]}
                    rows.append(row)
                    print(f"{model:13s} {mode:6s} P={p} N={n:>10d}  one process "
                          f"{row['one_process_ms_per_epoch']:8.2f} ms/epoch  sharded "
                          f"{row['sharded_ms_per_epoch']:8.2f} ms/epoch  (collectives "
                          f"{row['comm_ms_per_epoch']:6.2f})  identical={row['identical']}",
                          flush=True)
    if a.json:
        with open(a.json, "w") as f:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            json.dump({"date": time.strftime("%Y-%m-%d"), "commit": commit,
                       "cpu": platform.processor() or platform.machine(),
                       "machine_cores": os.cpu_count(), "threads_per_rank": 1,
                       "policy": a.policy,
                       "epochs": a.epochs, "rows": rows}, f, indent=1)
    if not all(r["identical"] for r in rows):
        sys.exit("a sharded run differs from one process")


if __name__ == "__main__":
    main()
