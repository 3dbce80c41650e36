#!/usr/bin/env python3
"""A learning policy written in Python: it does not know the sources' arrival rates, estimates
them from what its own crawls collect (``params.collected``, the previous epoch's reward per
source), and ranks by the Whittle index at the estimates. Its learning curve (``record=True``)
against the known-parameter Whittle policy and the bound.

    .venv/bin/python examples/learning_policy.py [--sources 20000 --epochs 400]

Full size: about 10 s on 2 cores (measured at load 6). CRAWLEVAL_EXAMPLE_QUICK=1 (as scripts/test
runs it): 2000 sources, 60 epochs.

The model is the stochastic one of the research report (eq. 19); crawleval's own adaptive policy
(``"adaptive_whittle"``, section 9) runs beside it for comparison.
"""

import argparse
import os
import sys

import numpy as np

import crawleval as ce

QUICK = os.environ.get("CRAWLEVAL_EXAMPLE_QUICK") == "1"  # scripts/test: seconds, not minutes


def make_learner(n: int):
    collected = np.zeros(n)  # what the crawls brought, per source
    expected = np.zeros(n)   # what they would bring at the true rate, per unit of u* (1 - alpha^k)

    def learner(state, age, params):
        if params.epoch == 0:
            collected[:] = 0
            expected[:] = 0
        crawled = age == 1 if params.epoch > 0 else np.zeros(n, bool)  # crawled last epoch
        collected[crawled] += params.collected[crawled]
        expected[crawled] += -np.expm1(np.log(params.alpha[crawled]) * age_before[crawled])
        age_before[:] = age
        seen = expected > 0
        # u* estimated by a ratio over the crawls; sources not crawled yet come first (inf).
        est = np.where(seen, collected / np.where(seen, expected, 1.0), 0.0)
        belief = est * -np.expm1(np.log(params.alpha) * age)  # E[X] at the estimated rate
        index = ce.whittle_index(belief, est * params.mu, np.ones(n), params.mu, params.cost,
                                 params.epoch_length)
        return np.where(seen, index, np.inf)

    age_before = np.ones(n)
    return learner


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=2000 if QUICK else 20_000)
    ap.add_argument("--epochs", type=int, default=60 if QUICK else 400)
    args = ap.parse_args()
    pop = ce.Population.synthetic(args.sources, seed=3)
    budget = args.sources / 50
    res = ce.evaluate(pop, budget, ["whittle", "adaptive_whittle",
                                    ("python_learner", make_learner(len(pop)))],
                      model="stochastic", observe="belief", epochs=args.epochs, burn_in=0,
                      record=True, seed=1)
    print(res)
    curves = res.to_dataframe("epochs")
    window = max(1, args.epochs // 10)
    curves["window"] = curves["epoch"] // window
    table = curves.pivot_table(index="window", columns="policy", values="reward", aggfunc="mean")
    table.index = [f"{w * window}-{(w + 1) * window - 1}" for w in table.index]
    print("mean reward per epoch, by window of epochs (the learners start knowing nothing):")
    print(table.to_string(float_format=lambda v: f"{v:.1f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
