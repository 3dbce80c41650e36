#!/usr/bin/env python3
"""The kernel resource check (a ctest, run by scripts/test): every kernel the build
compiled, for every architecture it targets, from ptxas's report and the PTX that scripts/nvcc-resources keeps next to each
CUDA object. It fails on

  * a spill (stores or loads) of more than CALL_SPILL_BYTES in any function (up to that, values
    kept across an out-of-line call are reported, not failed);
  * a stack frame (local memory) above 2 x CALL_SPILL_BYTES in a kernel of crawleval's own except
    the tall kernel, whose per-thread arrays of up to 64 sources live in local memory by design;
  * a crawleval kernel without __launch_bounds__ (its block size must be known);
  * registers x threads per block above the SM's 65536 registers, or static shared memory above
    48 KiB.

Usage: check_kernel_resources.py BUILD_DIR   (prints a table of every crawleval kernel)
"""
import pathlib
import re
import subprocess
import sys

REGISTERS_PER_SM = 65536
STATIC_SMEM = 48 * 1024
LOCAL_MEMORY_ALLOWED = ("tall_kernel",)
# A kernel that calls out of line (CUDA's division and logarithm slow paths, the off-grid index,
# the stochastic arrivals) may have to keep a few values across the call in local memory: loop
# invariants stored once and reloaded from L1. Up to this many bytes, with a stack frame of twice
# that, is reported, not failed; more is register pressure, which fails.
CALL_SPILL_BYTES = 32
# Out-of-line functions of a rare path, which may spill up to the given bytes: the deterministic
# pass's off-grid step runs only for sources whose state is off the integer age grid (a given
# initial state, until the source's first crawl), so its spills cost the common path nothing; it
# is compiled for the register budget of the pass that calls it (80 registers for 3 blocks per SM,
# kernels/epoch_kernels.cu, kEpochMinBlocks).
RARE_PATH_SPILL_BYTES = {"off_grid_step": 64}


def demangle(names):
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return dict(zip(names, out.stdout.splitlines())) if out.returncode == 0 else {n: n for n in names}


def parse_report(text):
    """(name, arch) -> {regs, stack, spill_st, spill_ld, smem, entry}. A fat binary's report
    holds every architecture's ptxas pass in turn; each "Compiling entry function ... for
    'sm_XX'" line says which one the following properties belong to."""
    funcs, entry, current, arch = {}, set(), None, "sm_?"
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\w+)'", line)
        if m:
            arch = m.group(2)
            entry.add((m.group(1), arch))
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = (m.group(1), arch)
            funcs.setdefault(current, {})
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            funcs[current].update(stack=int(m[1]), spill_st=int(m[2]), spill_ld=int(m[3]))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            funcs[current]["regs"] = int(m[1])
            s = re.search(r"(\d+) bytes smem", line)
            funcs[current]["smem"] = int(s[1]) if s else 0
    for name in funcs:
        funcs[name]["entry"] = name in entry
    return funcs


def parse_maxntid(ptx):
    threads = {}
    for m in re.finditer(r"\.entry\s+(\S+?)\s*\((.*?)\)\s*((?:\.\w+[^\n{]*\n\s*)*)\{", ptx, re.S):
        t = re.search(r"\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)", m.group(3))
        threads[m.group(1)] = int(t[1]) * int(t[2]) * int(t[3]) if t else None
    return threads


def without_parameters(name):
    """The demangled name up to its parameter list (the first '(' outside template arguments)."""
    depth = 0
    for k, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:k]
    return name


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = pathlib.Path(sys.argv[1])
    reports = sorted(build.rglob("*.ptxas.txt"))
    if not reports:
        print(f"no ptxas reports under {build} (was it built with CUDA and scripts/nvcc-resources?)",
              file=sys.stderr)
        return 1
    funcs, threads = {}, {}
    for r in reports:
        funcs.update(parse_report(r.read_text(errors="replace")))
        ptx = pathlib.Path(str(r)[: -len(".ptxas.txt")] + ".ptx")
        if ptx.exists():
            threads.update(parse_maxntid(ptx.read_text(errors="replace")))
    names = demangle(sorted({m for m, _ in funcs}))
    failures, warnings, rows = [], [], []
    for (mangled, arch), f in sorted(funcs.items(),
                                     key=lambda kv: (names.get(kv[0][0], kv[0][0]), kv[0][1])):
        name = names.get(mangled, mangled).replace("(anonymous namespace)::", "")
        short = re.sub(r"^void ", "", without_parameters(name)) + f" [{arch}]"
        ours = short.startswith("crawleval::")  # CUB's kernels instantiated by ours are not
        spilled = max(f.get("spill_st", 0), f.get("spill_ld", 0))
        allowed = max([CALL_SPILL_BYTES] + [b for k, b in RARE_PATH_SPILL_BYTES.items() if k in short])
        if spilled > allowed:
            failures.append(f"{short}: spills {f['spill_st']} B stores, {f['spill_ld']} B loads")
        elif spilled:
            warnings.append(f"{short}: spills {f['spill_st']} B stores, {f['spill_ld']} B loads "
                            f"(within the {allowed} B allowed)")
        if not f["entry"]:
            continue
        nt = threads.get(mangled)
        if ours:
            if f.get("stack", 0) > 2 * CALL_SPILL_BYTES and not any(
                    a in short for a in LOCAL_MEMORY_ALLOWED):
                failures.append(f"{short}: {f['stack']} B stack frame (local memory)")
            if nt is None:
                failures.append(f"{short}: no __launch_bounds__ (block size unknown)")
            rows.append((short, f.get("regs", 0), nt, f.get("stack", 0), f.get("smem", 0)))
        if nt is not None and f.get("regs", 0) * nt > REGISTERS_PER_SM:
            failures.append(f"{short}: {f['regs']} registers x {nt} threads > {REGISTERS_PER_SM}")
        if f.get("smem", 0) > STATIC_SMEM:
            failures.append(f"{short}: {f['smem']} B static shared memory > {STATIC_SMEM}")
    print(f"{'kernel':<100} {'regs':>5} {'thr':>5} {'stack':>6} {'smem':>6}")
    for short, regs, nt, stack, smem in rows:
        shown = short if len(short) <= 100 else short[:88] + "..." + short[-9:]
        print(f"{shown:<100} {regs:>5} {nt if nt else '-':>5} {stack:>6} {smem:>6}")
    print(f"{len(funcs)} functions in {len(reports)} objects, {len(rows)} crawleval kernels")
    for w in warnings:
        print("note", w)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
