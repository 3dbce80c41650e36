#!/usr/bin/env python3
"""Eager PyTorch baseline: one epoch of the deterministic Whittle policy, the way one would write it
with elementwise tensor ops and torch.topk, on the same GPU as bench_gpu.

State and arithmetic follow crawleval's wide path (kernels/epoch_kernels.cu): the state of a source
is its age eta (epochs since the last crawl), x = u* (1 - alpha^eta), the index on the grid is
(u* (1 - alpha^eta) - eta (1 - alpha)(u* - x)) / C, the top-M by index are crawled (reward: their x)
and their age resets to 1, every other age grows by one. The population has the synthetic
distributions of include/crawleval/synthetic.hpp (drawn with torch's generator, not Philox: the
timing does not depend on the values).

Usage: pytorch_baseline.py [--n 1e8] [--m 1e6] [--epochs 20] [--dtype float64] [--json FILE]
"""
import argparse
import json
import sys

import torch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e8, help="sources")
    ap.add_argument("--m", type=float, default=1e6, help="crawls per epoch (top-M)")
    ap.add_argument("--epochs", type=int, default=20, help="timed epochs (after 3 warm-up epochs)")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--json", help="write the result as JSON")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("pytorch_baseline: no CUDA device", file=sys.stderr)
        return 2
    n, m = int(args.n), int(args.m)
    dtype = getattr(torch, args.dtype)
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    u = torch.rand(n, device=dev, dtype=dtype, generator=g)
    lam = torch.clamp(0.02 * u.pow(-1.0 / 1.2), max=1000.0)
    xi = torch.exp(torch.randn(n, device=dev, dtype=dtype, generator=g))
    mu = 0.02 * torch.pow(torch.tensor(100.0, device=dev, dtype=dtype),
                          torch.rand(n, device=dev, dtype=dtype, generator=g))
    u_star = lam * xi / mu
    mu_t = mu  # T = 1
    del u, lam, xi, mu
    age = torch.zeros(n, device=dev, dtype=torch.int32)

    def epoch():
        eta = age.to(dtype)
        om_eta = -torch.expm1(-mu_t * eta)
        x = u_star * om_eta
        om_alpha = -torch.expm1(-mu_t)
        score = u_star * om_eta - eta * om_alpha * (u_star - x)
        top = torch.topk(score, m, sorted=False)
        reward = x[top.indices].sum()
        age.add_(1)
        age[top.indices] = 1
        return reward

    for _ in range(3):
        epoch()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.epochs):
        reward = epoch()
    stop.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(stop) / args.epochs
    result = {
        "baseline": "eager PyTorch (elementwise ops + torch.topk)",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "n": n,
        "m": m,
        "dtype": args.dtype,
        "epochs_timed": args.epochs,
        "ms_per_epoch": ms,
        "source_epochs_per_second": n / (ms / 1e3),
        "last_epoch_reward": float(reward),
    }
    print(f"  pytorch {args.dtype} N={n} M={m}: {ms:.3f} ms/epoch, "
          f"{result['source_epochs_per_second']:.3g} source-epochs/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
