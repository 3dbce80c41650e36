#!/usr/bin/env python3
"""Turns the outputs of scripts/gpu-check into bench/results/<date>-<device>.md and .json.

usage: gpu_report.py WORK_DIR COMMIT RESULTS_DIR
"""
import datetime
import json
import os
import re
import shutil
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def main() -> int:
    work, commit, results = sys.argv[1], sys.argv[2], sys.argv[3]
    now = datetime.datetime.now(datetime.timezone.utc)
    steps = []
    for line in read(os.path.join(work, "steps.txt")).splitlines():
        name, rc, secs = line.split()
        steps.append({"step": name, "exit_code": int(rc), "seconds": int(secs)})
    gpu = read(os.path.join(work, "gpu.txt")).strip()
    bench = load(os.path.join(work, "bench-gpu.json")) or {}
    torch8 = load(os.path.join(work, "pytorch.json"))
    torch7 = load(os.path.join(work, "pytorch-1e7.json"))
    cli_cuda = load(os.path.join(work, "cli-cuda.json"))
    cli_cpu = load(os.path.join(work, "cli-cpu.json"))
    tests = load(os.path.join(work, "gpu-tests.json")) or {}
    sanitizers = {}
    for tool in ("memcheck", "racecheck"):
        m = re.findall(r"ERROR SUMMARY: (\d+) error", read(os.path.join(work, tool + ".log")))
        sanitizers[tool] = {"error_summaries": [int(x) for x in m],
                            "clean": bool(m) and all(int(x) == 0 for x in m)}

    def wide(model, n, frac):
        for w in bench.get("wide", []):
            if w["model"] == model and w["n"] == n and abs(w["budget_fraction"] - frac) < 1e-12:
                return w
        return None

    target = wide("deterministic", 100000000, 0.01)
    speedup = None
    if target and torch8 and "ms_per_epoch" in target:
        speedup = torch8["ms_per_epoch"] / target["ms_per_epoch"]
    summary = {
        "date_utc": now.isoformat(timespec="seconds"),
        "commit": commit,
        "nvidia_smi": gpu,
        "device": bench.get("device", ""),
        "steps": steps,
        "gpu_tests": {k: tests.get(k) for k in ("tests", "failures", "disabled", "errors")},
        "sanitizers": sanitizers,
        "wide": bench.get("wide", []),
        "tall": bench.get("tall", []),
        "pytorch_1e8": torch8,
        "pytorch_1e7": torch7,
        "cli_cuda_1e7": cli_cuda["policies"][0] if cli_cuda else None,
        "cli_cpu_1e7": cli_cpu["policies"][0] if cli_cpu else None,
        "targets": {
            "epoch_ms_at_1e8_1e6": target.get("ms_per_epoch") if target else None,
            "fraction_of_roofline": target.get("fraction_of_roofline") if target else None,
            "speedup_over_pytorch": speedup,
        },
    }
    slug = re.sub(r"[^A-Za-z0-9]+", "-", (gpu.split(",")[0] if gpu else "gpu")).strip("-").lower()
    base = os.path.join(results, f"{now:%Y-%m-%d}-{slug}")
    os.makedirs(results, exist_ok=True)
    with open(base + ".json", "w") as f:
        json.dump(summary, f, indent=2)

    out = []
    out.append(f"# GPU check: {gpu or 'unknown device'}\n")
    out.append(f"- date (UTC): {summary['date_utc']}\n- commit: {commit}\n"
               f"- device: {summary['device']}\n- produced by `scripts/gpu-check`\n")
    out.append("\n## Steps\n\n| step | exit code | seconds |\n|---|---|---|")
    for s in steps:
        out.append(f"| {s['step']} | {s['exit_code']} | {s['seconds']} |")
    t = summary["gpu_tests"]
    out.append(f"\nGPU tests (REQUIRE_GPU=1): {t.get('tests')} run, {t.get('failures')} failed, "
               f"{t.get('errors')} errors.")
    for tool, s in sanitizers.items():
        out.append(f"compute-sanitizer {tool}: "
                   f"{'clean' if s['clean'] else 'NOT clean'} (error summaries {s['error_summaries']}).")
    out.append("\n## Wide regime: one epoch of the Whittle policy\n")
    out.append("| model | N | M/N | ms/epoch | source-epochs/s | GB/s | copy roofline ms | of roofline |")
    out.append("|---|---|---|---|---|---|---|---|")
    for w in summary["wide"]:
        if "skipped" in w:
            out.append(f"| {w['model']} | {w['n']:.0e} | {100*w['budget_fraction']:g}% | skipped: "
                       f"{w['skipped']} | | | | |")
            continue
        out.append(f"| {w['model']} | {w['n']:.0e} | {100*w['budget_fraction']:g}% | "
                   f"{w['ms_per_epoch']:.3f} | {w['source_epochs_per_second']:.3g} | "
                   f"{w['achieved_gb_per_second']:.0f} | {w['copy_roofline_ms']:.3f} | "
                   f"{100*w['fraction_of_roofline']:.0f}% |")
    out.append("\n## Tall regime: the 4-source example, one thread per replication\n")
    out.append("| model | replications | epochs | seconds | replications/s |")
    out.append("|---|---|---|---|---|")
    for r in summary["tall"]:
        out.append(f"| {r['model']} | {r['replications']} | {r['epochs']} | {r['seconds']:.3f} | "
                   f"{r['replications_per_second']:.4g} |")
    out.append("\n## Baselines on the same host\n")
    for name, p in (("eager PyTorch, N=1e8, M=1e6", torch8), ("eager PyTorch, N=1e7, M=1e5", torch7)):
        if p:
            out.append(f"- {name} ({p['dtype']}, torch {p['torch']}): {p['ms_per_epoch']:.3f} ms/epoch, "
                       f"{p['source_epochs_per_second']:.3g} source-epochs/s")
    for name, p in (("crawleval CLI, cuda backend, N=1e7, M=1e5", summary["cli_cuda_1e7"]),
                    ("crawleval CLI, cpu backend, N=1e7, M=1e5", summary["cli_cpu_1e7"])):
        if p:
            out.append(f"- {name}: {p['source_epochs_per_second']:.3g} source-epochs/s "
                       f"(mean reward {p['mean_reward']:.6g})")
    tg = summary["targets"]
    out.append("\n## Targets (deterministic, N = 1e8, M = 1e6)\n")
    if tg["epoch_ms_at_1e8_1e6"] is not None:
        out.append(f"- one epoch: {tg['epoch_ms_at_1e8_1e6']:.3f} ms (target <= 2 ms)")
        out.append(f"- fraction of the copy roofline: {100*tg['fraction_of_roofline']:.0f}% (target >= 50%)")
    if speedup:
        out.append(f"- speed-up over eager PyTorch: {speedup:.1f}x (target >= 5x)")
    with open(base + ".md", "w") as f:
        f.write("\n".join(out) + "\n")
    shutil.copy(base + ".md", os.path.join(results, "latest-gpu-check.md"))
    shutil.copy(base + ".json", os.path.join(results, "latest-gpu-check.json"))
    print(f"wrote {base}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
