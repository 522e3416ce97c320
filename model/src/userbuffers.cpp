// te_userbuffers: what TE's initialize_ub (module/base.py, TE 2.x) allocates per quantization mode.
// Each GEMM gets one buffer of the communication shape [seq * micro_batch / CP, hidden]: uint8 in the
// FP8 mode for the all-gather GEMMs (fp8_buf), else bf16 (initialize_ub's dtype default). A
// ring-exchange reduce-scatter keeps 2 TP - 1 chunks of 1 / TP of it (CommOverlapP2PBase::initialize).
#include <algorithm>
#include <set>

#include "peakcast/model/userbuffers.hpp"

namespace peakcast::model {

namespace {

constexpr std::int64_t kBf16Bytes = 2;

struct Defaults {
  std::set<std::string> all_gather = {"qkv_fprop", "qkv_dgrad", "proj_dgrad", "proj_wgrad",
                                      "fc1_fprop", "fc1_dgrad", "fc2_dgrad", "fc2_wgrad"};
  std::set<std::string> reduce_scatter = {"proj_fprop", "fc2_fprop", "qkv_wgrad", "fc1_wgrad"};
  // Default method per GEMM, in the order initialize_ub walks them.
  std::vector<std::pair<std::string, std::vector<std::string>>> methods = {
      {"ring_exchange", {"qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad"}},
      {"pipeline", {"proj_fprop", "fc2_fprop"}},
      {"bulk", {"qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad"}},
      {"external", {"proj_wgrad", "fc2_wgrad"}},
  };
};

std::vector<std::pair<std::string, std::vector<std::string>>>::iterator find_method(Defaults& d, const std::string& m) {
  return std::find_if(d.methods.begin(), d.methods.end(), [&](const auto& e) { return e.first == m; });
}

}  // namespace

std::vector<Userbuffer> te_userbuffers(const RunSpec& spec) {
  std::vector<Userbuffer> out;
  const ModelSpec& m = spec.model;
  if (!m.tp_comm_overlap) return out;
  const std::int64_t tp = std::max<std::int64_t>(1, m.tensor_model_parallel_size);
  const std::int64_t cp = std::max<std::int64_t>(1, m.context_parallel_size);
  const std::int64_t elements = m.seq_length * spec.train.micro_batch_size / cp * m.hidden_size;
  // Megatron / Bridge _initialize_tp_communicators: the FP8 mode, plus a high-precision set when
  // BF16 edge layers need one (initialize.py:221-231).
  std::vector<bool> modes = {m.fp8.has_value()};
  if (m.fp8 && m.first_last_layers_bf16 && (m.num_layers_at_start_in_bf16 > 0 || m.num_layers_at_end_in_bf16 > 0)) {
    modes.push_back(false);
  }
  Defaults d;  // initialize_ub edits these lists for the first mode; later modes see the edits
  for (const bool fp8_mode : modes) {
    // A dgrad given a non-bulk method becomes a reduce-scatter overlap and leaves the all-gather
    // list; its wgrad becomes a plain all-gather (module/base.py, dgrad_reduce_scatter_overlap).
    for (const char* dgrad : {"qkv_dgrad", "fc1_dgrad"}) {
      const auto it = m.tp_comm_overlap_cfg.find(dgrad);
      if (it == m.tp_comm_overlap_cfg.end() || !it->second.method || *it->second.method == "bulk") continue;
      auto& bulk = find_method(d, "bulk")->second;
      const auto pos = std::find(bulk.begin(), bulk.end(), dgrad);
      if (pos == bulk.end()) continue;  // moved for an earlier mode already
      std::string wgrad = dgrad;
      wgrad.replace(wgrad.find("dgrad"), 5, "wgrad");
      d.reduce_scatter.erase(wgrad);
      d.all_gather.erase(dgrad);
      d.reduce_scatter.insert(dgrad);
      bulk.erase(pos);
      find_method(d, *it->second.method)->second.push_back(dgrad);
    }
    for (const auto& [default_method, gemms] : d.methods) {
      for (const auto& gemm : gemms) {
        Userbuffer b;
        b.gemm = gemm;
        b.fp8_mode = fp8_mode;
        b.method = default_method;
        b.reduce_scatter = d.reduce_scatter.count(gemm) > 0;
        bool fp8_buf = d.all_gather.count(gemm) > 0;
        if (const auto it = m.tp_comm_overlap_cfg.find(gemm); it != m.tp_comm_overlap_cfg.end()) {
          fp8_buf = fp8_buf || (it->second.fp8_buf.value_or(false) && default_method == "pipeline");
          if (it->second.method) b.method = *it->second.method;
        }
        const std::int64_t element_bytes = fp8_mode && fp8_buf ? 1 : kBf16Bytes;
        std::int64_t bytes = elements * element_bytes;
        if (b.method == "ring_exchange" && b.reduce_scatter) bytes = bytes / tp * (2 * tp - 1);
        b.bytes = Bytes{bytes};
        out.push_back(b);
      }
    }
  }
  return out;
}

Bytes total_bytes(const std::vector<Userbuffer>& buffers) {
  Bytes t{};
  for (const auto& b : buffers) t += b.bytes;
  return t;
}

}  // namespace peakcast::model
