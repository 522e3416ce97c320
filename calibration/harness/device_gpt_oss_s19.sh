#!/usr/bin/env bash
# Session 19 (issue #19, GPT-OSS): the local-stack cases while Transformer Engine builds, then the TE cases.
# Run from the repository root on the device with carry [".megatron", "te_carry"]; records go to $OUT.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/torch_ext
OUT=${OUT:-/tmp/out}
C=calibration/harness/cases_s19
python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' | tee "$OUT/env.txt"
phase=${1:-all}
if [ "$phase" = all ] || [ "$phase" = local ]; then
  bash te_carry/build_te_on_device.sh start
  for n in local_dense_base local_dense local_moe; do
    timeout 150 python3 calibration/harness/run_case.py --case "$C/s19_gptoss_$n.json" --out "$OUT/h200_gpt_oss_s19_local.jsonl" > "$OUT/$n.log" 2>&1
    echo "$n rc=$?"; tail -3 "$OUT/$n.log"
  done
  bash te_carry/build_te_on_device.sh wait "${WAIT_S:-300}"
fi
if [ "$(cat /tmp/te_work/rc 2>/dev/null)" = 0 ] && { [ "$phase" = all ] || [ "$phase" = te ]; }; then
  source te_carry/build_te_on_device.sh env
  for n in te te_noclamp te_vanilla te_unfused; do
    [ -n "$(grep -l "\"s19_gptoss_${n}\"" "$OUT"/*.jsonl 2>/dev/null)" ] && continue
    timeout 150 python3 te_carry/run_case_te.py --case "$C/s19_gptoss_$n.json" --out "$OUT/h200_gpt_oss_s19_te.jsonl" > "$OUT/$n.log" 2>&1
    echo "$n rc=$?"; tail -3 "$OUT/$n.log"
  done
fi
