import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
import numpy as np
from lipmodel import *; from policies import *
d = np.genfromtxt('pop1000c.csv', delimiter=',', names=True)
pop = Pop(d['lambda'], d['xi'], d['mu'], d['cost'])
out = open('q3_budget.txt','w')
for M in (10, 20, 50):
    lo,_ = pop.lambda_star(M)
    s = f"lognormal N=1000 M={M} bound {pop.dual(lo, M):.4f}:"
    for name, sc in (("whittle", WhittleScorer(pop)), ("lip", LipScorer(pop, lo)), ("lip/C", LipScorer(pop, lo, per_cost=True))):
        r, used = simulate(pop, sc, M, 10000, 5000)
        s += f" | {name} reward {r:.4f} budget used {used:.4f} ({100*used/M:.2f}%) reward per unit budget {r/used:.4f}"
    print(s); out.write(s+'\n')
