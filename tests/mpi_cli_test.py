#!/usr/bin/env python3
"""`mpirun -np P crawleval run|bound|fresh run ...` prints and writes what one process does.

Usage: mpi_cli_test.py CRAWLEVAL MPIRUN TMPDIR. Checks, for P = 2 and 3:
  * run on a synthetic population (generated where it lives) and on a CSV (read by rank 0 and
    scattered): every policy's rewards, replications and CIs and the bound equal one process's,
    bit for bit (JSON doubles round-trip); rank 0 alone prints the table;
  * bound alone: equal;
  * a bad CSV row: exit code 2 from mpirun, one message naming the file and line, no JSON written;
  * --backend cuda and --trace under mpirun: exit code 2 with a message;
  * processes started with different settings, or reading different files through one relative
    path: exit code 2 with one message naming them, no hang;
  * extreme costs (1e-300..1e300): the numbers of one process;
  * the papers' function policies (score functions, each rank scoring its shard) and the
    freshness model (with and without politeness caps): one process's JSON;
  * the learners (learn, syncbandit): refused under mpirun (exit code 2, the reason);
  * a FIFO as a file every rank reads (--population, --utility empirical:): exit code 2, no hang.
"""
import json
import os
import subprocess
import sys

BIN, MPIRUN, TMP = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(TMP, exist_ok=True)
TIMING = {"seconds", "loop_seconds", "comm_seconds", "source_epochs_per_second",
          "warm_up_seconds", "context"}  # context: the date and the machine's load
failures = []


def run(args, np=None):
    cmd = ([MPIRUN, "-np", str(np), "--oversubscribe"] if np else []) + [BIN] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


def write_csv(name, header, rows):
    """A CSV in TMP: the header line, then one line per row."""
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(header + "\n" + "".join(row + "\n" for row in rows))
    return path


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def comparable(path):
    with open(path) as f:
        j = json.load(f)
    pols = [{k: v for k, v in p.items() if k not in TIMING} for p in j.get("policies", [])]
    bound = {k: v for k, v in (j.get("bound") or {}).items() if k not in TIMING}
    if j.get("command") == "bound":
        bound = {k: v for k, v in j.items() if k not in TIMING | {"processes"}}
    return pols, bound


def same_as_one_process(name, args):
    one = os.path.join(TMP, name + "_1.json")
    r = run(args + ["--json", one])
    check(r.returncode == 0, f"{name}: one process exits 0 ({r.stderr.strip()[-200:]})")
    for np in (2, 3):
        out = os.path.join(TMP, f"{name}_{np}.json")
        r = run(args + ["--json", out], np)
        check(r.returncode == 0, f"{name}: -np {np} exits 0 ({r.stderr.strip()[-300:]})")
        if r.returncode:
            continue
        check(comparable(out) == comparable(one), f"{name}: -np {np} equals one process")
        with open(out) as f:
            check(json.load(f).get("processes") == np, f"{name}: -np {np} says so in the JSON")
        if args[0] == "run":
            check(r.stdout.count("\npolicy ") == 1,
                  f"{name}: -np {np} prints one table")
        if args[0] == "fresh":
            check(r.stdout.count("\nindex ") == 1 and r.stdout.count("\npolicy ") == 1,
                  f"{name}: -np {np} prints one table")


common = ["--no-progress", "--threads", "1"]
same_as_one_process("synthetic", ["run", "--synthetic", "140000", "--synthetic-costs", "lognormal",
                                  "--budget", "3000", "--epochs", "8", "--burn-in", "2",
                                  "--replications", "2", "--policy",
                                  "whittle,greedy,round_robin,random,static"] + common)
same_as_one_process("stochastic", ["run", "--synthetic", "70000", "--model", "stochastic",
                                   "--observe", "belief", "--budget", "1000", "--epochs", "6",
                                   "--target-ci", "0.0001", "--max-replications", "4"] + common)
