"""Hostile tests of fresh.evaluate's score functions and target_ci: odd scores, odd returns,
exceptions, kept arrays, resets, name clashes, backends, target_ci's edges, and the index
reimplemented by fresh.index_scores against the built-in one, bit for bit, and the refusals that
name what is wrong (unwhole ages, bad keywords, a function returning None)."""

import gc
import json
import sys

import numpy as np
import pytest

import crawleval as ce
from crawleval import fresh


def idx(age, changes, params):
    return fresh.index_scores(age, changes, params)


@pytest.fixture(scope="module")
def pop():
    return fresh.Population.synthetic(1200, seed=7)


@pytest.fixture(scope="module")
def varied():
    """Costs, hosts, caps and completely observed sources all over the place."""
    rng = np.random.default_rng(1)
    n = 1000
    return fresh.Population.from_arrays(
        importance=rng.random(n), rate=rng.random(n) * 2, cost=rng.random(n) * 3 + 0.1,
        complete=(rng.random(n) < 0.3).astype(int), host=rng.integers(0, 50, n),
        constrained=(rng.random(n) < 0.5).astype(int))


def same_run(a, b):
    for key in ("replication_penalty", "replication_freshness", "replication_cost"):
        assert np.array_equal(a[key], b[key]), key
    assert a["reward_series"] == b["reward_series"]
    assert a["burn_in"] == b["burn_in"]
    assert a["replications"] == b["replications"]


# --- index_scores reproduces the built-in index ------------------------------------------------


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("host_cap", [0, 2])
@pytest.mark.parametrize("objective", ["harmonic", "binary"])
def test_index_function_is_the_index_bit_for_bit(varied, backend, host_cap, objective):
    for kw in (dict(budget_fraction=0.1, start="steady", burn_in="auto", max_burn_in=100),
               dict(budget=123.456, start="fresh", burn_in=3, epoch_length=0.37)):
        res = fresh.evaluate(varied, policies=["index", idx], backend=backend, host_cap=host_cap,
                             objective=objective, epochs=15, replications=2, seed=5,
                             bound=False, **kw)
        a, b = res.policies
        assert b["name"] == "idx"
        same_run(a, b)


def test_index_function_bit_for_bit_on_extreme_populations():
    """Rates over eight decades, zero rates and importances, tiny and long epochs: the engine's
    carried period reward (PeriodCarry) against index_scores' two fresh calls."""
    rng = np.random.default_rng(4)
    n = 800
    rate = 10 ** rng.uniform(-5, 2, n)
    rate[rng.random(n) < 0.1] = 0
    imp = 10 ** rng.uniform(-3, 3, n)
    imp[rng.random(n) < 0.1] = 0
    p = fresh.Population.from_arrays(
        importance=imp, rate=rate, cost=10 ** rng.uniform(-1, 1, n),
        complete=(rng.random(n) < 0.3).astype(int), host=rng.integers(0, 40, n),
        constrained=(rng.random(n) < 0.5).astype(int))
    for el, obj, cap in ((1e-3, "harmonic", 0), (0.37, "binary", 2), (50.0, "harmonic", 2)):
        res = fresh.evaluate(p, policies=["index", idx], budget_fraction=0.02, epochs=80,
                             burn_in=0, start="fresh", epoch_length=el, objective=obj,
                             host_cap=cap, bound=False, backend="cpu", seed=2)
        same_run(*res.policies)


def test_index_function_with_many_threads_and_sources():
    """Above 16,384 sources the CPU engine scores and selects on threads."""
    p = fresh.Population.synthetic(17000, seed=5)
    common = dict(budget_fraction=0.2, host_cap=2, epochs=4, burn_in=1, start="fresh",
                  bound=False, seed=3)
    two = fresh.evaluate(p, policies=["index", idx], threads=2, backend="cpu", **common)
    same_run(*two.policies)
    one = fresh.evaluate(p, policies=[idx], threads=1, backend="cpu", **common)
    same_run(one.policies[0], two.policies[1])


# --- the population's edges --------------------------------------------------------------------


