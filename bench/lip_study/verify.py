"""Q1 and Q6: verify the closed-form Lagrangian index.

(A) RVI: relative value iteration (aperiodicity-damped, no structural assumption) on the single-source
    relaxed problem over the grid x_0..x_K plus passive orbits of off-grid starts; gamma_RVI(x) =
    Q(x,1) - Q(x,0).  Moderate mu T (the chain must be short enough to iterate).
(B) Exhaustive long-double Bellman solution for every regime (mu T 1e-6..10, c from 0 to above u*):
    h(x') = max over all stopping times m >= 1 (plus "never" when g = 0) evaluated term by term in
    80-bit arithmetic (no logarithm, no threshold, no ceil): gamma_ref = x - c - h(x').
(C) The float64 closed form (lipmodel.lip_index / lip_grid, g from the relaxed_gain port) against
    (B), and against a 50-digit mpmath evaluation of the closed form from the same double inputs.
"""
import math
import sys
import time
import numpy as np
sys.path.insert(0, "pylib")
import mpmath as mp
from lipmodel import P, relaxed_gain, relaxed_gain_accurate, lip_index, lip_grid, lip_grid_c, lip_terms

rng = np.random.default_rng(12641)
LD = np.longdouble
mp.mp.dps = 50


def draw_c(p, r):
    """crawl price c = C lambda*, covering the regimes."""
    us = p.u_star
    kind = r.integers(0, 9)
    if kind == 0:
        return 0.0, "c=0"
    if kind == 1:
        return us * 10 ** r.uniform(-12, -3), "c<<u*"
    if kind == 2:
        return us * r.uniform(0.001, 0.999), "c~U(0,u*)"
    if kind == 3:
        return us * (1 - 10 ** r.uniform(-12, -3)), "c->u*-"
    if kind == 4:
        return us * r.uniform(1.0, 3.0), "c>u*"
    if kind == 5:
        return us, "c=u*"
    if kind == 6:  # an exact period tie: c = C * Whittle(x_k) = (k+1) x_k - k x_(k+1)
        k = int(10 ** r.uniform(0, 3))
        xk, xk1 = p.x(k), p.x(k + 1)
        return (k + 1) * xk - k * xk1, "c=tie(k=%d)" % k
    if kind == 7:  # c = x_k: period k gives exactly 0
        k = int(10 ** r.uniform(0, 3))
        return p.x(k), "c=x_k"
    return us * 10 ** r.uniform(-3, 0), "c~logU"


def draw_params(r, mut_range=(-6, 1)):
    lam = 10 ** r.uniform(-1, 3)
    xi = 10 ** r.uniform(-2, 1)
    mut = 10 ** r.uniform(*mut_range)
    C = 10 ** r.uniform(-1, 1)
    return P(lam, xi, mut, C, 1.0)


# ---------------------------------------------------------------- (B) exhaustive long double
def ld_params(p):
    # the double SourceParams (u*, mu T) taken as exact: measures the formula's error, not the
    # rounding of u* = lambda xi / mu (which matters only where c is within ulps of u*)
    return LD(p.mu_t), LD(p.u_star)


def ld_g(p, c, K):
    """g = max(0, max_{k<=K} (x_k - c)/k) by exhaustive scan in long double; x_k - c evaluated as
    (u* - c) - u* alpha^k where c > u*/2 (u* - c is exact in long double)."""
    mut, us = ld_params(p)
    k = np.arange(1, K + 1, dtype=LD)
    if c > 0.5 * p.u_star:
        v = ((us - LD(c)) - us * np.exp(-mut * k)) / k
    else:
        v = (us * (-np.expm1(-mut * k)) - LD(c)) / k
    i = int(np.argmax(v))
    return (v[i], i + 1) if v[i] > 0 else (LD(0), 0)


