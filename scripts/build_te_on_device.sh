#!/bin/bash
# Build Transformer Engine (v2.16.1, PyTorch extension, sm_90 only) from source on the GPU device
# machine, resumably, and make it importable. The sources come from te_carry/te_src.tar.gz, made on
# the CPU machine by scripts/prepare_te_carry.sh; nothing is downloaded.
#
# Usage, on the device, from the repository root (te_carry/ carried):
#   bash te_carry/build_te_on_device.sh start        # extract once; start the build detached (setsid)
#   bash te_carry/build_te_on_device.sh wait SECS    # follow the build until it ends or SECS pass;
#                                                    # copies logs and ninja timings to $OUT
#   source te_carry/build_te_on_device.sh env        # set PYTHONPATH etc. to use the built TE
#
# The build tree lives in $TE_WORK (default /tmp/te_work), outside the carried folder, so it survives
# between calls while the machine stays warm (it is given back ~30 s after a call ends). `start` on a
# warm machine resumes: the CMake build dir (NVTE_CMAKE_BUILD_DIR) and setuptools' build_temp are
# reused and ninja rebuilds only what is missing. The detached build runs on between calls.
#
# Build settings: NVTE_CUDA_ARCHS=90, NVTE_FRAMEWORK=pytorch, MAX_JOBS=16, ninja (found by TE's
# build_tools), NVTE_BUILD_THREADS_PER_JOB=1, cuDNN headers and libraries from the image's
# nvidia-cudnn-cu13 wheel; CUDA/cuBLAS from the image's toolkit.

TE_WORK="${TE_WORK:-/tmp/te_work}"
CARRY_DIR="${CARRY_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
SRC="$TE_WORK/src/TransformerEngine"
TE_VERSION=2.16.1

te_env() {
  local cudnn_dir
  cudnn_dir=$(python3 -c 'import importlib.util as u; s=u.find_spec("nvidia.cudnn"); print(list(s.submodule_search_locations)[0])' 2>/dev/null)
  export NVTE_CUDA_ARCHS=90 NVTE_FRAMEWORK=pytorch MAX_JOBS=16 NVTE_BUILD_THREADS_PER_JOB=1
  export NVTE_NO_LOCAL_VERSION=1 NVTE_SKIP_SUBMODULE_CHECKS_DURING_BUILD=1
  export NVTE_CMAKE_BUILD_DIR="$TE_WORK/build/cmake"
  if [ -n "$cudnn_dir" ]; then
    export CUDNN_PATH="$cudnn_dir" CUDNN_HOME="$cudnn_dir"
    export CPLUS_INCLUDE_PATH="$cudnn_dir/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
    export LD_LIBRARY_PATH="$cudnn_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  # Use-time paths: the in-place build's root (libtransformer_engine.so and the torch extension sit
  # there, TE's "editable build" layout), a dist-info for importlib.metadata, Megatron Core 24bad8e6,
  # and the pydantic stand-in only where the image has no pydantic.
  local pp="$SRC:$TE_WORK/site:$TE_WORK/src/megatron_src"
  python3 -c 'import pydantic' 2>/dev/null || pp="$pp:$CARRY_DIR/shim"
  export PYTHONPATH="$pp${PYTHONPATH:+:$PYTHONPATH}"
  export PEAKCAST_MEGATRON_DIR="$TE_WORK/src/megatron_src"
}

extract() {
  if [ ! -f "$TE_WORK/.extracted" ]; then
    mkdir -p "$TE_WORK/src" "$TE_WORK/build" "$TE_WORK/site"
    tar -xzf "$CARRY_DIR/te_src.tar.gz" -C "$TE_WORK/src" && touch "$TE_WORK/.extracted"
  fi
}

make_distinfo() {
  # What `pip install` would record; TE's __init__ reads metadata.version("transformer_engine") and
  # asserts the distribution exists (transformer_engine/common/__init__.py, load_framework_extension).
  local d="$TE_WORK/site/transformer_engine-$TE_VERSION.dist-info"
  mkdir -p "$d"
  printf 'Metadata-Version: 2.1\nName: transformer_engine\nVersion: %s\n' "$TE_VERSION" > "$d/METADATA"
  printf 'transformer_engine-%s.dist-info/METADATA,,\n' "$TE_VERSION" > "$d/RECORD"
}

