"""Q6: the proposed C++-ready paths (lip_score_grid: no log, no neighbours; lip_score: general),
with and without expiry, against the exhaustive long-double Bellman solution; expiry also by RVI."""
import sys; sys.path.insert(0, 'pylib')
import math, numpy as np
from lipmodel import *
import verify as V
LD = np.longdouble
rng = np.random.default_rng(77)
eps = np.finfo(float).eps

def ld_gamma_grid(p, c, g, k, E, Kmax):
    """min over n >= 1 of n g - (x_(k+n) - x_k), x_j = u*(1 - alpha^min(j,E)); never branch for g = 0."""
    mut, us = LD(p.mu_t), LD(p.u_star)
    def x(j):
        j = np.minimum(j, E) if E else j
        return us * (-np.expm1(-mut * j.astype(LD)))
    n = np.arange(1, Kmax + 1)
    xk = x(np.array([k]))[0]
    xs = x(k + n)
    if g > 0:
        w = n.astype(LD) * g - (xs - xk)
        j = int(np.argmin(w)); return w[j], j == Kmax - 1
    return (xk - LD(c)) - max(LD(0), np.max(xs - LD(c))), False

def ld_g(p, c, E, K):
    mut, us = LD(p.mu_t), LD(p.u_star)
    k = np.arange(1, K + 1)
    kk = np.minimum(k, E) if E else k
    if c > 0.5 * p.u_star:
        v = ((us - LD(c)) - us * np.exp(-mut * kk.astype(LD))) / k.astype(LD)
    else:
        v = (us * (-np.expm1(-mut * kk.astype(LD))) - LD(c)) / k.astype(LD)
    i = int(np.argmax(v)); return (v[i] if v[i] > 0 else LD(0))

worst = {}
def rec(key, err, terms):
    worst[key] = max(worst.get(key, 0.0), err / (eps * terms) if terms > 0 else (0 if err == 0 else math.inf))

n_cmp = 0
for case in range(500):
    p = V.draw_params(rng, mut_range=(-4, 1))
    E = int(10 ** rng.uniform(0, 3)) if case % 2 else 0
    if E:
        p = P(p.lam, p.xi, p.mu, p.C, 1.0, E)
    c, ck = V.draw_c(p, rng)
    if ck.startswith('c=tie') or ck == 'c=x_k':
        c = p.x_cap * rng.uniform(0.01, 0.99)
    if E and c > p.x_cap * 0.999: c = p.x_cap * rng.uniform(0.5, 1.2)
    g, tau = relaxed_gain_accurate(c, p) if not E else relaxed_gain(c, p)
    if tau > 300000: continue
    K = max(3 * tau + 60, (E + 5) if E else 0)
    gld = ld_g(p, c, E, K)
    ages = sorted({0, 1, 2, tau - 1, tau, tau + 1, 2 * tau, 3 * tau + 5} | ({E - 1, E, E + 3} if E else set()))
    for k in ages:
        if k < 0: continue
        ref, edge = ld_gamma_grid(p, c, gld, k, E, K + 5)
        if edge: continue
        v = lip_score_grid(k, p, c, g, tau)
        terms = (abs(float(ref)) + (max(tau - k, 1) * g) + p.x(k)) if g > 0 else abs(p.x(k)) + c
        rec('grid' + (' E' if E else ''), abs(v - float(ref)), terms); n_cmp += 1
        if not E:
            v2 = lip_score(p.x(k), p, c, g, tau)
            rec('general@grid', abs(v2 - float(ref)), terms)
# general path at off-grid states (no expiry) vs verify.ld_gamma
for case in range(300):
    p = V.draw_params(rng, mut_range=(-5, 1))
    c, ck = V.draw_c(p, rng)
    g, tau = relaxed_gain_accurate(c, p)
    if tau > 300000: continue
    K = max(3 * tau + 60, 60)
    gld = V.ld_g(p, c, K)[0]
    us = p.u_star
    zs = [0.0, us, 2 * us, 1e-300] + list(us * rng.uniform(0, 1, 6)) + list(us * (1 - 10 ** rng.uniform(-13, -1, 4))) + list(us * rng.uniform(1, 3, 2))
    if g > 0:
        th = us - g / p.om_alpha; zs += [th, math.nextafter(th, 0), th * (1 - 1e-6)]
    for z in zs:
        if z < 0: continue
        if gld > 0:
            a = float(LD(p.om_alpha) * (LD(us) - LD(z)))
            nstar = 1 if a <= float(gld) else math.ceil(math.log(a / float(gld)) / p.mu_t)
            Kz = int(min(4_000_000, 3 * nstar + 60))
        else:
            Kz = 60
        ref, edge = V.ld_gamma(p, c, gld, z, Kz)
        if edge: continue
        v = lip_score(z, p, c, g, tau)
        rec('general off-grid', abs(v - float(ref)), lip_terms(z, p, c, g) if g > 0 else abs(z) + c); n_cmp += 1
print(f"{n_cmp} comparisons (grid, and general path off-grid); max error in ulps of the terms:", {k: round(v, 2) for k, v in worst.items()})

# expiry by RVI on the age chain (independent of the formula)
def rvi_ages(p, c, E, K, beta=0.5):
    ks = np.arange(K + 1)
    x = np.array([p.x(int(k)) for k in ks])
    nw = np.minimum(ks + 1, K)
    h = np.zeros(K + 1)
    for it in range(400000):
        q = np.maximum(x - c + h[1], h[nw])
        w = beta * q + (1 - beta) * h
        d = w - h
        if it % 100 == 0 and d.max() - d.min() < 1e-13 * p.u_star: break
        h = w - w[1]
    return (x - c + h[1]) - h[nw]
mx = 0; n = 0
for case in range(120):
    p0 = V.draw_params(rng, mut_range=(-1.3, 0.5))
    E = int(rng.integers(1, 40))
    p = P(p0.lam, p0.xi, p0.mu, p0.C, 1.0, E)
    c = p.x_cap * rng.uniform(0.0, 1.1)
    g, tau = relaxed_gain(c, p)
    K = E + 20
    gam = rvi_ages(p, c, E, K)
    for k in range(K - 2):
        v = lip_score_grid(k, p, c, g, tau)
        mx = max(mx, abs(v - gam[k]) / p.u_star); n += 1
print(f"expiry: RVI on the age chain vs lip_score_grid: {n} states, max |diff|/u* = {mx:.2e}")
