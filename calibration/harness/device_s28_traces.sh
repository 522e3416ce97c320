#!/bin/bash
# Session 28 device call (issue #22): allocator event streams (alloc_trace.py) of eleven corpus cases whose replayed
# reservation is among the furthest from the measured one and that fit an 80 GB card, the held-out streams for the
# allocator's address rule as refit on 27 streams (kTopDownSegmentBytes = 128 MiB), and REPEATS more runs of
# layout_fake_ep8_moonlight4_moe_r0 for its run-to-run spread. Predictions first: calibration/data/predictions/s28_traces.md.
# Run from the checkout's root with .megatron (git archive of the pinned megatron/core) carried; all goes to $OUT.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=/tmp/torch_ext PEAKCAST_MEGATRON_DIR=$PWD/.megatron CUDA_VISIBLE_DEVICES=0
OUT=${OUT:-/tmp/out}
H=calibration/harness; T0=$(date +%s); TOTAL=${TOTAL:-560}
left() { echo $(( TOTAL - ($(date +%s) - T0) )); }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv;
  python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
NAMES=${NAMES:-fam_gelu_core_attn_mlp,variants_learned_absolute,mtprep_gqa2b_2_repeated_core_attn,fam_gpt3_sel_empty,variants_mtp1_core_attn,layout_fake_pp2_vpp2_gqa8b_none_r0,fam_gpt3_full_uniform_1,etp_tp2sp_etp2_ep2_allgather_mbs2_r0,etp_tp2sp_etp2_ep1_r0,fam_fp16_core_attn,fam_gpt3_core_attn}
mkdir -p $OUT/traces
PEAKCAST_ALLOC_TRACE=$OUT/traces PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py \
  --corpus $H/corpus.json --names "$NAMES" --out $OUT/records.jsonl --log $OUT/cases.log \
  --deadline-s $(( $(left) - 120 )) --timeout-s 120
for k in $(seq 2 $(( ${REPEATS:-5} + 1 ))); do
  [ "$(left)" -lt 60 ] && break
  mkdir -p $OUT/traces/repeat$k
  PEAKCAST_ALLOC_TRACE=$OUT/traces/repeat$k PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py \
    --corpus $H/corpus.json --names layout_fake_ep8_moonlight4_moe_r0 --out $OUT/records_repeat.jsonl --log $OUT/cases.log \
    --deadline-s $(( $(left) - 40 )) --timeout-s 60
done
tar -czf $OUT/traces.tgz -C $OUT traces && rm -rf $OUT/traces
gzip -f $OUT/cases.log
echo "total $(( $(date +%s) - T0 ))s"
