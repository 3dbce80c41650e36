import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
import numpy as np
from lipmodel import *; from policies import *
out = open('q4_long.txt','w')
d = np.genfromtxt('pop1000.csv', delimiter=',', names=True)
pop = Pop(d['lambda'], d['xi'], d['mu'], d['cost'])
for M in (10, 50):
    lo,_ = pop.lambda_star(M); b = pop.dual(lo, M)
    w = simulate(pop, WhittleScorer(pop), M, 40000, 20000)[0]
    l = simulate(pop, LipScorer(pop, lo), M, 40000, 20000)[0]
    s = f"unit N=1000 M={M}, burn-in 20000, H 40000: bound {b:.5f} whittle {w:.5f} (gap {100*(b-w)/b:.4f}%) lip {l:.5f} (gap {100*(b-l)/b:.4f}%)"
    print(s, flush=True); out.write(s+'\n')
