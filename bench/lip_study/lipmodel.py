"""crawleval's deterministic crawling model, the Whittle index (Theorem 1, model.hpp port), the
relaxed single-source problem (relaxed_gain port), the multiplier lambda* and the Lagrangian index
(LIP) in closed form.  Scalar float64 code mirrors what a C++ __host__ __device__ port would do;
numpy-vectorised versions serve the simulations."""
import math
import numpy as np

SLACK = 1e-12


class P:
    """SourceParams (no expiry)."""

    def __init__(self, lam, xi, mu, C=1.0, T=1.0, E=0):
        self.lam, self.xi, self.mu, self.C, self.T = lam, xi, mu, C, T
        self.mu_t = mu * T
        self.alpha = math.exp(-self.mu_t)
        self.om_alpha = -math.expm1(-self.mu_t)
        self.u_star = (lam * xi) / mu
        self.u = self.u_star * self.om_alpha
        self.inv_cost = 1.0 / C
        self.E = E
        self.x_cap = self.u_star * (-math.expm1(-self.mu_t * E)) if E else self.u_star

    def x(self, k):
        kk = min(k, self.E) if self.E else k
        return self.u_star * (-math.expm1(-self.mu_t * kk))


# ----------------------------------------------------------------------------- relaxed problem
def relaxed_gain(c, p):
    """Port of model.hpp relaxed_gain: (g, tau) with g = max(0, max_k (x_k - c)/k), tau the
    smallest maximiser (0 = never)."""
    if not (c < p.x_cap):
        return 0.0, 0
    k_max = float(p.E) if p.E else 9007199254740992.0

    def g(k):
        kk = float(p.E) if (p.E and k > p.E) else k
        return (p.u_star * (-math.expm1(-p.mu_t * kk)) - c) / k

    k = 1.0
    r = 1.0 - c / p.u_star
    if 0.0 < r < 1.0:
        lr = -math.log(r)
        z = max(math.sqrt(2.0 * lr), lr + math.log1p(lr))
        for _ in range(2):
            z = z - ((z - math.log1p(z)) - lr) * (1.0 + z) / z
        k = math.ceil(z / p.mu_t)
        if not (k >= 1.0):
            k = 1.0
        if k > k_max:
            k = k_max
    gk = g(k)
    it = 0
    while it < 100000 and k > 1.0:
        gd = g(k - 1.0)
        if not (gd >= gk):
            break
        k -= 1.0
        gk = gd
        it += 1
    it = 0
    while it < 100000 and k < k_max:
        gu = g(k + 1.0)
        if not (gu > gk):
            break
        k += 1.0
        gk = gu
        it += 1
    if not (gk > 0.0):
        return 0.0, 0
    return gk, int(k)


def relaxed_gain_accurate(c, p):
    """relaxed_gain with the period's gain (x_k - c)/k evaluated without the cancellation of
    x_k - c when c is near u*: x_k - c = (u* - c) - u* alpha^k, u* - c exact by Sterbenz for c in
    [u*/2, u*] (the climb uses it too, so tau is the argmax of the accurate gains)."""
    if not (c < p.x_cap) or p.E:
        return relaxed_gain(c, p)
    near = c > 0.5 * p.u_star
    us_c = p.u_star - c

    def g(k):
        if near:
            return (us_c - p.u_star * math.exp(-p.mu_t * k)) / k
        return (p.u_star * (-math.expm1(-p.mu_t * k)) - c) / k
    _, k0 = relaxed_gain(c, p)
    k = float(max(k0, 1))
    gk = g(k)
    while k > 1.0:
        gd = g(k - 1.0)
        if not (gd >= gk):
            break
        k, gk = k - 1.0, gd
    while True:
        gu = g(k + 1.0)
        if not (gu > gk):
            break
        k, gk = k + 1.0, gu
    if not (gk > 0.0):
        return 0.0, 0
    return gk, int(k)


# ----------------------------------------------------------------------------- Whittle (port)
def whittle_line(x, k, om_k, p):
    return (p.u_star * om_k - (k * p.om_alpha) * (p.u_star - x)) * p.inv_cost


def whittle_index(x, p):
    if not (x < p.u_star) or not (x / p.u_star < 1.0) or not (x < p.x_cap):
        return x * p.inv_cost
    if not (x > 0.0):
        return 0.0
    r = -math.log1p(-x / p.u_star) / p.mu_t
    k = math.ceil(r)
    om_k = -math.expm1(-p.mu_t * k)
    best = whittle_line(x, k, om_k, p)
    if k >= 1.0:
        om = 0.0 if k == 1.0 else ((om_k - p.om_alpha) / p.alpha if p.alpha > 1e-3
                                   else -math.expm1(-p.mu_t * (k - 1.0)))
        best = max(best, whittle_line(x, k - 1.0, om, p))
    om = p.om_alpha + p.alpha * om_k
    best = max(best, whittle_line(x, k + 1.0, om, p))
    return best


def whittle_grid(k, p):
    """Whittle index at grid age k (AgeState::index path): L_k(x_k)."""
    om_k = -math.expm1(-p.mu_t * k)
    return whittle_line(p.u_star * om_k, k, om_k, p)


