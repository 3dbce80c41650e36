"""Issue #25 from Python: every reader checks a population the same way, messages never break the
caller (an InputError, never a UnicodeDecodeError), pipes are read, the budget is honoured on
extreme costs, and Ctrl-C stops long reads and learners."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import crawleval as ce


def test_cpop_is_checked_like_a_csv(tmp_path):
    pop = ce.Population.from_arrays(lambda_=[1.0, 2.0, 3.0], xi=[1.0, 1.0, 1.0], mu=[1.0, 1.0, 1.0])
    good = tmp_path / "good.cpop"
    pop.write(good)
    assert len(ce.Population.read(good)) == 3
    # The same bytes with a NaN, a zero mu or a negative cost: refused, naming the source.
    raw = bytearray(good.read_bytes())
    for column, value, field in ((0, np.nan, "lambda"), (2, 0.0, "mu"), (3, -1.0, "cost")):
        bad = bytearray(raw)
        at = 64 + 8 * 3 * column + 8 * 1  # source 1 of the column
        bad[at:at + 8] = np.float64(value).tobytes()
        path = tmp_path / f"bad_{field}.cpop"
        path.write_bytes(bytes(bad))
        with pytest.raises(ce.InputError, match=f"source with id 1, field '{field}'"):
            ce.Population.read(path)
    # An empty .cpop (a header saying 0 sources).
    empty = bytearray(raw[:64])
    empty[8:16] = (0).to_bytes(8, "little")
    (tmp_path / "empty.cpop").write_bytes(bytes(empty))
    with pytest.raises(ce.InputError, match="the population is empty"):
        ce.Population.read(tmp_path / "empty.cpop")
    # A file named .cpop that is not one is not read as a CSV.
    (tmp_path / "text.cpop").write_text("lambda,xi,mu\n1,1,1\n")
    with pytest.raises(ce.InputError, match="no CEPOP001 header"):
        ce.Population.read(tmp_path / "text.cpop")


def test_messages_are_valid_text_whatever_the_input(tmp_path):
    # A Latin-1 byte in a field, and a UTF-8 character cut by the 80-byte limit of messages.
    latin = tmp_path / "latin1.csv"
    latin.write_bytes(b"lambda,xi,mu\n1,1,caf\xe9\n")
    with pytest.raises(ce.InputError, match=r"'caf\\xe9' is not a number"):
        ce.Population.read(latin)
    cut = tmp_path / "cut.csv"
    value = "x" * 79 + "\u00e9t\u00e9"  # the first \u00e9 straddles byte 80
    cut.write_bytes(("lambda,xi,mu\n1,1," + value + "\n").encode())
    with pytest.raises(ce.InputError) as e:
        ce.Population.read(cut)
    assert "bytes)" in str(e.value)  # cut, and said so
    # Control bytes are escaped.
    ctl = tmp_path / "ctl.csv"
    ctl.write_bytes(b"lambda,xi,mu\n1,1,\x1b[31mred\n")
    with pytest.raises(ce.InputError, match=r"\\x1b\[31mred"):
        ce.Population.read(ctl)


def test_bad_settings_are_refused():
    pop = ce.Population.paper_example()
    with pytest.raises(ce.InputError, match="target_ci"):
        ce.evaluate(pop, 1, ["whittle"], epochs=10, target_ci=float("nan"))
    with pytest.raises(ce.InputError, match="below 2\\^32"):
        ce.evaluate(pop, 1, ["whittle"], epochs=2**63, burn_in=2**63)


def test_a_fifo_is_read_once(tmp_path):
    pop = ce.Population.synthetic(500, seed=3)
    csv = tmp_path / "src.csv"
    pop.write(csv)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(csv.read_bytes()))
    writer.start()
    got = ce.Population.read(fifo)
    writer.join()
    np.testing.assert_array_equal(got.lambda_, pop.lambda_)


def test_extreme_costs_never_exceed_the_budget():
    # Issue #25: 3,000 sources of cost 1e-13 and a budget of 1e-11 were all crawled every epoch.
    n = 3000
    rng = np.random.default_rng(1)
    pop = ce.Population.from_arrays(lambda_=rng.uniform(0.1, 5, n), xi=rng.uniform(0.5, 2, n),
                                    mu=rng.uniform(0.1, 1, n), cost=np.full(n, 1e-13))
    res = ce.evaluate(pop, 1e-11, ["whittle", ("user", lambda s, a, p: s)], epochs=20,
                      bound=False)
    for name in ("whittle", "user"):
        assert res[name]["mean_cost_per_epoch"] <= 1e-11 * (1 + 1e-12)
    # One source of cost 1e20 among costs near 1, budget 100 (it was crawled every epoch).
    cost = rng.uniform(0.5, 2, n)
    cost[7] = 1e20
    lam = rng.uniform(0.1, 5, n)
    lam[7] = 1e25
    pop = ce.Population.from_arrays(lambda_=lam, xi=np.ones(n), mu=np.ones(n), cost=cost)
    res = ce.evaluate(pop, 100, ["greedy", ("user", lambda s, a, p: s / cost)], epochs=10,
                      bound=False)
    for name in ("greedy", "user"):
        assert res[name]["mean_cost_per_epoch"] <= 100 * (1 + 1e-12)


def _interrupt_after(seconds):
    timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_stops_a_read_from_a_pipe_that_never_ends(tmp_path):
    fifo = tmp_path / "slow"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer():
        with open(fifo, "w") as f:
            f.write("lambda,xi,mu\n")
            while not stop.is_set():
                f.write("1,1,1\n")
                f.flush()
                time.sleep(0.01)

    t = threading.Thread(target=writer)
    t.start()
    timer = _interrupt_after(0.5)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            ce.Population.read(fifo)
    finally:
        timer.cancel()
        stop.set()
        t.join()
    assert time.monotonic() - started < 30


def test_ctrl_c_stops_a_learner():
    inst = ce.SyncInstance.generate("polynomial", 2000, seed=1)
    timer = _interrupt_after(0.5)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            ce.sync_learn(inst, "async-mirrorsync", rounds=300_000)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 30
