#!/usr/bin/env python3
"""What a user policy costs per epoch: the built-in greedy policy against the same policy written
as a Python score function (numpy), on the same population, in one run, CPU engine.

    PYTHONPATH=build/python .venv/bin/python bench/python_overhead.py [--sizes 100000,1000000]

Per epoch, the function engine (function_rollout: the CPU backend's wide engine, general model)
writes the observed state and the age into numpy arrays the policy gets as read-only views (no
copy), calls the function with the GIL, reads the float64 scores it returns in place and records
them in the windowed select in one pass on the threads; the built-in policy runs the fused pass.

The target (issue 29): a user policy costs at most 1.3 x (its own numpy call + the built-in
engine's epoch). Reported per size, with whether it is met. Writes the figures as JSON (--json).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

import crawleval as ce


def greedy(state, age, params):
    return state * params.inv_cost


def per_epoch(result, name):
    p = result[name]
    return p["loop_seconds"] / (p["epochs"] + p["burn_in"]) / p["replications"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        pop = ce.Population.synthetic(n, seed=1)
        params = ce._policy_params(pop._pop, 1.0, n / 100)
        state = np.random.default_rng(1).random(n)
        age = np.ones(n)
        t0 = time.perf_counter()
        for _ in range(20):
            greedy(state, age, params)
        numpy_call = (time.perf_counter() - t0) / 20
        best = {"greedy": [], "user_greedy": []}
        for _ in range(args.repeat):
            r = ce.evaluate(pop, n / 100, ["greedy", ("user_greedy", greedy)], epochs=args.epochs,
                            bound=False, backend="cpu")
            assert np.array_equal(r["greedy"]["replication_rewards"],
                                  r["user_greedy"]["replication_rewards"])
            for k in best:
                best[k].append(per_epoch(r, k))
        b, u = min(best["greedy"]), min(best["user_greedy"])
        target = 1.3 * (numpy_call + b)
        rows.append(dict(sources=n, budget=n / 100, epochs=args.epochs,
                         builtin_ms_per_epoch=1e3 * b, user_ms_per_epoch=1e3 * u,
                         overhead_ms_per_epoch=1e3 * (u - b), numpy_score_call_ms=1e3 * numpy_call,
                         ratio=u / b, target_ms_per_epoch=1e3 * target,
                         user_over_numpy_plus_builtin=u / (numpy_call + b),
                         target_met=bool(u <= target)))
        print(f"N = {n:>9}: built-in greedy {1e3 * b:8.2f} ms/epoch, user greedy {1e3 * u:8.2f} "
              f"ms/epoch ({u / b:.2f}x; +{1e3 * (u - b):.2f} ms, of which the numpy call "
              f"{1e3 * numpy_call:.2f} ms); same rewards bit for bit; target 1.3 x (numpy + "
              f"built-in) = {1e3 * target:.2f} ms: {u / (numpy_call + b):.2f}x, "
              f"{'met' if u <= target else 'NOT met'}", flush=True)
    if args.json:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
        except OSError:
            commit = "unknown"
        out = dict(benchmark="python user-policy overhead", date=time.strftime("%Y-%m-%d"),
                   commit=commit, machine=platform.processor() or platform.machine(),
                   cpus=os.cpu_count(), threads="default (all)", results=rows)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
