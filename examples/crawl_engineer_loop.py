#!/usr/bin/env python3
"""The crawl engineer's loop, end to end: a crawl history in the PoliteCrawling format ->
change-rate estimates -> the papers' re-crawl schedulers under politeness caps -> a figure.

    .venv/bin/python examples/crawl_engineer_loop.py                       # the shipped sample
    .venv/bin/python examples/crawl_engineer_loop.py --politecrawling DIR  # the real dataset

Full size on the shipped sample (297 URLs, 500 measured days per run): 3.5 s on 2 cores, most
of it Python's imports. CRAWLEVAL_EXAMPLE_QUICK=1 (as scripts/test runs it): 60 measured days. On
the real dataset (18.5 million URLs) expect about 6 minutes for the import and minutes per
scheduler on 2 cores (docs/freshness.md, "The schedulers compared").

The sample (examples/data/politecrawling-sample/, made by make_politecrawling_sample.py beside
it) is 14 weeks of about daily crawls of 297 made-up URLs on 8 hosts, 3 of them politeness-
constrained, each crawl recording whether the page changed since the previous one; the rates it
was drawn from are in politecrawling-sample-true-rates.csv, so the estimates can be checked.

1. Import: each URL's change rate is estimated from its incomplete history (Cho & Garcia-Molina's
   estimator extended to irregular intervals, with a 95% likelihood-ratio interval).
2. The estimates against the truth.
3. The schedulers of Kolobov et al. (LambdaCrawl and its variants), Azar et al.
   (BinaryLambdaCrawl), uniform, proportional and crawleval's index policy, at a budget of 20% of
   the URLs per day, without caps and with at most --host-cap crawls a day of a constrained
   host; each one's harmonic staleness penalty (lower is better) against the Lagrangian bound.
4. A figure: the estimates against the truth, and the penalties with and without the caps.
"""

import argparse
import json
import os
import sys

import numpy as np
import pandas as pd

from crawleval import fresh

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "data", "politecrawling-sample")
TRUTH = os.path.join(HERE, "data", "politecrawling-sample-true-rates.csv")
QUICK = os.environ.get("CRAWLEVAL_EXAMPLE_QUICK") == "1"

POLICIES = ["index", "lambda-crawl", "lambda-crawl-approx", "binary-lambda-crawl", "uniform",
            "proportional"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--politecrawling", default=SAMPLE,
                    help="a folder with the dataset's five .txt files (default: the sample)")
    ap.add_argument("--epochs", type=int, default=60 if QUICK else 500,
                    help="measured days per run")
    ap.add_argument("--budget-fraction", type=float, default=0.2,
                    help="crawls per day as a fraction of the URLs (the papers' R = 0.2 N)")
    ap.add_argument("--host-cap", type=int, default=2,
                    help="crawls a day of a politeness-constrained host")
    ap.add_argument("--out", default="out/crawl_engineer_loop.png", help="figure to write")
    args = ap.parse_args()

    # 1. Import: a DataFrame with one row per URL (id, host, importance, rate and its interval,
    # complete, constrained, cost, observations, changes); what was read and dropped in attrs.
    df = fresh.import_politecrawling(args.politecrawling)
    report = df.attrs["report"]
    print(f"imported {len(df)} URLs on {df['host'].nunique()} hosts "
          f"({int(df['constrained'].sum())} on constrained hosts, {int(df['complete'].sum())} "
          f"completely observed); report: {report}")

    # 2. The estimates. One URL's by hand, from its history's line, as the importer computes it.
    with open(os.path.join(args.politecrawling, "urlid_offset_history.txt")) as f:
        url_id, _offset, history = f.readline().rstrip("\n").split("\t", 2)
    pairs = json.loads(history)  # [[interval, changed], ...]
    one = fresh.estimate_change_rate(*zip(*pairs))
    print(f"URL {url_id}: {one['changes']} changes seen in {one['observations']} crawls over "
          f"{one['observed_time']:.1f} days: rate {one['rate']:.3f} per day, 95% interval "
          f"[{one['rate_lo']:.3f}, {one['rate_hi']:.3f}]")
    truth = None
    if os.path.abspath(args.politecrawling) == SAMPLE:
        truth = pd.read_csv(TRUTH).set_index("id")["rate"].reindex(df["id"]).to_numpy()
        inside = np.mean((df["rate_lo"] <= truth) & (truth <= df["rate_hi"]))
        ratio = np.median(df["rate"] / truth)
        print(f"against the true rates: the median estimate / truth is {ratio:.2f}, and "
              f"{100 * inside:.0f}% of the 95% intervals hold the truth")

    # 3. The schedulers, without and with politeness caps, from the estimated rates.
    pop = fresh.Population.from_dataframe(df)
    runs = {}
    for cap in (0, args.host_cap):
        res = fresh.evaluate(pop, budget_fraction=args.budget_fraction, policies=POLICIES,
                             epochs=args.epochs, host_cap=cap, seed=1)
        table = res.to_dataframe()
        table["gap_%"] = 100 * table["relative_gap_to_bound"]
        least = -res.bound["value"]  # the bound on the reward, minus the penalty
        runs[cap] = (table, least)
        print(f"\nhost cap {cap or 'none'}: harmonic penalty (lower is better); the bound: at "
              f"least {least:.4f}")
        print(table[["harmonic_penalty", "harmonic_penalty_ci95_low", "harmonic_penalty_ci95_high",
                     "gap_%", "burn_in"]].to_string(float_format="{:.4f}".format))

    # 4. The figure.
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no figure: matplotlib is not installed (pip install matplotlib)")
        return 0
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    if truth is not None:
        left.errorbar(truth, df["rate"], yerr=[df["rate"] - df["rate_lo"],
                                               np.minimum(df["rate_hi"], 1e3) - df["rate"]],
                      fmt="o", ms=3, alpha=0.5, elinewidth=0.6)
        lim = [truth.min() / 2, truth.max() * 2]
        left.plot(lim, lim, "k--", lw=0.8)
        left.set(xscale="log", yscale="log", xlabel="true change rate (per day)",
                 ylabel="estimated from the history", title="change-rate estimates, 95% intervals")
    else:
        left.hist(np.log10(df["rate"]), bins=50)
        left.set(xlabel="log10 estimated change rate (per day)", ylabel="URLs",
                 title="change-rate estimates")
    x = np.arange(len(POLICIES))
    for k, (cap, (table, least)) in enumerate(runs.items()):
        t = table.loc[POLICIES]
        err = [t["harmonic_penalty"] - t["harmonic_penalty_ci95_low"],
               t["harmonic_penalty_ci95_high"] - t["harmonic_penalty"]]
        label = f"host cap {cap}" if cap else "no cap"
        right.bar(x + (k - 0.5) * 0.38, t["harmonic_penalty"], 0.38, yerr=np.nan_to_num(err),
                  label=label)
        right.axhline(least, color=f"C{k}", ls="--", lw=0.8)
    right.set_xticks(x, POLICIES, rotation=30, ha="right")
    right.set(ylabel="harmonic staleness penalty", title="schedulers (dashed: the bounds)")
    right.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"\nfigure: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
