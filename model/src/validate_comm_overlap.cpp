// Tensor-parallel communication overlap (tp_comm_overlap) and Transformer Engine's userbuffer settings.
#include "peakcast/model/userbuffers.hpp"
#include "validate_detail.hpp"

namespace peakcast::model::detail {

void validate_comm_overlap(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (!m.tp_comm_overlap) return;
  // arguments.py:1389-1390
  if (!m.sequence_parallel) {
    sink.error("model.tp_comm_overlap", "tp_comm_overlap_needs_sequence_parallel",
               "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled (arguments.py:1390)");
  }
  if (m.tp_comm_overlap_cfg_is_path) {
    sink.warning("model.tp_comm_overlap_cfg", "userbuffer_cfg_file_not_read",
                 "a tp_comm_overlap_cfg file is not read: the userbuffers are sized with Transformer Engine's default method per GEMM; "
                 "give the settings inline (an object) to have them counted");
  }
  // module/base.py initialize_ub: a user wgrad setting next to a non-bulk dgrad, and the pipeline
  // method on an all-gather, raise ValueError.
  for (const char* dgrad : {"qkv_dgrad", "fc1_dgrad"}) {
    const auto it = m.tp_comm_overlap_cfg.find(dgrad);
    if (it == m.tp_comm_overlap_cfg.end() || !it->second.method || *it->second.method == "bulk") continue;
    std::string wgrad = dgrad;
    wgrad.replace(wgrad.find("dgrad"), 5, "wgrad");
    if (m.tp_comm_overlap_cfg.count(wgrad) > 0) {
      sink.error("model.tp_comm_overlap_cfg." + wgrad, "userbuffer_wgrad_with_overlapped_dgrad",
                 "Cannot specify user UB config for '" + wgrad + "' when its corresponding dgrad '" + dgrad +
                     "' uses a non-bulk overlap method (module/base.py initialize_ub)");
    }
  }
  for (const auto& b : te_userbuffers(spec)) {
    if (b.method == "pipeline" && !b.reduce_scatter) {
      sink.error("model.tp_comm_overlap_cfg." + b.gemm + ".method", "userbuffer_pipeline_all_gather",
                 "At " + b.gemm + ", `pipeline` overlap method is not supported for AllGather. (module/base.py initialize_ub)");
      break;
    }
  }
}

}  // namespace peakcast::model::detail
