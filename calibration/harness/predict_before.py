#!/usr/bin/env python3
"""Predict a corpus group's cases with the built peakcast BEFORE they are measured; one JSON line per case.

  python3 calibration/harness/predict_before.py OUT.jsonl [NAME,NAME,...] [--group families]

Each line: case, the exact predict command, the peakcast commit (HEAD of /work/main) and binary mtime, the
predicted rank (the case's fake rank: pp/tp), its peak fields (allocated, the reserved estimate, phase, op),
per-iteration per-phase peaks from --timeline, and the first timeline point over the device capacity.
Spec files and timelines go to /tmp/fam/.
"""
import json, subprocess, sys, collections, os
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.makedirs('/tmp/fam', exist_ok=True)
GROUP = 'families'
if '--group' in sys.argv:
    i = sys.argv.index('--group'); GROUP = sys.argv[i + 1]; del sys.argv[i:i + 2]
from corpus_lib import expand
PC = os.environ.get('PEAKCAST', '/work/main/build/cli/peakcast')
names = sys.argv[2].split(',') if len(sys.argv) > 2 and sys.argv[2] else None
out = sys.argv[1] if len(sys.argv) > 1 else ''
commit = subprocess.run(['git', '-C', os.environ.get('PEAKCAST_REPO', '/work/main'), 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()
import os, datetime
BIN_MTIME = datetime.datetime.fromtimestamp(os.stat(PC).st_mtime, datetime.timezone.utc).isoformat(timespec='seconds')
cases = [c for c in expand(json.load(open(os.path.join(HERE, 'corpus.json')))) if c['group'] == GROUP]
if names: cases = [c for c in cases if c['name'] in names]
lines = []
for c in cases:
    sp = f"/tmp/fam/{c['name']}.spec.json"; tl = f"/tmp/fam/{c['name']}.timeline.json"
    json.dump(c['spec'], open(sp, 'w'), indent=1)
    cmd = [PC, 'predict', sp, '--json', '--timeline', tl]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0,):
        print(c['name'], 'RC', p.returncode, p.stdout[-500:], p.stderr[-800:]); 
        lines.append({"case": c['name'], "command": ' '.join(cmd), "peakcast_commit": commit, "rc": p.returncode, "stderr": p.stderr[-2000:], "stdout": p.stdout[-2000:]})
        continue
    d = json.loads(p.stdout)
    t = json.load(open(tl))
    fr = c['fake_rank'] or 0
    # rank match: the case's global rank; peakcast lists representative ranks by (pp,tp,...)
    ranks = d['ranks']
    want_pp = None
    m = c['spec']['model']; tp = m.get('tensor_model_parallel_size', 1); pp = m.get('pipeline_model_parallel_size', 1)
    world = c['spec']['cluster']['num_gpus']; dp = world // (tp * pp)
    # Megatron default order tp-cp-ep-dp-pp: global rank = tp + tp*dp*... (cp=1): rank = tp_r + tp*dp_r + tp*dp*pp_r
    want = dict(tp_rank=fr % tp, pp_rank=fr // (tp * dp))
    sel = [i for i, r in enumerate(ranks) if r['pp_rank'] == want['pp_rank'] and r['tp_rank'] == want['tp_rank']]
    if not sel:
        sel = [i for i, r in enumerate(ranks) if r['pp_rank'] == want['pp_rank']]
    r = ranks[sel[0]]; tr = t['ranks'][sel[0]]
    phase = collections.defaultdict(int)
    for e in tr['timeline']:
        k = f"it{e['iteration']}_{e['phase']}"
        phase[k] = max(phase[k], e['live_bytes'])
    over = next((e for e in tr['timeline'] if e['live_bytes'] > d['capacity_bytes']), None)
    over = None if over is None else {k: over.get(k) for k in ('iteration', 'phase', 'op', 'layer', 'microbatch', 'live_bytes')}
    keep = {k: r.get(k) for k in ('pp_rank', 'tp_rank', 'dp_rank', 'peak_allocated_bytes', 'steady_peak_allocated_bytes',
                                  'first_iteration_peak_allocated_bytes', 'first_iteration_peak_phase', 'peak_phase',
                                  'peak_iteration', 'peak_op', 'estimated_peak_reserved_bytes',
                                  'estimated_peak_reserved_p90_bytes', 'reserved_outside_allocated_bytes', 'fits',
                                  'fits_with_allocator_reserve', 'breakdown_bytes')}
    rec = {"case": c['name'], "command": ' '.join(cmd), "spec_source": "the case's spec expanded from calibration/harness/corpus.json by corpus_lib.expand (identical to the record's spec)",
           "peakcast_commit": commit, "peakcast_binary_mtime": BIN_MTIME,
           "calibration_profile": d.get('calibration_profile'), "capacity_bytes": d.get('capacity_bytes'),
           "rank_selected": want, "predicted": keep, "predicted_phase_peaks_bytes": dict(phase),
           "first_timeline_point_over_capacity": over,
           "warnings": d.get('warnings')}
    lines.append(rec)
    print(over, end=' ') if over else None
    print(f"{c['name']:34s} pp{r['pp_rank']} tp{r['tp_rank']} peak {r['peak_allocated_bytes']/1e9:8.3f} GB ({r['peak_iteration']}/{r['peak_phase']} {r['peak_op']}) it1 {r['first_iteration_peak_allocated_bytes']/1e9:8.3f} res {r['estimated_peak_reserved_bytes']/1e9:8.3f} fits {r['fits']} warn {len(d.get('warnings') or [])}")
if out:
    with open(out, 'w') as f:
        for l in lines: f.write(json.dumps(l) + '\n')
