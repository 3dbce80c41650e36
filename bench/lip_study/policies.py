"""Policies and exact long-run evaluation for small instances."""
import math
import numpy as np
from lipmodel import Pop, P, relaxed_gain, relaxed_gain_accurate, select, lip_index, whittle_index


class LipScorer:
    """LIP at multiplier lam: gamma(x_k) per source from its age (optionally / C)."""

    def __init__(self, pop, lam, per_cost=False, accurate=True):
        self.pop = pop
        self.c = pop.C * lam
        rg = relaxed_gain_accurate if accurate else relaxed_gain
        gt = [rg(ci, p) for ci, p in zip(self.c, pop.ps)]
        self.g = np.array([a for a, _ in gt])
        self.tau = np.array([b for _, b in gt], dtype=np.int64)
        self.per_cost = per_cost

    def __call__(self, ages):
        s = self.pop.lip_ages(ages.astype(float), self.c, self.g, self.tau)
        return s / self.pop.C if self.per_cost else s


class WhittleScorer:
    def __init__(self, pop):
        self.pop = pop

    def __call__(self, ages):
        return self.pop.whittle_ages(ages.astype(float))


def age_caps(pop):
    # beyond this age 1 - alpha^k rounds to 1: x_k == u* in double
    return np.array([int(math.ceil(38.0 / m)) + 1 for m in pop.mu_t], dtype=np.int64)


def long_run(pop, scorer, M, max_t=400000, caps=None):
    """Exact long-run mean reward per epoch of a deterministic index policy from the empty start:
    run until the joint (capped) age vector repeats; returns (mean, cycle length, transient)."""
    caps = age_caps(pop) if caps is None else caps
    ages = np.zeros(pop.N, dtype=np.int64)
    seen = {}
    rewards = []
    for t in range(max_t):
        key = ages.tobytes()
        if key in seen:
            t0 = seen[key]
            cyc = rewards[t0:]
            return sum(cyc) / len(cyc), len(cyc), t0
        seen[key] = t
        sel = select(scorer(ages), pop.C, M)
        rewards.append(pop.reward(sel, ages))
        ages += 1
        ages[sel] = 1
        np.minimum(ages, caps, out=ages)
    return float(np.mean(rewards[max_t // 2:])), None, None


def exact_optimum(pop, M, caps=None, tol=1e-11, max_it=200000, upper=False):
    """Exact optimum of a small instance with any costs: relative value iteration over the joint
    capped ages (action: any subset with total cost <= M(1+1e-12)). A capped source at age K
    earns x_K (lower model) or u* (upper model, upper=True): the true optimum lies between."""
    N = pop.N
    if caps is None:
        caps = age_caps(pop)
    caps = [int(c) for c in caps]
    shape = tuple(k + 1 for k in caps)   # ages 0..K
    S = int(np.prod(shape))
    grids = np.indices(shape).reshape(N, S)       # ages of each joint state
    xk = np.stack([pop.u_star[i] * (-np.expm1(-pop.mu_t[i] * grids[i].astype(float))) for i in range(N)])
    if upper:
        for i in range(N):
            xk[i][grids[i] == caps[i]] = pop.u_star[i]
    actions = []
    for mask in range(1 << N):
        cost = sum(pop.C[i] for i in range(N) if mask >> i & 1)
        if cost <= M * (1 + 1e-12):
            actions.append(mask)
    nxt = []
    rew = []
    for mask in actions:
        na = grids.copy()
        r = np.zeros(S)
        for i in range(N):
            if mask >> i & 1:
                na[i] = 1
                r += xk[i]
            else:
                na[i] = np.minimum(na[i] + 1, caps[i])
        nxt.append(np.ravel_multi_index(tuple(na), shape))
        rew.append(r)
    h = np.zeros(S)
    beta = 0.5
    scale = float(np.max(pop.u_star))
    for it in range(max_it):
        q = np.max(np.stack([rew[a] + h[nxt[a]] for a in range(len(actions))]), axis=0)
        w = beta * q + (1 - beta) * h
        d = w - h
        if it % 50 == 0 and d.max() - d.min() < tol * scale:
            break
        h = w - w[0]
    return 0.5 * (d.max() + d.min()) / beta, (d.max() - d.min()) / beta, it


def bound(pop, M, lam):
    return pop.dual(lam, M)
