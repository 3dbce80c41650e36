#!/usr/bin/env python3
"""CPU time per epoch of two crawleval binaries, interleaved: a comparison that a shared machine's
load disturbs less than wall time does.

For each N and binary, runs `crawleval run --synthetic N -M N/100 --policy whittle --backend cpu
--model MODEL --start fresh --no-bound -B BURN_IN` (300 by default: the steady state) twice, with H1 and H2
measured epochs, on --threads threads (1 by
default: on a loaded machine a second thread waits for its peer, which wall time counts and CPU
time does not), and reports the difference of the two runs' CPU times (user + system, from
getrusage of the child) over H2 - H1: the CPU time of one epoch, the set-up left out. The two
binaries alternate within each round; the load average is recorded with every figure. The rewards
of the two binaries' runs must agree (the script fails otherwise).

Usage: bench/cpu_time_ab.py BASE_BINARY NEW_BINARY [--n 1e5 1e6 1e7] [--rounds 3] [--threads 1]
                            [--burn-in 300] [--model deterministic stochastic] [--json FILE]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

EPOCHS = {100000: (100, 3100), 1000000: (20, 420), 10000000: (5, 45)}


def cpu_seconds(binary, n, epochs, threads, burn_in, model):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([binary, "run", "--synthetic", str(n), "-M", str(max(1, n // 100)), "-H",
                        str(epochs), "-B", str(burn_in), "--policy", "whittle", "--backend", "cpu",
                        "--threads", str(threads), "--no-bound", "--no-progress", "--start",
                        "fresh", "--model", model, "--json", out.name], check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(out.name) as f:
            reward = json.load(f)["policies"][0]["mean_reward"]
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, reward


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--n", nargs="+", default=["1e5", "1e6", "1e7"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--burn-in", type=int, default=300)
    ap.add_argument("--model", nargs="+", default=["deterministic"],
                    choices=["deterministic", "stochastic"])
    ap.add_argument("--json")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.n]
    rows = []
    for rnd in range(args.rounds):
        for model, n in [(m, n) for m in args.model for n in sizes]:
            h1, h2 = EPOCHS.get(n, (5, 45))
            row = {"round": rnd, "model": model, "n": n, "epochs": [h1, h2],
                   "load": os.getloadavg()[0]}
            rewards = {}
            for name in ("base", "new"):
                binary = getattr(args, name)
                a, _ = cpu_seconds(binary, n, h1, args.threads, args.burn_in, model)
                b, reward = cpu_seconds(binary, n, h2, args.threads, args.burn_in, model)
                row[name + "_cpu_ms_per_epoch"] = round(1e3 * (b - a) / (h2 - h1), 4)
                rewards[name] = reward
            if rewards["base"] != rewards["new"]:
                sys.exit(f"the two binaries' rewards differ ({model}, n {n}): {rewards}")
            row["load_after"] = os.getloadavg()[0]
            row["ratio"] = round(row["new_cpu_ms_per_epoch"] / row["base_cpu_ms_per_epoch"], 4)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "base": args.base, "new": args.new, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
