import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
import numpy as np
import lipmodel
from lipmodel import *; from policies import *
def select_skip(scores, cost, M):
    order = np.lexsort((np.arange(len(scores)), -scores))
    lim = M * (1 + 1e-12); used = 0.0; sel = []
    for i in order:
        if used + cost[i] <= lim:
            sel.append(i); used += cost[i]
            if lim - used < cost.min(): break
    return np.array(sel, dtype=np.int64)
lipmodel.select = select_skip   # simulate() looks the name up in lipmodel
d = np.genfromtxt('pop1000c.csv', delimiter=',', names=True)
pop = Pop(d['lambda'], d['xi'], d['mu'], d['cost'])
out = open('q3_skip.txt','w')
for M in (10, 20, 50):
    lo,_ = pop.lambda_star(M)
    s = f"lognormal N=1000 M={M} (skip-and-continue fill) bound {pop.dual(lo, M):.4f}:"
    for name, sc in (("whittle", WhittleScorer(pop)), ("lip", LipScorer(pop, lo)), ("lip/C", LipScorer(pop, lo, per_cost=True))):
        r, used = simulate(pop, sc, M, 10000, 5000)
        s += f" | {name} {r:.4f} gap {100*(pop.dual(lo,M)-r)/pop.dual(lo,M):.3f}% used {100*used/M:.2f}%"
    print(s, flush=True); out.write(s+'\n')
