#pragma once
// The framework's fixed device blocks: workspaces that PyTorch and Transformer Engine keep through the
// caching allocator for the whole run, whatever the model's size. Each is sized by a named function of
// the spec (GPU architecture, environment, stack, MoE GEMM kind, TP communication overlap) with the
// source line that sizes it.
#include <string>
#include <vector>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/units.hpp"

namespace peakcast::sim {

struct FixedBlock {
  std::string name;    // what holds it
  Bytes bytes;         // each block
  int count = 1;       // how many of them a rank keeps
  std::string source;  // the line that sizes it
};

// PyTorch's cuBLAS workspace, one per (handle, stream) (aten/src/ATen/cuda/CublasHandlePool.cpp
// parseChosenWorkspaceSize): the ":SIZE_KiB:COUNT" pairs of CUBLAS_WORKSPACE_CONFIG summed; without it
// 4096 KiB x 8 = 32 MiB on compute capability 9.x, 10.x and 12.x, else 4096 KiB x 2 + 16 KiB x 8.
Bytes torch_cublas_workspace_bytes(const model::ClusterSpec& cluster);

// Transformer Engine's own GEMM workspaces (transformer_engine/pytorch/cpp_extensions/gemm.py:31-61 at
// v2.16, the same at Bridge's pinned 2.18.0; each `functools.lru_cache`d, so one set per device for the run), empty for the local stack:
// the general GEMM's, 32 MiB + 1 KiB on compute capability >= 9 (NVFP4 GEMMs plus alignment and scales),
// else 4 MiB; with userbuffers TP overlap the UB GEMMs' 3 x that (_NUM_MAX_UB_STREAMS); with grouped
// MoE GEMMs one per compute stream (tex.get_num_cublas_streams(): 4, common/util/multi_stream.cpp:53).
std::vector<FixedBlock> transformer_engine_workspaces(const model::RunSpec& spec);

// The rotary tables a model keeps for the run beyond the plain RotaryEmbedding's own cached [s, 1, 1, rot]
// fp32 table (RotaryEmbedding.forward's lru_cache, rotary_pos_embedding.py:177; not counted for any model):
// Gemma 3's local table and the [2, s, 1, 1, rot] stack of the local and global ones that its forward
// caches (Bridge gemma3_provider.py:311-346), once per model chunk; `seq` is the rank's sequence (CP-sliced).
std::vector<FixedBlock> model_rotary_caches(const model::RunSpec& spec, std::int64_t seq, std::int64_t rot_dim, int chunks);

// Their sum.
Bytes total_bytes(const std::vector<FixedBlock>& blocks);

}  // namespace peakcast::sim
