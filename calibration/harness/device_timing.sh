#!/bin/bash
# Device call for the step-time corpus (issue 4): timing_corpus.json's single-GPU cases spread
# over the visible GPUs, then the real 2-GPU cases, eight iterations each.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_ext
T0=$(date +%s)
C=calibration/harness/timing_corpus.json
{ nvidia-smi --query-gpu=name,driver_version --format=csv;
  python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
python3 -c "import sys; sys.path.insert(0,'.megatron'); from megatron.core.tensor_parallel.random import _get_share_storage; _get_share_storage(); print('share_storage extension built')" > $OUT/ext.log 2>&1 &
python3 calibration/harness/run_corpus.py --corpus $C --select single \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s ${SINGLE_DEADLINE:-380} --timeout-s 150
LEFT=$(( ${TOTAL_S:-570} - ($(date +%s) - T0) ))
python3 calibration/harness/run_corpus.py --corpus $C --select multi \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s $(( LEFT - 40 )) --timeout-s 100
echo "total $(( $(date +%s) - T0 ))s" | tee -a $OUT/cases.log
