#!/usr/bin/env python3
# Predicts every measured record of a JSON-lines corpus with ./build/cli/peakcast and prints the
# relative error of the whole-run peak (max over phases and iterations) per record, then median/worst.
# Usage: scripts/compare_records.py calibration/data/h200_corpus.jsonl
import json,subprocess,sys,statistics
recs=[json.loads(l) for l in open(sys.argv[1])]
rows=[]
for r in recs:
    m=r.get('measured') or {}
    if not m or m.get('oom') is None: continue
    spec=r['spec']; open('/tmp/peakcast_compare_spec.json','w').write(json.dumps(spec))
    p=subprocess.run(['./build/cli/peakcast','predict','/tmp/peakcast_compare_spec.json','--json'],capture_output=True,text=True)
    if p.returncode!=0:
        print('REJECT',r['case'],p.stderr.strip().splitlines()[:3]); continue
    d=json.loads(p.stdout)
    rk=r.get('rank',{})
    ranks=[x for x in d['ranks'] if x['pp_rank']==rk.get('pp_rank',0)] or d['ranks']
    pr=ranks[0]
    its=m.get('iterations',[])
    if m.get('oom'):
        print('OOM case',r['case'],'pred',pr['peak_allocated_bytes']/1e9,'fits',pr['fits']); continue
    meas=max([max(i['fwd_bwd_peak_bytes'],i['optimizer_peak_bytes'],i['grad_sync_peak_bytes']) for i in its])
    ph=None
    best=0
    for i in its:
        for k,n in (('fwd_bwd_peak_bytes','fb'),('grad_sync_peak_bytes','grad_sync'),('optimizer_peak_bytes','optimizer')):
            if i[k]>best: best=i[k]; ph=n
    err=(pr['peak_allocated_bytes']-meas)/meas
    rows.append((r['case'],r['group'],meas/1e9,pr['peak_allocated_bytes']/1e9,err,ph,pr['peak_phase']))
for x in rows: print('%-40s %-14s meas %8.3f pred %8.3f err %+6.1f%% %s/%s'%(x[0],x[1],x[2],x[3],100*x[4],x[5],x[6]))
e=[abs(x[4]) for x in rows]
if e: print('N',len(e),'median %.2f%% worst %.2f%%'%(100*statistics.median(e),100*max(e)))
