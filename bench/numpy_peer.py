#!/usr/bin/env python3
"""The deterministic Whittle policy in numpy, as an expert writes it: whole-array operations in
place (no temporaries allocated per epoch), the top M by np.argpartition on the scores.

Per source x, its age eta since the last crawl, and the constants alpha and u; each epoch the
index on the grid, x + eta ((1 - alpha) x - u), then the M largest scores (ties by id ascending,
as crawleval's selection rule: every score above the M-th and the lowest ids among those equal
to it), then the reward (the crawled sources' x) and the transition.

Inputs and crawleval's rewards from `bench_cpu --dump N EPOCHS DIR` (M = N / 100, fresh start,
the dump's burn-in: meta.json); the peer's reward in every measured epoch must match crawleval's to 1e-9
before it is timed (exit 1 otherwise). Prints one JSON line: n, numpy_ms (per measured epoch).

Usage: numpy_peer.py DIR   (numpy runs these operations on one thread)
"""
import sys

import numpy as np

from peer_harness import ETA_CAP, Dump, arguments, check_then_time


def main():
    d = Dump(arguments(__doc__, threads=False).dir)
    n, m, alpha, u = d.n, d.m, d.alpha, d.u
    one_minus_alpha = 1.0 - alpha
    s, tmp, neg = np.empty(n), np.empty(n), np.empty(n)
    crawl = np.zeros(n, np.bool_)

    def start():
        return d.x0.copy(), np.ones(n)  # a fresh start: x = u, one epoch on the grid

    def epoch(state):
        x, eta = state
        # s = x + eta ((1 - alpha) x - u), in the same order of operations as crawleval
        np.multiply(one_minus_alpha, x, out=tmp)
        np.subtract(tmp, u, out=tmp)
        np.multiply(eta, tmp, out=tmp)
        np.add(x, tmp, out=s)
        np.negative(s, out=neg)
        kth = neg[np.argpartition(neg, m - 1)[:m]].max()  # the M-th largest score, negated
        np.less(neg, kth, out=crawl)
        left = m - int(np.count_nonzero(crawl))
        if left > 0:
            crawl[np.flatnonzero(neg == kth)[:left]] = True  # ties: ids ascending
        reward = x[crawl].sum()
        # crawled: x = u, eta = 1; the others: x = alpha x + u, eta + 1 (saturating)
        np.multiply(alpha, x, out=x)
        np.add(x, u, out=x)
        np.copyto(x, u, where=crawl)
        eta += 1.0
        np.minimum(eta, float(ETA_CAP), out=eta)
        eta[crawl] = 1.0
        return reward

    return check_then_time("numpy", d, start, epoch)


if __name__ == "__main__":
    sys.exit(main())
