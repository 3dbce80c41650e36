#!/usr/bin/env python3
"""Turns the archives of scripts/gpu-check (one NAME.tar per call on the GPU machine) into
bench/results/<date>-<device>.md and .json: steps with their expected and actual times, tests,
sanitizers, every benchmark figure, the ncu counters of the epoch kernel, and the targets of
docs/gpu-design.md. An output directory of an older gpu-check (loose files) is read too.

usage: gpu_report.py RESULTS_DIR ARCHIVE_OR_DIR [ARCHIVE_OR_DIR...]
"""
import csv
import datetime
import io
import json
import os
import re
import sys
import tarfile


class Source:
    """The files of one call: an archive's members (a later member of the same name replaces an
    earlier one, as tar -x would), a directory's files, or a directory holding archives."""

    def __init__(self, path):
        self.path = path
        self.files = {}
        if os.path.isdir(path):
            tars = sorted(f for f in os.listdir(path) if f.endswith(".tar"))
            for t in tars:
                self._read_tar(os.path.join(path, t))
            for f in os.listdir(path):
                full = os.path.join(path, f)
                if os.path.isfile(full) and not f.endswith(".tar"):
                    with open(full, "rb") as fh:
                        self.files[f] = fh.read()
        else:
            self._read_tar(path)

    def _read_tar(self, path):
        try:
            with tarfile.open(path) as t:
                for m in t.getmembers():
                    if m.isfile():
                        self.files[os.path.basename(m.name)] = t.extractfile(m).read()
        except (OSError, tarfile.TarError) as e:
            print(f"gpu_report: {path}: {e}", file=sys.stderr)

    def text(self, name):
        b = self.files.get(name)
        return b.decode("utf-8", "replace") if b is not None else ""

    def json(self, name):
        try:
            return json.loads(self.text(name)) if name in self.files else None
        except ValueError:
            return None


def fmt(v, f):
    return "not measured" if v is None else f.format(v)


def first(sources, name, parse="json"):
    for s in sources:
        v = s.json(name) if parse == "json" else s.text(name)
        if v:
            return v
    return None