def test_one_source():
    p = fresh.Population.from_arrays(importance=[2.0], rate=[0.3])
    for backend in ("cpu", "reference"):
        for kw in (dict(budget=1), dict(budget_fraction=1.0), dict(budget=0.5)):
            res = fresh.evaluate(p, policies=["index", ("one", lambda a, c, q: np.array([1.0])),
                                              ("idx", fresh.index_scores)],
                                 epochs=5, burn_in="auto", backend=backend, **kw)
            a, b, c = res.policies
            same_run(a, b)
            same_run(a, c)
    with pytest.raises(ValueError, match=r"'s'.*shape \(\).*\(1,\)"):
        fresh.evaluate(p, policies=[("s", lambda a, c, q: 1.0)], epochs=5, burn_in=0, budget=1)


def test_zero_sources_refused():
    with pytest.raises(ce.InputError, match="no sources"):
        fresh.Population.from_arrays(importance=[], rate=[])


# --- odd scores --------------------------------------------------------------------------------


def test_all_equal_scores_crawl_the_lowest_ids_first():
    n = 20
    p = fresh.Population.from_arrays(importance=np.ones(n), rate=np.full(n, 0.5),
                                     id=np.arange(n)[::-1] * 3 + 1)
    for backend in ("cpu", "reference"):
        ages = []

        def flat(age, changes, params):
            ages.append(age.copy())
            return np.zeros(n)

        fresh.evaluate(p, policies=[flat], budget=5, epochs=4, burn_in=0, start="fresh",
                       backend=backend, bound=False)
        assert np.array_equal(ages[2], [1] * 5 + [2] * 15), backend
        assert np.array_equal(ages[3], [1] * 5 + [3] * 15), backend


def test_scores_follow_the_row_order_of_the_ids():
    n = 12
    ids = np.array([50, 3, 7, 100, 1, 9, 8, 2, 70, 60, 5, 4])
    p = fresh.Population.from_arrays(importance=np.arange(n) + 1.0, rate=np.full(n, 0.3), id=ids)
    for backend in ("cpu", "reference"):
        seen = []

        def by_importance(age, changes, params):
            seen.append((age.copy(), params.id.copy(), params.importance.copy()))
            return params.importance

        fresh.evaluate(p, policies=[by_importance], budget=3, epochs=3, burn_in=0, start="fresh",
                       backend=backend, bound=False)
        age, pid, imp = seen[2]
        assert np.array_equal(pid, np.sort(ids))
        crawled = set(pid[age == 1])
        assert crawled == set(pid[np.argsort(-imp)[:3]])


@pytest.mark.parametrize("host_cap", [0, 1, 2])
@pytest.mark.parametrize("objective", ["harmonic", "binary"])
def test_special_scores_crawl_as_the_reference(pop, host_cap, objective):
    """NaN, +-inf, +-1e300, -0.0 and subnormal scores: the CPU engine crawls what the reference
    crawls (the ages every epoch the same), the sums within rounding."""
    n = len(pop)
    specials = np.array([np.nan, np.inf, -np.inf, 1e300, -1e300, 0.0, -0.0, 5e-324, -5e-324,
                         1.0, 1.0, -np.nan])

    def run(backend):
        ages = []

        def weird(age, changes, params):
            ages.append(age.copy())
            rng = np.random.default_rng([params.epoch, params.replication])
            s = rng.choice(specials, size=n)
            return np.where(rng.random(n) < 0.5, s, age * params.rate)

        res = fresh.evaluate(pop, policies=[weird], budget_fraction=0.15, epochs=10, burn_in=2,
                             replications=2, seed=4, backend=backend, host_cap=host_cap,
                             objective=objective, bound=False)
        return res.policies[0], ages

    a, ages_a = run("cpu")
    b, ages_b = run("reference")
    assert len(ages_a) == len(ages_b) == 24
    for x, y in zip(ages_a, ages_b):
        assert np.array_equal(x, y)
    np.testing.assert_allclose(a["replication_penalty"], b["replication_penalty"], rtol=1e-12)
    np.testing.assert_allclose(a["replication_freshness"], b["replication_freshness"],
                               rtol=1e-12)


