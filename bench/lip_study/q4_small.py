"""Q4(b) + Q7: random small unit-cost instances, exact optimum (crawleval optimal), Whittle vs LIP
at both ends of the dual's minimiser set (and its midpoint, and the bound's reported lambda)."""
import sys  # needs numpy and mpmath (pip install mpmath)
import numpy as np, subprocess, json, pickle, time
from lipmodel import *
from policies import *
CE = 'crawleval'
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 11
n_inst = int(sys.argv[2]) if len(sys.argv) > 2 else 300
rng = np.random.default_rng(seed)
rows = []
t0 = time.time()
for it in range(n_inst):
    N = int(rng.integers(3, 7)); M = int(rng.integers(1, min(3, N-1)+1))
    fam = it % 3
    if fam == 0:   # paper-like
        lam = 10**rng.uniform(np.log10(20), np.log10(500), N); xi = 10**rng.uniform(np.log10(0.05), 0, N)
        mu = 10**rng.uniform(-1, np.log10(2), N)
    elif fam == 1: # heterogeneous decay: fast and slow sources
        lam = 10**rng.uniform(1, 3, N); xi = 10**rng.uniform(-1.5, 0, N)
        mu = np.where(rng.uniform(size=N) < 0.5, 10**rng.uniform(0, 0.5, N), 10**rng.uniform(-1, -0.5, N))
    else:          # near-homogeneous (many ties in the relaxation)
        lam = 100*10**rng.uniform(-0.1, 0.1, N); xi = 0.5*10**rng.uniform(-0.1, 0.1, N); mu = 0.5*10**rng.uniform(-0.2, 0.2, N)
    f = f'inst/s{seed}_{it}.csv'
    with open(f, 'w') as fh:
        fh.write('lambda,xi,mu\n')
        for a, b, c in zip(lam, xi, mu): fh.write(f'{float(a)!r},{float(b)!r},{float(c)!r}\n')
    try:
        r = subprocess.run([CE, 'optimal', '--sources', f, '-M', str(M), '--json', f + '.opt.json', '--no-progress'],
                           capture_output=True, text=True, timeout=120)
        opt = json.load(open(f + '.opt.json'))
        if not opt.get('closed', False): continue
        subprocess.run([CE, 'bound', '--sources', f, '-M', str(M), '--json', f + '.bnd.json'], capture_output=True, timeout=60)
        bnd = json.load(open(f + '.bnd.json'))
    except Exception as e:
        print('skip', it, e); continue
    pop = Pop(lam, xi, mu)
    lo, hi = pop.lambda_star(M)
    res = dict(it=it, fam=fam, N=N, M=M, opt=opt['optimal_reward'], bound=bnd['value'], lam_bound=bnd['lambda'],
               lo=lo, hi=hi, D=pop.dual(lo, M))
    res['whittle'] = long_run(pop, WhittleScorer(pop), M)[0]
    res['lip_lo'] = long_run(pop, LipScorer(pop, lo), M)[0]
    res['lip_hi'] = long_run(pop, LipScorer(pop, hi), M)[0] if hi > lo else res['lip_lo']
    res['lip_mid'] = long_run(pop, LipScorer(pop, 0.5*(lo+hi)), M)[0] if hi > lo else res['lip_lo']
    res['lip_bnd'] = long_run(pop, LipScorer(pop, bnd['lambda']), M)[0]
    res['greedy'] = long_run(pop, lambda a: pop.xk(a.astype(float)), M)[0]
    rows.append(res)
print(f'{len(rows)} instances in {time.time()-t0:.0f} s')
pickle.dump(rows, open(f'q4_small_{seed}.pkl', 'wb'))
