#!/usr/bin/env python3
"""No function of the engines, the selection, the drivers or the command line is longer than 150
lines.

Long functions are where a feature lands in one path and misses the others (docs/architecture.md):
the CPU engines share one epoch loop (host/engine/cpu/epoch_loop.hpp) and keep their passes short.
Scans host/engine/, host/select/, host/evaluate/, host/cli/ and kernels/ (the CUDA engines; not
kernels/analysis/). A function is the body of a `{` that follows a parameter list (a lambda counts
toward the function around it); its length runs from that `{` to its `}`. The hand-vectorised
kernels are exempt (EXEMPT: file, function, why). Run by ctest (function_length); exits 1 listing
every function over the limit with its file, line and length.
"""
import os
import re
import sys

LIMIT = 150
FOLDERS = ("host/engine", "host/select", "host/evaluate", "host/cli", "kernels")
SKIP = ("kernels/analysis",)
# (path, function name): hand-vectorised or fused kernels, one instruction stream on purpose.
EXEMPT = {
    ("host/engine/cpu/det_whittle_avx512.cpp", "det_pass"):
        "the deterministic Whittle pass in AVX-512 intrinsics",
    ("kernels/epoch_kernels.cu", "epoch_kernel"):
        "the fused epoch kernel (apply, step, score and histogram in one pass over memory)",
}
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*$")
QUALIFIERS = re.compile(r"\s*(const|override|noexcept|final|mutable|->\s*[\w:<>,\s*&]+)\s*$")


def strip(src):
    """The source with comments and string/char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        c = src[i]
        if c in "\"'":
            if c == "'" and i > 0 and (src[i - 1].isalnum()):  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def function_name(text):
    """The name before the parameter list that `text` ends with (after its qualifiers), or None."""
    t = text.rstrip()
    while True:
        m = QUALIFIERS.search(t)
        if not m or m.start() == len(t):
            break
        t = t[: m.start()].rstrip()
    if not t.endswith(")"):
        return None
    depth = 0
    for k in range(len(t) - 1, -1, -1):
        if t[k] == ")":
            depth += 1
        elif t[k] == "(":
            depth -= 1
            if depth == 0:
                before = t[:k].rstrip()
                if CONTROL.search(before):
                    return None
                m = re.search(r"([~\w]+)\s*(<[^<>]*>)?$", before)
                if not m:
                    return None
                rest = before[: m.start()].rstrip()
                # A member of a constructor's initializer list: the constructor's name is before.
                if rest.endswith(",") or (rest.endswith(":") and not rest.endswith("::")):
                    return function_name(rest[:-1])
                return m.group(1)
    return None


def long_functions(path, text):
    s = strip(text)
    stack = []  # (offset, name or None, inside a function)
    for m in re.finditer(r"[{}]", s):
        if m.group() == "{":
            inside = any(f for _, _, f in stack)
            name = None if inside else function_name(s[max(0, m.start() - 2000):m.start()])
            # A constructor's initializer list ends with a member's (...): still a function.
            stack.append((m.start(), name, inside or name is not None))
        elif stack:
            start, name, _ = stack.pop()
            if name is None:
                continue
            first = s.count("\n", 0, start) + 1
            last = s.count("\n", 0, m.start()) + 1
            if last - first + 1 > LIMIT:
                yield name, first, last - first + 1


def self_test():
    """The checker finds what it must: a long function, a long constructor after its initializer
    list, a long template kernel; not a long class, namespace or control block, and a lambda's
    lines count toward its function."""
    body = "  x += 1;\n" * LIMIT
    src = (
        "namespace a {\n"
        "template <int P>\n__global__ void __launch_bounds__(256, 2)\n    kern(const Args a) {\n"
        + body + "}\n"
        "struct S {\n  S(int a) : a_(a), b_(f(a)) {\n" + body + "  }\n" + body + "};\n"
        "int g(int (*f)(int)) const {\n  auto l = [&](int y) {\n" + body + "  };\n}\n"
        "int short_one() {\n  if (x) {\n" + body + "  }\n  return 1'000;\n}\n"
        "}  // namespace a\n")
    found = [(name, length) for name, _, length in long_functions("x.cpp", src)]
    names = [name for name, _ in found]
    want = ["kern", "S", "g", "short_one"]
    if names != want:
        print("self-test: found", found, "expected", want)
        return 1
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    bad, seen = [], 0
    for top in FOLDERS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                path = os.path.relpath(os.path.join(folder, name), root)
                if not name.endswith((".cpp", ".hpp", ".cu", ".cuh")) or path.startswith(SKIP):
                    continue
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                seen += 1
                for fn, line, length in long_functions(path, text):
                    if (path, fn) not in EXEMPT:
                        bad.append(f"{path}:{line}: {fn} is {length} lines (at most {LIMIT})")
    if seen == 0:
        print("no sources found under", root)
        return 1
    for b in bad:
        print(b)
    print(f"{seen} files, {len(bad)} functions over {LIMIT} lines")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
