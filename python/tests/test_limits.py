"""Memory limits from Python: a record that cannot fit is refused up front, and one that runs out
of memory inside the engine raises MemoryError (it aborted the interpreter: an exception escaped
an OpenMP region)."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import resource
    import numpy as np
    import crawleval as ce

    # Slow decay from an empty start: the automatic burn-in (400 epochs) is 40 times the measured
    # epochs, so the record outgrows the estimate made before the burn-in is known.
    n = 200
    slow = ce.Population.from_arrays(np.full(n, 1.0), np.full(n, 1.0), np.full(n, 0.0001))
    ce.evaluate(slow, 1, "greedy", epochs=10, replications=50, record=True)  # threads, arenas
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    limit = used + (60 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        ce.evaluate(ce.Population.paper_example(), 1, "whittle", epochs=1000,
                    replications=300000, record=True)
        print("ran")
    except ce.InputError as e:
        print("refused:", e, flush=True)
    try:
        ce.evaluate(slow, 1, "greedy", epochs=10, replications=20000, record=True)
        print("ran")
    except MemoryError as e:
        print("MemoryError:", e, flush=True)
    r = ce.evaluate(ce.Population.paper_example(), 1, "whittle", epochs=100, record=True)
    print("still running", r["whittle"]["mean_reward"] > 0)
""")


def test_a_record_that_cannot_fit_is_refused_or_raises_memory_error(tmp_path):
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="2"), timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("refused: record=True (every epoch of 300000 replications of 1 "
                               "policy) needs 8.9 GiB of memory"), p.stdout
    assert lines[1].startswith("MemoryError: record=True ran out of memory"), p.stdout
    assert lines[2] == "still running True"
