"""User policies: a score function ranked by the engine's selection, with the built-in policies'
accounting. A function that computes a built-in policy's scores must give that policy's numbers
exactly."""

import threading

import numpy as np
import pytest

import crawleval as ce


def greedy(state, age, params):
    return state * params.inv_cost  # the built-in greedy score (policy.hpp)


def stochastic_whittle(state, age, params):
    return ce.whittle_index(state, params.lambda_, params.xi, params.mu, params.cost,
                            params.epoch_length)


def assert_same(a, b):
    for key in ("mean_reward", "ci95_low", "ci95_high", "mean_cost_per_epoch",
                "replication_rewards", "replications", "gap_to_bound"):
        assert np.array_equal(a.get(key), b.get(key)), key


@pytest.mark.parametrize(
    "population, budget, kw",
    [
        (ce.Population.paper_example(), 1, dict(epochs=2000)),  # the small engine
        (ce.Population.paper_example(), 2, dict(model="stochastic", replications=4, epochs=300)),
        (ce.Population.synthetic(20000, seed=2, costs="lognormal"), 150,  # the wide engine
         dict(model="stochastic", epochs=30, replications=2)),
        (ce.Population.synthetic(6000, seed=4), 60, dict(observe="belief", epochs=40)),
        (ce.Population.synthetic(5000, seed=6), 40, dict(epochs=30, target_ci=0.001,
                                                          replications=2, start="full")),
    ],
    ids=["paper", "paper-stochastic", "wide-costs-stochastic", "belief", "target-ci"],
)
def test_user_greedy_equals_builtin_greedy(population, budget, kw):
    r = ce.evaluate(population, budget, ["greedy", ("mine", greedy)], backend="cpu", **kw)
    assert r["mine"]["backend"] == "cpu"
    assert_same(r["mine"], r["greedy"])


def test_user_whittle_equals_builtin_whittle_stochastic():
    pop = ce.Population.synthetic(4000, seed=9, costs="lognormal")
    r = ce.evaluate(pop, 40, ["whittle", ("mine", stochastic_whittle)], model="stochastic",
                    epochs=25, replications=2, backend="cpu")
    assert_same(r["mine"], r["whittle"])


def test_policy_sees_state_age_and_params():
    pop = ce.Population.paper_example()
    seen = []

    def record(state, age, params):
        seen.append((params.epoch, params.replication, state.copy(), age.copy()))
        assert not state.flags.writeable and not age.flags.writeable
        return -params.id.astype(float)  # crawl the lowest id, always

    ce.evaluate(pop, 1, [record], epochs=3, burn_in=0, replications=2, bound=False)
    assert [(e, r) for e, r, _, _ in seen] == [(e, r) for r in (0, 1) for e in range(3)]
    p = ce.PolicyParams  # the documented constants
    params = ce._policy_params(pop._pop, 1.0, 1.0)
    u = params.u
    np.testing.assert_allclose(params.alpha, np.exp(-pop.mu))
    np.testing.assert_allclose(u, pop.lambda_ * pop.xi / pop.mu * (1 - np.exp(-pop.mu)))
    _, _, s0, a0 = seen[0]
    _, _, s1, a1 = seen[1]
    _, _, s2, a2 = seen[2]
    # Start empty: X = 0, age 0 (no content yet). Source 0 is crawled every epoch.
    np.testing.assert_array_equal(s0, 0.0)
    np.testing.assert_array_equal(a0, [0, 0, 0, 0])
    np.testing.assert_array_equal(s1, u)  # X' = alpha * 0 + u for all (the crawl resets to u)
    np.testing.assert_array_equal(a1, [1, 1, 1, 1])
    np.testing.assert_array_equal(s2, [u[0], *(params.alpha[1:] * u[1:] + u[1:])])
    np.testing.assert_array_equal(a2, [1, 2, 2, 2])
    # A given (off-grid) start counts ages from before epoch 0: epoch + 1.
    full = []
    ce.evaluate(pop, 1, [("full", lambda s, a, p: full.append(a.copy()) or -p.id.astype(float))],
                epochs=2, burn_in=0, start="full", bound=False)
    np.testing.assert_array_equal(full[0], [1, 1, 1, 1])
    np.testing.assert_array_equal(full[1], [1, 2, 2, 2])
    assert p is not None


