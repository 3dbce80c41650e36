"""Ctrl-C stops a long run cleanly: KeyboardInterrupt, and the package keeps working."""

import os
import signal
import threading
import time

import pytest

import crawleval as ce


@pytest.mark.parametrize("policy", ["whittle", "user"])
def test_sigint_stops_a_long_run(policy):
    pop = ce.Population.synthetic(200_000, seed=1)
    # About 10^6 epochs of 2e5 sources: hours if nothing stopped it.
    policies = ["whittle"] if policy == "whittle" else [("user", lambda s, a, p: s)]
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ce.evaluate(pop, 1000, policies, epochs=1_000_000, bound=False, backend="cpu")
    finally:
        timer.cancel()  # a run that ended early must not leave the signal to the next test
    assert time.monotonic() - started < 60
    assert ce.evaluate(ce.Population.paper_example(), 1, ["whittle"], epochs=100)["whittle"]


def test_sigint_stops_many_learning_runs():
    # A hostile pass: with runs=, Ctrl-C was a RuntimeError("interrupted") once every run had
    # started. A run here takes seconds, so 150 runs on a few threads start over minutes, far past
    # the 60 s below; 150 x 2000 rounds is 9.6e9 syncs, under the learners' 1e10 limit on a whole
    # experiment (2000 runs were refused before the signal came).
    inst = ce.SyncInstance.generate("poisson", 2000, seed=0)
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ce.sync_learn(inst, "mirrorsync", runs=150, rounds=2000)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 60


def test_exception_in_progress_callback_stops_the_run():
    def progress(label, done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        ce.evaluate(ce.Population.synthetic(100_000), 1000, ["greedy"], epochs=100_000,
                    progress=progress, bound=False, backend="cpu")
