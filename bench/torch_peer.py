#!/usr/bin/env python3
"""The deterministic Whittle policy in eager PyTorch on the CPU, as an expert writes it: in-place
tensor operations on preallocated float64 tensors, the M-th largest score by torch.kthvalue.

Per source x, its age eta since the last crawl, and the constants alpha and u; each epoch the
index on the grid, x + eta ((1 - alpha) x - u), then the M largest scores (ties by id ascending,
as crawleval's selection rule), the reward (the crawled sources' x) and the transition.

Inputs and crawleval's rewards from `bench_cpu --dump N EPOCHS DIR` (M = N / 100, fresh start,
the dump's burn-in: meta.json); the peer's reward in every measured epoch must match crawleval's to 1e-9
before it is timed (exit 1 otherwise). Prints one JSON line: n, torch_ms (per measured epoch),
threads.

Usage: torch_peer.py DIR [--threads 2]   (needs torch and numpy: scripts/setup-bench)
"""
import sys

import torch

from peer_harness import ETA_CAP, Dump, arguments, check_then_time


def main():
    a = arguments(__doc__)
    torch.set_num_threads(a.threads)
    d = Dump(a.dir)
    n, m = d.n, d.m
    alpha, u = torch.from_numpy(d.alpha), torch.from_numpy(d.u)
    one_minus_alpha = 1.0 - alpha
    s = torch.empty(n, dtype=torch.float64)
    tmp = torch.empty(n, dtype=torch.float64)
    crawl = torch.zeros(n, dtype=torch.bool)

    def start():  # a fresh start: x = u, one epoch on the grid
        return torch.from_numpy(d.x0.copy()), torch.ones(n, dtype=torch.float64)

    @torch.inference_mode()
    def epoch(state):
        x, eta = state
        torch.mul(one_minus_alpha, x, out=tmp)
        tmp.sub_(u).mul_(eta)
        torch.add(x, tmp, out=s)
        kth = torch.kthvalue(s, n - m + 1).values  # the M-th largest score
        torch.gt(s, kth, out=crawl)
        left = m - int(crawl.sum())
        if left > 0:
            crawl[torch.nonzero(s == kth).flatten()[:left]] = True  # ties: ids ascending
        reward = float(x[crawl].sum())
        x.mul_(alpha).add_(u)
        torch.where(crawl, u, x, out=x)
        eta.add_(1.0).clamp_(max=float(ETA_CAP))
        eta.masked_fill_(crawl, 1.0)
        return reward

    return check_then_time("torch", d, start, epoch, threads=a.threads)


if __name__ == "__main__":
    sys.exit(main())
