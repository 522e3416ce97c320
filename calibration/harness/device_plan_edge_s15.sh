#!/bin/bash
# Session 15 device call (issues #24 and #22): plan_cases.py round s15's cases (plan_corpus_s15.json, eight
# iterations each), then edge_cases_s15.py's edge runs (alloc_edge_s15.json, three iterations), the default
# allocator ones and then the expandable-segment ones, on GPU 0. Run from the checkout's root with plan_carry/
# carried: plan_carry/megatron (git archive of the pinned megatron/core, as device_plan.sh).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=/tmp/torch_ext PEAKCAST_MEGATRON_DIR=$PWD/plan_carry/megatron CUDA_VISIBLE_DEVICES=0
H=calibration/harness; T0=$(date +%s); TOTAL=${TOTAL:-540}
left() { echo $(( TOTAL - ($(date +%s) - T0) )); }
{ nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv;
  python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
if [ -z "$EDGE_ONLY" ]; then  # EDGE_ONLY=1: the edge runs alone (the second call of session 15)
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py --corpus $H/plan_corpus_s15.json \
    --select single --no-multi --out $OUT/plan_records.jsonl --log $OUT/plan_cases.log --deadline-s $(( $(left) - 300 )) --timeout-s 90
  echo "plan cases done at $(( $(date +%s) - T0 ))s" >> $OUT/plan_cases.log
fi
names() { python3 -c "import json,sys; print(','.join(c['name'] for c in json.load(open('$H/alloc_edge_s15.json'))['cases'] if c['name'].endswith('_expandable') == ($1)))"; }
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py --corpus $H/alloc_edge_s15.json --names "$(names False)" \
  --out $OUT/edge_records.jsonl --log $OUT/edge_cases.log --deadline-s $(( $(left) - 130 )) --timeout-s 60
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 $H/run_corpus.py --corpus $H/alloc_edge_s15.json --names "$(names True)" \
  --out $OUT/edge_records.jsonl --log $OUT/edge_cases.log --deadline-s $(( $(left) - 10 )) --timeout-s 60
echo "total $(( $(date +%s) - T0 ))s" | tee -a $OUT/edge_cases.log