# Fewer chunks than processes (one holds everything) with costs.
same_as_one_process("small", ["run", "--synthetic", "2000", "--synthetic-costs", "lognormal",
                              "--budget", "37.3", "--epochs", "5", "--policy",
                              "whittle,greedy,whittle_mixed,adaptive_whittle"] + common)
csv = os.path.join(TMP, "sources.csv")
r = run(["generate", "--synthetic", "120000", "--costs", "lognormal", "--seed", "4", "--out", csv])
check(r.returncode == 0, "generate a CSV")
same_as_one_process("csv", ["run", "--sources", csv, "--budget", "2500", "--epochs", "5"] + common)
# Mixed observation: the observe column is sent with the others (70000 sources: with 3 processes
# the last holds 4464); the engines' own policies, which do not read it, are refused on every
# process with exit 2.
mixed = write_csv("mixed.csv", "lambda,xi,mu,cost,observe",
                  (f"{0.1 + i % 97 * 0.05},{0.2 + i % 13 * 0.2},{0.05 + i % 41 * 0.04},1,"
                   f"{'full' if i % 3 else 'belief'}" for i in range(70000)))
same_as_one_process("mixed", ["run", "--sources", mixed, "--budget", "700", "--epochs", "5",
                              "--burn-in", "0", "--policy",
                              "whittle_mixed,greedy_mixed,round_robin"] + common)
# The numerical index's classes are counted over every process (with 3 processes, process 0 holds
# none of these 32769 sources: it reported 0 classes).
classes = write_csv("classes.csv", "lambda,xi,mu",
                    ("2,1,0.5" if i % 2 else "0.5,2,0.25" for i in range(32769)))
numerical = ["run", "--sources", classes, "--model", "stochastic", "--budget", "300", "--epochs",
             "3", "--burn-in", "0", "--index-grid", "64", "--policy", "whittle_numerical"] + common
for np in (None, 3):
    out = os.path.join(TMP, f"classes_{np}.json")
    r = run(numerical + ["--json", out], np)
    check(r.returncode == 0, f"numerical index, -np {np}: exits 0 ({r.stderr.strip()[-300:]})")
    if r.returncode == 0:
        with open(out) as f:
            check(json.load(f)["stochastic_index"]["classes"] == 2,
                  f"numerical index, -np {np}: 2 classes reported")
r = run(["run", "--sources", mixed, "--budget", "700", "--epochs", "3", "--policy", "whittle"] +
        common, 3)
check(r.returncode == 2 and "has an observe column" in r.stderr,
      f"whittle with an observe column under -np 3: exit 2 ({r.stderr.strip()[-300:]})")
# The binary columnar format: every process maps the file and reads its own slice.
cpop = os.path.join(TMP, "sources.cpop")
r = run(["convert", "--sources", csv, "--out", cpop])
check(r.returncode == 0, "convert the CSV to .cpop")
one = os.path.join(TMP, "csv_1.json")
for np in (1, 3):
    out = os.path.join(TMP, f"cpop_{np}.json")
    r = run(["run", "--sources", cpop, "--budget", "2500", "--epochs", "5", "--json", out] + common,
            np)
    check(r.returncode == 0 and comparable(out) == comparable(one),
          f".cpop under -np {np} equals the CSV in one process ({r.stderr.strip()[-200:]})")
damaged = os.path.join(TMP, "damaged.cpop")
with open(cpop, "rb") as f, open(damaged, "wb") as g:
    g.write(f.read()[:100000])
r = run(["run", "--sources", damaged, "--budget", "10"] + common, 2)
errors = [l for l in r.stderr.splitlines() if "crawleval: error" in l]
check(r.returncode == 2 and len(errors) == 1 and "truncated" in errors[0],
      f"truncated .cpop under mpirun: exit 2, one message ({errors})")
same_as_one_process("bound", ["bound", "--synthetic", "140000", "--budget", "5000"])