def test_nan_and_minus_inf_everywhere_rank_as_ties(pop):
    n = len(pop)
    for backend in ("cpu", "reference"):
        res = fresh.evaluate(
            pop, policies=[("nan", lambda a, c, p: np.full(n, np.nan)),
                           ("zero", lambda a, c, p: np.zeros(n)),
                           ("ninf", lambda a, c, p: np.full(n, -np.inf)),
                           ("big", lambda a, c, p: np.full(n, 1e300))],
            budget_fraction=0.15, epochs=8, burn_in=2, seed=4, backend=backend, bound=False)
        first = res.policies[0]
        for p in res.policies[1:]:
            same_run(first, p)


def _unaligned(values):
    buf = np.zeros(values.size * 8 + 1, np.uint8)
    out = np.frombuffer(buf.data, dtype=np.float64, count=values.size, offset=1)
    out[:] = values
    assert not out.flags.aligned
    return out


@pytest.mark.parametrize("convert", [
    lambda s: s.astype(np.float32).astype(np.float64),  # (exact for these scores)
    lambda s: s.astype(np.float32),
    lambda s: s.astype(np.int64),
    lambda s: s.astype(np.uint64),
    lambda s: list(s.astype(int)),
    lambda s: s.astype(">f8"),
    _unaligned,
    lambda s: np.ma.masked_array(s),
    lambda s: np.repeat(s, 2)[::2],
], ids=["float64", "float32", "int64", "uint64", "list", "big-endian", "unaligned",
        "masked-no-mask", "strided"])
def test_score_types_that_are_numbers_are_taken(pop, convert):
    common = dict(budget_fraction=0.2, epochs=6, burn_in=0, bound=False)
    plain = fresh.evaluate(pop, policies=[("p", lambda a, c, p: a.astype(np.float64))], **common)
    other = fresh.evaluate(pop, policies=[("p", lambda a, c, p: convert(a.astype(np.float64)))],
                           **common)
    same_run(plain.policies[0], other.policies[0])


def test_bool_scores_are_taken_as_numbers(pop):
    res = fresh.evaluate(pop, policies=[("b", lambda a, c, p: a > 3), ("f", lambda a, c, p:
                                                                         (a > 3) * 1.0)],
                         budget_fraction=0.2, epochs=6, burn_in=0, bound=False)
    same_run(*res.policies)


@pytest.mark.parametrize("value, match", [
    (lambda n: np.zeros(n, complex), "dtype complex128"),
    (lambda n: np.array([object()] * n), "dtype object"),
    (lambda n: np.array(["a"] * n), "dtype <U1"),
    (lambda n: np.zeros((n, 1)), r"shape \(\d+, 1\)"),
    (lambda n: np.zeros(n - 1), r"shape \(\d+,\)"),
    (lambda n: np.zeros(0), r"shape \(0,\)"),
    (lambda n: np.ma.masked_array(np.zeros(n), mask=np.arange(n) == 5), "masked score .entry 5"),
    (lambda n: "abc", "shape"),
    (lambda n: 3.0, "shape"),
], ids=["complex", "object", "str", "column", "short", "empty", "masked", "string", "scalar"])
def test_score_types_that_are_not_refused_naming_the_policy(pop, value, match):
    n = len(pop)
    for backend in ("cpu", "reference"):
        with pytest.raises(ValueError, match=f"policy 'bad'.*{match}"):
            fresh.evaluate(pop, policies=["index", ("bad", lambda a, c, p: value(n))],
                           budget_fraction=0.2, epochs=4, burn_in=0, bound=False, backend=backend)


def test_returning_none_says_none(pop):
    with pytest.raises(ValueError, match="None"):
        fresh.evaluate(pop, policies=[("forgot_return", lambda a, c, p: None)],
                       budget_fraction=0.2, epochs=3, burn_in=0, bound=False)


# --- exceptions, kept arrays, leaks ------------------------------------------------------------


