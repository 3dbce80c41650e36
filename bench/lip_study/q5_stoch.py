"""Q5: stochastic model (Poisson arrivals, Exp(xi) utilities, eq. 19), full observation: the
deterministic index formulas applied to the observed (random) state. Whittle (Theorem 1, the
general off-grid formula) vs LIP (closed form at lambda* of the deterministic relaxation)."""
import sys  # needs numpy and mpmath (pip install mpmath)
import numpy as np, time
from lipmodel import *
from policies import *

def lip_vec(pop, x, c, g):
    D = pop.u_star - x
    a = pop.om_alpha * D
    out = np.empty_like(x)
    never = ~(g > 0)
    act = (a <= g) & ~never
    out[act] = (g - a)[act]
    pas = ~act & ~never
    if pas.any():
        r = np.log(a[pas] / g[pas]) / pop.mu_t[pas]
        n0 = np.ceil(np.minimum(r, 2.0**53))
        best = np.full(n0.shape, np.inf)
        for d in (-1.0, 0.0, 1.0):
            n = n0 + d
            v = n * g[pas] - D[pas] * (-np.expm1(-pop.mu_t[pas] * n))
            best = np.minimum(best, np.where(n >= 1, v, np.inf))
        out[pas] = best
    xn = x[never]; cn = c[never]; un = pop.u_star[never]
    out[never] = np.where(xn > un, np.minimum(xn - cn, pop.om_alpha[never] * (xn - un)), xn - cn)
    return out

def whittle_vec(pop, x):
    us = pop.u_star
    out = x / pop.C
    inside = (x < us) & (x / np.where(us > 0, us, 1) < 1) & (x > 0)
    xi = x[inside]; p_us = us[inside]; mt = pop.mu_t[inside]; oma = pop.om_alpha[inside]; al = pop.alpha[inside]
    r = -np.log1p(-xi / p_us) / mt
    k = np.ceil(r)
    best = np.full(xi.shape, -np.inf)
    for d in (-1.0, 0.0, 1.0):
        kk = k + d
        om = -np.expm1(-mt * kk)
        v = (p_us * om - (kk * oma) * (p_us - xi))
        best = np.maximum(best, np.where(kk >= 0, v, -np.inf))
    out[inside] = best / pop.C[inside]
    out[(x <= 0)] = 0.0
    return out

def simulate_stoch(pop, scorer, M, H, B, seed):
    rng = np.random.default_rng(seed)
    x = np.zeros(pop.N)
    lamT = pop.lam * pop.T
    tot = 0.0
    for t in range(B + H):
        sel = select(scorer(x), pop.C, M)
        if t >= B: tot += float(np.sum(x[sel]))
        # arrivals of the epoch
        n = rng.poisson(lamT)
        idx = np.repeat(np.arange(pop.N), n)
        s = rng.uniform(size=idx.size)
        z = rng.exponential(size=idx.size) * pop.xi[idx] * np.exp(-pop.mu[idx] * pop.T * (1 - s))
        U = np.bincount(idx, weights=z, minlength=pop.N)
        x = pop.alpha * x + U
        x[sel] = U[sel]
    return tot / H

if __name__ == '__main__':
    d = np.genfromtxt('pop1000.csv', delimiter=',', names=True)
    pop = Pop(d['lambda'], d['xi'], d['mu'], d['cost'])
    out = open('q5_results.txt', 'w')
    H, B, R = 6000, 1000, 3
    for M in (10, 20, 50):
        lo, hi = pop.lambda_star(M)
        c = pop.C * lo
        g, tau = pop.relaxed(lo)
        bnd = pop.dual(lo, M)
        res = {}
        for name, sc in (('whittle', lambda x: whittle_vec(pop, x)), ('lip', lambda x: lip_vec(pop, x, c, g)),
                         ('greedy', lambda x: x / pop.C)):
            vals = [simulate_stoch(pop, sc, M, H, B, 100 + r) for r in range(R)]   # common random numbers
            res[name] = vals
        s = f"stochastic, full observation, N=1000 M={M}: deterministic-relaxation bound {bnd:.4f} (not a bound here) |"
        for k, v in res.items():
            s += f" {k} {np.mean(v):.4f} (reps {', '.join('%.3f' % q for q in v)}) |"
        dlt = np.array(res['lip']) - np.array(res['whittle'])
        s += f" lip - whittle per replication: {', '.join('%+.3f' % q for q in dlt)}"
        print(s, flush=True); out.write(s + '\n')
