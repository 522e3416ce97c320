#!/bin/bash
# Device call 2 (main corpus): every single-GPU case (real one-GPU runs and fake-process-group
# ranks) on both GPUs, then the real 2-GPU torchrun cases, within one 10-minute call.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_ext
T0=$(date +%s)
DONE=${1:-calibration/data/.done.jsonl}
python3 -c "import sys; sys.path.insert(0,'.megatron'); from megatron.core.tensor_parallel.random import _get_share_storage; _get_share_storage(); print('share_storage extension built')" > $OUT/ext.log 2>&1 &
python3 calibration/harness/run_corpus.py --select single --skip-done $DONE \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s ${SINGLE_DEADLINE:-330} --timeout-s 150
LEFT=$(( ${TOTAL_S:-560} - ($(date +%s) - T0) ))
python3 calibration/harness/run_corpus.py --select multi --skip-done $DONE \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s $(( LEFT - 35 )) --timeout-s 120
echo "total $(( $(date +%s) - T0 ))s" | tee -a $OUT/cases.log
