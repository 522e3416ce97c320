#!/bin/bash
# Prepare the carry folder for building Transformer Engine on the GPU device machine.
# Runs on the CPU machine. Reads bare git mirrors brought by the search tool's `fetch`
# (github:NVIDIA/TransformerEngine, github:NVIDIA/cutlass, github:NVIDIA/cudnn-frontend,
# github:NVIDIA/Megatron-LM) and writes DEST (default /work/main/te_carry, which must be
# git-ignored: /work/main/.git/info/exclude has "/te_carry/").
#
#   DEST/te_src.tar.gz   TE v2.16.1 (tests/docs/examples/qa/jax removed) with 3rdparty/cudnn-frontend
#                        (include/ + cmake/ at the submodule commit) and 3rdparty/cutlass (include/ +
#                        tools/util/include/ at the submodule commit), and megatron/core at 24bad8e6
#   DEST/build_te_on_device.sh, DEST/te_layer_smoke.py, DEST/run_case_te.py, DEST/shim/  (copied)
#
# Nothing here is committed to the project: only this script is.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DEST="${1:-/work/main/te_carry}"
MIRRORS="${MIRRORS:-/work/.mirror}"
TE_REF="${TE_REF:-v2.16.1}"                      # c9877beb87ad7e711e1869dd0b5062167ede447a
MEGATRON_REV=24bad8e677d22625d86ef2a54c9506b6e4992c93
TE="$MIRRORS/NVIDIA+TransformerEngine/repo"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/TransformerEngine" "$stage/megatron_src" "$DEST"

git -C "$TE" archive "$TE_REF" | tar -x -C "$stage/TransformerEngine"
( cd "$stage/TransformerEngine" && rm -rf tests docs examples qa .github benchmarks transformer_engine/jax )

# Submodules at the commits the TE tag pins (git ls-tree TAG 3rdparty/).
fe_commit=$(git -C "$TE" ls-tree "$TE_REF" 3rdparty/cudnn-frontend | awk '{print $3}')
cutlass_commit=$(git -C "$TE" ls-tree "$TE_REF" 3rdparty/cutlass | awk '{print $3}')
echo "cudnn-frontend $fe_commit, cutlass $cutlass_commit"
mkdir -p "$stage/TransformerEngine/3rdparty/cudnn-frontend" "$stage/TransformerEngine/3rdparty/cutlass"
git -C "$MIRRORS/NVIDIA+cudnn-frontend/repo" archive "$fe_commit" include cmake \
  | tar -x -C "$stage/TransformerEngine/3rdparty/cudnn-frontend"
# CUTLASS: only the header trees TE's CMakeLists puts on the include path
# (CUTLASS_INCLUDE_DIR = cutlass/include, CUTLASS_TOOLS_INCLUDE_DIR = cutlass/tools/util/include).
# Checked out through a scratch index, not `git archive`: a mirror may lack its largest blobs (media/
# images), which `git archive` reads even under a pathspec, and these two trees do not need them.
GIT_INDEX_FILE="$stage/cutlass.index" git --git-dir="$MIRRORS/NVIDIA+cutlass/repo" \
  --work-tree="$stage/TransformerEngine/3rdparty/cutlass" checkout "$cutlass_commit" -- include tools/util/include
# googletest is only used by TE's C++ tests: not carried.

git -C "$MIRRORS/NVIDIA+Megatron-LM/repo" archive "$MEGATRON_REV" megatron/core \
  | tar -x -C "$stage/megatron_src"

tar -czf "$DEST/te_src.tar.gz" -C "$stage" TransformerEngine megatron_src
cp "$HERE/build_te_on_device.sh" "$HERE/te_layer_smoke.py" "$HERE/run_case_te.py" "$DEST/"
rm -rf "$DEST/shim" && cp -r "$HERE/te_shim" "$DEST/shim"
du -sh "$DEST" "$DEST/te_src.tar.gz"
