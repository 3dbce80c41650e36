#!/usr/bin/env python3
"""The CPU backend beside its numpy peer and the machine's stream bandwidth, in one run.

For each N: writes a synthetic population (crawleval generate), runs the deterministic Whittle
policy on it with a vectorised numpy loop (the way one would write it: grid index, argpartition for
the top M, elementwise transitions) and with `crawleval run --backend cpu`, and prints ms per
epoch, the ratio, and the CPU backend's bytes per source against the stream bandwidth that
`bench_cpu --stream` measures on the same machine, in the same run.

Before timing, the numpy loop is checked against crawleval at a small N with an exact sort
(score descending, id ascending): the same mean reward to 1e-9, so both compute the same thing.

crawleval's times are steady-state epochs (a run of E + 1 epochs less a run of one), as the
numpy loop leaves out a warm-up epoch. Then the stochastic model's source-epochs per second, and,
with one core kept busy by another process, the default thread count against --threads 1. The JSON
records the date, commit and CPU.

Usage: bench/cpu_peer.py [--n 1e6 1e7] [--m-frac 0.01] [--epochs 20] [--threads 0]
                         [--stochastic-n 1e6] [--hog-n 1e6] [--build build]
                         [--baseline OTHER_CRAWLEVAL] [--json FILE]
Needs numpy (CRAWLEVAL_WITH_BENCH=1 scripts/setup-deps installs python3-numpy).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:
    # Debian's python3-numpy lives in the system interpreter, which may not be the first python3.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != "/usr/bin/python3" \
            and "CPU_PEER_REEXEC" not in os.environ:
        os.environ["CPU_PEER_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("cpu_peer: numpy is missing (CRAWLEVAL_WITH_BENCH=1 scripts/setup-deps installs it)",
          file=sys.stderr)
    sys.exit(2)

# Bytes per source per epoch the CPU backend's deterministic wide pass moves (docs/cpu-design.md):
# state x (8) and word (4) read and written, alpha and u read; unit costs.
CPU_BYTES_PER_SOURCE = 40


def load(csv):
    cols = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=(1, 2, 3, 4), ndmin=2)
    return cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3]


class NumpyWhittle:
    """Deterministic Whittle policy, T = 1, empty start: state x, age eta and 1 - alpha^eta."""

    def __init__(self, lam, xi, mu, cost):
        self.alpha = np.exp(-mu)
        self.om_alpha = -np.expm1(-mu)
        self.u_star = lam * xi / mu
        self.u = self.u_star * self.om_alpha
        self.inv_c = 1.0 / cost
        n = lam.size
        self.x = np.zeros(n)
        self.eta = np.zeros(n)
        self.om_eta = np.zeros(n)

    def epoch(self, m, exact=False):
        s = (self.u_star * self.om_eta - self.eta * self.om_alpha * (self.u_star - self.x)) * self.inv_c
        if exact:  # the contract's order: score descending, id ascending
            top = np.lexsort((np.arange(s.size), -s))[:m]
        else:
            top = np.argpartition(-s, m - 1)[:m]
        reward = self.x[top].sum()
        self.x = self.alpha * self.x + self.u
        self.x[top] = self.u[top]
        self.om_eta = self.om_alpha + self.alpha * self.om_eta
        self.om_eta[top] = self.om_alpha[top]
        self.eta += 1.0
        self.eta[top] = 1.0
        return reward


def crawleval_run(exe, csv, m, epochs, threads, model="deterministic"):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        # --burn-in 0: the numpy loop's epochs from the empty state (the default burn-in, auto,
        # would measure later epochs than the check's numpy loop runs).
        subprocess.run([exe, "run", "--sources", csv, "--budget", str(m), "--epochs", str(epochs),
                        "--burn-in", "0", "--model", model,
                        "--policy", "whittle", "--backend", "cpu", "--threads", str(threads),
                        "--no-bound", "--no-progress", "--json", out.name],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out.name) as f:
            res = json.load(f)
    pol = res["policies"][0]
    return pol["loop_seconds"] / epochs, pol["mean_reward"]


def crawleval_epoch_seconds(exe, csv, m, epochs, threads, model="deterministic"):
    """Seconds per epoch in the steady state: a run of epochs + 1 less a run of one epoch, so the
    first epoch (first touch of the state arrays, the first plan's fallback pass) is left out as
    the numpy loop's warm-up epoch is."""
    long_s, _ = crawleval_run(exe, csv, m, epochs + 1, threads, model)
    one_s, _ = crawleval_run(exe, csv, m, 1, threads, model)
    return (long_s * (epochs + 1) - one_s) / epochs


def stream_bandwidth(bench, threads):
    out = subprocess.run([bench, "--stream", str(threads)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["triad_gb_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--m-frac", type=float, default=0.01, help="budget M as a fraction of N")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="crawleval --threads (0: all)")
    ap.add_argument("--build", default="build", help="build directory")
    ap.add_argument("--hog-n", type=float, default=1e6,
                    help="N of the run beside a busy process (0: skip)")
    ap.add_argument("--stochastic-n", type=float, default=1e6,
                    help="N for the stochastic model's rate (0: skip)")
    ap.add_argument("--baseline", help="another crawleval executable (an earlier commit's build) "
                    "whose stochastic rate is measured beside this one's")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args()
    exe = os.path.join(args.build, "crawleval")
    bench = os.path.join(args.build, "bench", "bench_cpu")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        def population(n):
            csv = os.path.join(tmp, f"pop{n}.csv")
            subprocess.run([exe, "generate", "--synthetic", str(n), "--seed", "1", "--out", csv],
                           check=True, stdout=subprocess.DEVNULL)
            return csv

        # The peer computes what crawleval computes (exact order, small N).
        n_check, e_check = 20000, 30
        csv = population(n_check)
        m = int(n_check * args.m_frac)
        peer = NumpyWhittle(*load(csv))
        want = np.mean([peer.epoch(m, exact=True) for _ in range(e_check)])
        _, got = crawleval_run(exe, csv, m, e_check, args.threads)
        if abs(got - want) > 1e-9 * abs(want):
            print(f"cpu_peer: numpy {want!r} != crawleval {got!r}", file=sys.stderr)
            return 1
        print(f"check N={n_check}: numpy and crawleval agree (mean reward {got:.10g})")

        bw = stream_bandwidth(bench, args.threads)
        print(f"stream triad: {bw:.1f} GB/s")
        for nf in args.n:
            n = int(nf)
            m = max(1, int(n * args.m_frac))
            csv = population(n)
            peer = NumpyWhittle(*load(csv))
            peer.epoch(m)  # warm-up
            t0 = time.perf_counter()
            for _ in range(args.epochs):
                peer.epoch(m)
            numpy_ms = 1e3 * (time.perf_counter() - t0) / args.epochs
            del peer
            cpu_s = crawleval_epoch_seconds(exe, csv, m, args.epochs, args.threads)
            cpu_ms = 1e3 * cpu_s
            gbs = CPU_BYTES_PER_SOURCE * n / cpu_s / 1e9
            row = dict(n=n, m=m, numpy_ms=numpy_ms, cpu_ms=cpu_ms, ratio=numpy_ms / cpu_ms,
                       bytes_per_source=CPU_BYTES_PER_SOURCE, gb_per_s=gbs,
                       stream_gb_per_s=bw, stream_fraction=gbs / bw)
            rows.append(row)
            print(f"N={n:.0e} M={m}: numpy {numpy_ms:.1f} ms, crawleval {cpu_ms:.2f} ms per epoch "
                  f"-> {row['ratio']:.1f}x; {gbs:.1f} GB/s = {100 * row['stream_fraction']:.0f}% "
                  "of stream")
        # The stochastic model (crawleval alone: the figure is source-epochs per second).
        stochastic = {}
        if args.stochastic_n:
            n = int(args.stochastic_n)
            csv = population(n)
            # Best of 3, alternating with the baseline build when one is given (a shared machine's
            # load moves between runs: the ratio is only fair from runs taken side by side).
            exes = [exe] + ([args.baseline] if args.baseline else [])
            best = {e: float("inf") for e in exes}
            for _ in range(3):
                for e in exes:
                    best[e] = min(best[e], crawleval_epoch_seconds(
                        e, csv, max(1, n // 100), args.epochs, args.threads, model="stochastic"))
            sec = best[exe]
            stochastic = dict(n=n, ms_per_epoch=1e3 * sec, source_epochs_per_s=n / sec)
            print(f"N={n:.0e} stochastic model: {1e3 * sec:.2f} ms per epoch, "
                  f"{n / sec:.3g} source-epochs/s")
            if args.baseline:
                base = best[args.baseline]
                base_commit = subprocess.run(
                    ["git", "-C", os.path.dirname(os.path.abspath(args.baseline)), "rev-parse",
                     "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
                stochastic.update(baseline=args.baseline, baseline_commit=base_commit or None,
                                  baseline_ms_per_epoch=1e3 * base,
                                  baseline_source_epochs_per_s=n / base, speedup=base / sec)
                print(f"  baseline {args.baseline}: {1e3 * base:.2f} ms per epoch -> "
                      f"{base / sec:.2f}x")
        # Under load: one busy process beside the engine, default threads against --threads 1.
        loaded = {}
        if args.hog_n:
            n = int(args.hog_n)
            csv = population(n)
            hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                time.sleep(0.5)
                for threads in (args.threads, 1):
                    best = min(crawleval_epoch_seconds(exe, csv, max(1, n // 100), args.epochs,
                                                       threads) for _ in range(3))
                    loaded[threads] = 1e3 * best
            finally:
                hog.kill()
            print(f"N={n:.0e} with one core busy: default threads {loaded[args.threads]:.2f} ms, "
                  f"--threads 1 {loaded[1]:.2f} ms per epoch (best of 3)")
    if args.json:
        with open(args.json, "w") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                        if line.startswith("model name")), "unknown")
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            json.dump(dict(date=time.strftime("%Y-%m-%d"), commit=commit, cpu=cpu,
                           cores=os.cpu_count(), stream_gb_per_s=bw, rows=rows,
                           stochastic=stochastic,
                           loaded_ms={str(k): v for k, v in loaded.items()}), f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
