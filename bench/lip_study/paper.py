import sys  # needs numpy and mpmath (pip install mpmath)
import numpy as np
from lipmodel import *
from policies import *
pop = Pop([250]*4, [1,0.7,0.2,0.08], [0.7,0.35,0.7,0.21])
print("u* =", pop.u_star, " u =", pop.u)
for M in (1,2):
    lo, hi = pop.lambda_star(M)
    print(f"\nM={M}: lambda* interval [{lo!r}, {hi!r}]  D(lo)={pop.dual(lo,M)!r} D(hi)={pop.dual(hi,M)!r}")
    for lam in sorted(set([lo, 0.5*(lo+hi), hi])):
        g,tau = pop.relaxed(lam)
        print(f"  lam={lam:.10g}: periods {tau}, g {np.round(g,4)}, rate {pop.rate(lam):.6f}")
    w = long_run(pop, WhittleScorer(pop), M)
    print("  whittle long run", w)
    for lam,name in ((lo,'lo'),(0.5*(lo+hi),'mid'),(hi,'hi')):
        r = long_run(pop, LipScorer(pop, lam), M)
        print(f"  LIP({name}) long run", r)
