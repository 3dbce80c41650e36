#!/usr/bin/env python3
"""The freshness schedulers compared (docs/freshness.md's report).

Runs `crawleval fresh run` on a synthetic population with the PoliteCrawling dataset's shape, for
both objectives, without and with per-host politeness caps, and with the rates learned online;
writes the JSON of every run and a Markdown table with each policy's gap to the bound.

    python3 bench/fresh_compare.py --bin build/crawleval --n 100000 \
        --out bench/results/2026-11-23-fresh-compare

The same comparison on the real dataset (after downloading it):

    crawleval import politecrawling PoliteCrawling/ --out politecrawling.csv
    python3 bench/fresh_compare.py --population politecrawling.csv --out results/politecrawling
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

POLICIES = "index,lambda-crawl,lambda-crawl-approx,binary-lambda-crawl,uniform,proportional"


def run(args, extra, label, out_prefix):
    path = f"{out_prefix}-{label}.json"
    source = ["-p", args.population] if args.population else ["--synthetic", str(args.n)]
    cmd = [args.bin, "fresh", "run", *source, "--budget-fraction", str(args.budget_fraction),
           "--policy", POLICIES, "--json", path, "--no-progress", *extra]
    started = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        result = json.load(f)
    result["wall_seconds"] = time.time() - started
    result["command_line"] = " ".join(cmd)
    return label, result


def _hw(summary):
    h = summary.get("ci95_half_width")
    return "n/a" if h is None else f"{h:.4f}"


def table(label, result):
    s = result["parameters"]
    # The bound on the objective as a reward: for the harmonic penalty, minus its lower bound.
    bound = (result.get("bound") or {}).get("value")
    if bound is not None and s["objective"] == "harmonic":
        bound = -bound
    objective = s["objective"]
    lines = [f"#### {label}: objective {objective}, host cap {s['host_cap'] or 'none'}, "
             f"{s['start']} start, {s['burn_in']} burn-in + {s['epochs']} epochs"
             + (", rates learned online" if s.get("learn") else ""), "",
             "| policy | burn-in | fresh | harmonic penalty | closed-form penalty (Poisson crawls) | "
             "gap to bound |", "|---|---|---|---|---|---|"]
    for r in result["policies"]:
        m = r["metrics"]
        f, p = m["freshness"], m["harmonic_penalty"]
        closed = None if s.get("learn") else (m.get("closed_form") or {}).get("harmonic_penalty")
        gap = r.get("gap_to_bound")
        ref = bound if bound else None
        gap_txt = "-" if gap is None else (
            f"{gap:.4f} ({100 * gap / abs(ref):.1f}%)" if ref else f"{gap:.4f}")
        lines.append(f"| {r['name']} | {r['burn_in']}{' (!)' if r['warm_up']['warning'] else ''} | "
                     f"{f['mean']:.4f} ± {_hw(f)} | {p['mean']:.4f} ± {_hw(p)} | "
                     f"{'-' if closed is None else f'{closed:.4f}'} | {gap_txt} |")
    if bound is not None:
        what = "freshness at most" if objective == "binary" else "harmonic penalty at least"
        # The harmonic bound's note opens with the bound as a reward; the table has it already.
        note = (result["bound"].get("note") or "").split("at most its negative; ")[-1]
        if note.startswith("the harmonic penalty is at least"):
            note = ""
        lines.append(f"\nBound: {what} {bound:.4f}." + (f" {note}." if note else ""))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--bin", default="build/crawleval")
    ap.add_argument("--n", type=int, default=100000, help="synthetic population size")
    ap.add_argument("--population", help="a freshness population CSV instead (the real data)")
    ap.add_argument("--budget-fraction", type=float, default=0.2)
    ap.add_argument("--host-cap", type=int, default=2)
    ap.add_argument("--out", default="bench/results/fresh-compare")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    # Long-run comparisons: the burn-in is measured per policy (MSER-5, --burn-in auto), 500
    # measured epochs. (200 burn-in + 100 epochs left LambdaCrawl's transient under caps in the
    # window.)
    runs = [
        run(args, ["--objective", "harmonic", "--epochs", "500"], "harmonic", args.out),
        run(args, ["--objective", "binary", "--epochs", "500"], "binary", args.out),
        run(args, ["--objective", "harmonic", "--host-cap", str(args.host_cap), "--epochs", "500"],
            "harmonic-polite", args.out),
        # The learning variant against the same run with the rates known, both from a fresh start
        # (the learner has seen nothing yet) over the first 60 epochs.
        run(args, ["--objective", "harmonic", "--learn", "--start", "fresh", "--burn-in", "0",
                   "--epochs", "60", "--no-bound"], "harmonic-learn", args.out),
        run(args, ["--objective", "harmonic", "--start", "fresh", "--burn-in", "0",
                   "--epochs", "60", "--no-bound"], "harmonic-known-rates", args.out),
    ]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    header = (f"# Freshness schedulers compared\n\nPopulation: "
              f"{runs[0][1]['population']['origin']} "
              f"({runs[0][1]['population']['sources']} sources, "
              f"{runs[0][1]['population']['complete']} completely observed, "
              f"{runs[0][1]['population']['on_constrained_hosts']} on constrained hosts); "
              f"budget {args.budget_fraction} x the sources' cost per epoch (1 day).\n"
              f"Machine: {platform.node()} ({os.cpu_count()} CPUs), commit {commit}, "
              f"{time.strftime('%Y-%m-%d')}.\n"
              "fresh: importance-weighted fraction of time fresh (higher is better); penalty: "
              "importance-weighted harmonic staleness, time-averaged (lower is better); ± is the "
              "95% half-width; burn-in: measured per policy (MSER-5), (!) where the run warns (the "
              "learning runs measure the first 60 epochs from a fresh start on purpose).\n")
    md = header + "\n" + "\n\n".join(table(label, r) for label, r in runs) + "\n"
    with open(args.out + ".md", "w") as f:
        f.write(md)
    for _, r in runs:  # the per-epoch series are for plots (crawleval plot); not kept here
        for p in r["policies"]:
            p.pop("reward_series", None)
    with open(args.out + ".json", "w") as f:
        json.dump({"commit": commit, "runs": {label: r for label, r in runs}}, f, indent=1)
    for label, _ in runs:
        os.remove(f"{args.out}-{label}.json")
    sys.stdout.write(md)


if __name__ == "__main__":
    main()
