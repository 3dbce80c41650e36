#!/usr/bin/env python3
"""The deterministic Whittle policy in numba, as one would write it in an afternoon.

Per source x, its age eta since the last crawl, and the constants alpha and u; every epoch a
parallel pass scores every source (the index on the grid, x + eta ((1 - alpha) x - u)) into an
order-preserving 64-bit key with per-thread histograms of the keys' top 16 bits, the boundary
bin's members are gathered in parallel and sorted by key (descending, id ascending), and a second
parallel pass collects the reward and moves the states.

The inputs and crawleval's rewards come from `bench_cpu --dump N EPOCHS DIR` (the same synthetic
population and settings as `bench_cpu --paired`: M = N / 100, fresh start, the dump's burn-in:
meta.json); the peer's reward in every measured epoch must match crawleval's to 1e-9 before it is
timed (exit 1 otherwise). Prints one JSON line: n, numba_ms (per measured epoch), threads.

Usage: numba_peer.py DIR [--threads 2]   (needs numba and numpy: a bench-only virtual env)
"""
import sys

import numpy as np
import numba
from numba import njit, prange

from peer_harness import ETA_CAP, Dump, arguments, check_then_time

BITS = 16
SIGN = np.uint64(1 << 63)
SHIFT = np.uint64(64 - BITS)
TOP = np.uint64(63)


@njit(parallel=True)
def score_pass(x, alpha, u, eta, key, score, hist, chunk):
    # score is key's memory seen as doubles: each score is written, then read back as its bits.
    n = x.shape[0]
    for c in prange(hist.shape[0]):
        h = hist[c]
        for j in range(h.shape[0]):
            h[j] = 0
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            s = x[i] + eta[i] * ((1.0 - alpha[i]) * x[i] - u[i])
            score[i] = s
            b = key[i]
            k = ~b if b >> TOP else b | SIGN
            key[i] = k
            h[np.int64(k >> SHIFT)] += 1


@njit(parallel=True)
def select_and_step(x, alpha, u, eta, key, hist, chunk, m, crawl, counts):
    n = x.shape[0]
    chunks = hist.shape[0]
    total = hist.sum(axis=0)
    above = 0
    b = total.shape[0]
    while b > 0:
        if above + total[b - 1] >= m:
            break
        above += total[b - 1]
        b -= 1
    top_bin = np.uint64(b - 1 if b > 0 else 0)
    need = m - min(m, above)
    shift = SHIFT
    for c in prange(chunks):
        k = 0
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            t = key[i] >> shift
            crawl[i] = t > top_bin
            if t == top_bin:
                k += 1
        counts[c] = k
    start = np.zeros(chunks + 1, np.int64)
    for c in range(chunks):
        start[c + 1] = start[c] + counts[c]
    cand = np.empty(start[chunks], np.int64)
    for c in prange(chunks):
        j = start[c]
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            if key[i] >> shift == top_bin:
                cand[j] = i
                j += 1
    # The need largest keys among them, ties by id ascending: the need-th largest by partition,
    # then every larger one and the first equal ones in id order (cand is in id order).
    take = min(need, cand.shape[0])
    if take > 0:
        inv = ~key[cand]
        kth = np.partition(inv, take - 1)[take - 1]
        left = take
        for j in range(cand.shape[0]):
            if inv[j] < kth:
                crawl[cand[j]] = True
                left -= 1
        for j in range(cand.shape[0]):
            if left > 0 and inv[j] == kth:
                crawl[cand[j]] = True
                left -= 1
    reward = 0.0
    for i in prange(n):
        if crawl[i]:
            reward += x[i]
            x[i] = u[i]
            eta[i] = 1.0
        else:
            x[i] = alpha[i] * x[i] + u[i]
            if eta[i] < ETA_CAP:
                eta[i] += 1.0
    return reward


def main():
    a = arguments(__doc__)
    numba.set_num_threads(a.threads)
    d = Dump(a.dir)
    chunks = a.threads
    chunk = (d.n + chunks - 1) // chunks
    hist = np.zeros((chunks, 1 << BITS), np.int64)
    key = np.empty(d.n, np.uint64)
    score = key.view(np.float64)
    crawl = np.zeros(d.n, np.bool_)
    counts = np.zeros(chunks, np.int64)

    def start():
        return d.x0.copy(), np.ones(d.n)  # a fresh start: x = u, one epoch on the grid

    def epoch(state):
        x, eta = state
        score_pass(x, d.alpha, d.u, eta, key, score, hist, chunk)
        return select_and_step(x, d.alpha, d.u, eta, key, hist, chunk, d.m, crawl, counts)

    return check_then_time("numba", d, start, epoch, threads=a.threads)


if __name__ == "__main__":
    sys.exit(main())
