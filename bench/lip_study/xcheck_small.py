import sys  # needs numpy and mpmath (pip install mpmath)
import numpy as np, pickle, subprocess, json
rows = pickle.load(open('q4_small_11.pkl','rb'))
maxd = 0; n = 0
for r in rows[::9][:30] + [r for r in rows if r['it'] in (239,153,40,280)]:
    f = f"inst/s11_{r['it']}.csv"
    subprocess.run(['crawleval','run','--sources',f,'-M',str(r['M']),'--policy','whittle,greedy','-H','277200','-B','3000','--no-bound','--no-progress','--json','inst/tmp_run.json'],capture_output=True,timeout=300)
    d = json.load(open('inst/tmp_run.json'))
    res = {p['name']: p['mean_reward'] for p in d['policies']}
    w = res['whittle']; gr = res['greedy']; n += 1
    maxd = max(maxd, abs(w-r['whittle'])/r['whittle'], abs(gr-r['greedy'])/r['greedy'])
    if r['it'] in (239,153,40,280): print(r['it'], 'crawleval whittle', w, 'mine', r['whittle'], '| greedy', gr, r['greedy'])
print(f'{n} instances: max rel diff crawleval run (H=277200 after 3000) vs my exact cycle mean (whittle, greedy): {maxd:.2e}')