def ld_gamma(p, c, g, z, Kz):
    """Bellman by exhaustion, no logarithm/threshold/ceil:
       g > 0:  gamma = x - c - max_{m=1..Kz} (y_m - c - m g) = min_m [m g - D (1 - alpha^m)]
       g = 0:  gamma = x - c - max(0, max_m (y_m - c))      (never crawling is allowed)
    with y_m = u* - alpha^m D the state after m passive epochs (y_1 = x'), D = u* - x."""
    mut, us = ld_params(p)
    m = np.arange(1, Kz + 1, dtype=LD)
    D = us - LD(z)
    if g > 0:
        w = m * g - D * (-np.expm1(-mut * m))
        j = int(np.argmin(w))
        return w[j], (j == Kz - 1)
    y = us - np.exp(-mut * m) * D
    h = max(LD(0), np.max(y - LD(c)))
    return (LD(z) - LD(c)) - h, False


def part_B(ncases=400, states_per_case=40, cap=4_000_000):
    rows = []
    skipped = 0
    t0 = time.time()
    for case in range(ncases):
        p = draw_params(rng)
        c, ckind = draw_c(p, rng)
        g64, tau = relaxed_gain(c, p)
        g64a, _ = relaxed_gain_accurate(c, p)
        # long-double g by exhaustive scan over a range that must contain the argmax
        K = int(min(cap, max(50, 3 * tau + 50) if tau else min(cap, 50 + int(30 / p.mu_t))))
        if tau and 3 * tau + 50 > cap:
            skipped += 1
            continue
        gld, tau_ld = ld_g(p, c, K)
        if tau_ld >= K:
            skipped += 1
            continue
        # states: grid ages near 0, near tau, log-spaced; off-grid draws
        us = p.u_star
        ks = {0, 1, 2, 3}
        if tau:
            ks |= {max(0, tau + d) for d in range(-3, 4)}
            ks |= {int(v) for v in np.unique(np.geomspace(1, 2 * tau + 5, 12).astype(int))}
        else:
            ks |= {5, 10, 100}
        zs = [0.0, us, 2 * us, us * (1 - 1e-13), us * (1 - 1e-7), 1e-300]
        zs += list(us * rng.uniform(0, 1, 8)) + list(us * (1 - 10 ** rng.uniform(-12, -1, 4)))
        zs += list(us * rng.uniform(1, 2, 3))
        if gld > 0:
            theta = float(LD(us) - gld / LD(p.om_alpha))
            zs += [theta, math.nextafter(theta, 0), math.nextafter(theta, math.inf),
                   theta * (1 - 1e-9), theta * (1 + 1e-9)]
        pts = [("grid", k, p.x(k)) for k in sorted(ks)] + [("off", None, z) for z in zs if z >= 0]
        for kind, k, z in pts[:states_per_case + 20]:
            # passive horizon long enough to contain the best stopping time
            if gld > 0:
                a = float(LD(p.om_alpha) * (LD(us) - LD(z)))
                nstar = 1 if a <= float(gld) else math.ceil(math.log(a / float(gld)) / p.mu_t)
                Kz = int(min(cap, 3 * nstar + 60))
            else:
                Kz = 60 if z > us else 5
            ref, edge = ld_gamma(p, c, gld, z, Kz)
            if edge:
                skipped += 1
                continue
            if kind == "grid":
                v64 = lip_grid_c(k, p, c, g64, tau)
            else:
                v64 = lip_index(z, p, c, g64)
            v64a = lip_index(z, p, c, g64a)
            rows.append((case, ckind, p.mu_t, c / us if us else 0, kind, k, z / us, float(ref),
                         v64, v64a, float(gld), g64, max(us, z, c), lip_terms(z, p, c, g64)))
    print("part B: %d cases x states -> %d comparisons, %d skipped (horizon > %d), %.1f s"
          % (ncases, len(rows), skipped, cap, time.time() - t0))
    return rows


# ---------------------------------------------------------------- (A) RVI
def rvi_case(p, c, offgrid, K, beta=0.5, tol=1e-12, max_it=400000):
    us = p.u_star
    # states: grid 0..K, then each orbit 0..K
    xs = [p.x(k) for k in range(K + 1)]
    nxt_wait = list(range(1, K + 1)) + [K]
    for j, z in enumerate(offgrid):
        base = (K + 1) * (j + 1)
        xs += [us - math.exp(-p.mu_t * m) * (us - z) for m in range(K + 1)]
        nxt_wait += [base + m + 1 for m in range(K)] + [base + K]
    xs = np.array(xs)
    nw = np.array(nxt_wait)
    ref = 1  # the grid state x_1 = u
    r1 = xs - c
    h = np.zeros(len(xs))
    scale = max(us, c, 1e-300)
    for it in range(max_it):
        q1 = r1 + h[ref]
        q0 = h[nw]
        w = beta * np.maximum(q1, q0) + (1 - beta) * h
        d = w - h
        if it % 200 == 0 and (d.max() - d.min()) < tol * scale * beta:
            break
        h = w - w[ref]
    g = d[ref] / beta
    gam = (r1 + h[ref]) - h[nw]          # Q(x,1) - Q(x,0): the -g terms cancel
    return xs, gam, g, it, (d.max() - d.min()) / beta