def test_ties_go_to_lower_ids_and_budget_prefix():
    pop = ce.Population.from_arrays([1.0] * 6, [1.0] * 6, [0.5] * 6,
                                    cost=[1, 2, 1, 1, 1, 1], id=[10, 11, 12, 13, 14, 15])
    chosen = []

    def flat(state, age, params):
        chosen.append(age.copy())
        return np.zeros(len(state))  # all equal: by id, 10 and 11 fit (1 + 2), 12 does not

    r = ce.evaluate(pop, 3, [flat], epochs=3, burn_in=0, bound=False)
    # Every epoch crawls ids 10 and 11 (cost 1 + 2 = 3 = M); the rest never.
    assert r["flat"]["mean_cost_per_epoch"] == 3.0
    np.testing.assert_array_equal(chosen[2], [1, 1, 2, 2, 2, 2])


def test_nan_scores_rank_last():
    pop = ce.Population.paper_example()

    def nan_but_last(state, age, params):
        s = np.full(len(state), np.nan)
        s[3] = -1e300  # below every number but above NaN
        return s

    def last(state, age, params):
        return (np.arange(len(state)) == 3).astype(float)

    r = ce.evaluate(pop, 1, [nan_but_last, last], epochs=50, bound=False)
    assert np.array_equal(r["nan_but_last"]["replication_rewards"], r["last"]["replication_rewards"])
    assert r["nan_but_last"]["mean_reward"] != ce.evaluate(
        pop, 1, [("first", lambda s, a, p: -np.arange(4.0))], epochs=50)["first"]["mean_reward"]


def test_bad_return_values_raise_clear_errors():
    pop = ce.Population.paper_example()
    with pytest.raises(ValueError, match=r"policy 'short' returned scores of shape \(3,\)"):
        ce.evaluate(pop, 1, [("short", lambda s, a, p: s[:3])], epochs=2)
    with pytest.raises(ValueError, match="dtype"):
        ce.evaluate(pop, 1, [("text", lambda s, a, p: np.array(["a"] * 4))], epochs=2)

    class Boom(Exception):
        pass

    def boom(state, age, params):
        if params.epoch == 1:
            raise Boom("from the policy")
        return state

    with pytest.raises(Boom, match="from the policy"):
        ce.evaluate(pop, 1, [boom], epochs=5)
    # The interpreter and the engine are fine afterwards.
    assert ce.evaluate(pop, 1, ["whittle"], epochs=10)["whittle"]["mean_reward"] > 0


def test_bad_policy_arguments():
    pop = ce.Population.paper_example()
    with pytest.raises(ValueError, match="policy 'best' is not one of: whittle, greedy"):
        ce.evaluate(pop, 1, ["best"])
    with pytest.raises(ValueError, match="given twice"):
        ce.evaluate(pop, 1, ["greedy", ("greedy", greedy)])
    with pytest.raises(TypeError, match="a policy must be"):
        ce.evaluate(pop, 1, [42])
    with pytest.raises(ValueError, match="policies needs at least one policy"):
        ce.evaluate(pop, 1, [])


def test_progress_callback_and_gil_released():
    pop = ce.Population.synthetic(50_000, seed=1)
    calls = []
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        ce.evaluate(pop, 500, ["whittle", ("mine", greedy)], epochs=400, burn_in=0,
                    progress=lambda label, done, total: calls.append((label, done, total)),
                    bound=False, threads=1, backend="cpu")
    finally:
        stop.set()
        t.join()
    labels = {c[0] for c in calls}
    assert labels <= {"whittle", "mine"} and "whittle" in labels
    assert all(0 < done <= total == 400 for _, done, total in calls)
    # Another Python thread ran while the engine worked (the GIL is released).
    assert ticks[0] > 1000