class Boom(Exception):
    pass


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_exceptions_propagate_unchanged(pop, backend):
    common = dict(budget_fraction=0.2, epochs=10, bound=False, backend=backend)

    def boom(age, changes, params):
        if params.epoch == 4:
            raise Boom("boom at 4")
        return age * 1.0

    for kw in (dict(burn_in=3), dict(burn_in="auto"), dict(burn_in=3, replications=2)):
        with pytest.raises(Boom, match="^boom at 4$") as info:
            fresh.evaluate(pop, policies=["index", boom], **kw, **common)
        assert info.value.__cause__ is None and info.value.__context__ is None

    # In a batch added by target_ci (replication 3 is in the second batch).
    def late(age, changes, params):
        if params.replication == 3:
            raise Boom("late")
        return age * 1.0

    with pytest.raises(Boom, match="late"):
        fresh.evaluate(pop, policies=[late], burn_in=1, target_ci=1e-9, max_replications=8,
                       **common)

    def ki(age, changes, params):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fresh.evaluate(pop, policies=[ki], burn_in=0, **common)

    def bye(age, changes, params):
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        fresh.evaluate(pop, policies=[bye], burn_in=0, **common)

    class Reset:
        def reset(self, params):
            raise Boom("in reset")

        def __call__(self, age, changes, params):
            return age * 1.0

    with pytest.raises(Boom, match="in reset"):
        fresh.evaluate(pop, policies=[("r", Reset())], burn_in=0, **common)

    with pytest.raises(Boom, match="in factory"):
        fresh.evaluate(pop, policies=[ce.PolicyFactory(lambda p: (_ for _ in ()).throw(
            Boom("in factory")))], burn_in=0, **common)

    # Nothing stuck: the next run is as any.
    res = fresh.evaluate(pop, policies=["index", idx], burn_in=2, **common)
    same_run(*res.policies)


def test_progress_callback_errors_stop_a_function_run(pop):
    class Stop(Exception):
        pass

    def cb(label, done, total):
        if "bound" not in label:
            raise Stop()

    with pytest.raises(Stop):
        fresh.evaluate(pop, policies=[lambda a, c, p: a * 1.0], budget_fraction=0.2, epochs=50,
                       burn_in=0, progress=cb)


def test_kept_arrays_stay_valid_after_the_run():
    kept = []

    def keep(age, changes, params):
        kept.append((age, changes, params))
        return age * params.rate

    p = fresh.Population.synthetic(500, seed=2)
    res = fresh.evaluate(p, policies=[keep], budget_fraction=0.2, epochs=6, burn_in=0,
                         bound=False)
    copies = [(a.copy(), c.copy()) for a, c, _ in kept]
    rate = kept[0][2].rate.copy()
    assert [q.epoch for _, _, q in kept] == list(range(6))
    del p, res
    gc.collect()
    junk = [np.full(500, 7, np.uint32) for _ in range(200)]  # reuse freed memory
    for (a, c, q), (x, y) in zip(kept, copies):
        assert np.array_equal(a, x) and np.array_equal(c, y)
        assert np.array_equal(q.rate, rate)  # (the views keep the population alive)
        assert not a.flags.writeable and not q.rate.flags.writeable
    with pytest.raises(ValueError):
        kept[0][2].rate.flags.writeable = True
    del junk


def test_no_references_leak(pop):
    def f(a, c, p):
        return a * p.rate

    def bad(a, c, p):
        if p.epoch == 3:
            raise Boom()
        return a * 1.0

    common = dict(budget_fraction=0.2, epochs=8, burn_in=0, bound=False)
    fresh.evaluate(pop, policies=[f], **common)
    before = (sys.getrefcount(f), sys.getrefcount(bad), sys.getrefcount(pop))
    for _ in range(10):
        fresh.evaluate(pop, policies=[f, "index"], target_ci=0.5, max_replications=3, **common)
        with pytest.raises(Boom):
            fresh.evaluate(pop, policies=[bad], **common)
    gc.collect()
    assert (sys.getrefcount(f), sys.getrefcount(bad), sys.getrefcount(pop)) == before


def test_a_score_function_may_run_fresh_evaluate(pop):
    small = fresh.Population.synthetic(100, seed=3)

    def nested(a, c, p):
        if p.epoch == 1:
            inner = fresh.evaluate(small, policies=[lambda a, c, p: a * 1.0, "index"],
                                   budget_fraction=0.2, epochs=3, burn_in=0, bound=False)
            assert len(inner.policies) == 2
        return fresh.index_scores(a, c, p)

    res = fresh.evaluate(pop, policies=[nested, "index"], budget_fraction=0.2, epochs=5,
                         burn_in=0, bound=False)
    same_run(*res.policies)


# --- resets and factories ----------------------------------------------------------------------