def part_A(ncases=120):
    rows = []
    t0 = time.time()
    for case in range(ncases):
        p = draw_params(rng, mut_range=(math.log10(0.05), math.log10(3.0)))
        c, ckind = draw_c(p, rng)
        if ckind.startswith("c=tie") or ckind == "c=x_k":
            if c > 0.999999 * p.u_star:
                c = p.u_star * rng.uniform(0.2, 0.9)
                ckind = "c~U"
        g64, tau = relaxed_gain(c, p)
        if tau > 150:
            continue
        K = 3 * max(tau, 1) + 60
        # orbit horizon: the state must reach the crawl region well before K
        us = p.u_star
        off = list(us * rng.uniform(0, 1, 3)) + [us * rng.uniform(1, 2), us * (1 - 1e-6)]
        xs, gam, g_rvi, it, span = rvi_case(p, c, off, K)
        # compare at the grid ages 0..K-10 and at the first K-10 orbit states (truncation at K)
        idx = [k for k in range(K - 10)]
        for j in range(len(off)):
            base = (K + 1) * (j + 1)
            idx += [base + m for m in range(K - 10)]
        for i in idx:
            x = xs[i]
            if i <= K:
                v = lip_grid_c(i, p, c, g64, tau)
            else:
                v = lip_index(x, p, c, g64)
            rows.append((case, ckind, p.mu_t, c / us, x / us, gam[i], v, g_rvi, g64, us, span, it))
    print("part A: %d RVI solves -> %d state comparisons, %.1f s" % (ncases, len(rows), time.time() - t0))
    return rows


# ---------------------------------------------------------------- (C) mpmath closed form
def mp_closed(p, c, z):
    """50-digit closed form: g by exact scan around the float tau, then min over n of
    n g - D (1 - alpha^n) (+ the never branch)."""
    mut = mp.mpf(p.mu_t)
    us = mp.mpf(p.u_star)
    c = mp.mpf(c)
    z = mp.mpf(z)
    if not c < us:
        g = mp.mpf(0)
    else:   # exact argmax: climb from the double's tau in 50 digits ((x_k - c)/k is unimodal)
        _, tau = relaxed_gain(float(c), p)
        gk = lambda k: (us * (1 - mp.exp(-mut * k)) - c) / k
        k = max(tau, 1)
        g = gk(k)
        while k > 1 and gk(k - 1) >= g:
            k -= 1
            g = gk(k)
        while gk(k + 1) > g:
            k += 1
            g = gk(k)
        g = max(g, mp.mpf(0))
    D = us - z
    om = 1 - mp.exp(-mut)
    if g == 0:
        return (min(z - c, om * (z - us)) if z > us else z - c), g
    a = om * D
    if a <= g:
        return g - a, g
    n0 = int(mp.ceil(mp.log(a / g) / mut))
    return min(n * g - D * (1 - mp.exp(-mut * n)) for n in range(max(1, n0 - 2), n0 + 3)), g


