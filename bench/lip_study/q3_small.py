"""Q3: with costs, rank by gamma or by gamma / C?  Small instances, exact optimum (RVI over joint
capped ages, any subset within the budget), long-run of each index policy (crawleval's prefix rule)."""
import sys  # needs numpy and mpmath (pip install mpmath)
import numpy as np, pickle, time
from lipmodel import *
from policies import *
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 3
n_inst = int(sys.argv[2]) if len(sys.argv) > 2 else 60
rng = np.random.default_rng(seed)
rows = []
t0 = time.time()
for it in range(n_inst):
    N = 3 if it % 3 else 4
    lam = 10**rng.uniform(1, 2.7, N); xi = 10**rng.uniform(-1.3, 0, N)
    mu = 10**rng.uniform(np.log10(0.7 if N == 3 else 1.0), np.log10(2.5), N)
    C = 10**rng.uniform(np.log10(0.3), np.log10(3), N)
    M = float(rng.uniform(C.max(), 0.75 * C.sum())) if 0.75 * C.sum() > C.max() else float(C.max())
    pop = Pop(lam, xi, mu, C)
    caps = np.array([int(np.ceil(23.0 / m)) + 1 for m in pop.mu_t])
    lo_opt, span, its = exact_optimum(pop, M, caps=caps)
    hi_opt, span2, _ = exact_optimum(pop, M, caps=caps, upper=True)
    lo, hi = pop.lambda_star(M)
    r = dict(it=it, N=N, M=M, C=C, opt=lo_opt, opt_hi=hi_opt, span=max(span, span2), lo=lo, hi=hi, bound=pop.dual(lo, M))
    r['whittle'] = long_run(pop, WhittleScorer(pop), M)[0]
    r['lip'] = long_run(pop, LipScorer(pop, lo), M)[0]
    r['lip/C'] = long_run(pop, LipScorer(pop, lo, per_cost=True), M)[0]
    r['lip_hi'] = long_run(pop, LipScorer(pop, hi), M)[0]
    r['lip/C_hi'] = long_run(pop, LipScorer(pop, hi, per_cost=True), M)[0]
    r['greedy/C'] = long_run(pop, lambda a: pop.xk(a.astype(float)) / pop.C, M)[0]
    rows.append(r)
    if it % 10 == 0: print(it, f"{time.time()-t0:.0f}s", {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items() if k not in ('C',)}, flush=True)
pickle.dump(rows, open(f'q3_small_{seed}.pkl', 'wb'))
out = open(f'q3_small_{seed}_report.txt', 'w')
def pr(*a):
    s = ' '.join(str(x) for x in a); print(s); out.write(s + '\n')
pr(f"{len(rows)} instances with costs (N=3,4; C in [0.3,3]; M in [max C, 0.75 sum C]); exact optimum bracket width max {max(r['opt_hi']-r['opt'] for r in rows)/min(r['opt'] for r in rows):.1e} rel; RVI span max {max(r['span'] for r in rows):.1e}")
for p in ('whittle', 'lip', 'lip/C', 'lip_hi', 'lip/C_hi', 'greedy/C'):
    gap = np.array([(r['opt'] - r[p]) / r['opt'] * 100 for r in rows])
    pr(f"  {p:9s} gap to optimum: mean {gap.mean():.3f}%  median {np.median(gap):.3f}%  max {gap.max():.2f}%  optimal (<1e-6%) in {np.sum(gap < 1e-6)}")
bg = np.array([(r['bound'] - r['opt']) / r['opt'] * 100 for r in rows])
pr(f"  bound - opt: mean {bg.mean():.3f}% max {bg.max():.2f}%")
d = np.array([(r['lip/C'] - r['lip']) / r['opt'] * 100 for r in rows])
pr(f"  lip/C vs lip: better {np.sum(d > 1e-7)}, equal {np.sum(abs(d) <= 1e-7)}, worse {np.sum(d < -1e-7)}; mean {d.mean():+.3f}% of opt")
d = np.array([(r['lip/C'] - r['whittle']) / r['opt'] * 100 for r in rows])
pr(f"  lip/C vs whittle: better {np.sum(d > 1e-7)}, equal {np.sum(abs(d) <= 1e-7)}, worse {np.sum(d < -1e-7)}; mean {d.mean():+.3f}% of opt")
