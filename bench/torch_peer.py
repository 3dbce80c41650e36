#!/usr/bin/env python3
"""The deterministic Whittle policy in eager PyTorch on the CPU, as an expert writes it: in-place
tensor operations on preallocated float64 tensors, the M-th largest score by torch.kthvalue.

Per source x, its age eta since the last crawl, and the constants alpha and u; each epoch the
index on the grid, x + eta ((1 - alpha) x - u), then the M largest scores (ties by id ascending,
as crawleval's selection rule), the reward (the crawled sources' x) and the transition.

Inputs and crawleval's rewards from `bench_cpu --dump N EPOCHS DIR` (M = N / 100, fresh start,
3 burn-in epochs); the peer's reward in every measured epoch must match crawleval's to 1e-9
before it is timed (exit 1 otherwise). Prints one JSON line: n, torch_ms (per measured epoch),
threads.

Usage: torch_peer.py DIR [--threads 2]   (needs torch and numpy: scripts/setup-bench)
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

ETA_CAP = float((1 << 29) - 16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    load = lambda name: torch.from_numpy(np.fromfile(os.path.join(a.dir, name)))
    alpha, u, x0 = load("alpha.f64"), load("u.f64"), load("x0.f64")
    expected = np.fromfile(os.path.join(a.dir, "rewards.f64"))
    n, epochs, burn_in = alpha.shape[0], expected.shape[0], 3
    m = max(1, n // 100)
    one_minus_alpha = 1.0 - alpha
    s = torch.empty(n, dtype=torch.float64)
    tmp = torch.empty(n, dtype=torch.float64)
    crawl = torch.zeros(n, dtype=torch.bool)
    above = torch.empty(n, dtype=torch.bool)

    def run():
        x = x0.clone()
        eta = torch.ones(n, dtype=torch.float64)  # a fresh start: x = u, on the grid
        rewards = []
        t0 = 0.0
        with torch.inference_mode():
            for t in range(burn_in + epochs):
                if t == burn_in:
                    t0 = time.perf_counter()
                torch.mul(one_minus_alpha, x, out=tmp)
                tmp.sub_(u).mul_(eta)
                torch.add(x, tmp, out=s)
                kth = torch.kthvalue(s, n - m + 1).values  # the M-th largest score
                torch.gt(s, kth, out=above)
                crawl.copy_(above)
                left = m - int(above.sum())
                if left > 0:
                    ties = torch.nonzero(s == kth).flatten()[:left]  # ids ascending
                    crawl[ties] = True
                rewards.append(float(x[crawl].sum()))
                x.mul_(alpha).add_(u)
                torch.where(crawl, u, x, out=x)
                eta.add_(1.0).clamp_(max=ETA_CAP)
                eta.masked_fill_(crawl, 1.0)
        return np.array(rewards[burn_in:]), (time.perf_counter() - t0) / epochs

    got, _ = run()
    worst = float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-300)))
    if not worst <= 1e-9:
        print(f"torch_peer: rewards differ from crawleval's ({worst:.3g} relative)", file=sys.stderr)
        return 1
    _, seconds = run()
    print(json.dumps({"n": n, "torch_ms": 1e3 * seconds, "threads": a.threads,
                      "checked_relative_error": worst}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
