// LoRA adapters as Megatron-Bridge builds them beside a layer's linears (bridge:src/megatron/bridge/peft/
// lora.py:117-222 transform; the adapter's shapes, peft/utils.py:923-1107 ParallelLinearAdapter). Both
// factors are split over the base layer's tensor-parallel group (TP, or ETP for routed experts):
// beside a column-parallel base, A = ColumnParallelLinear(in, r) [r/g, in] and B = [out/g, r]; beside a
// row-parallel one, A = RowParallelLinear(in, r) [r, in/g] and B = ColumnParallelLinear(r, out) [out/g, r];
// beside a duplicated TELinear (MLA's down projections) as beside a column one. Adapters are bf16
// like the model after Float16Module (docs/research/lora-memory-facts.md section 3).
#include "param_count.hpp"

namespace peakcast::model::detail {

namespace {

// "mlp.experts.linear_fc1.weight3" -> "linear_fc1": the attribute name ModuleMatcher compares
// (module_matcher.py:141-146), and the expert index after ".weight" (-1 when there is none).
std::pair<std::string, int> module_of(const std::string& weight) {
  const auto w = weight.rfind(".weight");
  const std::string path = weight.substr(0, w);
  const std::string index = weight.substr(w + 7);
  const auto dot = path.rfind('.');
  return {dot == std::string::npos ? path : path.substr(dot + 1), index.empty() ? -1 : std::stoi(index)};
}

bool targeted(const PeftSpec& p, const std::string& module) {
  for (const auto& t : p.target_modules)
    if (t == module) return true;
  return false;
}

}  // namespace

ParamList lora_adapters(const ParamList& layer, const PeftSpec& p, const Sharding& s, bool grouped_experts) {
  ParamList out;
  const std::int64_t r = p.dim;
  for (const ParamTensor& w : layer) {
    if (w.mode == GemmMode::none) continue;
    const auto [module, expert_index] = module_of(w.name);
    if (!targeted(p, module)) continue;
    // Grouped experts share one adapter across the rank's local experts by default
    // (share_expert_adapters, lora.py:164-169); SequentialMLP experts are modules of their own.
    const bool shared_across_experts = w.expert && grouped_experts && p.share_expert_adapters;
    if (shared_across_experts && expert_index > 0) continue;
    const std::int64_t g = w.expert ? s.etp : s.tp;
    const std::string name = w.name.substr(0, w.name.rfind(".weight")) + ".adapter";
    std::int64_t a = 0, b = 0;
    if (w.mode == GemmMode::row) {
      a = r * w.in_local;         // [r, in/g]
      b = (w.out_local / g) * r;  // [out/g, r]
    } else if (w.mode == GemmMode::column) {
      a = (r / g) * w.in_local;  // [r/g, in]
      b = w.out_local * r;       // [out/g, r]: the base's own output split
    } else {
      a = (r / g) * w.in_local;
      b = (w.out_local / g) * r;
    }
    const std::string suffix = expert_index >= 0 && !shared_across_experts ? std::to_string(expert_index) : "";
    for (const auto& [part, numel] : {std::pair{".linear_in.weight", a}, std::pair{".linear_out.weight", b}}) {
      ParamTensor t;
      t.name = name + part + suffix;
      t.numel = numel;
      t.expert = w.expert;
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace peakcast::model::detail
