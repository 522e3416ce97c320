#!/bin/bash
# Session 27 device call (issue #22): allocator event streams (alloc_trace.py) of the corpus cases whose replayed
# reservation moved most when the simulated stream took session 27's traced facts (Python locals keeping glu's fc1
# output, the MoE layer's rows and the attention probabilities alive; get_default_causal_mask's fp32 ones and triu
# copy), which are also the held-out streams for the allocator's address rule, and two more runs of
# layout_fake_ep8_moonlight4_moe_r0 for its run-to-run spread. Predictions first: calibration/data/predictions/s27_traces.md.
# Run from the checkout's root with .megatron (git archive of the pinned megatron/core) carried; all goes to $OUT.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=/tmp/torch_ext PEAKCAST_MEGATRON_DIR=$PWD/.megatron CUDA_VISIBLE_DEVICES=0
OUT=${OUT:-/tmp/out}
H=calibration/harness; T0=$(date +%s); TOTAL=${TOTAL:-560}
left() { echo $(( TOTAL - ($(date +%s) - T0) )); }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv;
  python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
NAMES=${NAMES:-layout_fake_ep8_moonlight4_moe_r0,distribute_tp2_pp2_on_r0,etp_tp2sp_etp2_ep2_moe_mbs2_r0,layout_fake_pp2_gqa8b_none_r0,dense_gqa8b_mlp,fam_qwen3_none,mtprep_gqa2b_2_separate_core_attn,probsin_moe_gqa_off_ep2_r0,distribute_tp2_pp2_off_r2}
mkdir -p $OUT/traces
PEAKCAST_ALLOC_TRACE=$OUT/traces PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py \
  --corpus $H/corpus.json --names "$NAMES" --out $OUT/records.jsonl --log $OUT/cases.log \
  --deadline-s $(( $(left) - 120 )) --timeout-s 120
for k in $(seq 2 $(( ${REPEATS:-2} + 1 ))); do  # REPEATS more runs of the fake-EP8 case (2 in session 27's call)
  [ "$(left)" -lt 60 ] && break
  mkdir -p $OUT/traces/repeat$k
  PEAKCAST_ALLOC_TRACE=$OUT/traces/repeat$k PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py \
    --corpus $H/corpus.json --names layout_fake_ep8_moonlight4_moe_r0 --out $OUT/records_repeat.jsonl --log $OUT/cases.log \
    --deadline-s $(( $(left) - 40 )) --timeout-s 60
done
tar -czf $OUT/traces.tgz -C $OUT traces && rm -rf $OUT/traces
gzip -f $OUT/cases.log
echo "total $(( $(date +%s) - T0 ))s"