class Stateful:
    """The index, perturbed by how many epochs this run has seen: wrong unless reset per run."""

    def __init__(self):
        self.resets = []

    def reset(self, params):
        assert params.epoch == 0
        self.resets.append(params.replication)
        self.t = 0

    def __call__(self, age, changes, params):
        assert params.epoch == self.t
        self.t += 1
        return fresh.index_scores(age, changes, params) + (self.t % 3) * 1e-3


def test_reset_before_every_replication_and_the_pilot(pop):
    common = dict(budget_fraction=0.2, epochs=20, seed=9, bound=False)
    o = Stateful()
    res = fresh.evaluate(pop, policies=[("s", o)], burn_in="auto", replications=3, **common)
    pilots = res.policies[0]["warm_up"]["pilots"]
    assert pilots >= 1
    assert o.resets == [0] * pilots + [0, 1, 2]
    o2 = Stateful()
    again = fresh.evaluate(pop, policies=[("s", o2)], burn_in=res.policies[0]["burn_in"],
                           replications=3, **common)
    assert o2.resets == [0, 1, 2]
    for key in ("replication_penalty", "replication_freshness", "replication_cost"):
        assert np.array_equal(res.policies[0][key], again.policies[0][key]), key


def test_factory_made_per_replication_and_refused_when_not_callable(pop):
    made = []

    def factory(params):
        made.append((params.replication, params.epoch))
        return idx

    res = fresh.evaluate(pop, policies=["index", ce.PolicyFactory(factory, name="fac")],
                         budget_fraction=0.2, epochs=10, burn_in=2, replications=2, bound=False)
    assert made == [(0, 0), (1, 0)]
    same_run(*res.policies)
    assert res.policies[1]["name"] == "fac"
    with pytest.raises(TypeError, match="'<lambda>': its factory returned int"):
        fresh.evaluate(pop, policies=[ce.PolicyFactory(lambda p: 5)], budget_fraction=0.2,
                       epochs=3, burn_in=0)
    with pytest.raises(TypeError, match="callable factory"):
        ce.PolicyFactory(5)
    with pytest.raises(TypeError, match="instance"):
        fresh.evaluate(pop, policies=[Stateful], budget_fraction=0.2, epochs=3, burn_in=0)


# --- names, order, backends --------------------------------------------------------------------


def test_names_and_order(pop):
    def f1(a, c, p):
        return a * 1.0

    common = dict(budget_fraction=0.2, epochs=6, burn_in=0, bound=False)
    res = fresh.evaluate(pop, policies=[f1, "index", ("f2", ce.PolicyFactory(lambda p: idx)),
                                        "uniform", idx, "proportional"], **common)
    assert [p["name"] for p in res.policies] == ["f1", "index", "f2", "uniform", "idx",
                                                 "proportional"]
    same_run(res.policies[1], res.policies[2])
    same_run(res.policies[1], res.policies[4])
    for policies in ([("index", f1), "index"], ["index", ("index", f1)], [f1, f1],
                     [("x", f1), ("x", idx)]):
        with pytest.raises(ce.InputError, match="given twice"):
            fresh.evaluate(pop, policies=policies, **common)
    for policies in ([("x", 5)], [(5, f1)], [("x", f1, 1)], [None], [["index"]]):
        with pytest.raises(TypeError):
            fresh.evaluate(pop, policies=policies, **common)
    with pytest.raises(ce.InputError, match="at least one"):
        fresh.evaluate(pop, policies=[], **common)
    # A function may take a built-in's name (as in evaluate): the result is the function's.
    named = fresh.evaluate(pop, policies=[("index", f1)], **common)
    same_run(named.policies[0], res.policies[0])
    # A single pair, a single function, a generator.
    assert [p["name"] for p in fresh.evaluate(pop, policies=("x", f1), **common).policies] == ["x"]
    assert [p["name"] for p in fresh.evaluate(pop, policies=f1, **common).policies] == ["f1"]
    gen = (p for p in ["index", f1])
    assert [p["name"] for p in fresh.evaluate(pop, policies=gen, **common).policies] == [
        "index", "f1"]