def part_C(ncases=3000):
    rows = []
    for case in range(ncases):
        p = draw_params(rng)
        c, ckind = draw_c(p, rng)
        g64, tau = relaxed_gain(c, p)
        g64a, _ = relaxed_gain_accurate(c, p)
        us = p.u_star
        pick = rng.integers(0, 4)
        if pick == 0 and tau:
            k = max(0, tau + int(rng.integers(-3, 4)))
            z, kind = p.x(k), "grid@tau"
        elif pick == 1:
            k = int(10 ** rng.uniform(0, 7))
            z, kind = p.x(k), "grid"
        elif pick == 2:
            z, kind, k = us * rng.uniform(0, 1.5), "off", None
        else:
            z, kind, k = us * (1 - 10 ** rng.uniform(-14, -1)), "off-near-u*", None
        ref, gmp = mp_closed(p, c, z)
        if kind.startswith("grid"):
            v64 = lip_grid_c(k, p, c, g64, tau)
        else:
            v64 = lip_index(z, p, c, g64)
        v64a = lip_index(z, p, c, g64a)
        rows.append((ckind, p.mu_t, kind, float(ref), v64, v64a, float(gmp), g64, g64a,
                     max(us, z, c), lip_terms(z, p, c, g64a), z / us, c / us))
    return rows


def summarize(name, refs, vals, gs, scales, terms=None):
    refs, vals, gs, scales = map(np.asarray, (refs, vals, gs, scales))
    err = np.abs(vals - refs)
    rel = err / np.maximum(np.abs(refs), 1e-300)
    ulps = err / (np.finfo(float).eps * scales)
    ok = np.isfinite(vals)
    s = ("  %-44s n=%6d max|err| %.2g  max rel %.2g  rel>1e-12: %d  rel>1e-9: %d  max err/ulp(max(u*,x,c)) %.2f"
         % (name, len(refs), err[ok].max(), rel[ok].max(), int((rel > 1e-12).sum()),
            int((rel > 1e-9).sum()), ulps[ok].max()))
    if terms is not None:
        terms = np.asarray(terms)
        s += "  max err/ulp(terms) %.2f" % (err[ok] / (np.finfo(float).eps * terms[ok])).max()
    if (~ok).any():
        s += "  NONFINITE %d" % int((~ok).sum())
    print(s)
    return err, rel, ulps