# Issue #28: a slice of a 1e10-source synthetic population whose global ids lie above 2^32 (each
# process generates only its part of the slice) equals the slice in one process, also with 4
# processes; its .cpop (header version 2: the slice's first id) read by 3 processes too; without
# --slice each process would hold 5e9 sources: exit 2, saying how many ranks it takes.
huge = ["--synthetic", "10000000000", "--slice", "5000000000:140000"]
slice_args = ["run"] + huge + ["--model", "stochastic", "--budget", "1400", "--epochs", "4",
                               "--burn-in", "1", "--policy", "whittle,random,round_robin"] + common
same_as_one_process("slice", slice_args)
one = os.path.join(TMP, "slice_1.json")
out = os.path.join(TMP, "slice_4.json")
r = run(slice_args + ["--json", out], 4)
check(r.returncode == 0 and comparable(out) == comparable(one),
      f"slice above 2^32: -np 4 equals one process ({r.stderr.strip()[-300:]})")
slice_cpop = os.path.join(TMP, "slice.cpop")
r = run(["generate"] + huge + ["--out", slice_cpop])
check(r.returncode == 0, "generate the slice as .cpop")
out = os.path.join(TMP, "slice_cpop_3.json")
r = run(["run", "--sources", slice_cpop] + slice_args[len(huge) + 1:] + ["--json", out], 3)
check(r.returncode == 0 and comparable(out) == comparable(one),
      f"the slice's .cpop under -np 3 equals the slice in one process ({r.stderr.strip()[-300:]})")
r = run(["run", "--synthetic", "10000000000", "--budget", "10"] + common, 2)
check(r.returncode == 2 and "one process holds at most 4,294,967,294 sources; run more ranks"
      in r.stderr, f"1e10 sources on 2 processes: exit 2 ({r.stderr.strip()[-300:]})")

# A bad row late in the file (on the last rank's shard).
with open(csv) as f:
    lines = f.read().splitlines()
header = lines[0].split(",")
bad_line = len(lines) - 3
row = lines[bad_line - 1].split(",")
row[header.index("mu")] = "-2"
lines[bad_line - 1] = ",".join(row)
bad = os.path.join(TMP, "bad.csv")
with open(bad, "w") as f:
    f.write("\n".join(lines) + "\n")
out = os.path.join(TMP, "bad.json")
if os.path.exists(out):
    os.remove(out)
r = run(["run", "--sources", bad, "--budget", "10", "--epochs", "3", "--json", out] + common, 3)
check(r.returncode == 2, f"bad CSV: mpirun exits 2 (got {r.returncode})")
errors = [l for l in r.stderr.splitlines() if "crawleval: error" in l]
check(len(errors) == 1 and f"bad.csv:{bad_line}" in errors[0] and "'mu'" in errors[0],
      f"bad CSV: one message naming the line ({errors})")
check(not os.path.exists(out), "bad CSV: no JSON written")

# A GPU per rank: runs where every rank sees a device; where a build or machine has none, the
# reason every front end gives, exit 2. (Its numbers are the conformance test's.)
r = run(["run", "--synthetic", "1000", "--budget", "10", "--backend", "cuda"] + common, 2)
check(r.returncode == 0 or (r.returncode == 2 and "--backend cuda: " in r.stderr),
      f"--backend cuda under mpirun: runs, or exit 2 with the reason ({r.returncode}: {r.stderr[-300:]})")
r = run(["run", "--paper-example", "--budget", "1", "--trace", os.path.join(TMP, "t.csv")], 2)
check(r.returncode == 2 and "--trace runs in one process" in r.stderr, "--trace under mpirun: exit 2")

# Issue #25: processes started with different settings (an MPMD launch, a wrapper script) used to
# wait for each other forever; the same relative --sources naming different files on different
# machines gave exit 0 and a JSON mixing two populations. Both are refused before any work.
def run_mpmd(parts, cwd=None):
    cmd = [MPIRUN, "--oversubscribe"]
    for i, (np, args, wdir) in enumerate(parts):
        cmd += ([":"] if i else []) + ["-np", str(np)] + (["-wdir", wdir] if wdir else []) + [BIN]
        cmd += args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