def test_zero_copy_views_and_borrowed_scores():
    # The policy gets the engine's own arrays (the same objects every epoch, read-only), and a
    # float64 result is read in place: a policy that returns one array it rewrites each epoch
    # gives the built-in greedy's numbers bit for bit.
    pop = ce.Population.synthetic(5000, seed=3, costs="lognormal")
    seen = []
    out = np.empty(len(pop))

    def in_place(state, age, params):
        seen.append((state.ctypes.data, age.ctypes.data))
        with pytest.raises(ValueError):
            state[0] = 1.0
        np.multiply(state, params.inv_cost, out=out)
        return out

    def as_list(state, age, params):  # converted once, still exact
        return (state * params.inv_cost).tolist()

    def strided(state, age, params):  # a non-contiguous view is copied, not misread
        both = np.empty((len(state), 2))
        both[:, 0] = state * params.inv_cost
        return both[:, 0]

    r = ce.evaluate(pop, 50, ["greedy", ("in_place", in_place), ("as_list", as_list),
                              ("strided", strided)],
                    model="stochastic", epochs=20, burn_in=3, replications=2, backend="cpu")
    for name in ("in_place", "as_list", "strided"):
        assert_same(r[name], r["greedy"])
    assert len(set(seen)) == 1  # no new arrays per epoch


def test_collected_is_the_previous_epochs_reward():
    # A learning policy sees what each source gave at the previous epoch's crawl.
    pop = ce.Population.synthetic(3000, seed=5)
    totals = []
    history = np.zeros(len(pop))

    def learner(state, age, params):
        c = params.collected
        assert not c.flags.writeable
        totals.append((params.replication, params.epoch, c.sum()))
        history[:] += c  # learns the sources' yield from its own crawls
        return state * params.inv_cost + 1e-9 * history

    r = ce.evaluate(pop, 30, ("learner", learner), model="stochastic", epochs=15, burn_in=0,
                    backend="cpu", record=True)
    rec = r.record("learner")["reward"][0]
    by_epoch = {e: s for rep, e, s in totals if rep == 0}
    assert by_epoch[0] == 0.0
    for t in range(1, 15):
        assert by_epoch[t] == pytest.approx(rec[t - 1], rel=1e-12)
    assert history.sum() > 0


@pytest.mark.parametrize("costs", ["unit", "lognormal"])
def test_parallel_selection_equals_the_serial_one(costs):
    # With several threads the function engine splits the selection's passes among them; with
    # one they run serially: the same crawls (rewards and costs, epoch by epoch) bit for bit,
    # on scores with many ties (a few distinct values) and on distinct ones.
    pop = ce.Population.synthetic(40_000, seed=6, costs=costs)

    def coarse(state, age, params):
        return np.floor(4 * state * params.inv_cost)  # large groups of equal scores

    def fine(state, age, params):
        return state * params.inv_cost + 1e-3 * age

    runs = [ce.evaluate(pop, 400, [("coarse", coarse), ("fine", fine), ("constant",
                        lambda s, a, p: np.zeros(len(s)))], model="stochastic", epochs=12,
                        burn_in=2, backend="cpu", threads=t, record=True, bound=False)
            for t in (1, 2, 3)]
    for name in ("coarse", "fine", "constant"):
        for other in runs[1:]:
            assert np.array_equal(other.record(name)["reward"], runs[0].record(name)["reward"])
            assert np.array_equal(other.record(name)["cost"], runs[0].record(name)["cost"])
            assert_same(other[name], runs[0][name])
    # All scores equal: the lowest ids fill the budget (unit costs: exactly 400 of them).
    if costs == "unit":
        assert np.all(runs[1].record("constant")["cost"] == 400)
