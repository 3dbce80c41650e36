import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
import numpy as np
from lipmodel import *; from q5_stoch import *
pop = Pop([250]*4, [1,0.7,0.2,0.08], [0.7,0.35,0.7,0.21])
out = open('q5_results.txt','a')
for M in (1, 2):
    lo, hi = pop.lambda_star(M); c = pop.C*lo; g,_ = pop.relaxed(lo)
    res = {}
    for name, sc in (('whittle', lambda x: whittle_vec(pop, x)), ('lip', lambda x: lip_vec(pop, x, c, g)), ('greedy', lambda x: x.copy())):
        res[name] = [simulate_stoch(pop, sc, M, 20000, 1000, 200 + r) for r in range(4)]
    s = f"paper example stochastic full observation M={M}: " + " | ".join(f"{k} {np.mean(v):.3f} (sd {np.std(v, ddof=1):.3f})" for k, v in res.items())
    print(s); out.write(s + '\n')
# how often is the observed state above u* in the N=1000 stochastic run? (under Whittle, M=10)
d = np.genfromtxt('pop1000.csv', delimiter=',', names=True)
pop = Pop(d['lambda'], d['xi'], d['mu'], d['cost'])
rng = np.random.default_rng(5); x = np.zeros(pop.N); above = 0; zero = 0; n = 0
M = 10
for t in range(3000):
    sel = select(whittle_vec(pop, x), pop.C, M)
    if t >= 1000:
        above += np.sum(x[sel] > pop.u_star[sel]); zero += np.sum(x == 0); n += 1
    nn = rng.poisson(pop.lam); idx = np.repeat(np.arange(pop.N), nn); s_ = rng.uniform(size=idx.size)
    z = rng.exponential(size=idx.size) * pop.xi[idx] * np.exp(-pop.mu[idx] * (1 - s_))
    U = np.bincount(idx, weights=z, minlength=pop.N); x = pop.alpha * x + U; x[sel] = U[sel]
s = f"N=1000 M=10 stochastic (Whittle run): crawled states above u*: {100*above/(n*M):.1f}% of crawls; sources with x = 0 exactly: {100*zero/(n*pop.N):.1f}% of source-epochs"
print(s); out.write(s + '\n')
