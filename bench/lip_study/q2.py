"""Q2: LIP vs Whittle: sign identity, the integral identity, ranking differences."""
import sys  # needs numpy and mpmath (pip install mpmath)
import numpy as np, math
from lipmodel import *
from policies import *
rng = np.random.default_rng(2)
out = open('q2_results.txt','w')
def pr(*a):
    s=' '.join(str(x) for x in a); print(s); out.write(s+'\n')

# (1) sign identity gamma(x) > 0  <=>  W(x) > lambda*  (W as in model.hpp: already divided by C)
# and the integral identity gamma(x) = int_{lambda*}^{W(x)} C / tau(lambda) dlambda for x in [theta, u*)
bad_sign = 0; n = 0; worst_int = 0
for case in range(400):
    p = P(10**rng.uniform(-1,3), 10**rng.uniform(-2,1), 10**rng.uniform(-3,1), 10**rng.uniform(-1,1))
    lam = p.u_star/p.C * rng.uniform(0.01, 1.2)
    c = lam*p.C
    g, tau = relaxed_gain_accurate(c, p)
    for _ in range(20):
        x = p.u_star*rng.uniform(0, 1) if rng.uniform()<0.8 else p.x(int(rng.integers(0, 3*max(tau,1)+3)))
        gam = lip_index(x, p, c, g); W = whittle_index(x, p)
        if abs(gam) > 1e-9*p.u_star and abs(W-lam) > 1e-9*lam:
            n += 1
            if (gam > 0) != (W > lam): bad_sign += 1
        if gam > 1e-6*p.u_star and W > lam and x < p.u_star and case < 60:
            # numeric integral of C/tau(l) over [lam, W]: tau is piecewise constant; fine midpoint rule
            ls = np.linspace(lam, W, 4001); mids = 0.5*(ls[1:]+ls[:-1])
            taus = np.array([relaxed_gain_accurate(l*p.C, p)[1] for l in mids])
            integ = np.sum(np.where(taus>0, p.C/np.maximum(taus,1), 0.0)*np.diff(ls))
            worst_int = max(worst_int, abs(integ-gam)/gam)
pr(f"sign(gamma) vs sign(W - lambda*): {bad_sign} disagreements in {n} (state, source) pairs")
pr(f"integral identity gamma = int_lambda*^W C/tau: max rel deviation (4000-cell midpoint rule) {worst_int:.2e}")

# (2) paper example M = 2 table
pop = Pop([250]*4, [1,0.7,0.2,0.08], [0.7,0.35,0.7,0.21])
M = 2; lam = pop.lambda_star(M)[0]
L = LipScorer(pop, lam); Wh = WhittleScorer(pop)
pr(f"\nPaper example, M = 2, lambda* = {lam:.6f}, periods {L.tau}, g {np.round(L.g,3)}")
pr("age |" + " | ".join(f"src{i+1}: W        LIP" for i in range(4)))
for k in range(0, 9):
    ages = np.full(4, k)
    w = Wh(ages); l = L(ages)
    pr(f"{k:3d} |" + " | ".join(f"{w[i]:9.3f} {l[i]:9.3f}" for i in range(4)))
# pairs ranked differently: over ages 1..12 of every pair of sources
pr("\nPairs of (source, age) that Whittle and LIP order differently (paper example, M=2):")
cnt = 0; tot = 0; ex = []
for i in range(4):
    for j in range(i+1,4):
        for a in range(1,13):
            for b in range(1,13):
                ag = np.zeros(4, dtype=np.int64); ag[i]=a; ag[j]=b
                w = Wh(ag); l = L(ag)
                tot += 1
                if (w[i]-w[j])*(l[i]-l[j]) < 0:
                    cnt += 1
                    if len(ex) < 400: ex.append((i+1,a,j+1,b,w[i],w[j],l[i],l[j]))
pr(f"  {cnt} of {tot} pairs (ages 1..12) disagree")
# classify: both above threshold (both crawl in relaxation), both below, or mixed
cls = {"both active":0,"both passive":0,"mixed":0}
for e in ex:
    ai = e[6] > 0; aj = e[7] > 0
    cls["both active" if ai and aj else "both passive" if not ai and not aj else "mixed"] += 1
pr("  by relaxed status (gamma > 0 = active at lambda*):", cls)
for e in [e for e in ex if e[6]>0 and e[7]>0][:4] + [e for e in ex if e[6]<=0 and e[7]<=0][:4]:
    pr(f"  src{e[0]}@age{e[1]} vs src{e[2]}@age{e[3]}: W {e[4]:.3f} vs {e[5]:.3f}; LIP {e[6]:.3f} vs {e[7]:.3f}")
