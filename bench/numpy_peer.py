#!/usr/bin/env python3
"""The deterministic Whittle policy in numpy, as an expert writes it: whole-array operations in
place (no temporaries allocated per epoch), the top M by np.argpartition on the scores.

Per source x, its age eta since the last crawl, and the constants alpha and u; each epoch the
index on the grid, x + eta ((1 - alpha) x - u), then the M largest scores (ties by id ascending,
as crawleval's selection rule: every score above the M-th and the lowest ids among those equal
to it), then the reward (the crawled sources' x) and the transition.

Inputs and crawleval's rewards from `bench_cpu --dump N EPOCHS DIR` (M = N / 100, fresh start,
3 burn-in epochs); the peer's reward in every measured epoch must match crawleval's to 1e-9
before it is timed (exit 1 otherwise). Prints one JSON line: n, numpy_ms (per measured epoch).

Usage: numpy_peer.py DIR   (numpy runs these operations on one thread)
"""
import argparse
import json
import os
import sys
import time

import numpy as np

ETA_CAP = float((1 << 29) - 16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    a = ap.parse_args()
    alpha = np.fromfile(os.path.join(a.dir, "alpha.f64"))
    u = np.fromfile(os.path.join(a.dir, "u.f64"))
    x0 = np.fromfile(os.path.join(a.dir, "x0.f64"))
    expected = np.fromfile(os.path.join(a.dir, "rewards.f64"))
    n, epochs, burn_in = alpha.shape[0], expected.shape[0], 3
    m = max(1, n // 100)
    one_minus_alpha = 1.0 - alpha
    s = np.empty(n)
    tmp = np.empty(n)
    neg = np.empty(n)
    crawl = np.zeros(n, np.bool_)

    def run():
        x = x0.copy()
        eta = np.ones(n)  # a fresh start: x = u, one epoch on the grid
        rewards = []
        t0 = 0.0
        for t in range(burn_in + epochs):
            if t == burn_in:
                t0 = time.perf_counter()
            # s = x + eta ((1 - alpha) x - u), in the same order of operations as crawleval
            np.multiply(one_minus_alpha, x, out=tmp)
            np.subtract(tmp, u, out=tmp)
            np.multiply(eta, tmp, out=tmp)
            np.add(x, tmp, out=s)
            np.negative(s, out=neg)
            top = np.argpartition(neg, m - 1)[:m]
            kth = neg[top].max()  # the M-th largest score, negated
            above = neg < kth
            np.copyto(crawl, above)
            left = m - int(np.count_nonzero(above))
            if left > 0:
                ties = np.flatnonzero(neg == kth)[:left]  # ids ascending
                crawl[ties] = True
            rewards.append(float(x[crawl].sum()))
            # transition: crawled -> u, eta 1; others alpha x + u, eta + 1 (capped)
            np.multiply(alpha, x, out=x)
            np.add(x, u, out=x)
            np.copyto(x, u, where=crawl)
            eta += 1.0
            np.minimum(eta, ETA_CAP, out=eta)
            eta[crawl] = 1.0
        return np.array(rewards[burn_in:]), (time.perf_counter() - t0) / epochs

    got, _ = run()
    worst = float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-300)))
    if not worst <= 1e-9:
        print(f"numpy_peer: rewards differ from crawleval's ({worst:.3g} relative)", file=sys.stderr)
        return 1
    _, seconds = run()
    print(json.dumps({"n": n, "numpy_ms": 1e3 * seconds, "checked_relative_error": worst}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
