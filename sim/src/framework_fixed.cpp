// The framework's fixed blocks (framework_fixed.hpp).
#include "peakcast/sim/framework_fixed.hpp"

#include <regex>

namespace peakcast::sim {

namespace {

constexpr std::int64_t kKiB = 1024, kMiB = 1024 * kKiB;
// PyTorch's defaults without CUBLAS_WORKSPACE_CONFIG (parseChosenWorkspaceSize): ":4096:8" on compute
// capability 9.x / 10.x / 12.x, ":4096:2:16:8" otherwise.
constexpr std::int64_t kTorchWorkspace32 = 4096 * kKiB * 8, kTorchWorkspaceOther = 4096 * kKiB * 2 + 16 * kKiB * 8;
// TE's get_cublas_workspace_size_bytes (gemm.py:34-39 at v2.16): 32 MiB + 1 KiB on sm >= 9, else 4 MiB.
constexpr std::int64_t kTeWorkspaceHopper = 32 * kMiB + kKiB, kTeWorkspaceOther = 4 * kMiB;
constexpr int kTeUbStreams = 3;      // _NUM_MAX_UB_STREAMS, gemm.py:31
constexpr int kTeCublasStreams = 4;  // tex.get_num_cublas_streams(): num_compute_streams, common/util/multi_stream.cpp:53

}  // namespace

Bytes torch_cublas_workspace_bytes(const model::ClusterSpec& cluster) {
  // The spec's parser refuses a CUBLAS_WORKSPACE_CONFIG without a ":SIZE:COUNT" pair, which PyTorch
  // would answer with a warning and the default.
  if (!cluster.cublas_workspace_config.empty()) {
    static const std::regex pair(":([0-9]+):([0-9]+)");
    std::int64_t total = 0;
    for (std::sregex_iterator it(cluster.cublas_workspace_config.begin(), cluster.cublas_workspace_config.end(), pair), end;
         it != end; ++it)
      total += std::stoll((*it)[1].str()) * kKiB * std::stoll((*it)[2].str());
    if (total > 0) return Bytes{total};
  }
  const int major = cluster.gpu.compute_capability_major;
  return Bytes{major == 9 || major == 10 || major == 12 ? kTorchWorkspace32 : kTorchWorkspaceOther};
}

std::vector<FixedBlock> transformer_engine_workspaces(const model::RunSpec& spec) {
  std::vector<FixedBlock> out;
  if (spec.model.transformer_impl != model::TransformerImpl::transformer_engine) return out;
  const Bytes each{spec.cluster.gpu.compute_capability_major >= 9 ? kTeWorkspaceHopper : kTeWorkspaceOther};
  out.push_back({"te.gemm_workspace", each, 1, "transformer_engine/pytorch/cpp_extensions/gemm.py:34-39, :61 at v2.16 (get_cublas_workspace)"});
  if (spec.model.tp_comm_overlap)
    out.push_back({"te.ub_gemm_workspace", each * kTeUbStreams, 1, "gemm.py:47-52 (_NUM_MAX_UB_STREAMS = 3, gemm.py:31)"});
  if (spec.model.num_moe_experts && spec.model.moe_grouped_gemm)
    out.push_back({"te.grouped_gemm_workspaces", each, kTeCublasStreams,
                   "gemm.py:53-59, one per tex.get_num_cublas_streams() = 4 (common/util/multi_stream.cpp:53)"});
  return out;
}

std::vector<FixedBlock> model_rotary_caches(const model::RunSpec& spec, std::int64_t seq, std::int64_t rot_dim, int chunks) {
  std::vector<FixedBlock> out;
  if (spec.model.core_attention_module != model::CoreAttentionModule::gemma3 || rot_dim <= 0) return out;
  const Bytes table{checked_mul(checked_mul(seq, rot_dim), 4)};  // [s, 1, 1, rot] fp32 (rotary_pos_embedding.py get_emb)
  out.push_back({"gemma3.rope_local", table, chunks, "bridge gemma3_provider.py:312-316 (rope_local), its forward's lru_cache"});
  out.push_back({"gemma3.rope_stacked", table * 2, chunks, "bridge gemma3_provider.py:336-346 (torch.stack of local and global, lru_cache)"});
  return out;
}

Bytes total_bytes(const std::vector<FixedBlock>& blocks) {
  Bytes t{};
  for (const auto& b : blocks) t += b.bytes * b.count;
  return t;
}

}  // namespace peakcast::sim