def ncu_metrics(text):
    """Nsight Compute's --csv output: {metric: [values over the profiled launches]}."""
    start = text.find('"ID"')
    if start < 0:
        return {}
    out = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        name, value = row.get("Metric Name"), row.get("Metric Value", "").replace(",", "")
        try:
            out.setdefault(name, []).append(float(value))
        except ValueError:
            pass
    return out


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    results, sources = sys.argv[1], [Source(p) for p in sys.argv[2:]]
    steps = []
    for src in sources:
        for name in [n for n in src.files if n.startswith("step-") and n.endswith(".txt")]:
            for line in src.text(name).splitlines():
                f = line.split()
                if len(f) < 3:
                    continue
                steps.append({"call": os.path.basename(src.path), "step": f[0],
                              "exit_code": int(f[1]) if f[1].lstrip("-").isdigit() else f[1],
                              "seconds": int(f[2]),
                              "expected_seconds": int(f[3]) if len(f) > 3 else None,
                              "limit_seconds": int(f[4]) if len(f) > 4 else None})
        for line in src.text("steps.txt").splitlines():  # an older gpu-check's list
            f = line.split()
            if len(f) == 3:
                steps.append({"call": os.path.basename(src.path), "step": f[0],
                              "exit_code": int(f[1]), "seconds": int(f[2])})
    dry = any(s.text("call.txt").find("dry_run 1") >= 0 for s in sources)
    gpu = (first(sources, "gpu.txt", "text") or "").strip()
    commit = (first(sources, "commit.txt", "text") or "unknown").strip()
    # Each call's own commit (calls of one session may come from successive commits).
    commits = {os.path.basename(s.path): s.text("commit.txt").strip() or "unknown" for s in sources}
    if len(set(commits.values())) > 1:
        commit = ", ".join(f"{c} ({name})" for name, c in commits.items())
    date = (first(sources, "date.txt", "text") or "").strip() or \
        datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    bench = first(sources, "bench-gpu.json") or {}
    torch8 = first(sources, "pytorch.json")
    torch7 = first(sources, "pytorch-1e7.json")
    cli_cuda = first(sources, "cli-cuda.json")
    cli_cpu = first(sources, "cli-cpu.json")
    fresh_cuda = first(sources, "fresh-cuda.json")
    fresh_cpu = first(sources, "fresh-cpu.json")
    fresh7_cuda = first(sources, "fresh7-cuda.json")
    fresh7_cpu = first(sources, "fresh7-cpu.json")
    tests = first(sources, "gpu-tests.json") or {}
    ncu = ncu_metrics(first(sources, "ncu.csv", "text") or "")
    sanitizers = {}
    for tool in ("memcheck", "racecheck", "initcheck", "synccheck"):
        log = first(sources, tool + ".log", "text") or ""
        # racecheck ends with "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)",
        # the other tools with "ERROR SUMMARY: E errors".
        m = [int(x) for x in re.findall(r"ERROR SUMMARY: (\d+) error", log)] + \
            [int(e) + int(w) for e, w in
             re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)", log)]
        ran = any(s["step"] == tool and s["exit_code"] != "skipped" for s in steps) and not dry
        sanitizers[tool] = {"ran": ran, "error_summaries": m,
                            "clean": ran and bool(m) and all(x == 0 for x in m)}
    epoch_ncu = None
    if ncu.get("gpu__time_duration.sum"):
        n = 1e8  # the ncu step profiles bench_gpu --case deterministic:unit:1e8:0.01

        def mean(k):
            v = ncu.get(k)
            return sum(v) / len(v) if v else None

        t_ns = mean("gpu__time_duration.sum")
        rd, wr, inst = (mean("dram__bytes_read.sum"), mean("dram__bytes_write.sum"),
                        mean("smsp__inst_executed.sum"))
        epoch_ncu = {"n": n, "ms": t_ns / 1e6 if t_ns else None,
                     "dram_bytes_per_source": (rd + wr) / n if rd is not None and wr is not None else None,
                     "dram_gb_per_second": (rd + wr) / t_ns if rd is not None and wr is not None and t_ns else None,
                     "warp_instructions_per_source": inst / n if inst else None,
                     "thread_instructions_per_source": 32 * inst / n if inst else None,
                     "warps_active_pct": mean("sm__warps_active.avg.pct_of_peak_sustained_active")}

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
        "dry_run": dry,
        "ncu_epoch_kernel": epoch_ncu,
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
        "fresh_cuda_1e7": fresh7_cuda.get("policies") if fresh7_cuda else None,
        "fresh_cpu_1e7": fresh7_cpu.get("policies") if fresh7_cpu else None,
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
           "\n## Steps\n\n| call | step | exit code | seconds | expected | limit |\n|---|---|---|---|---|---|"]
    out += [f"| {s['call']} | {s['step']} | {s['exit_code']} | {s['seconds']} | "
            f"{s.get('expected_seconds') or ''} | {s.get('limit_seconds') or ''} |" for s in steps]
    if dry:
        out.insert(1, "**A dry run: no step ran on a GPU; every figure below is absent.**\n")
    t = summary["gpu_tests"]
    out.append(f"\nGPU tests (REQUIRE_GPU=1): {t.get('tests')} run, {t.get('failures')} failed, "
               f"{t.get('errors')} errors.\n")
    for tool, s in sanitizers.items():
        state = "not run" if not s["ran"] else ("clean" if s["clean"] else "NOT clean")
        out.append(f"- compute-sanitizer {tool}: {state} (error summaries {s['error_summaries']})")
    out.append("\n## Wide regime: one epoch of the Whittle policy (after the burn-in)\n")
    out.append("Bytes moved: counted per source and epoch from the engine's counters (the pass, the "
               "fallback passes of window misses, the listed candidates); datasheet ms: those bytes "
               "at the device's datasheet bandwidth.\n")
    out.append("| model | costs | N | M/N | burn-in | ms/epoch | GB/s | copy roofline ms | of roofline | "
               "bytes moved | datasheet ms | launches | syncs | misses | levels/epoch |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for w in summary["wide"]:
        head = f"| {w['model']} | {w.get('costs', 'unit')} | {w['n']:.0e} | {100 * w['budget_fraction']:g}% |"
        if "skipped" in w or "error" in w:
            why = f"skipped: {w['skipped']}" if "skipped" in w else f"FAILED: {w['error']}"
            out.append(f"{head} {why} | | | | | | | | | | |")
            continue
        moved = w.get("bytes_moved_per_source")
        datasheet = w.get("expected_ms_at_datasheet", w.get("expected_ms_at_3_35_tbps"))
        out.append(f"{head} {w.get('burn_in', 'n/a')} | {w['ms_per_epoch']:.3f} | "
                   f"{w['achieved_gb_per_second']:.0f} | "
                   f"{w['copy_roofline_ms']:.3f} | {100 * w['fraction_of_roofline']:.0f}% | "
                   f"{fmt(moved, '{:.1f}')} | {fmt(datasheet, '{:.3f}')} | "
                   f"{w['launches_per_epoch']} | "
                   f"{w['syncs_per_epoch']:.2f} | {w['window_misses']} | "
                   f"{w['levels_per_epoch']:.2f} |")
    if epoch_ncu:
        e = epoch_ncu
        out.append("\n## Nsight Compute: the deterministic epoch kernel, N = 1e8, M = 1e6\n")
        out.append(f"- {fmt(e['ms'], '{:.3f}')} ms per launch, "
                   f"{fmt(e['dram_bytes_per_source'], '{:.1f}')} DRAM bytes per source "
                   f"({fmt(e['dram_gb_per_second'], '{:.0f}')} GB/s), "
                   f"{fmt(e['thread_instructions_per_source'], '{:.0f}')} instructions per source "
                   f"(warp instructions x 32 / N), "
                   f"{fmt(e['warps_active_pct'], '{:.0f}')}% of peak warps active")
    out.append("\n## Tall regime: the 4-source example, one thread per replication\n")
    out.append("| model | replications | epochs | seconds | source-epochs/s |\n|---|---|---|---|---|")
    for r in summary["tall"]:
        if "error" in r:
            out.append(f"| {r['model']} | {r['replications']} | | FAILED: {r['error']} | |")
            continue
        out.append(f"| {r['model']} | {r['replications']} | {r['epochs']} | {r['seconds']:.3f} | "
                   f"{r['source_epochs_per_second']:.4g} |")
    out.append("\n## Baselines on the same machine\n")
    for name, p in (("eager PyTorch, N=1e8, M=1e6", torch8), ("eager PyTorch, N=1e7, M=1e5", torch7)):
        if p:
            c = p.get("check_against_crawleval")
            checked = (f"; checked against crawleval's rewards over {c['epochs_compared']} epochs: "
                       f"largest relative difference {c['max_relative_difference']:.2e}, "
                       f"{'passed' if c['passed'] else 'FAILED'}") if c else "; not checked"
            out.append(f"- {name} ({p['dtype']}, torch {p['torch']}): {p['ms_per_epoch']:.3f} "
                       f"ms/epoch, {p['source_epochs_per_second']:.3g} source-epochs/s{checked}")
    for name, p in (("crawleval CLI, cuda backend, N=1e7, M=1e5", summary["cli_cuda_1e7"]),
                    ("crawleval CLI, cpu backend, N=1e7, M=1e5", summary["cli_cpu_1e7"])):
        if p:
            out.append(f"- {name}: {p['source_epochs_per_second']:.3g} source-epochs/s "
                       f"(mean reward {p['mean_reward']:.6g})")
    # The same problem on both backends (the same epochs, burn-in and seed): the rewards agree.
    cc, cp = summary["cli_cuda_1e7"], summary["cli_cpu_1e7"]
    if cc and cp and cp.get("mean_reward"):
        rel = abs(cc["mean_reward"] - cp["mean_reward"]) / abs(cp["mean_reward"])
        summary["cli_relative_difference"] = rel
        out.append(f"- cuda against cpu on the same run: mean rewards differ by {rel:.2e} "
                   f"(relative); cuda {cc['source_epochs_per_second'] / cp['source_epochs_per_second']:.1f}x "
                   f"the cpu backend's source-epochs per second")
    for name, rs, epochs in (("freshness model, cuda backend, N=1e6, host cap 2",
                              summary["fresh_cuda_1e6"], 55),
                             ("freshness model, cpu backend, N=1e6, host cap 2",
                              summary["fresh_cpu_1e6"], 55),
                             ("freshness model, cuda backend, N=1e7, host cap 2",
                              summary["fresh_cuda_1e7"], 25),
                             ("freshness model, cpu backend, N=1e7, host cap 2",
                              summary["fresh_cpu_1e7"], 25)):
        for r in rs or []:
            m = r.get("metrics", r)
            out.append(f"- {name}, {r.get('name', r.get('policy'))}: "
                       f"{1e3 * r['seconds'] / epochs:.3f} ms/epoch with the set-up "
                       f"(harmonic penalty {m['harmonic_penalty']['mean']:.6g}, freshness "
                       f"{m['freshness']['mean']:.6g})")
    tg = summary["targets"]

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
    with open(base + ".json", "w") as f:  # again, with what the tables derived
        json.dump(summary, f, indent=2)
    print(f"wrote {base}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
