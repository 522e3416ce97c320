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
  // TELinear keeps the overlap only for the qkv/proj/fc1/fc2 buffer names and otherwise switches
  // config.tp_comm_overlap off on the shared config (extensions/transformer_engine.py:1144-1154): MLA's
  // down/up projections and MTP's eh_proj do, so every TE linear built after them runs without it.
  const bool dsa = m.experimental_attention_variant == std::optional<std::string>("dsa") ||
                   (m.hybrid_override_pattern && m.hybrid_override_pattern->find('D') != std::string::npos);
  if (m.transformer_impl == TransformerImpl::transformer_engine && (m.multi_latent_attention || dsa || m.mtp_num_layers > 0)) {
    sink.warning("model.tp_comm_overlap", "tp_comm_overlap_disabled_by_layer",
                 std::string("The user buffer name ") + (m.multi_latent_attention || dsa ? "of MLA's q/kv projections" : "mtp_eh_proj") +
                     " is not supported in Transformer Engine. Disabling TP communication overlap for this layer. "
                     "(extensions/transformer_engine.py:1150): it sets tp_comm_overlap False on the shared config, so the TE "
                     "linears built after it (multi_token_prediction.py:1010 for MTP) overlap nothing; the userbuffers stay allocated");
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
