"""Q4(c) and Q3(large): N = 1000 synthetic population (crawleval generate --seed 7), unit and
lognormal costs; Whittle vs LIP (gamma and gamma/C) vs the Lagrangian bound."""
import sys  # needs numpy and mpmath (pip install mpmath)
import numpy as np, subprocess, json, time, pickle
from lipmodel import *
from policies import *
CE = 'crawleval'
H = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
B = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
out = open(f'q4_large_results.txt', 'a')
def pr(*a):
    s = ' '.join(str(x) for x in a); print(s, flush=True); out.write(s + '\n'); out.flush()
pr(f"\n=== N = 1000, H = {H} measured epochs after {B} burn-in, empty start ===")
rows = []
for costs in ('unit', 'lognormal'):
    f = 'pop1000.csv' if costs == 'unit' else 'pop1000c.csv'
    d = np.genfromtxt(f, delimiter=',', names=True)
    pop = Pop(d['lambda'], d['xi'], d['mu'], d['cost'])
    for M in (10, 20, 50, 100):
        t0 = time.time()
        subprocess.run([CE, 'bound', '--sources', f, '-M', str(M), '--json', 'inst/b.json'], capture_output=True)
        bj = json.load(open('inst/b.json'))
        lo, hi = pop.lambda_star(M)
        D = pop.dual(lo, M)
        res = dict(costs=costs, M=M, bound=bj['value'], lam_bound=bj['lambda'], lo=lo, hi=hi, D=D)
        res['whittle'] = simulate(pop, WhittleScorer(pop), M, H, B)[0]
        res['lip'] = simulate(pop, LipScorer(pop, lo), M, H, B)[0]
        if costs != 'unit':
            res['lip/C'] = simulate(pop, LipScorer(pop, lo, per_cost=True), M, H, B)[0]
        res['greedy'] = simulate(pop, lambda a: pop.xk(a.astype(float)) / pop.C, M, H, B)[0]
        rows.append(res)
        s = f"{costs:9s} M={M:3d} bound {res['bound']:.4f} (mine {D:.4f}, lambda* [{lo:.6g},{hi:.6g}], crawleval {bj['lambda']:.6g})"
        for p in ('whittle', 'lip', 'lip/C', 'greedy'):
            if p in res: s += f" | {p} {res[p]:.4f} gap {100*(res['bound']-res[p])/res['bound']:.3f}%"
        pr(s + f"  [{time.time()-t0:.0f}s]")
pickle.dump(rows, open('q4_large.pkl', 'wb'))