base = ["run", "--synthetic", "5000", "--budget", "50", "--no-progress"]
r = run_mpmd([(2, base + ["--epochs", "5"], None), (1, base + ["--epochs", "7"], None)])
errors = [l for l in r.stderr.splitlines() if "crawleval: error" in l]
check(r.returncode == 2 and len(errors) == 1 and "process 2 has run --epochs 7" in errors[0]
      and "process 0 has run --epochs 5" in errors[0],
      f"different --epochs per process: exit 2, one message naming them ({errors})")
r = run_mpmd([(1, base, None), (1, ["bound"] + base[1:-1], None)])
check(r.returncode == 2 and "the command bound where process 0 has the command run" in r.stderr,
      "run on one process and bound on another: exit 2")
# A process whose command line does not parse (bound takes no --no-progress) stops the others.
r = run_mpmd([(1, base, None), (1, ["bound"] + base[1:], None)])
check(r.returncode == 2 and "does not parse" in r.stderr,
      f"a command line that does not parse on one process: exit 2 ({r.stderr[-300:]})")
for k, seed in (("a", "1"), ("b", "2")):
    os.makedirs(os.path.join(TMP, k), exist_ok=True)
    r = run(["generate", "--synthetic", "70000", "--seed", seed, "--out",
             os.path.join(TMP, k, "same_name.cpop")])
    check(r.returncode == 0, f"generate {k}/same_name.cpop")
rel = ["run", "--sources", "same_name.cpop", "--budget", "50", "--epochs", "3"] + common
r = run_mpmd([(1, rel, os.path.join(TMP, "a")), (2, rel, os.path.join(TMP, "b"))])
errors = [l for l in r.stderr.splitlines() if "crawleval: error" in l]
check(r.returncode == 2 and len(errors) == 1 and "disagree on the --sources file" in errors[0],
      f"one relative path, two files of the same size: exit 2 ({errors})")

# Issue #25: extreme costs (1e-300..1e300) under mpirun: the budget rule's integer weights come
# from a total folded in the same order on every process count, so the numbers are one process's.
extreme = write_csv("extreme.csv", "lambda,xi,mu,cost",
                    (f"{0.05 + (i * 7919 % 1000) / 200},{1 + i % 3},{0.02 + (i % 17) / 10},"
                     f"{10.0 ** (-300 + (i * 104729) % 601)}" for i in range(40000)))
same_as_one_process("extreme", ["run", "--sources", extreme, "--budget", "1e-5", "--epochs", "4",
                                "--policy", "whittle,greedy"] + common)

# Score functions under mpirun: each rank calls the policy on its shard (the adaptive policy's
# largest estimate is a max over the ranks); one process's numbers.
same_as_one_process("functions", ["run", "--synthetic", "70000", "--model", "stochastic",
                                  "--budget", "700", "--epochs", "3", "--burn-in", "1", "--policy",
                                  "whittle_mixed,greedy_mixed,whittle_expiry_paper,adaptive_whittle",
                                  "--no-bound"] + common)
# The numerical index over more classes than it computes: refused as in one process.
r = run(["run", "--synthetic", "70000", "--model", "stochastic", "--budget", "700", "--epochs",
         "2", "--policy", "whittle_numerical"] + common, 2)
check(r.returncode == 2 and "more than 256 classes" in r.stderr,
      f"whittle_numerical over too many classes under mpirun: exit 2 ({r.stderr[-200:]})")
# The freshness model: every rank generates its part of the population alone; host caps across
# ranks. (The steady start and the bound are in the CSV case below.)
fresh = ["fresh", "run", "--synthetic", "70000", "--budget", "7000", "--epochs", "3", "--burn-in",
         "1", "--policy", "index,greedy,lambda-crawl,random", "--start", "fresh",
         "--no-bound"] + common
