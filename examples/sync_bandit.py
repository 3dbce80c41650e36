#!/usr/bin/env python3
"""The synchronisation bandit (MirrorSync paper): Problem 1's optimum, and the learners' mean cost
curves with 95% intervals over independent runs, as DataFrames.

    .venv/bin/python examples/sync_bandit.py [--arms 100 --runs 20 --rounds 240]

Full size: about 3 s on 2 cores. CRAWLEVAL_EXAMPLE_QUICK=1 (as scripts/test runs it): 20 arms,
3 runs, 30 rounds.
"""

import argparse
import os
import sys

import pandas as pd

import crawleval as ce

QUICK = os.environ.get("CRAWLEVAL_EXAMPLE_QUICK") == "1"  # scripts/test: seconds, not minutes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arms", type=int, default=20 if QUICK else 100)
    ap.add_argument("--runs", type=int, default=3 if QUICK else 20)
    ap.add_argument("--rounds", type=int, default=30 if QUICK else 240)
    ap.add_argument("--family", default="polynomial", choices=["polynomial", "poisson"])
    args = ap.parse_args()
    inst = ce.SyncInstance.generate(args.family, args.arms, seed=0)
    inst.budget = 0.4 * args.arms
    inst.r_max = 3.0 if args.family == "polynomial" else 6.0
    j_star, rates = ce.sync_optimum(inst)
    print(f"{args.arms} arms ({args.family}): J* = {j_star:.6g}, rates {rates.min():.3g} .. "
          f"{rates.max():.3g}")
    last = {}
    for algorithm in ("mirrorsync", "async-mirrorsync", "async-psgd"):
        df = ce.sync_learn(inst, algorithm, runs=args.runs, rounds=args.rounds, seed=1)
        last[algorithm] = df.iloc[-1][["round", "mean_j", "ci95_low", "ci95_high",
                                       "regret_mean"]]
        gap = 100 * (df["mean_j"].iloc[-1] / df.attrs["j_star_epsilon"] - 1)
        print(f"{algorithm:>17}: {len(df)} updates, final mean J {df['mean_j'].iloc[-1]:.6g} "
              f"({gap:+.2f}% from J*eps = {df.attrs['j_star_epsilon']:.6g})")
    print(pd.DataFrame(last).T.to_string(float_format=lambda v: f"{v:.5g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
