// The framework's fixed blocks (framework_fixed.hpp).
#include "peakcast/sim/framework_fixed.hpp"

#include <regex>

namespace peakcast::sim {

Bytes torch_cublas_workspace_bytes(const model::ClusterSpec& cluster) {
  // The spec's parser refuses a CUBLAS_WORKSPACE_CONFIG without a ":SIZE:COUNT" pair, which PyTorch
  // would answer with a warning and the default.
  if (!cluster.cublas_workspace_config.empty()) {
    static const std::regex pair(":([0-9]+):([0-9]+)");
    std::int64_t total = 0;
    for (std::sregex_iterator it(cluster.cublas_workspace_config.begin(), cluster.cublas_workspace_config.end(), pair), end;
         it != end; ++it)
      total += std::stoll((*it)[1].str()) * 1024 * std::stoll((*it)[2].str());
    if (total > 0) return Bytes{total};
  }
  const int major = cluster.gpu.compute_capability_major;
  if (major == 9 || major == 10 || major == 12) return Bytes{4096LL * 1024 * 8};
  return Bytes{4096LL * 1024 * 2 + 16LL * 1024 * 8};
}

std::vector<FixedBlock> transformer_engine_workspaces(const model::RunSpec& spec) {
  std::vector<FixedBlock> out;
  if (spec.model.transformer_impl != model::TransformerImpl::transformer_engine) return out;
  const Bytes each{spec.cluster.gpu.compute_capability_major >= 9 ? 32LL * 1024 * 1024 + 1024 : 4'194'304LL};
  out.push_back({"te.gemm_workspace", each, 1, "transformer_engine/pytorch/cpp_extensions/gemm.py:34-39, :61 at v2.16 (get_cublas_workspace)"});
  if (spec.model.tp_comm_overlap)
    out.push_back({"te.ub_gemm_workspace", Bytes{each.value * 3}, 1, "gemm.py:47-52 (_NUM_MAX_UB_STREAMS = 3, gemm.py:31)"});
  if (spec.model.num_moe_experts && spec.model.moe_grouped_gemm)
    out.push_back({"te.grouped_gemm_workspaces", each, 4,
                   "gemm.py:53-59, one per tex.get_num_cublas_streams() = 4 (common/util/multi_stream.cpp:53)"});
  return out;
}

Bytes total_bytes(const std::vector<FixedBlock>& blocks) {
  Bytes t{};
  for (const auto& b : blocks) t += Bytes{b.bytes.value * b.count};
  return t;
}

}  // namespace peakcast::sim
