#!/usr/bin/env python3
"""The epoch kernel's instruction budget (a ctest, epoch_sass_budget): the SASS of the
deterministic Whittle epoch kernel (unit costs) for sm_90, from cuobjdump, must hold at most
BUDGET instructions per source in its tile loop, so that the pass stays under the memory time at
N = 1e8 on an H100 (docs/gpu-design.md, "Instructions per source"). The tile loop is the backward
branch whose body holds the pass's arithmetic (see tile_loop); each of its iterations handles kItems = 4 sources per thread, so
instructions per source = the loop's static instructions / 4. Static: every path of the loop body
is counted (the first and last epochs' branches, the rare paths of expm1), so the figure bounds
what a steady epoch issues. Functions called out of line (the off-grid index) are not counted.

Also prints the same figure for every epoch kernel (model x policy x costs), and for the live
pass of sleeping sources (kernels/dormant_pass.cu), whose Whittle unit-cost loop per live source
is held to the same budget.
Skips (exit 0, says why) when cuobjdump cannot be found or the build has no sm_90 code.

usage: check_epoch_sass.py BUILD_DIR NVCC SOURCE_DIR [BUDGET]
"""
import os
import pathlib
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_tools import find_tool, tool_env  # noqa: E402

ITEMS = 4  # sources per thread per tile (kernels/select_device.cuh, kItems)
TARGET = "epoch_kernel<(crawleval::Policy)0, true, true>"
POLICIES = {"0": "whittle", "1": "greedy", "2": "round_robin", "3": "random"}


def functions(sass):
    """{mangled name: [(address, opcode text)]} from cuobjdump -sass."""
    out, name = {}, None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        m = re.match(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and name:
            out[name].append((int(m.group(1), 16), m.group(2).strip()))
    return out


def tile_loop(instrs):
    """(first address, last address, instructions) of the tile loop: the backward branch whose
    body holds the most double-precision fused multiply-adds (the pass's arithmetic), the
    shortest such body on a tie. (Out-of-line warp-collective code placed after the kernel also
    branches back into the loop; those "loops" hold no arithmetic of the pass.)"""
    best = None
    for addr, text in instrs:
        m = re.search(r"\bBRA\b(?:\s+\S+,)?\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", text)
        if not m or not m.group(1):
            continue
        target = int(m.group(1), 16)
        if target <= addr:
            body = [t for a, t in instrs if target <= a <= addr and not t.startswith("NOP")]
            dfma = sum(1 for t in body if re.search(r"\bDFMA\b", t))
            if best is None or (dfma, -len(body)) > (best[3], -best[2]):
                best = (target, addr, len(body), dfma)
    return best


def demangle(names):
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return dict(zip(names, r.stdout.splitlines())) if r.returncode == 0 else {n: n for n in names}


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    build, nvcc, src = sys.argv[1:4]
    budget = float(sys.argv[4]) if len(sys.argv) == 5 else 200.0
    cuobjdump = find_tool("cuobjdump", nvcc, src)
    if not cuobjdump:
        print("SKIPPED: no cuobjdump (scripts/setup-python installs it where nvcc is found)")
        return 0
    objs = sorted(pathlib.Path(build).rglob("epoch_kernels.cu.o"))
    if not objs:
        print(f"no epoch_kernels.cu.o under {build}", file=sys.stderr)
        return 1
    funcs = {}
    for obj in [objs[0]] + sorted(pathlib.Path(build).rglob("dormant_pass.cu.o"))[:1]:
        r = subprocess.run([cuobjdump, "-sass", "-arch", "sm_90", str(obj)], capture_output=True,
                           text=True, env=tool_env(nvcc, src))
        funcs.update(functions(r.stdout) if r.returncode == 0 else {})
    if not funcs:
        print(f"SKIPPED: no sm_90 code in {objs[0]} ({r.stderr.strip()[:200]})")
        return 0
    names = demangle(list(funcs))
    rows, target, live = [], None, None
    for mangled, instrs in funcs.items():
        name = names[mangled]
        m = re.search(r"epoch_kernel<\(crawleval::Policy\)(\d), (true|false), (true|false)>", name)
        n = re.search(r"live_epoch_kernel<\(crawleval::Policy\)(\d), (true|false)>", name)
        if n:  # the live pass of sleeping sources (kernels/dormant_pass.cu): deterministic
            m, model = n, "live (dormant)"
        elif m:
            model = "deterministic" if m.group(2) == "true" else "stochastic"
        else:
            continue
        loop = tile_loop(instrs)
        per = loop[2] / ITEMS if loop else float("nan")
        label = f"{model:<14} {POLICIES[m.group(1)]:<11} {'unit' if m.group(m.lastindex) == 'true' else 'costs':<5}"
        rows.append((label, len(instrs), loop[2] if loop else 0, per))
        if TARGET in name and not n:
            target = per
        if n and m.group(1) == "0" and m.group(2) == "true":
            live = per
    print(f"{'epoch kernel (sm_90)':<31} {'kernel':>7} {'loop':>6} {'per source':>11}")
    for label, total, loop, per in sorted(rows):
        print(f"{label:<31} {total:>7} {loop:>6} {per:>11.1f}")
    if target is None:
        print(f"FAIL: {TARGET} not found in {objs[0]}")
        return 1
    verdict = "within" if target <= budget else "OVER"
    print(f"deterministic Whittle, unit costs: {target:.1f} instructions per source in the tile "
          f"loop, {verdict} the budget of {budget:.0f}")
    ok = target <= budget
    if live is not None:  # per live source; a sleeping one costs none
        verdict = "within" if live <= budget else "OVER"
        print(f"live pass (sleeping sources), Whittle, unit costs: {live:.1f} per live source, "
              f"{verdict} the budget of {budget:.0f}")
        ok = ok and live <= budget
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
