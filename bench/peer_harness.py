"""What the Python peers (numba_peer.py, numpy_peer.py, torch_peer.py) share: the inputs that
`bench_cpu --dump N EPOCHS DIR [BURN_IN]` wrote (alpha, u, x0 and crawleval's reward in each
measured epoch; M = N / 100, fresh start, the burn-in in meta.json: 300 epochs, the steady state,
unless told) and the rule that a peer is timed only after its reward in every measured epoch
matched crawleval's to 1e-9."""
import argparse
import json
import os
import sys
import time

import numpy as np

ETA_CAP = (1 << 29) - 16  # the age at which crawleval's grid word saturates


def arguments(doc, threads=True):
    """DIR (bench_cpu --dump's folder) and, for a threaded peer, --threads (default 2)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("dir")
    if threads:
        ap.add_argument("--threads", type=int, default=2)
    return ap.parse_args()


class Dump:
    def __init__(self, directory):
        load = lambda name: np.fromfile(os.path.join(directory, name))
        self.alpha, self.u, self.x0 = load("alpha.f64"), load("u.f64"), load("x0.f64")
        self.expected = load("rewards.f64")
        self.n, self.epochs = self.alpha.shape[0], self.expected.shape[0]
        self.m = max(1, self.n // 100)
        meta = os.path.join(directory, "meta.json")
        self.burn_in = json.load(open(meta))["burn_in"] if os.path.exists(meta) else 3


def check_then_time(name, dump, start, epoch, **extra):
    """start() -> a fresh state; epoch(state) -> that epoch's reward. Runs burn-in + epochs epochs
    twice (the first also warms up a JIT), checks the first run's rewards, times the second's
    measured epochs and prints one JSON line with `<name>_ms` per epoch. Returns the exit code."""
    burn_in = dump.burn_in

    def run():
        state, rewards, t0 = start(), [], 0.0
        for t in range(burn_in + dump.epochs):
            if t == burn_in:
                t0 = time.perf_counter()
            rewards.append(float(epoch(state)))
        return np.array(rewards[burn_in:]), (time.perf_counter() - t0) / dump.epochs

    got, _ = run()
    worst = float(np.max(np.abs(got - dump.expected) / np.maximum(np.abs(dump.expected), 1e-300)))
    if not worst <= 1e-9:
        print(f"{name}_peer: rewards differ from crawleval's ({worst:.3g} relative)",
              file=sys.stderr)
        return 1
    _, seconds = run()
    print(json.dumps({"n": dump.n, f"{name}_ms": 1e3 * seconds, **extra,
                      "checked_relative_error": worst}))
    return 0
