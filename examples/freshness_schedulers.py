#!/usr/bin/env python3
"""The freshness model from a notebook: LambdaCrawl and its variants against the index policy and
the Lagrangian bound, with and without politeness caps.

    .venv/bin/python examples/freshness_schedulers.py                      # synthetic, 20k URLs
    .venv/bin/python examples/freshness_schedulers.py --politecrawling DIR # the real dataset

The population is PoliteCrawling's (Kolobov et al. 2019: importance, change rates estimated from
14 weeks of daily crawls, politeness-constrained hosts), imported into a DataFrame, or a synthetic
one of the same shape. The budget is the papers' R = 0.2 N crawls per day.

Full size (20k synthetic URLs, 100 measured days): about 16 s on 2 cores (measured at load 6-7).
CRAWLEVAL_EXAMPLE_QUICK=1 (as scripts/test runs it): 2000 URLs, 20 days.
examples/crawl_engineer_loop.py starts from a crawl history instead.
"""

import argparse
import os
import sys

import numpy as np
import pandas as pd

from crawleval import fresh

QUICK = os.environ.get("CRAWLEVAL_EXAMPLE_QUICK") == "1"  # scripts/test: seconds, not minutes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--politecrawling", help="the dataset's directory (its five .txt files)")
    ap.add_argument("--sources", type=int, default=2000 if QUICK else 20_000,
                    help="synthetic population size")
    ap.add_argument("--epochs", type=int, default=20 if QUICK else 100)
    ap.add_argument("--host-cap", type=int, default=2)
    args = ap.parse_args()

    if args.politecrawling:
        df = fresh.import_politecrawling(args.politecrawling)  # a DataFrame, report in df.attrs
        print(df.attrs["report"])
    else:
        df = fresh.Population.synthetic(args.sources, seed=1).to_dataframe()
    print(df.describe().loc[["mean", "50%", "max"], ["importance", "rate", "cost"]])
    pop = fresh.Population.from_dataframe(df)  # any DataFrame with rate and importance works

    # The schedulers' rates as arrays: where LambdaCrawl spends the bandwidth.
    bandwidth = 0.2 * len(pop)
    lc = fresh.rates(pop, "lambda-crawl", bandwidth)
    print(f"LambdaCrawl: multiplier {lc.multiplier:.4g}, closed-form harmonic penalty "
          f"{lc.harmonic_penalty:.4f}; {np.count_nonzero(lc.rho == 0)} IO sources never crawled")

    rows = []
    for cap in (0, args.host_cap):
        res = fresh.evaluate(pop, budget_fraction=0.2, epochs=args.epochs, host_cap=cap,
                             policies=["index", "lambda-crawl", "lambda-crawl-approx",
                                       "binary-lambda-crawl", "uniform"])
        table = res.to_dataframe()[["freshness", "harmonic_penalty", "relative_gap_to_bound"]]
        rows.append(table.assign(host_cap=cap))
        for w in res.warnings:
            print("warning:", w, file=sys.stderr)
    out = pd.concat(rows).reset_index().set_index(["host_cap", "name"])
    pd.set_option("display.width", 120)
    print(out.to_string(float_format=lambda v: f"{v:.4f}"))
    b = fresh.bound(pop, budget_fraction=0.2)
    print(f"bound: harmonic penalty at least {b['value']:.4f} (without politeness caps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
