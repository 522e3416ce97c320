#!/bin/bash
# Issue #22 device call: allocator event streams of near-capacity edge runs and corpus cases (default
# allocator), the edge runs with expandable segments, then peakcast's predicted streams replayed through
# torch's own allocator (allocator_probe.py).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=/tmp/torch_ext PEAKCAST_MEGATRON_DIR=$PWD/alloc_carry PEAKCAST_ALLOC_TRACE=$OUT/traces
H=alloc_carry/harness; C=$H/alloc_corpus.json; T0=$(date +%s); TOTAL=${TOTAL:-210}
left() { echo $(( TOTAL - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv > $OUT/env.log 2>&1
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False python3 $H/run_corpus.py --corpus $C --names "$DEFAULT_NAMES" \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s $(( $(left) - 100 )) --timeout-s 80
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 $H/run_corpus.py --corpus $C --names "$EXPANDABLE_NAMES" \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s $(( $(left) - 40 )) --timeout-s 80
echo "cases done at $(( $(date +%s) - T0 ))s" >> $OUT/cases.log
unset PEAKCAST_ALLOC_TRACE
timeout $(( $(left) - 4 )) python3 $H/allocator_probe.py $OUT/probe.json alloc_carry/predicted/*.trace.json > $OUT/probe.log 2>&1
tar -czf $OUT/traces.tgz -C $OUT traces && rm -rf $OUT/traces
echo "total $(( $(date +%s) - T0 ))s" | tee -a $OUT/cases.log
