#include "peakcast/sim/fitted_constants.hpp"

#include <nlohmann/json.hpp>

#include "peakcast/model/embedded_configs.hpp"

namespace peakcast::sim {

FittedConstants load_fitted_constants(const std::string& name, const std::string& stack) {
  FittedConstants c;
  const auto text = model::embedded_config("calibration/" + name + ".json");
  if (!text) return c;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return c;
  c.profile = j.value("profile", name);
  const auto& m = j.value("memory", nlohmann::json::object());
  c.framework_fixed = Bytes{m.value("framework_fixed_bytes", std::int64_t{0})};
  c.activation_scale = m.value("activation_scale", 1.0);
  c.peak_relative_sigma = m.value("peak_relative_sigma", 0.0);
  if (const auto by = m.value("by_transformer_impl", nlohmann::json::object()); by.contains(stack) && by[stack].is_object()) {
    const auto& t = by[stack];
    c.framework_fixed = Bytes{t.value("framework_fixed_bytes", c.framework_fixed.value)};
    c.peak_relative_sigma = t.value("peak_relative_sigma", c.peak_relative_sigma);
    c.profile = c.profile + " (" + stack + ")";
  }
  if (const auto ro = m.value("reserved_over_allocated", nlohmann::json::object()); ro.is_object()) {
    c.reserved_ratio_median = ro.value("median", 0.0);
    c.reserved_ratio_p90 = ro.value("p90", 0.0);
  }
  if (const auto re = m.value("reserved_over_allocated_expandable", nlohmann::json::object()); re.is_object()) {
    c.reserved_ratio_median_expandable = re.value("median", 0.0);
    c.reserved_ratio_p90_expandable = re.value("p90", 0.0);
  }
  if (const auto r = j.value("moe_routing", nlohmann::json::object()); r.is_object() && r.contains("by_score_function"))
    for (const auto& [score, v] : r.at("by_score_function").items())
      c.moe_expert_load_sigma.emplace_back(score, v.value("untrained_expert_load_sigma", 0.0));
  // Time efficiencies live in their own profile, fitted from the CUDA replay microbenchmark.
  const auto time_text = model::embedded_config("calibration/time.json");
  const auto t = time_text ? nlohmann::json::parse(*time_text, nullptr, false) : nlohmann::json{};
  if (t.is_object()) {
    c.gemm_efficiency = t.value("gemm_efficiency", 0.0);
    c.attention_efficiency = t.value("attention_efficiency", 0.0);
    c.memory_efficiency = t.value("memory_efficiency", 0.0);
    if (const auto& fa = t.value("fused_attention", nlohmann::json::object()); fa.is_object()) {
      c.fused_attention_efficiency = fa.value("forward_efficiency", 0.0);
      c.fused_attention_s_per_call = fa.value("forward_s_per_call", 0.0);
      c.fused_attention_backward_efficiency = fa.value("backward_efficiency", 0.0);
      c.fused_attention_backward_s_per_call = fa.value("backward_s_per_call", 0.0);
    }
    if (const auto& mv = t.value("movement", nlohmann::json::object()); mv.is_object())
      c.movement_efficiency = mv.value("efficiency", 0.0);
    const auto& st = t.value("step", nlohmann::json::object());
    c.host_forward_s_per_call = st.value("host_forward_s_per_call", 0.0);
    c.host_backward_s_per_call = st.value("host_backward_s_per_call", 0.0);
    c.host_s_per_microbatch = st.value("host_s_per_microbatch", 0.0);
    c.host_s_per_checkpoint = st.value("host_s_per_checkpoint", 0.0);
    c.comm_efficiency = st.value("comm_efficiency", 0.0);
    c.gpu_time_scale = st.value("gpu_time_scale", 1.0);
    c.optimizer_memory_efficiency = st.value("optimizer_memory_efficiency", 0.0);
    // Host costs differ per software stack (a TE module call is not a local one); a stack without
    // its own terms keeps the ones fitted on the local stack.
    if (const auto by = st.value("by_transformer_impl", nlohmann::json::object()); by.contains(stack) && by[stack].is_object()) {
      const auto& h = by[stack];
      c.host_forward_s_per_call = h.value("host_forward_s_per_call", c.host_forward_s_per_call);
      c.host_backward_s_per_call = h.value("host_backward_s_per_call", c.host_backward_s_per_call);
      c.host_s_per_microbatch = h.value("host_s_per_microbatch", c.host_s_per_microbatch);
      c.host_s_per_checkpoint = h.value("host_s_per_checkpoint", c.host_s_per_checkpoint);
    }
  }
  return c;
}

}  // namespace peakcast::sim
