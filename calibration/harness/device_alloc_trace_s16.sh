#!/bin/bash
# Session 16 device call (issue #22): the allocator event streams of the corpus cases whose replayed
# reservation is furthest off (defer_embedding_wgrad PP2 last stage, fake EP8 MoE, GPT-3 PP2 last stage),
# measured with PEAKCAST_ALLOC_TRACE (alloc_trace.py), then peakcast's own simulated streams of the same
# cases (predict --allocator-trace, made before the call) replayed through torch's caching allocator
# (allocator_probe.py): if torch reserves what peakcast's replay reserves on peakcast's stream, the stream
# is what differs; if it reserves what the run reserved, the allocator model is.
# Run from the checkout's root with .megatron (git archive of the pinned megatron/core) and
# build-s16-carry/predicted/*.trace.json carried.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=/tmp/torch_ext PEAKCAST_MEGATRON_DIR=$PWD/.megatron CUDA_VISIBLE_DEVICES=0
export PEAKCAST_ALLOC_TRACE=$OUT/traces
H=calibration/harness; T0=$(date +%s); TOTAL=${TOTAL:-540}
left() { echo $(( TOTAL - ($(date +%s) - T0) )); }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv;
  python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
NAMES=${NAMES:-defer_pp2_gqa8b_all_r1,layout_fake_ep8_moonlight4_moe_r0,fam_gpt3_pp2_sel_empty_r1,defer_tp2sp_pp2_gqa8b_all_r2,defer_pp2_gqa8b_fusion_r1}
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py --corpus $H/corpus.json --names "$NAMES" \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s $(( $(left) - 150 )) --timeout-s 90
# Call 2: the session-12 trace cases again (their stored frees are ambiguous, alloc_trace.py compact()).
if [ -n "$WITH_S12" ]; then
  S12=$(python3 -c "import json; print(','.join(c['name'] for c in json.load(open('$H/alloc_corpus.json'))['cases'] if c['name'].startswith('trace_')))")
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py --corpus $H/alloc_corpus.json --names "$S12" \
    --out $OUT/records_s12.jsonl --log $OUT/cases.log --deadline-s $(( $(left) - 60 )) --timeout-s 90
fi
echo "cases done at $(( $(date +%s) - T0 ))s" >> $OUT/cases.log
unset PEAKCAST_ALLOC_TRACE
[ -z "$NO_PROBE" ] && timeout $(( $(left) - 10 )) python3 $H/allocator_probe.py $OUT/probe.json build-s16-carry/predicted/*.trace.json > $OUT/probe.log 2>&1
tar -czf $OUT/traces.tgz -C $OUT traces && rm -rf $OUT/traces
echo "total $(( $(date +%s) - T0 ))s" | tee -a $OUT/cases.log
