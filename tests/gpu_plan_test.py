#!/usr/bin/env python3
"""The GPU validation plan, checked without a GPU (ctest gpu_plan).

docs/testing.md ("Validating and benchmarking on a GPU") gives the device calls; they must fit
the device machine's limits (a lease of 15 device-minutes with the machine's start: at most two
back-to-back calls whose budgets sum to at most 660 s, each command at most 10 minutes, at most 8
files back per call) and produce what scripts/gpu_report.py needs. This runs those calls
through scripts/gpu-check with every GPU program stubbed (the test binary, bench_gpu, the CLI,
compute-sanitizer, ncu, PyTorch's python3), then the report on their archives, and checks the
figures it derives from the stubs' numbers; then the same calls as --dry-run, and a call whose
budget is too small (every step skipped and said so).

usage: gpu_plan_test.py REPO_ROOT TMP_DIR
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile

CALL_LIMIT_S = 10 * 60
# The machine's start (1-2 minutes), the transfers and the warm wait between the calls count too:
# 660 s of commands in a 15-minute lease.
TOTAL_LIMIT_S = 660
MAX_CALLS = 2
MAX_FILES_PER_CALL = 8

STUBS = {
    # The GPU test binary: a gtest JSON report where asked.
    "crawleval_gpu_tests": r'''#!/usr/bin/env python3
import sys
for a in sys.argv[1:]:
    if a.startswith("--gtest_output=json:"):
        open(a.split(":", 1)[1], "w").write('{"tests": 41, "failures": 0, "disabled": 0, "errors": 0}')
print("[  PASSED  ] 41 tests.")
''',
    # The conformance matrix's CUDA cells: a gtest JSON report where asked.
    "crawleval_conformance_tests": r'''#!/usr/bin/env python3
import sys
for a in sys.argv[1:]:
    if a.startswith("--gtest_output=json:"):
        open(a.split(":", 1)[1], "w").write('{"tests": 1, "failures": 0, "disabled": 0, "errors": 0}')
print("[  PASSED  ] 1 test.")
''',
    "example_device_policy": r'''#!/usr/bin/env python3
print("the same policy: rewards agree (stub)")
''',
    "bench_gpu": r'''#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
if "--json" in args:
    wide = [{"n": 100000000, "budget_fraction": 0.01, "model": "deterministic", "costs": "unit",
             "ms_per_epoch": 0.9, "achieved_gb_per_second": 2700.0, "copy_roofline_ms": 0.8,
             "fraction_of_roofline": 0.8 / 0.9, "expected_ms_at_3_35_tbps": 0.72,
             "launches_per_epoch": 8, "syncs_per_epoch": 0.04, "window_misses": 1,
             "levels_per_epoch": 1.0},
            {"n": 100000000, "budget_fraction": 0.1, "model": "stochastic", "costs": "unit",
             "ms_per_epoch": 2.2, "achieved_gb_per_second": 2300.0, "copy_roofline_ms": 1.7,
             "fraction_of_roofline": 1.7 / 2.2, "expected_ms_at_3_35_tbps": 1.5,
             "launches_per_epoch": 9, "syncs_per_epoch": 0.07, "window_misses": 2,
             "levels_per_epoch": 1.0},
            {"n": 1000000000, "budget_fraction": 0.1, "model": "stochastic", "costs": "lognormal",
             "error": "CUDA error cudaErrorMemoryAllocation"}]
    tall = [{"sources": 4, "replications": 1000000, "epochs": 1000, "model": "deterministic",
             "seconds": 0.3, "replications_per_second": 3.3e6, "source_epochs_per_second": 1.3e10}]
    json.dump({"device": "stub GPU", "wide": wide, "tall": tall},
              open(args[args.index("--json") + 1], "w"))
print("bench_gpu stub")
''',
    "crawleval": r'''#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
out = args[args.index("--json") + 1]
if args[0] == "fresh":
    r = {"policy": "index", "seconds": 1.1, "harmonic_penalty": {"mean": 0.47},
         "freshness": {"mean": 0.6}}
    json.dump({"results": [r]}, open(out, "w"))
else:
    json.dump({"policies": [{"source_epochs_per_second": 2.5e10, "mean_reward": 12.5}]},
              open(out, "w"))
''',
    # Runs the program it is given (the stub tests), then says what the real one says.
    "compute-sanitizer": r'''#!/usr/bin/env python3
import subprocess, sys
args = sys.argv[1:]
prog = next(i for i, a in enumerate(args) if a.endswith("crawleval_gpu_tests"))
rc = subprocess.call(args[prog:])
if args[args.index("--tool") + 1] == "racecheck":  # as the real one (2026-11-24, on an H100)
    print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
else:
    print("========= ERROR SUMMARY: 0 errors")
sys.exit(rc)
''',
    "ncu": r'''#!/usr/bin/env python3
import sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
rows = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
for launch in (0, 1):
    for name, unit, value in (("gpu__time_duration.sum", "nsecond", "850,000"),
                              ("dram__bytes_read.sum", "byte", "2,000,000,000"),
                              ("dram__bytes_write.sum", "byte", "400,000,000"),
                              ("smsp__inst_executed.sum", "inst", "562,500,000"),
                              ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "61.5")):
        rows.append(f'"{launch}","epoch_kernel","{name}","{unit}","{value}"')
open(log, "w").write("==PROF== stub\n" + "\n".join(rows) + "\n")
''',
    # PyTorch's baseline, where python3 is the image's PyTorch interpreter.
    "python3": r'''#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
json.dump({"dtype": "float64", "torch": "stub", "ms_per_epoch": 9.0,
           "source_epochs_per_second": 1.1e10}, open(args[args.index("--json") + 1], "w"))
''',
}


def documented_calls(root):
    """The gpu-check commands of docs/testing.md, as argument lists."""
    text = open(os.path.join(root, "docs", "testing.md")).read()
    calls = []
    for line in text.splitlines():
        m = re.match(r"^bash scripts/gpu-check (.*?)(\s+#.*)?$", line.strip())
        if m:
            calls.append(m.group(1).split())
    return calls


def option(args, name):
    return args[args.index(name) + 1] if name in args else None


def run_calls(root, calls, out, env, extra):
    for args in calls:
        r = subprocess.run(["bash", os.path.join(root, "scripts/gpu-check")] + extra + args +
                           ["--out", out], cwd=root, env=env, capture_output=True, text=True)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        # The table of steps ends the output (a GPU call's reply shows its end).
        tail = "\n".join(r.stderr.splitlines()[-20:])
        assert f"gpu-check {option(args, '--name')}:" in tail, r.stderr


def main():
    root, tmp = sys.argv[1], sys.argv[2]
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    calls = documented_calls(root)
    assert 1 <= len(calls) <= MAX_CALLS, f"docs/testing.md gives {len(calls)} GPU calls"
    budgets = [int(option(a, "--budget")) for a in calls]
    assert all(b <= CALL_LIMIT_S for b in budgets), budgets
    assert sum(budgets) <= TOTAL_LIMIT_S, budgets
    names = [option(a, "--name") for a in calls]
    assert len(set(names)) == len(names) and None not in names, names

    # The calls with stubs: the real script, the real archive, the real report.
    stub_bin = os.path.join(tmp, "bundle")
    stub_path = os.path.join(tmp, "path")
    os.makedirs(stub_bin)
    os.makedirs(stub_path)
    for name, text in STUBS.items():
        where = stub_bin if name in ("crawleval", "crawleval_gpu_tests", "bench_gpu",
                                     "crawleval_conformance_tests",
                                     "example_device_policy") else stub_path
        path = os.path.join(where, name)
        with open(path, "w") as f:
            f.write(text.replace("#!/usr/bin/env python3", "#!" + sys.executable))
        # No executable bit on the bundle: gpu-check must set it (a carried bundle loses it).
        if where == stub_path:
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=stub_path + os.pathsep + os.environ["PATH"])
    env.pop("OUT", None)
    out = os.path.join(tmp, "out")
    stub_calls = [[stub_bin if a == ".gpu-bin" else a for a in c] for c in calls]
    for args in stub_calls:
        call_out = os.path.join(out, option(args, "--name"))
        run_calls(root, [args], call_out, env, [])
        files = os.listdir(call_out)
        assert len(files) <= MAX_FILES_PER_CALL, files
        assert files == [option(args, "--name") + ".tar"], files  # one archive per call
    archives = [os.path.join(out, n, n + ".tar") for n in names]
    for a in archives:
        with tarfile.open(a) as t:
            members = t.getnames()
        assert "commit.txt" in members and any(m.startswith("step-") for m in members), members
    results = os.path.join(tmp, "results")
    r = subprocess.run([sys.executable, os.path.join(root, "scripts/gpu_report.py"), results] +
                       archives, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    [report] = [f for f in os.listdir(results) if f.endswith(".json")]
    rep = json.load(open(os.path.join(results, report)))
    steps = {s["step"]: s for s in rep["steps"]}
    want = {"tests", "conformance", "memcheck", "racecheck", "initcheck", "synccheck",
            "generic-cuda", "generic-cpu", "policy", "bench",
            "ncu", "pytorch", "pytorch-1e7", "cli-cuda", "cli-cpu", "fresh-cuda", "fresh-cpu"}
    assert want <= set(steps), sorted(steps)
    assert all(s["exit_code"] == 0 for s in rep["steps"]), rep["steps"]
    assert all(s["expected_seconds"] and s["limit_seconds"] for s in rep["steps"])
    assert rep["gpu_tests"]["tests"] == 41 and rep["gpu_tests"]["failures"] == 0
    assert all(v["clean"] for v in rep["sanitizers"].values()), rep["sanitizers"]
    tg = rep["targets"]
    assert tg["deterministic_ms_at_1e8_1e6"] == 0.9
    assert abs(tg["speedup_over_pytorch"] - 10.0) < 1e-12  # 9.0 ms / 0.9 ms
    assert tg["stochastic_ms_at_1e8_10pct"] == 2.2
    assert tg["n_1e9_ran"] is False  # the 1e9 case failed: recorded, not dropped
    assert tg["tall_source_epochs_per_second"] == 1.3e10
    e = rep["ncu_epoch_kernel"]
    assert abs(e["thread_instructions_per_source"] - 180.0) < 1e-9  # 32 x 5.625e8 / 1e8
    assert abs(e["dram_bytes_per_source"] - 24.0) < 1e-9
    md = open(os.path.join(results, report[:-5] + ".md")).read()
    assert "FAILED: CUDA error cudaErrorMemoryAllocation" in md
    assert "dry run" not in md.lower()

    # The same calls as a dry run: plumbing only, and the report says so.
    dry = os.path.join(tmp, "dry")
    run_calls(root, calls, dry, env, ["--dry-run"])
    results2 = os.path.join(tmp, "results-dry")
    subprocess.run([sys.executable, os.path.join(root, "scripts/gpu_report.py"), results2,
                    os.path.join(dry)], check=True, capture_output=True)
    [md2] = [f for f in os.listdir(results2) if f.endswith(".md")]
    assert "A dry run" in open(os.path.join(results2, md2)).read()

    # A budget too small for any step: every step is skipped, recorded, and the call fails.
    small = os.path.join(tmp, "small")
    r = subprocess.run(["bash", os.path.join(root, "scripts/gpu-check"), "--dry-run", "--budget",
                        "5", "--name", "small", "--out", small, "tests", "bench"], cwd=root,
                       env=env, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    with tarfile.open(os.path.join(small, "small.tar")) as t:
        recs = [t.extractfile(m).read().decode() for m in t.getmembers() if m.name.startswith("step-")]
    assert sorted(x.split()[1] for x in recs) == ["skipped", "skipped"], recs
    print(f"gpu plan: {len(calls)} calls, budgets {budgets} s (sum {sum(budgets)} s): ok")


if __name__ == "__main__":
    main()
