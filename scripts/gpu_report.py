#!/usr/bin/env python3
"""Turns the output directories of scripts/gpu-check (one per call on the GPU machine) into
bench/results/<date>-<device>.md and .json: steps, tests, sanitizers, every benchmark figure, and
the targets of docs/gpu-design.md.

usage: gpu_report.py RESULTS_DIR OUT_DIR [OUT_DIR...]
"""
import datetime
import json
import os
import re
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


def first(dirs, name, parse=load):
    for d in dirs:
        v = parse(os.path.join(d, name))
        if v:
            return v
    return None


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    results, dirs = sys.argv[1], sys.argv[2:]
    steps = []
    for d in dirs:
        for line in read(os.path.join(d, "steps.txt")).splitlines():
            name, rc, secs = line.split()
            steps.append({"step": name, "exit_code": int(rc), "seconds": int(secs)})
    gpu = (first(dirs, "gpu.txt", read) or "").strip()
    commit = (first(dirs, "commit.txt", read) or "unknown").strip()
    date = (first(dirs, "date.txt", read) or "").strip() or \
        datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    bench = first(dirs, "bench-gpu.json") or {}
    torch8 = first(dirs, "pytorch.json")
    torch7 = first(dirs, "pytorch-1e7.json")
    cli_cuda = first(dirs, "cli-cuda.json")
    cli_cpu = first(dirs, "cli-cpu.json")
    fresh_cuda = first(dirs, "fresh-cuda.json")
    fresh_cpu = first(dirs, "fresh-cpu.json")
    tests = first(dirs, "gpu-tests.json") or {}
    sanitizers = {}
    for tool in ("memcheck", "racecheck", "initcheck", "synccheck"):
        log = first(dirs, tool + ".log", read) or ""
        m = [int(x) for x in re.findall(r"ERROR SUMMARY: (\d+) error", log)]
        ran = any(s["step"] == tool for s in steps)
        sanitizers[tool] = {"ran": ran, "error_summaries": m,
                            "clean": ran and bool(m) and all(x == 0 for x in m)}

    def wide(model, n, frac, costs="unit"):
        for w in bench.get("wide", []):
            if (w["model"] == model and w["n"] == n and abs(w["budget_fraction"] - frac) < 1e-12
                    and w.get("costs", "unit") == costs and "ms_per_epoch" in w):
                return w
        return None

    det = wide("deterministic", 100000000, 0.01)
    sto = wide("stochastic", 100000000, 0.1)
    speedup = torch8["ms_per_epoch"] / det["ms_per_epoch"] if det and torch8 else None
    tall = max((t.get("source_epochs_per_second", 0) for t in bench.get("tall", [])), default=None)
    billion = [w for w in bench.get("wide", []) if w["n"] >= 1000000000]
    summary = {
        "date_utc": date,
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
        # The shared run/fresh-run schema ("policies", "metrics"); older results said "results".
        "fresh_cuda_1e6": (fresh_cuda.get("policies") or fresh_cuda.get("results")) if fresh_cuda else None,
        "fresh_cpu_1e6": (fresh_cpu.get("policies") or fresh_cpu.get("results")) if fresh_cpu else None,
        "targets": {
            "deterministic_ms_at_1e8_1e6": det.get("ms_per_epoch") if det else None,
            "deterministic_fraction_of_roofline": det.get("fraction_of_roofline") if det else None,
            "speedup_over_pytorch": speedup,
            "stochastic_ms_at_1e8_10pct": sto.get("ms_per_epoch") if sto else None,
            "n_1e9_ran": any("ms_per_epoch" in w for w in billion) if billion else None,
            "tall_source_epochs_per_second": tall,
        },
    }
    name = gpu.split(",")[0] if gpu and "nvidia-smi" not in gpu else "unknown-gpu"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()
    base = os.path.join(results, f"{date[:10]}-{slug}")
    os.makedirs(results, exist_ok=True)
    with open(base + ".json", "w") as f:
        json.dump(summary, f, indent=2)

    out = [f"# GPU check: {gpu or 'unknown device'}\n",
           f"- date (UTC): {date}\n- commit: {commit}\n- device: {summary['device']}\n"
           f"- produced by `scripts/gpu-check` and `scripts/gpu_report.py`\n",
           "\n## Steps\n\n| step | exit code | seconds |\n|---|---|---|"]
    out += [f"| {s['step']} | {s['exit_code']} | {s['seconds']} |" for s in steps]
    t = summary["gpu_tests"]
    out.append(f"\nGPU tests (REQUIRE_GPU=1): {t.get('tests')} run, {t.get('failures')} failed, "
               f"{t.get('errors')} errors.\n")
    for tool, s in sanitizers.items():
        state = "not run" if not s["ran"] else ("clean" if s["clean"] else "NOT clean")
        out.append(f"- compute-sanitizer {tool}: {state} (error summaries {s['error_summaries']})")
    out.append("\n## Wide regime: one epoch of the Whittle policy (after the burn-in)\n")
    out.append("| model | costs | N | M/N | ms/epoch | GB/s | copy roofline ms | of roofline | "
               "3.35 TB/s ms | launches | syncs | misses | levels/epoch |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for w in summary["wide"]:
        head = f"| {w['model']} | {w.get('costs', 'unit')} | {w['n']:.0e} | {100 * w['budget_fraction']:g}% |"
        if "skipped" in w:
            out.append(f"{head} skipped: {w['skipped']} | | | | | | | | |")
            continue
        out.append(f"{head} {w['ms_per_epoch']:.3f} | {w['achieved_gb_per_second']:.0f} | "
                   f"{w['copy_roofline_ms']:.3f} | {100 * w['fraction_of_roofline']:.0f}% | "
                   f"{w['expected_ms_at_3_35_tbps']:.3f} | {w['launches_per_epoch']} | "
                   f"{w['syncs_per_epoch']:.2f} | {w['window_misses']} | "
                   f"{w['levels_per_epoch']:.2f} |")
    out.append("\n## Tall regime: the 4-source example, one thread per replication\n")
    out.append("| model | replications | epochs | seconds | source-epochs/s |\n|---|---|---|---|---|")
    for r in summary["tall"]:
        out.append(f"| {r['model']} | {r['replications']} | {r['epochs']} | {r['seconds']:.3f} | "
                   f"{r['source_epochs_per_second']:.4g} |")
    out.append("\n## Baselines on the same machine\n")
    for name, p in (("eager PyTorch, N=1e8, M=1e6", torch8), ("eager PyTorch, N=1e7, M=1e5", torch7)):
        if p:
            out.append(f"- {name} ({p['dtype']}, torch {p['torch']}): {p['ms_per_epoch']:.3f} "
                       f"ms/epoch, {p['source_epochs_per_second']:.3g} source-epochs/s")
    for name, p in (("crawleval CLI, cuda backend, N=1e7, M=1e5", summary["cli_cuda_1e7"]),
                    ("crawleval CLI, cpu backend, N=1e7, M=1e5", summary["cli_cpu_1e7"])):
        if p:
            out.append(f"- {name}: {p['source_epochs_per_second']:.3g} source-epochs/s "
                       f"(mean reward {p['mean_reward']:.6g})")
    for name, rs, epochs in (("freshness model, cuda backend, N=1e6, host cap 2",
                              summary["fresh_cuda_1e6"], 55),
                             ("freshness model, cpu backend, N=1e6, host cap 2",
                              summary["fresh_cpu_1e6"], 10)):
        for r in rs or []:
            m = r.get("metrics", r)
            out.append(f"- {name}, {r.get('name', r.get('policy'))}: "
                       f"{1e3 * r['seconds'] / epochs:.3f} ms/epoch "
                       f"(harmonic penalty {m['harmonic_penalty']['mean']:.6g}, freshness "
                       f"{m['freshness']['mean']:.6g})")
    tg = summary["targets"]

    def fmt(v, f):
        return "not measured" if v is None else f.format(v)

    out.append("\n## Targets\n")
    out.append(f"- deterministic, N = 1e8, M = 1e6: "
               f"{fmt(tg['deterministic_ms_at_1e8_1e6'], '{:.3f} ms')} per epoch (target <= 1.0 ms), "
               f"{fmt(tg['deterministic_fraction_of_roofline'] and 100 * tg['deterministic_fraction_of_roofline'], '{:.0f}%')} "
               f"of the copy roofline (target >= 70%), "
               f"{fmt(speedup, '{:.1f}x')} eager PyTorch (target >= 6x)")
    out.append(f"- stochastic, N = 1e8, M/N = 10%: "
               f"{fmt(tg['stochastic_ms_at_1e8_10pct'], '{:.3f} ms')} per epoch (target <= 2.5 ms)")
    out.append(f"- N = 1e9 on one GPU: {fmt(tg['n_1e9_ran'], '{}')}")
    out.append(f"- tall regime: {fmt(tall, '{:.3g}')} source-epochs/s (target >= 1e10)")
    with open(base + ".md", "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {base}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
