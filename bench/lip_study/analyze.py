import pickle, numpy as np, sys
d=pickle.load(open('verify_rows.pkl','rb'))
eps=2.22e-16
for name, B, iref, ivs, isc, iterm in (("B", d['B'], 7, (8,9), 12, 13), ("C", d['C'], 3, (4,5), 9, 10)):
  for iv in ivs:
    rows=[]
    for r in B:
        ref, v, sc, terms = r[iref], r[iv], r[isc], r[iterm]
        err=abs(v-ref)
        rows.append((err/(eps*terms) if terms>0 else (0 if err==0 else np.inf), err/max(abs(ref),1e-300), ref, v, terms, sc, r[:4] if name=="B" else r[:3]+r[11:]))
    rows.sort(key=lambda t:-t[0])
    print(name, "relaxed_gain port g" if iv in (8,4) else "accurate g", "max err/ulp(terms)", "%.3g" % rows[0][0])
    for t in rows[:int(sys.argv[1]) if len(sys.argv)>1 else 4]: print("   ", ["%.3g"%v if isinstance(v,float) else v for v in t])
    x=np.array([t[0] for t in rows]); print("   quantiles 50/90/99/99.9%% err/ulp(terms):", np.quantile(x,[0.5,0.9,0.99,0.999]))