def test_backends(pop):
    common = dict(budget_fraction=0.2, epochs=4, burn_in=0, bound=False)
    for policies in ([idx], ["index", idx]):
        with pytest.raises(ce.InputError, match="(?i)cuda|gpu"):
            fresh.evaluate(pop, policies=policies, backend="cuda", **common)
        res = fresh.evaluate(pop, policies=policies, backend="auto", **common)
        assert [p["backend"] for p in res.policies] == ["cpu"] * len(policies)
    with pytest.raises(ce.InputError, match="not one of"):
        fresh.evaluate(pop, policies=[idx], backend="gpu", **common)
    # The learning variant hands the function its estimates (params.rate): index_scores is the
    # built-in index there too; on the GPU it is refused, as for the built-in policies.
    res = fresh.evaluate(pop, policies=["index", idx], learn=True, **common)
    assert np.array_equal(res.policies[0]["replication_penalty"],
                          res.policies[1]["replication_penalty"])
    with pytest.raises(ce.InputError, match="learn"):
        fresh.evaluate(pop, policies=[idx], learn=True, backend="cuda", **common)


def test_params_as_the_run(pop):
    seen = {}

    def look(age, changes, params):
        seen.update(budget=params.budget, cap=params.host_cap, el=params.epoch_length,
                    obj=params.objective, n=len(params.rate))
        assert age.dtype == np.uint32 and changes.dtype == np.uint32
        assert np.all(changes[params.complete == 0] == 0)
        return age * 1.0

    res = fresh.evaluate(pop, policies=[look], budget=50, host_cap=3, epoch_length=2.5,
                         objective="binary", epochs=3, burn_in=0, bound=False)
    assert seen == dict(budget=50.0, cap=3, el=2.5, obj="binary", n=len(pop))
    assert res.parameters["budget"] == 50.0


def test_params_budget_is_the_engines_with_budget_fraction(varied):
    seen = {}

    def look(age, changes, params):
        seen["budget"] = params.budget
        return age * 1.0

    res = fresh.evaluate(varied, policies=[look], budget_fraction=0.1, epochs=3, burn_in=0,
                         bound=False)
    assert seen["budget"] == res.parameters["budget"]


@pytest.mark.parametrize("kw", [dict(host_cap=None), dict(host_cap=float("nan")),
                                dict(host_cap=float("inf")), dict(host_cap="x"),
                                dict(epoch_length=None), dict(epoch_length="abc")],
                         ids=["cap-none", "cap-nan", "cap-inf", "cap-str", "el-none", "el-str"])
def test_bad_keywords_with_a_function_name_the_keyword(pop, kw):
    key = next(iter(kw))
    with pytest.raises(ce.InputError, match=f"{key}="):
        fresh.evaluate(pop, policies=["index"], budget_fraction=0.2, epochs=3, burn_in=0, **kw)
    with pytest.raises(ce.InputError, match=f"{key}="):
        fresh.evaluate(pop, policies=[idx], budget_fraction=0.2, epochs=3, burn_in=0, **kw)


def test_progress_names_the_function(pop):
    labels = []
    fresh.evaluate(pop, policies=[("mine", lambda a, c, p: a * 1.0)], budget_fraction=0.2,
                   epochs=5, burn_in=0, bound=False, progress=lambda lab, d, t: labels.append(lab))
    run = [lab for lab in labels if "bound" not in lab]
    assert run and all("mine" in lab for lab in run), labels


# --- index_scores' own inputs ------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_params():
    p = fresh.Population.synthetic(5, seed=2)
    cap = {}

    def grab(a, c, q):
        cap["p"] = q
        return a * 1.0

    fresh.evaluate(p, policies=[grab], budget_fraction=0.2, epochs=1, burn_in=0, bound=False)
    return p, cap["p"]


def test_index_scores_checks_lengths(small_params):
    _, q = small_params
    z = np.zeros(5, np.uint32)
    assert fresh.index_scores(z + 3, z, q).shape == (5,)
    assert np.array_equal(fresh.index_scores([3] * 5, [0] * 5, q), fresh.index_scores(z + 3, z, q))
    with pytest.raises(ce.InputError, match="one entry per source"):
        fresh.index_scores(z[:4], z, q)