same_as_one_process("fresh", fresh)
same_as_one_process("fresh_caps", fresh + ["--host-cap", "2"])
# A GPU per rank for the freshness model: runs where every rank sees a device, else exit 2 with the
# reason every front end gives (where it runs, the CPU's rewards within rounding and its costs);
# the learning variant refused before the device is looked for.
gpu_json = os.path.join(TMP, "fresh_cuda_2.json")
r = run(fresh + ["--backend", "cuda", "--json", gpu_json], 2)
check(r.returncode == 0 or (r.returncode == 2 and "--backend cuda: " in r.stderr),
      f"fresh --backend cuda under mpirun: runs, or exit 2 with the reason ({r.returncode}: {r.stderr[-300:]})")
if r.returncode == 0:
    with open(os.path.join(TMP, "fresh_2.json")) as f:
        cpu = json.load(f)["policies"]
    with open(gpu_json) as f:
        gpu = json.load(f)["policies"]
    check(len(gpu) == len(cpu) and all(
        abs(g["mean_reward"] - c["mean_reward"]) <= 1e-9 * abs(c["mean_reward"]) + 1e-15
        and g["mean_cost_per_epoch"] == c["mean_cost_per_epoch"] for g, c in zip(gpu, cpu)),
        "fresh --backend cuda under mpirun: the CPU's rewards within rounding, its costs")
r = run(fresh + ["--backend", "cuda", "--learn"], 2)
check(r.returncode == 2 and "the learning variant runs on the CPU only" in r.stderr,
      f"fresh --learn --backend cuda under mpirun: exit 2 ({r.stderr[-200:]})")
# A freshness CSV under mpirun: every rank reads the file and keeps its part; costs over four
# decades (the budget fraction's cost sum and the fixed-point weights over the ranks), importances
# 0..9, caps binding on hosts split over the ranks, the steady start and the bound (crowded hosts'
# members sent to their solver), both objectives.
gen = os.path.join(TMP, "fresh_gen.csv")
r = run(["fresh", "generate", "--synthetic", "60000", "--seed", "5", "--out", gen])
check(r.returncode == 0, f"fresh generate ({r.stderr.strip()[-200:]})")
with open(gen) as f:
    lines = f.read().splitlines()
head = lines[0].split(",")
ci, wi = head.index("cost"), head.index("importance")
rows = []
for k, line in enumerate(lines[1:]):
    v = line.split(",")
    v[ci] = repr(10.0 ** ((k * 7919) % 4000 / 1000.0))
    v[wi] = str((k * 104729) % 10)
    rows.append(",".join(v))
fresh_csv = write_csv("fresh_costs.csv", ",".join(head), rows)
for objective in ("harmonic", "binary"):
    same_as_one_process("fresh_csv_" + objective,
                        ["fresh", "run", "--population", fresh_csv, "--budget-fraction", "0.05",
                         "--host-cap", "2", "--epochs", "3", "--burn-in", "1", "--objective",
                         objective, "--policy", "index,lambda-crawl,greedy"] + common)
# `fresh bound` over the ranks prints one process's lines (rank 0 alone), caps split over ranks.
bound_args = ["fresh", "bound", "--population", fresh_csv, "--budget-fraction", "0.05",
              "--host-cap", "2", "--threads", "1"]
one = run(bound_args)
check(one.returncode == 0 and "harmonic penalty at least" in one.stdout,
      f"fresh bound: one process ({one.stderr.strip()[-200:]})")
for np in (2, 3):
    r = run(bound_args, np)
    check(r.returncode == 0 and r.stdout == one.stdout,
          f"fresh bound: -np {np} prints one process's lines ({r.stdout[-300:]!r} vs "
          f"{one.stdout[-300:]!r})")
