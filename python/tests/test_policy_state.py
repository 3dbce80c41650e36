"""The policy-state contract: a policy object's reset(params), or a PolicyFactory's factory, runs
before the first epoch of every run (each warm-up pilot, each replication), so a policy with
memory gives every run a fresh state; the arrays handed over are read-only for good."""

import numpy as np
import pytest

import crawleval as ce


class Nutch:
    """Nutch's adaptive re-fetch interval: shorter after a crawl that found content, longer after
    one that found none; the sources most overdue first. Its memory is its own arrays."""

    def __init__(self):
        self.resets = []

    def reset(self, params):
        n = len(params.id)
        self.interval = np.full(n, 4.0)
        self.last_age = np.full(n, np.inf)
        self.resets.append((params.replication, params.epoch))

    def __call__(self, state, age, params):
        crawled = age <= self.last_age  # the age restarted: crawled at the previous epoch
        found = params.collected > 0
        self.interval[crawled & found] *= 0.8
        self.interval[crawled & ~found] *= 1.25
        np.clip(self.interval, 1.0, 1e6, out=self.interval)
        self.last_age[:] = age
        return age / self.interval


def nutch_factory(params):
    """The same policy as a factory: its closure is the run's memory."""
    policy = Nutch()
    policy.reset(params)
    return policy.__call__


POP = ce.Population.synthetic(300, seed=3)


def test_every_run_starts_from_a_reset_state():
    policy = Nutch()
    res = ce.evaluate(POP, 30, [("nutch", policy)], epochs=80, replications=3)
    # The deterministic model: every replication is the same run, so a replication run after
    # others gives what replication 0 gives run alone.
    reps = res.replication_rewards("nutch")
    alone = ce.evaluate(POP, 30, [("nutch", Nutch())], epochs=80, burn_in=res["nutch"]["burn_in"])
    assert reps.tolist() == [alone["nutch"]["mean_reward"]] * 3
    # Reset before the pilot of burn_in="auto" and before each replication, at epoch 0.
    assert policy.resets == [(0, 0), (0, 0), (1, 0), (2, 0)]


def test_the_pilot_does_not_leak_into_the_measured_run():
    for policy in (Nutch(), ce.PolicyFactory(nutch_factory, name="nutch")):
        auto = ce.evaluate(POP, 30, [("nutch", policy)], epochs=100, replications=2,
                           model="stochastic")
        burn = auto["nutch"]["burn_in"]
        fixed = ce.evaluate(POP, 30, [("nutch", policy)], epochs=100, replications=2,
                            model="stochastic", burn_in=burn)
        assert auto.replication_rewards("nutch").tolist() == \
            fixed.replication_rewards("nutch").tolist()


def test_a_factory_makes_a_fresh_policy_for_every_run():
    made = []

    def factory(params):
        made.append((params.replication, params.epoch, params.collected.sum()))
        return nutch_factory(params)

    res = ce.evaluate(POP, 30, [ce.PolicyFactory(factory)], epochs=60, replications=3,
                      burn_in=5)
    assert made == [(0, 0, 0.0), (1, 0, 0.0), (2, 0, 0.0)]
    assert res.names() == ["factory"]
    # The same numbers as the policy object.
    obj = ce.evaluate(POP, 30, [("factory", Nutch())], epochs=60, replications=3, burn_in=5)
    assert res.replication_rewards("factory").tolist() == \
        obj.replication_rewards("factory").tolist()
    with pytest.raises(TypeError, match="its factory returned int"):
        ce.evaluate(POP, 30, ce.PolicyFactory(lambda p: 3, name="bad"), epochs=5, burn_in=0)


def test_arrays_handed_to_a_policy_cannot_be_made_writable():
    seen = []

    def tamper(state, age, params):
        for name in ("state", "age", "collected", "alpha", "u", "u_star", "inv_cost",
                     "lambda_", "xi", "mu", "cost", "id"):
            a = {"state": state, "age": age}.get(name)
            a = getattr(params, name) if a is None else a
            with pytest.raises(ValueError):
                a.flags.writeable = True
            with pytest.raises(ValueError):
                a[:] = 1e6
            seen.append(name)
        return state * params.inv_cost

    pop = ce.Population.paper_example()
    res = ce.evaluate(pop, 1, [tamper, "greedy"], epochs=30, burn_in=0)
    assert len(seen) == 12 * 30
    assert res["tamper"]["mean_reward"] == res["greedy"]["mean_reward"]


def test_masked_scores_and_nul_names_are_refused():
    pop = ce.Population.paper_example()

    def masked(state, age, params):
        return np.ma.array(state, mask=[False, True, False, False])

    with pytest.raises(ValueError, match=r"policy 'masked' returned a masked score \(entry 1\)"):
        ce.evaluate(pop, 1, masked, epochs=5, burn_in=0)

    def unmasked(state, age, params):
        return np.ma.array(state * params.inv_cost, mask=False)

    a = ce.evaluate(pop, 1, [unmasked, "greedy"], epochs=30, burn_in=0)
    assert a["unmasked"]["mean_reward"] == a["greedy"]["mean_reward"]
    with pytest.raises(ce.InputError, match=r"policy 'a\\x00b': a policy's name cannot contain a "
                                            r"NUL character"):
        ce.evaluate(pop, 1, [("a\0b", unmasked)], epochs=5, burn_in=0)


def test_a_policy_class_is_refused_for_its_instance():
    with pytest.raises(TypeError, match=r"policy 'Nutch' is the class Nutch: pass an instance, "
                                        r"Nutch\(\)"):
        ce.evaluate(POP, 30, Nutch, epochs=5, burn_in=0)
    with pytest.raises(TypeError, match="is the class Nutch"):
        ce.evaluate(POP, 30, [("n", Nutch)], epochs=5, burn_in=0)
