import pickle, numpy as np, sys
rows = pickle.load(open(sys.argv[1], 'rb'))
out = open(sys.argv[1].replace('.pkl', '_report.txt'), 'w')
def pr(*a):
    s = ' '.join(str(x) for x in a); print(s); out.write(s + '\n')
pols = ['whittle', 'lip_lo', 'lip_hi', 'lip_mid', 'lip_bnd', 'greedy']
fams = {0: 'paper-like', 1: 'fast+slow', 2: 'near-homog.'}
pr(f"{len(rows)} instances (N=3..6, M=1..3, unit costs); gap = (opt - policy)/opt in %")
pr("%-12s %5s | %s" % ("family", "n", " | ".join("%-22s" % p for p in pols)))
for f in (0, 1, 2, None):
    rs = [r for r in rows if f is None or r['fam'] == f]
    cells = []
    for p in pols:
        gap = np.array([(r['opt'] - r[p]) / r['opt'] * 100 for r in rs])
        cells.append("mean %.3f max %.2f opt%% %3.0f" % (gap.mean(), gap.max(), 100*np.mean(gap < 1e-7)))
    pr("%-12s %5d | %s" % (fams.get(f, 'all'), len(rs), " | ".join("%-22s" % c for c in cells)))
bg = np.array([(r['bound'] - r['opt']) / r['opt'] * 100 for r in rows])
pr(f"bound - opt: mean {bg.mean():.3f}% max {bg.max():.2f}%")
# head to head LIP(lo) vs Whittle
d = np.array([(r['lip_lo'] - r['whittle']) / r['opt'] * 100 for r in rows])
pr(f"LIP(lo) vs Whittle: better in {np.sum(d > 1e-7)}, equal in {np.sum(abs(d) <= 1e-7)}, worse in {np.sum(d < -1e-7)}; mean diff {d.mean():+.3f}% of opt, min {d.min():+.2f}% max {d.max():+.2f}%")
for p in ('lip_hi', 'lip_mid', 'lip_bnd'):
    d = np.array([(r[p] - r['whittle']) / r['opt'] * 100 for r in rows])
    pr(f"{p} vs Whittle: better {np.sum(d > 1e-7)}, equal {np.sum(abs(d) <= 1e-7)}, worse {np.sum(d < -1e-7)}; mean {d.mean():+.3f}%")
# Q7: flat duals
flat = [r for r in rows if r['hi'] > r['lo'] * (1 + 1e-9)]
pr(f"\nQ7: flat dual (minimiser set an interval) in {len(flat)} of {len(rows)} instances")
if flat:
    w = np.array([(r['hi'] - r['lo']) / r['lo'] for r in flat])
    pr(f"  relative width (hi-lo)/lo: median {np.median(w):.3f}, max {w.max():.3f}")
    for p in ('lip_lo', 'lip_mid', 'lip_hi', 'lip_bnd', 'whittle'):
        gap = np.array([(r['opt'] - r[p]) / r['opt'] * 100 for r in flat])
        pr(f"  {p:8s}: mean gap {gap.mean():.3f}%  max {gap.max():.2f}%  optimal in {np.sum(gap < 1e-7)}")
    dd = np.array([(r['lip_hi'] - r['lip_lo']) / r['opt'] * 100 for r in flat])
    pr(f"  hi - lo: differ in {np.sum(abs(dd) > 1e-7)} of {len(flat)}; hi better {np.sum(dd > 1e-7)}, lo better {np.sum(dd < -1e-7)}; mean {dd.mean():+.3f}%, range [{dd.min():+.2f}, {dd.max():+.2f}]%")
    inb = [r for r in flat if r['lo'] * (1 - 1e-6) <= r['lam_bound'] <= r['hi'] * (1 + 1e-6)]
    pr(f"  the bound's reported lambda lies in [lo, hi] in {len(inb)} of {len(flat)}; at lo (1e-6) in {sum(abs(r['lam_bound']-r['lo'])<=1e-6*r['lo'] for r in flat)}")
nf = [r for r in rows if not (r['hi'] > r['lo'] * (1 + 1e-9))]
pr(f"non-flat instances: bound's lambda within 1e-6 of lambda*: {sum(abs(r['lam_bound']-r['lo'])<=1e-6*max(r['lo'],1e-300) for r in nf)} of {len(nf)}")
worst = sorted(rows, key=lambda r: -(r['opt'] - r['lip_lo']))[:5]
pr("\nworst LIP(lo) instances:")
for r in worst:
    pr(f"  it {r['it']} fam {fams[r['fam']]} N {r['N']} M {r['M']} opt {r['opt']:.4f} whittle {r['whittle']:.4f} lip_lo {r['lip_lo']:.4f} lip_hi {r['lip_hi']:.4f} bound {r['bound']:.4f} flat {r['hi']>r['lo']*(1+1e-9)}")
worst = sorted(rows, key=lambda r: -(r['opt'] - r['whittle']))[:5]
pr("worst Whittle instances:")
for r in worst:
    pr(f"  it {r['it']} fam {fams[r['fam']]} N {r['N']} M {r['M']} opt {r['opt']:.4f} whittle {r['whittle']:.4f} lip_lo {r['lip_lo']:.4f} lip_hi {r['lip_hi']:.4f} bound {r['bound']:.4f}")
