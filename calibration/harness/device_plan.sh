#!/bin/bash
# Device call for issue #24: plan_corpus.json's single-GPU cases, one at a time on GPU 0, eight iterations
# each. Run from the checkout's root with plan_carry/ carried: plan_carry/megatron (git archive of the pinned
# megatron/core) and plan_carry/plan_corpus.json (a copy of calibration/harness/plan_corpus.json).
set -o pipefail
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_ext PEAKCAST_MEGATRON_DIR=$PWD/plan_carry/megatron
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv;
  python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
python3 -c "import sys; sys.path.insert(0,'plan_carry/megatron'); from megatron.core.tensor_parallel.random import _get_share_storage; _get_share_storage(); print('share_storage extension built')" > $OUT/ext.log 2>&1 &
CUDA_VISIBLE_DEVICES=0 python3 calibration/harness/run_corpus.py --corpus plan_carry/plan_corpus.json \
  --select single --no-multi --out $OUT/records.jsonl --log $OUT/cases.log \
  --deadline-s ${DEADLINE:-150} --timeout-s 80
wait
