#!/bin/bash
# Device call: the checkpoint-region cases (shrunk 16-layer models), one at a time on GPU 0, twenty iterations.
set -o pipefail
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_ext
python3 -c "import sys; sys.path.insert(0,'.megatron'); from megatron.core.tensor_parallel.random import _get_share_storage; _get_share_storage(); print('share_storage extension built')" > $OUT/ext.log 2>&1
CUDA_VISIBLE_DEVICES=0 python3 calibration/harness/run_corpus.py --corpus calibration/harness/timing_corpus.json \
  --select single --groups timing_regions --no-multi \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s ${DEADLINE:-480} --timeout-s 120