if __name__ == "__main__":
    out = open("verify_results.txt", "w")

    class Tee:
        def write(self, s):
            sys.__stdout__.write(s)
            out.write(s)

        def flush(self):
            sys.__stdout__.flush()
            out.flush()
    sys.stdout = Tee()
    print("=== (A) RVI vs closed form (mu T in [0.05, 3], tau <= 150) ===")
    A = part_A(int(sys.argv[1]) if len(sys.argv) > 1 else 120)
    refs = [r[5] for r in A]
    vals = [r[6] for r in A]
    gs = [r[8] for r in A]
    sc = [max(r[9], r[3] * r[9], abs(r[4]) * r[9]) for r in A]
    summarize("gamma: RVI vs closed form", refs, vals, gs, sc)
    ea = np.array([abs(r[5] - r[6]) / r[9] for r in A])
    print("  max |gamma_RVI - gamma_closed| / u* = %.3g (RVI stopped at span/u* <= 1e-12 x beta)" % ea.max())
    eg = np.array([abs(r[5] - r[6]) / (abs(r[6]) + r[8]) for r in A if r[8] > 1e-6 * r[9]])
    print("  max |gamma_RVI - gamma_closed| / (|gamma| + g), cases with g > 1e-6 u*: %.3g (n=%d)" % (eg.max(), len(eg)))
    sg = [r for r in A if (r[5] > 0) != (r[6] > 0) and abs(r[6]) > 1e-9 * r[9]]
    print("  sign disagreements (|gamma| > 1e-9 u*): %d" % len(sg))
    gr = np.array([r[7] for r in A])
    g6 = np.array([r[8] for r in A])
    us = np.array([r[9] for r in A])
    print("  gain: max |g_RVI - g_relaxed_gain| / u* = %.3g; max RVI span/u* = %.3g"
          % (np.max(np.abs(gr - g6) / us), max(r[10] for r in A) / 1))
    by = {}
    for r in A:
        by.setdefault(r[1].split("(")[0], []).append(r)
    for kname, rs in sorted(by.items()):
        summarize("  c kind %s" % kname, [r[5] for r in rs], [r[6] for r in rs], [r[8] for r in rs],
                  [max(r[9], r[3] * r[9], abs(r[4]) * r[9]) for r in rs])

    print("\n=== (B) exhaustive long-double Bellman vs float64 closed form (mu T 1e-6..10) ===")
    Bm = part_B(int(sys.argv[2]) if len(sys.argv) > 2 else 400)
    refs = [r[7] for r in Bm]
    summarize("gamma: LD exhaustive vs float64 (relaxed_gain g)", refs, [r[8] for r in Bm],
              [r[10] for r in Bm], [r[12] for r in Bm], [r[13] for r in Bm])
    bad = sorted(Bm, key=lambda r: -abs(r[8] - r[7]) / max(abs(r[7]), 1e-300))[:6]
    print("  largest relative errors (c/u*, kind, k, x/u*, ref/u*... all near a zero of gamma):")
    for r in bad:
        us = r[12] if r[6] <= 1 and r[3] <= 1 else None
        print("    mu T %.3g c/u* %.17g %s k=%s x/u* %.6g ref %.3e val %.3e g %.3e"
              % (r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[10]))
    summarize("gamma: LD exhaustive vs float64 (accurate g)", refs, [r[9] for r in Bm],
              [r[10] for r in Bm], [r[12] for r in Bm])
    by = {}
    for r in Bm:
        by.setdefault((r[1].split("(")[0], r[4]), []).append(r)
    for key, rs in sorted(by.items()):
        summarize("  %s %s" % key, [r[7] for r in rs], [r[8] for r in rs], [r[10] for r in rs],
                  [r[12] for r in rs])
    # by mu T decade
    for lo in range(-6, 1):
        rs = [r for r in Bm if 10 ** lo <= r[2] < 10 ** (lo + 1)]
        if rs:
            summarize("  mu T in [1e%d,1e%d)" % (lo, lo + 1), [r[7] for r in rs], [r[8] for r in rs],
                      [r[10] for r in rs], [r[12] for r in rs])

    import pickle
    pickle.dump({"A": A, "B": Bm}, open("verify_rows.pkl", "wb"))
    print("\n=== (C) float64 closed form vs 50-digit closed form (same double inputs) ===")
    Cm = part_C(int(sys.argv[3]) if len(sys.argv) > 3 else 3000)
    pickle.dump({"A": A, "B": Bm, "C": Cm}, open("verify_rows.pkl", "wb"))
    summarize("gamma (relaxed_gain g)", [r[3] for r in Cm], [r[4] for r in Cm], [r[6] for r in Cm],
              [r[9] for r in Cm], [r[10] for r in Cm])
    summarize("gamma (accurate g)", [r[3] for r in Cm], [r[5] for r in Cm], [r[6] for r in Cm],
              [r[9] for r in Cm], [r[10] for r in Cm])
    bad = sorted(Cm, key=lambda r: -abs(r[5] - r[3]) / max(abs(r[3]), 1e-300))[:6]
    print("  largest relative errors (accurate g):")
    for r in bad:
        print("    %s mu T %.3g %s x/u* %.17g c/u* %.17g ref %.3e val %.3e g %.3e (ref/terms %.2g)"
              % (r[0], r[1], r[2], r[11], r[12], r[3], r[5], r[6], r[3] / r[10] if r[10] else 0))
    ge = np.array([abs(r[7] - r[6]) / r[6] for r in Cm if r[6] > 0])
    gea = np.array([abs(r[8] - r[6]) / r[6] for r in Cm if r[6] > 0])
    print("  g relative error: relaxed_gain port max %.3g (median %.3g); accurate max %.3g"
          % (ge.max(), np.median(ge), gea.max()))
    by = {}
    for r in Cm:
        by.setdefault((r[0].split("(")[0], r[2]), []).append(r)
    for key, rs in sorted(by.items()):
        summarize("  %s %s" % key, [r[3] for r in rs], [r[4] for r in rs], [r[6] for r in rs],
                  [r[9] for r in rs])
    for lo in range(-6, 1):
        rs = [r for r in Cm if 10 ** lo <= r[1] < 10 ** (lo + 1)]
        if rs:
            summarize("  mu T in [1e%d,1e%d)" % (lo, lo + 1), [r[3] for r in rs], [r[4] for r in rs],
                      [r[6] for r in rs], [r[9] for r in rs])
            summarize("  mu T in [1e%d,1e%d) accurate g" % (lo, lo + 1), [r[3] for r in rs], [r[5] for r in rs],
                      [r[6] for r in rs], [r[9] for r in rs])
