#!/bin/bash
# Device call: one group of timing_corpus.json, one case at a time on GPU 0 (no second case
# competing for the host). Groups: timing_moe_serial (full-size MoE, 16 iterations),
# timing_regions (shrunk 16-layer models for the checkpoint-call cost, 20 iterations).
#   bash calibration/harness/device_timing_serial.sh timing_regions
set -o pipefail
GROUP=${1:?usage: device_timing_serial.sh GROUP}
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_ext
python3 -c "import sys; sys.path.insert(0,'.megatron'); from megatron.core.tensor_parallel.random import _get_share_storage; _get_share_storage(); print('share_storage extension built')" > $OUT/ext.log 2>&1
CUDA_VISIBLE_DEVICES=0 python3 calibration/harness/run_corpus.py --corpus calibration/harness/timing_corpus.json \
  --select single --groups "$GROUP" --no-multi \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s ${DEADLINE:-480} --timeout-s 120
