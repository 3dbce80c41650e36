#!/usr/bin/env python3
"""The folders are layers: no file includes a header of a higher layer.

    base -> model -> select -> engine -> analysis, learn -> evaluate -> io, cli, python

Every source under host/, include/crawleval/, kernels/ and python/src/ belongs to the layer of its
folder; an #include "..." names a header of include/crawleval/<layer>/, of host/<layer>/ (the
private headers, included from the host/ root), or of kernels/. Folders of one rank may include
each other (analysis and learn; io, cli and python). Run by ctest (layers); exits 1 listing every
include that goes up, with its file and line.
"""
import os
import re
import sys

RANK = {"base": 0, "model": 1, "select": 2, "engine": 3, "analysis": 4, "learn": 4,
        "evaluate": 5, "io": 6, "cli": 6, "python": 6}


def layer_of(path):
    """The layer of a repository path, or None for a file outside the layered tree."""
    parts = path.split("/")
    if parts[0] == "include" and len(parts) >= 4 and parts[1] == "crawleval":
        return parts[2] if parts[2] in RANK else None
    if parts[0] == "host" and len(parts) >= 3:
        return parts[1] if parts[1] in RANK else None
    if parts[0] == "kernels":  # the CUDA engines; kernels/analysis/: the GPU's analyses
        return "analysis" if len(parts) >= 3 and parts[1] == "analysis" else "engine"
    if parts[0] == "python" and parts[1] == "src":
        return "python"
    return None


def resolve(including, name, root):
    """The repository path an #include "name" in `including` reads, or None (a system header)."""
    candidates = [os.path.join(os.path.dirname(including), name), os.path.join("include", name),
                  os.path.join("host", name), os.path.join("kernels", name)]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    bad, files = [], 0
    for top in ("host", "include", "kernels", "python/src"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if not name.endswith((".hpp", ".cpp", ".cuh", ".cu", ".h")):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root)
                mine = layer_of(path)
                if mine is None:
                    bad.append(f"{path}: not in a layer's folder ({', '.join(RANK)})")
                    continue
                files += 1
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for line_no, line in enumerate(f, 1):
                        m = include.match(line)
                        if not m:
                            continue
                        target = resolve(path, m.group(1), root)
                        if target is None:
                            continue
                        theirs = layer_of(target)
                        if theirs is None:
                            bad.append(f"{path}:{line_no}: includes {target}, outside the layers")
                        elif RANK[theirs] > RANK[mine]:
                            bad.append(f"{path}:{line_no}: {mine} includes {target} ({theirs}, a "
                                       f"higher layer)")
    if bad:
        print("\n".join(bad))
        print(f"{len(bad)} include(s) against the layer order "
              "(base -> model -> select -> engine -> analysis, learn -> evaluate -> io, cli, python)")
        return 1
    print(f"{files} files: every include follows the layer order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