# ----------------------------------------------------------------------------- LIP closed form
def _f(n, g, D, p):
    # n g - D (1 - alpha^n)
    return n * g - D * (-math.expm1(-p.mu_t * n))


def lip_index(x, p, c, g):
    """Lagrangian index gamma(x) = Q(x,crawl) - Q(x,wait) at crawl price c = C lambda*, g =
    relaxed_gain(c).  Scale: reward units (NOT divided by C)."""
    D = p.u_star - x                          # distance below saturation (< 0 above u*)
    if not (g > 0.0):                         # never crawl in the relaxation (c >= u*)
        # wait forever (relative value 0) or wait once then crawl at once (x' > c only if x > u*)
        return min(x - c, p.om_alpha * (x - p.u_star)) if x > p.u_star else x - c
    a = p.om_alpha * D                        # one-step gain of waiting, x' - x
    if a <= g:                                # x >= theta: n = 1
        return g - a
    r = math.log(a / g) / p.mu_t              # a/g > 1: r > 0 (a/g = inf only if g underflowed)
    n0 = math.ceil(r) if r < 9007199254740992.0 else 9007199254740992.0
    best = math.inf
    for n in (n0 - 1, n0, n0 + 1):
        if n >= 1:
            best = min(best, _f(float(n), g, D, p))
    return best


def lip_terms(x, p, c, g):
    """Magnitude of the terms the closed form subtracts (for error scaling): n g + |D|(1-alpha^n)
    at the minimising n; |x| + c on the never branch."""
    D = p.u_star - x
    if not (g > 0.0):
        return abs(x) + c
    a = p.om_alpha * D
    if a <= g:
        return g + abs(a)
    r = math.log(a / g) / p.mu_t
    n0 = math.ceil(r) if r < 9007199254740992.0 else 9007199254740992.0
    best, bn = math.inf, None
    for n in (n0 - 1, n0, n0 + 1):
        if n >= 1:
            v = _f(float(n), g, D, p)
            if v < best:
                best, bn = v, n
    return bn * g + abs(D) * (-math.expm1(-p.mu_t * bn))


def lip_grid(k, p, g, tau):
    """gamma at grid age k (x_k = u*(1 - alpha^k)), no logarithm: n = max(1, tau - k)."""
    assert g > 0.0, "g == 0: use lip_grid_c"
    ak = math.exp(-p.mu_t * k)                # alpha^k; D = u* alpha^k
    if k >= tau:
        return g - p.u * ak
    n = tau - k
    best = math.inf
    for m in (n - 1, n, n + 1):
        if m >= 1:
            best = min(best, m * g - p.u_star * ak * (-math.expm1(-p.mu_t * m)))
    return best


def lip_grid_c(k, p, c, g, tau):
    if not (g > 0.0):
        return p.u_star * (-math.expm1(-p.mu_t * k)) - c
    return lip_grid(k, p, g, tau)


# ----------------------------------------------------------------------------- vectorised
class Pop:
    """Population arrays."""

    def __init__(self, lam, xi, mu, C=None, T=1.0):
        self.lam = np.asarray(lam, float)
        self.xi = np.asarray(xi, float)
        self.mu = np.asarray(mu, float)
        self.N = len(self.lam)
        self.C = np.ones(self.N) if C is None else np.asarray(C, float)
        self.T = T
        self.mu_t = self.mu * T
        self.alpha = np.exp(-self.mu_t)
        self.om_alpha = -np.expm1(-self.mu_t)
        self.u_star = self.lam * self.xi / self.mu
        self.u = self.u_star * self.om_alpha
        self.ps = [P(a, b, m, cc, T) for a, b, m, cc in zip(self.lam, self.xi, self.mu, self.C)]

    def xk(self, k):
        return self.u_star * (-np.expm1(-self.mu_t * k))

    def reward(self, sel, ages):
        """sum of x_k over the crawled sources sel at their ages."""
        return float(np.sum(self.u_star[sel] * (-np.expm1(-self.mu_t[sel] * ages[sel]))))

    def relaxed(self, lam_mult):
        g = np.empty(self.N)
        tau = np.empty(self.N, dtype=np.int64)
        for i, p in enumerate(self.ps):
            g[i], tau[i] = relaxed_gain(self.C[i] * lam_mult, p)
        return g, tau

    def rate(self, lam_mult):
        _, tau = self.relaxed(lam_mult)
        return float(np.sum(np.where(tau > 0, self.C / np.maximum(tau, 1), 0.0)))

    def dual(self, lam_mult, M):
        g, _ = self.relaxed(lam_mult)
        return lam_mult * M + float(np.sum(g))

    def lambda_star(self, M, iters=200):
        """(lo_end, hi_end): the ends of the dual's minimiser set. lo_end: limit of rate > M
        (bisection as bound.cpp); hi_end: limit of rate >= M. Equal unless the dual is flat."""
        top = float(np.max(self.u_star / self.C))
        if self.rate(0.0) <= M:
            return 0.0, 0.0 if self.rate(0.0) < M else None

        def bis(pred):
            lo, hi = 0.0, top
            for _ in range(iters):
                mid = 0.5 * (lo + hi)
                if mid <= lo or mid >= hi:
                    break
                if pred(mid):
                    lo = mid
                else:
                    hi = mid
            return lo, hi
        a = bis(lambda l: self.rate(l) > M)
        b = bis(lambda l: self.rate(l) >= M * (1 - 1e-12))
        return a[1], b[0] if b[0] > a[1] else a[1]

    # indices at grid ages (vectorised)
    def whittle_ages(self, k):
        # exactly AgeState::value + whittle_line (x = u* om_k, then u* - x)
        om_k = -np.expm1(-self.mu_t * k)
        x = self.u_star * om_k
        return (self.u_star * om_k - (k * self.om_alpha) * (self.u_star - x)) * (1.0 / self.C)

    def lip_ages(self, k, c, g, tau):
        """gamma(x_k) vectorised (reward units)."""
        ak = np.exp(-self.mu_t * k)
        never = ~(g > 0)
        out = np.empty(self.N)
        act = (k >= tau) & ~never
        out[act] = g[act] - self.u[act] * ak[act]
        pas = (k < tau) & ~never
        if pas.any():
            n = (tau - k)[pas].astype(float)
            best = np.full(n.shape, np.inf)
            for d in (-1.0, 0.0, 1.0):
                m = n + d
                v = m * g[pas] - self.u_star[pas] * ak[pas] * (-np.expm1(-self.mu_t[pas] * m))
                v = np.where(m >= 1, v, np.inf)
                best = np.minimum(best, v)
            out[pas] = best
        out[never] = (self.xk(k) - c)[never]
        return out