# One process holds at most 4,294,967,294 URLs; two ranks hold 5e9 (about 2.5e9 each): that limit no
# longer applies, and what stops the run on this machine is its memory, named per process.
huge_fresh = ["fresh", "run", "--synthetic", "5000000000", "--budget", "10"] + common
r = run(huge_fresh)
check(r.returncode == 2 and "one process holds at most 4,294,967,294" in r.stderr,
      f"5e9 freshness sources in one process: exit 2 ({r.stderr.strip()[-300:]})")
r = run(huge_fresh, 2)
check(r.returncode == 2 and "4,294,967,294" not in r.stderr and
      "this process's part: 25000" in r.stderr,
      f"5e9 freshness sources on 2 processes: each holds its part ({r.stderr.strip()[-300:]})")
# The freshness model past 2^32 (issue #28): a slice of a 1e11-URL synthetic population (global
# ids near 9e10, hosts above 2^32) with the steady start, the bound and host caps, and with the
# random policy's draws, equals the slice in one process, also with 4 processes; without --slice
# each process would hold 1e11 URLs: exit 2 pointing at --slice.
fresh_slice = ["fresh", "run", "--synthetic", "100000000000", "--slice", "90000000000:20000",
               "--budget-fraction", "0.2", "--host-cap", "2", "--epochs", "4", "--burn-in", "1",
               "--policy", "index,lambda-crawl,random"] + common
same_as_one_process("fresh_slice", fresh_slice)
out = os.path.join(TMP, "fresh_slice_4.json")
r = run(fresh_slice + ["--json", out], 4)
check(r.returncode == 0 and comparable(out) == comparable(os.path.join(TMP, "fresh_slice_1.json")),
      f"freshness slice above 2^32: -np 4 equals one process ({r.stderr.strip()[-300:]})")
# A slice across 2^32 whose crowded hosts (cap 1) have URLs on several ranks.
same_as_one_process("fresh_slice_caps", ["fresh", "run", "--synthetic", "4300000000", "--slice",
                                         "4294930000:60000", "--budget-fraction", "0.2",
                                         "--host-cap", "1", "--epochs", "3", "--burn-in", "1",
                                         "--policy", "index,greedy"] + common)
r = run(["fresh", "run", "--synthetic", "100000000000", "--budget", "10"] + common, 2)
check(r.returncode == 2 and "evaluate a --slice FIRST:COUNT" in r.stderr,
      f"1e11 freshness sources on 2 processes: exit 2 ({r.stderr.strip()[-300:]})")
# A file every rank reads itself (the freshness population, the empirical utility law's table)
# must be a regular one: a FIFO's bytes go to one rank alone (the others saw an empty file, or
# waited for a writer that had gone: a hang). Refused before any rank opens it; no writer is
# started, so a rank that opened it would hang here until the timeout.
fifo = os.path.join(TMP, "rows.fifo")
if os.path.exists(fifo):
    os.remove(fifo)
os.mkfifo(fifo)
for what, args in (("--population", ["fresh", "run", "--population", fifo, "--budget", "1"]),
                   ("--utility empirical:", ["run", "--synthetic", "5000", "--budget", "50",
                                             "--model", "stochastic", "--utility",
                                             "empirical:" + fifo, "--no-bound"])):
    try:
        r = subprocess.run([MPIRUN, "-np", "2", "--oversubscribe", BIN] + args + common,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and what + " " + fifo + ": under mpirun every process reads"
              in r.stderr, f"{what} FIFO under mpirun: exit 2, named ({r.stderr.strip()[-300:]})")
    except subprocess.TimeoutExpired:
        check(False, f"{what} FIFO under mpirun: exit 2, not a hang")
os.remove(fifo)
# The learners stay in one process.
for args in (["learn", "lspe", "--paper-example", "--steps", "10", "-R", "1"],
             ["syncbandit", "optimum", "--arms", "5", "--budget", "2"]):
    r = run(args, 2)
    check(r.returncode == 2 and "only run, bound, fresh run and fresh bound shard over MPI" in r.stderr,
          f"{args[0]} under mpirun: refused ({r.stderr[-200:]})")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