@pytest.mark.parametrize("age", [np.full(5, -1), np.full(5, 2**32 + 3), np.full(5, 3.9),
                                 np.full(5, np.nan)], ids=["minus-1", "2^32+3", "3.9", "nan"])
def test_index_scores_refuses_ages_that_are_not_uint32(small_params, age):
    _, q = small_params
    with pytest.raises((ValueError, TypeError, OverflowError)):
        with np.errstate(invalid="ignore"):
            fresh.index_scores(age, np.zeros(5, np.uint32), q)


# --- target_ci ---------------------------------------------------------------------------------


def test_target_ci_values(pop):
    common = dict(budget_fraction=0.2, epochs=10, burn_in=2, seed=9, bound=False,
                  policies=["index", idx])
    for tci in (0, 0.0, -0.0):
        res = fresh.evaluate(pop, target_ci=tci, max_replications=3, **common)
        assert [p["replications"] for p in res.policies] == [1, 1]
        assert res.parameters["target_ci"] is None and res.parameters["max_replications"] is None
    for tci in (float("nan"), -0.1, 1, 1.0, float("inf"), -float("inf")):
        with pytest.raises(ce.InputError, match="target_ci"):
            fresh.evaluate(pop, target_ci=tci, **common)
    for tci in ("0.1", True, None):
        with pytest.raises(ce.InputError, match="target_ci= must be a number"):
            fresh.evaluate(pop, target_ci=tci, **common)
    for mr in (0, -1, 2**32):
        with pytest.raises(ce.InputError, match="max_replications"):
            fresh.evaluate(pop, target_ci=0.1, max_replications=mr, **common)
    for mr in (1.5, None, float("nan")):
        with pytest.raises(ce.InputError, match="max_replications= must be a whole number"):
            fresh.evaluate(pop, target_ci=0.1, max_replications=mr, **common)
    # Unreachable: runs to the cap (1 -> +2 -> +3 ... capped), not reached.
    for mr in (1, 2, 3, 7):
        res = fresh.evaluate(pop, target_ci=1e-12, max_replications=mr, **common)
        for p in res.policies:
            assert p["replications"] == mr and p["target_ci_reached"] is False
            assert p["replication_penalty"].shape == (mr,)
        same_run(*res.policies)
        assert res.parameters["target_ci"] == 1e-12
        assert res.parameters["max_replications"] == mr
    res = fresh.evaluate(pop, target_ci=5e-324, max_replications=3, **common)
    assert [p["replications"] for p in res.policies] == [3, 3]
    # Easy: reached after the first batch, consistent with the reported interval.
    res = fresh.evaluate(pop, target_ci=0.999, max_replications=50, **common)
    for p in res.policies:
        assert p["replications"] == 3 and p["target_ci_reached"] is True
        assert p["ci95_half_width"] <= 0.999 * abs(p["mean_reward"])


def test_target_ci_batches_are_a_plain_run(pop):
    """Every replication of a target_ci run is the replication of a plain run with as many: for
    the built-in index and for a stateful policy object reset before every replication."""
    common = dict(budget_fraction=0.2, epochs=20, seed=9, bound=False)
    o = Stateful()
    res = fresh.evaluate(pop, policies=["index", ("s", o)], burn_in="auto", replications=1,
                         target_ci=0.002, max_replications=12, **common)
    k = res.policies[1]["replications"]
    assert k == 12 and res.policies[0]["replications"] == 12
    assert sorted(o.resets[-12:]) == list(range(12))
    burn = res.policies[1]["burn_in"]
    plain_o = Stateful()
    plain = fresh.evaluate(pop, policies=["index", ("s", plain_o)], burn_in=burn,
                           replications=k, **common)
    assert plain_o.resets == list(range(12))
    for a, b in zip(res.policies, plain.policies):
        for key in ("replication_penalty", "replication_freshness", "replication_cost"):
            assert np.array_equal(a[key], b[key]), key
        assert a["mean_reward"] == b["mean_reward"]
        assert a["ci95_half_width"] == b["ci95_half_width"]
    fac = fresh.evaluate(pop, policies=[("s", ce.PolicyFactory(lambda p: _fresh_stateful()))],
                         burn_in=burn, replications=k, **common)
    assert np.array_equal(fac.policies[0]["replication_penalty"],
                          res.policies[1]["replication_penalty"])


