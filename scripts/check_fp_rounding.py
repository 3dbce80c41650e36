#!/usr/bin/env python3
"""The rounding check (a ctest): the model's score functions (tests/fp_probe.cu) compiled with
CRAWLEVAL_FP_PROBE under -fmad=true and -fmad=false must give the same machine code, so that no
compiler flag decides how their keys round (include/crawleval/base/fp.hpp). The SASS is compared when
cuobjdump is found (PATH, next to nvcc, or the .venv's nvidia-cuda-cuobjdump package), else the
PTX, which shows every fused multiply-add the front end forms but not those ptxas would.

usage: check_fp_rounding.py NVCC SOURCE_DIR RANDOM123_INCLUDE WORK_DIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_tools import find_tool, tool_env  # noqa: E402


def compile_probe(nvcc, src, r123, work, fmad, what):
    out = os.path.join(work, f"fp_probe_fmad_{fmad}.{what}")
    cmd = [nvcc, "-arch=sm_90", f"-fmad={fmad}", "--expt-relaxed-constexpr", "-std=c++17",
           "-DCRAWLEVAL_FP_PROBE", "-I", os.path.join(src, "include"), "-I", r123,
           "-" + what, "-o", out, os.path.join(src, "tests", "fp_probe.cu")]
    subprocess.run(cmd, check=True)
    return out


def fp64_ops(text, what):
    """How many fused multiply-adds, products and sums (differences included) of doubles."""
    if what == "ptx":
        ops = re.findall(r"^\s*(fma|mul|add|sub)(?:\.rn)?\.f64\b", text, re.M)
        ops = ["add" if o == "sub" else o for o in ops]
    else:
        ops = [m.lower()[1:] for m in re.findall(r"\b(DFMA|DMUL|DADD)\b", text)]
    return {k: ops.count(k) for k in ("fma", "mul", "add")}


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    nvcc, src, r123, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    cuobjdump = find_tool("cuobjdump", nvcc, src)
    what = "cubin" if cuobjdump else "ptx"
    counts = {}
    for fmad in ("true", "false"):
        out = compile_probe(nvcc, src, r123, work, fmad, what)
        if cuobjdump:
            text = subprocess.run([cuobjdump, "-sass", out], check=True, capture_output=True,
                                  text=True, env=tool_env(nvcc, src)).stdout
        else:
            text = open(out).read()
        counts[fmad] = fp64_ops(text, what)
    a, b = counts["true"], counts["false"]
    print(f"fp rounding ({'SASS' if cuobjdump else 'PTX'} of tests/fp_probe.cu): -fmad=false {b}, "
          f"-fmad=true {a}: {'the same' if a == b else 'DIFFERENT'}")
    if a != b:
        print("a product and a sum in the score functions were fused under -fmad=true: write them "
              "with mul_rn / add_rn / sub_rn (include/crawleval/base/fp.hpp)")
        return 1
    if not b["mul"]:
        print("the probe holds no double products: it no longer probes the score functions")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