do_build() {  # runs detached; writes $TE_WORK/build.log (seconds since start, line) and $TE_WORK/rc
  te_env
  cd "$SRC" || exit 1
  local t0; t0=$(date +%s.%N)
  echo "$t0" > "$TE_WORK/t0"
  python3 setup.py build_ext --inplace 2>&1 \
    | python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:8.1f} {line}")
    sys.stdout.flush()' "$t0" >> "$TE_WORK/build.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] && make_distinfo
  echo "$(python3 -c "import time; print(round(time.time() - $t0, 1))")" > "$TE_WORK/elapsed"
  echo "$rc" > "$TE_WORK/rc"
}

progress() {  # last ninja [N/M] of each part, seconds since build start
  local log="$TE_WORK/build.log"
  [ -f "$log" ] || { echo "no build log"; return; }
  python3 - "$log" <<'EOF'
import re, sys
part, last, marks = "common", {}, []
for line in open(sys.argv[1], errors="replace"):
    t = line[:9].strip()
    if "Building CMake extension" in line: marks.append(("common start", t))
    if "Time for build_ext" in line: marks.append(("common end", t)); part = "pytorch"
    if "building 'transformer_engine_torch'" in line: part = "pytorch"; marks.append(("pytorch start", t))
    m = re.search(r"\[(\d+)/(\d+)\]", line[9:40])
    if m: last[part] = (t, int(m.group(1)), int(m.group(2)))
for k, v in marks: print(f"{k}: {v} s")
for p, (t, n, tot) in last.items(): print(f"{p}: [{n}/{tot}] at {t} s ({100.0*n/tot:.0f}%)")
EOF
}

collect() {  # logs and ninja's own per-edge timings (.ninja_log: start ms, end ms, mtime, output)
  [ -n "${OUT:-}" ] || return 0
  cp "$TE_WORK/build.log" "$OUT/te_build.log" 2>/dev/null
  cp "$TE_WORK/build/cmake/.ninja_log" "$OUT/te_common.ninja_log" 2>/dev/null
  local tl; tl=$(ls -d "$SRC"/build/temp.*/.ninja_log 2>/dev/null | head -1)
  [ -n "$tl" ] && cp "$tl" "$OUT/te_pytorch.ninja_log"
  progress > "$OUT/te_progress.txt" 2>&1
  for f in rc elapsed t0; do [ -f "$TE_WORK/$f" ] && echo "$f=$(cat "$TE_WORK/$f")"; done >> "$OUT/te_progress.txt"
}

case "${1:-}" in
  env)
    te_env ;;
  start)
    extract
    if [ -f "$TE_WORK/rc" ] && [ "$(cat "$TE_WORK/rc")" = 0 ]; then echo "already built"; exit 0; fi
    if [ -f "$TE_WORK/pid" ] && kill -0 "$(cat "$TE_WORK/pid")" 2>/dev/null; then echo "build running"; exit 0; fi
    rm -f "$TE_WORK/rc"
    echo "=== build (re)started $(date -u +%FT%TZ)" >> "$TE_WORK/build.log"
    setsid nohup bash "$CARRY_DIR/build_te_on_device.sh" _build < /dev/null > "$TE_WORK/nohup.log" 2>&1 &
    echo $! > "$TE_WORK/pid"
    echo "build started, pid $(cat "$TE_WORK/pid")" ;;
  _build)
    do_build ;;
  wait)
    limit="${2:-500}"; t=0
    while [ ! -f "$TE_WORK/rc" ] && [ "$t" -lt "$limit" ]; do
      sleep 5; t=$((t + 5))
      [ $((t % 60)) = 0 ] && echo "[wait ${t}s] $(progress | tail -1)"
    done
    collect
    progress
    if [ -f "$TE_WORK/rc" ]; then echo "build finished rc=$(cat "$TE_WORK/rc") elapsed=$(cat "$TE_WORK/elapsed")s"
      [ "$(cat "$TE_WORK/rc")" = 0 ] || grep -n -E -B2 -A6 "error:|FAILED|Error|Traceback" "$TE_WORK/build.log" | cut -c1-400 | head -60
    else echo "build still running"; fi ;;
  *)
    echo "usage: $0 start | wait SECS | env (source it)" >&2; exit 2 ;;
esac