def _fresh_stateful():
    s = Stateful()
    s.reset(_Zero())
    return s


class _Zero:
    epoch = 0
    replication = 0


def test_target_ci_more_replications_than_the_cap(pop):
    """replications above max_replications: the replications given are run (none added)."""
    res = fresh.evaluate(pop, policies=[idx], budget_fraction=0.2, epochs=10, burn_in=2,
                         bound=False, replications=5, target_ci=1e-9, max_replications=2)
    p = res.policies[0]
    assert p["replications"] == 5 and p["target_ci_reached"] is False


def test_target_ci_on_copies_stops(pop):
    """Rates 0: every replication is the same; no interval, so it stops at once."""
    p = fresh.Population.from_arrays(importance=np.ones(10), rate=np.zeros(10))
    res = fresh.evaluate(p, policies=["index", ("idx", fresh.index_scores)], epochs=5,
                         burn_in=0, budget=2, target_ci=0.1, max_replications=20)
    for q in res.policies:
        assert q["replications"] == 3 and q["target_ci_reached"] is False
        assert q["mean_reward"] == 0.0


def test_target_ci_reached_agrees_with_the_reported_interval(pop):
    res = fresh.evaluate(pop, policies=["index"], budget_fraction=0.2, epochs=200, burn_in=10,
                         bound=False, target_ci=0.5, max_replications=1)
    p = res.policies[0]
    assert p["ci95_half_width"] is not None
    assert p["target_ci_reached"] == (p["ci95_half_width"] <= 0.5 * abs(p["mean_reward"]))


# --- the result of a function policy ------------------------------------------------------------


def test_to_dict_of_a_function_policy(pop):
    def my_fn(a, c, p):
        return a * p.rate

    res = fresh.evaluate(pop, policies=["index", my_fn], budget_fraction=0.2, epochs=30,
                         burn_in=0, replications=2, target_ci=0.3)
    d = res.to_dict()
    json.dumps(d)
    a, b = d["policies"]
    assert b["name"] == "my_fn" and b["backend"] == "cpu"
    assert set(a) == set(b)
    assert b["metrics"]["closed_form"] is None
    assert np.isfinite(b["relative_gap_to_bound"]) and b["relative_gap_to_bound"] > 0
    assert b["replications"] == len(b["replication_rewards"]) >= 2
    for key in ("replication_freshness", "replication_penalty", "replication_cost"):
        assert key not in b
        assert not res.policies[1][key].flags.writeable
    assert d["parameters"]["target_ci"] == 0.3
    assert "my_fn" in repr(res)
    df = res.to_dataframe()
    assert list(df.index) == ["index", "my_fn"]
    assert df.loc["my_fn", "harmonic_penalty"] == pytest.approx(-b["mean_reward"])


# --- the command line --------------------------------------------------------------------------


def test_cli_target_ci_equals_python(cli_json):
    args = ["fresh", "run", "--synthetic", 800, "--seed", 5, "--budget-fraction", 0.2,
            "--epochs", 30, "--backend", "cpu", "--policy", "index,uniform", "--host-cap", 2,
            "--objective", "binary", "--target-ci", 0.004, "--max-replications", 6,
            "--no-progress"]
    cli = cli_json(*args)
    py = fresh.evaluate(fresh.Population.synthetic(800, seed=5), budget_fraction=0.2, epochs=30,
                        backend="cpu", policies=["index", "uniform"], host_cap=2,
                        objective="binary", target_ci=0.004, max_replications=6,
                        seed=5).to_dict()
    assert py["parameters"] == cli["parameters"]
    for a, b in zip(py["policies"], cli["policies"]):
        for key in ("replications", "replication_rewards", "target_ci_reached", "mean_reward",
                    "ci95_half_width", "burn_in"):
            assert a[key] == b[key], key


@pytest.mark.parametrize("value", ["nan", "1", "-0.1", "inf", "abc"])
def test_cli_target_ci_refused(cli, value):
    rc, _, err = cli("fresh", "run", "--synthetic", 100, "--budget-fraction", 0.2, "--epochs", 3,
                     "--burn-in", 0, "--policy", "index", "--no-progress", "--target-ci", value)
    assert rc != 0 and "--target-ci" in err
