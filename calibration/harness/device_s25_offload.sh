#!/usr/bin/env bash
# Session 25: fine-grained activation offloading on the TE stack, one GPU (predictions first:
# calibration/data/predictions/s25_offload.md). Build TE, then the four cases of cases_s25/, offloading
# ones first. Run from the repository root on the device with carry ["te_carry"]; everything goes to $OUT.
# NVTE_CPU_OFFLOAD_V1=1: Megatron-LM's validate_args asserts it for offloading with TE >= 2.10
# (arguments.py:1849-1855 at 24bad8e6); Megatron Core imports TE's cpu_offload_v1 either way.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export NVTE_CPU_OFFLOAD_V1=1
OUT=${OUT:-/tmp/out}
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-570} ))
C=calibration/harness/cases_s25
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/env.txt"
bash te_carry/build_te_on_device.sh start
bash te_carry/build_te_on_device.sh wait "${WAIT_S:-470}"
[ "$(cat /tmp/te_work/rc 2>/dev/null)" = 0 ] || { echo "TE build not finished"; exit 3; }
source te_carry/build_te_on_device.sh env
for n in s25_dense_offload s25_moon_gg_offload s25_dense_off s25_moon_gg_off; do
  left=$(( DEADLINE - $(date +%s) ))
  [ "$left" -lt 25 ] && { echo "$n skipped: ${left}s left"; continue; }
  t=$(( left < 150 ? left - 5 : 150 ))
  s=$(date +%s)
  echo "=== $n $(date -u +%FT%TZ) timeout ${t}s" >> "$OUT/cases.log"
  timeout "$t" python3 te_carry/run_case_te.py --case "$C/$n.json" --out "$OUT/offload_s25_te.jsonl" >> "$OUT/cases.log" 2>&1
  echo "$n rc=$? $(( $(date +%s) - s ))s"; tail -4 "$OUT/cases.log" | cut -c1-300
done