def select(scores, cost, M):
    """crawleval's rule: order by (score desc, id asc), longest prefix that fits M (1+slack)."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    lim = M * (1 + SLACK)
    cs = np.cumsum(cost[order])
    fits = cs <= lim
    stop = np.argmin(fits) if not fits.all() else len(order)
    return order[:stop]


def simulate(pop, score_fn, M, H=20000, B=5000, ages0=None, return_trace=False):
    """Deterministic model from the empty start (age 0, x = 0). score_fn(ages) -> scores.
    Returns the mean reward per epoch over H epochs after B burn-in epochs and the mean cost."""
    ages = np.zeros(pop.N, dtype=np.int64) if ages0 is None else ages0.copy()
    tot = 0.0
    used = 0.0
    for t in range(B + H):
        s = score_fn(ages)
        sel = select(s, pop.C, M)
        if t >= B:
            tot += pop.reward(sel, ages)
            used += float(np.sum(pop.C[sel]))
        ages += 1
        ages[sel] = 1
    return tot / H, used / H


def simulate_cycle(pop, score_fn, M, max_t=200000):
    """Exact long-run average for small N: run until the joint age vector repeats (ages capped
    where the index no longer changes is NOT assumed: we require an exact repeat)."""
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
        s = score_fn(ages)
        sel = select(s, pop.C, M)
        rewards.append(float(np.sum(pop.xk(ages[sel].astype(float)))))
        ages += 1
        ages[sel] = 1
    return None, None, None


# ----------------------------------------------------------------------------- C++-ready versions
def lip_score_grid(k, p, c, g, tau):
    """The proposed C++ grid path (no logarithm, no neighbour search): gamma(x_k), reward units.
    Expiry E (p.E > 0): x_k = u*(1 - alpha^min(k,E)); tau <= E; gamma = g from age E on."""
    if not (g > 0.0):
        return p.x(k) - c                       # never crawled in the relaxation (k = 0: -c)
    if k == 0:
        return -c                               # crawling an empty source only pays c
    if p.E and k >= p.E:
        return g                                # saturated: waiting gains nothing, loses g
    ak = math.exp(-p.mu_t * k)                  # alpha^k (D = u* alpha^k)
    if k >= tau:
        return g - p.u * ak                     # n = 1: g - (x_(k+1) - x_k)
    n = tau - k                                 # wait n epochs, crawl at age tau
    return n * g - p.u_star * ak * (-math.expm1(-p.mu_t * n))


def lip_score(x, p, c, g, tau):
    """The proposed C++ general path (any observed state x >= 0), reward units."""
    if not (g > 0.0):
        return min(x - c, p.om_alpha * (x - p.u_star)) if x > p.u_star else x - c
    if not (x > 0.0):
        return -c
    D = p.u_star - x
    a = p.om_alpha * D                           # one-step gain of waiting (<= 0 above u*)
    if a <= g:
        return g - a                             # x >= theta
    nmax = float(tau) + 1.0                      # n <= tau for 0 <= x (D <= u*)
    r = math.log1p((a - g) / g) / p.mu_t         # log(a/g) / mu T, digits kept near a = g
    n0 = float(math.ceil(r)) if r < nmax else nmax
    if not (n0 >= 1.0):
        n0 = 1.0
    best = math.inf
    for n in (n0 - 1.0, n0, n0 + 1.0):
        if n >= 1.0:
            best = min(best, n * g - D * (-math.expm1(-p.mu_t * n)))
    return best
