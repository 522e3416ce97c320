#!/bin/bash
# Device call 1 (smoke): environment, microbenchmark on GPU 1, smoke cases on GPU 0, one real
# 2-GPU case, then as many further single-GPU cases as fit before the deadline.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_ext
T0=$(date +%s)
{ nvidia-smi; nvcc --version | tail -2; which g++ c++ ninja;
  python3 -c 'import torch,sys;print(sys.version);print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
( python3 -c "import sys; sys.path.insert(0,'.megatron'); from megatron.core.tensor_parallel.random import _get_share_storage; _get_share_storage(); print('share_storage extension built')" > $OUT/ext.log 2>&1 ) &
( nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/replay_bench calibration/microbench/replay_bench.cu -lcublasLt \
  && CUDA_VISIBLE_DEVICES=1 /tmp/replay_bench calibration/microbench/regions/*.txt > $OUT/microbench.json 2> $OUT/microbench.err ) &
MB=$!
CUDA_VISIBLE_DEVICES=0 python3 calibration/harness/run_corpus.py --select smoke --no-multi \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s 200 --timeout-s 150
wait $MB; echo "microbench rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $OUT/cases.log
python3 calibration/harness/run_corpus.py --select multi --names multi_real_tp2sp_gqa8b_none \
  --out $OUT/records.jsonl --log $OUT/cases.log --timeout-s 120
LEFT=$(( 530 - ($(date +%s) - T0) ))
python3 calibration/harness/run_corpus.py --select single --skip-done $OUT/records.jsonl \
  --out $OUT/records.jsonl --log $OUT/cases.log --deadline-s $(( LEFT - 60 )) --timeout-s 120
wait
echo "total $(( $(date +%s) - T0 ))s" | tee -a $OUT/cases.log
