import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
import numpy as np
from lipmodel import *; from policies import *
out = open('q2_overlap.txt','w')
for f, costs in (('pop1000.csv','unit'), ('pop1000c.csv','lognormal')):
    d = np.genfromtxt(f, delimiter=',', names=True)
    pop = Pop(d['lambda'], d['xi'], d['mu'], d['cost'])
    for M in (10, 50):
        lo,_ = pop.lambda_star(M)
        W = WhittleScorer(pop); L = LipScorer(pop, lo, per_cost=True)
        ages = np.zeros(pop.N, dtype=np.int64); diff_epochs = 0; diff_srcs = 0; sign_mis = 0; n = 0
        for t in range(6000):
            sw = W(ages); sl = L(ages)
            a = set(select(sw, pop.C, M).tolist()); b = set(select(sl, pop.C, M).tolist())
            if t >= 2000:
                n += 1; diff_epochs += a != b; diff_srcs += len(a - b)
                sign_mis += np.sum((sl > 0) != (sw > lo))
            sel = np.array(sorted(a)); ages += 1; ages[sel] = 1
        s = f"{costs} N=1000 M={M}: along the Whittle trajectory (4000 epochs), LIP/C's crawl set differs in {100*diff_epochs/n:.1f}% of epochs, {diff_srcs/n:.2f} sources per epoch swapped (of ~{M}); sign(gamma) != sign(W - lambda*) in {sign_mis} source-epochs"
        print(s); out.write(s + '\n')
