// Launch settings of a planned configuration, three ways: Megatron-LM flags (pinned arguments.py /
// config dataclass names, configs/schema/megatron_args.json), Megatron-Bridge Hydra overrides
// (docs/megatron-lm-to-megatron-bridge.md:67-72 at 600d069b: `model.X=V`, `train.micro_batch_size=N`)
// and the peakcast `--set` lines that turn the input spec into it.
#include <charconv>
#include <cstdio>
#include <string>
#include <utility>

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/planner.hpp"

namespace peakcast::sim::planning {

namespace {

std::string num(std::int64_t v) { return std::to_string(v); }
const char* boolean(bool b) { return b ? "true" : "false"; }

// cluster.gpu as the spec gave it: the preset's name when the GPU is a shipped one unchanged, else the
// object with every figure (a GPU whose memory_bytes says what the process can reserve stays so).
std::string gpu_set_value(const model::GpuSpec& g) {
  model::Diagnostics ignored;
  if (const auto preset = model::gpu_preset(g.name, ignored); preset && *preset == g) return g.name;
  std::string out = "{\"name\":\"";
  for (const char ch : g.name) {  // the name as a JSON string
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
  }
  out += "\",\"memory_bytes\":" + std::to_string(g.memory_bytes.value);
  const std::pair<const char*, double> figures[] = {{"bf16_dense_tflops", g.bf16_dense_tflops}, {"fp8_dense_tflops", g.fp8_dense_tflops}, {"fp32_tflops", g.fp32_tflops}, {"hbm_bandwidth_gbps", g.hbm_bandwidth_gbps}, {"nvlink_bandwidth_gbps", g.nvlink_bandwidth_gbps}};
  for (const auto& [key, value] : figures) {
    char shortest[32];  // the shortest text that reads back as the same double
    const auto end = std::to_chars(shortest, shortest + sizeof shortest, value).ptr;
    out += std::string(",\"") + key + "\":" + std::string(shortest, end);
  }
  return out + "}";
}

struct Recompute {
  std::string granularity;  // "", "selective", "full"
  std::vector<std::string> modules;
  std::string method;
  std::optional<std::int64_t> num_layers;
  std::optional<std::int64_t> offload_layers;
};

// A selective list without tags recomputes nothing: the same as no recompute (Megatron's CLI cannot
// spell an empty --recompute-modules, nargs '+').
Recompute recompute_of(const RecomputeChoice& c) {
  Recompute r;
  if (c.cpu_offloading) {
    r.offload_layers = c.cpu_offloading_num_layers;
    return r;
  }
  if (c.granularity == model::RecomputeGranularity::full) {
    r.granularity = "full";
    r.method = c.method == model::RecomputeMethod::block ? "block" : "uniform";
    r.num_layers = c.num_layers;
    return r;
  }
  if (c.granularity == model::RecomputeGranularity::selective && !c.modules.empty()) {
    r.granularity = "selective";
    for (const auto t : c.modules) r.modules.emplace_back(model::to_string(t));
  }
  return r;
}

std::string json_list(const std::vector<std::string>& v, bool quoted) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + (quoted ? "\"" + v[i] + "\"" : v[i]);
  return s + "]";
}

std::vector<std::string> megatron_flags(const model::RunSpec& s, const PlanLayout& l, const Recompute& r) {
  std::vector<std::string> f = {"--tensor-model-parallel-size " + num(l.tp), "--pipeline-model-parallel-size " + num(l.pp)};
  // arguments.py:943: the virtual stages per pipeline rank become virtual_pipeline_model_parallel_size.
  if (l.vpp > 1) f.push_back("--num-virtual-stages-per-pipeline-rank " + num(l.vpp));
  if (l.first_stage_layers) f.push_back("--decoder-first-pipeline-num-layers " + num(*l.first_stage_layers));
  if (l.last_stage_layers) f.push_back("--decoder-last-pipeline-num-layers " + num(*l.last_stage_layers));
  f.push_back("--context-parallel-size " + num(l.cp));
  if (s.model.num_moe_experts) {
    f.push_back("--expert-model-parallel-size " + num(l.ep));
    f.push_back("--expert-tensor-parallel-size " + num(l.etp));
  }
  if (l.sequence_parallel) f.emplace_back("--sequence-parallel");
  f.push_back("--micro-batch-size " + num(l.mbs));
  f.push_back("--global-batch-size " + num(s.train.global_batch_size.value_or(0)));
  if (l.distributed_optimizer) f.emplace_back("--use-distributed-optimizer");
  if (l.overlap_grad_reduce) f.emplace_back("--overlap-grad-reduce");
  if (s.ddp.overlap_param_gather) f.emplace_back("--overlap-param-gather");
  if (s.model.tp_comm_overlap) f.emplace_back("--tp-comm-overlap");
  if (!r.granularity.empty()) f.push_back("--recompute-granularity " + r.granularity);
  if (!r.modules.empty()) {
    std::string m = "--recompute-modules";
    for (const auto& t : r.modules) m += " " + t;
    f.push_back(m);
  }
  if (!r.method.empty()) f.push_back("--recompute-method " + r.method);
  if (r.num_layers) f.push_back("--recompute-num-layers " + num(*r.num_layers));
  // arguments.py:1864-1865: a positive --cpu-offloading-num-layers turns cpu_offloading on.
  if (r.offload_layers) f.push_back("--cpu-offloading-num-layers " + num(*r.offload_layers));
  if (l.distribute_saved_activations) f.emplace_back("--distribute-saved-activations");
  return f;
}

// Keys as Bridge's ConfigContainer names them (model.*, train.*, optimizer.*, ddp.*, comm_overlap.*),
// or as a peakcast run spec does (model.*, train.*, optimizer.*, ddp.*): the same names except the
// TP-overlap switch, which Bridge keeps in its comm_overlap section.
std::vector<std::string> overrides(const model::RunSpec& s, const PlanLayout& l, const Recompute& r, bool bridge) {
  const auto opt = [](const std::optional<std::int64_t>& v) { return v ? num(*v) : std::string("null"); };
  std::vector<std::string> o = {
      "model.tensor_model_parallel_size=" + num(l.tp),
      "model.sequence_parallel=" + std::string(boolean(l.sequence_parallel)),
      "model.pipeline_model_parallel_size=" + num(l.pp),
      "model.virtual_pipeline_model_parallel_size=" + (l.vpp > 1 ? num(l.vpp) : std::string("null")),
      "model.num_layers_in_first_pipeline_stage=" + opt(l.first_stage_layers),
      "model.num_layers_in_last_pipeline_stage=" + opt(l.last_stage_layers),
      "model.context_parallel_size=" + num(l.cp)};
  if (s.model.num_moe_experts) {
    o.push_back("model.expert_model_parallel_size=" + num(l.ep));
    o.push_back("model.expert_tensor_parallel_size=" + num(l.etp));
  } else if (!bridge) {
    o.emplace_back("model.expert_model_parallel_size=1");
    o.emplace_back("model.expert_tensor_parallel_size=null");
  }
  o.push_back("train.micro_batch_size=" + num(l.mbs));
  o.push_back("train.global_batch_size=" + num(s.train.global_batch_size.value_or(0)));
  o.push_back("optimizer.use_distributed_optimizer=" + std::string(boolean(l.distributed_optimizer)));
  o.push_back("ddp.use_distributed_optimizer=" + std::string(boolean(l.distributed_optimizer)));
  o.push_back("ddp.overlap_grad_reduce=" + std::string(boolean(l.overlap_grad_reduce)));
  o.push_back("ddp.overlap_param_gather=" + std::string(boolean(s.ddp.overlap_param_gather)));
  o.push_back(std::string(bridge ? "comm_overlap.tp_comm_overlap=" : "model.tp_comm_overlap=") + boolean(s.model.tp_comm_overlap));
  const bool off = r.granularity.empty();
  o.push_back("model.recompute_granularity=" + (off ? std::string("null") : r.granularity));
  o.push_back("model.recompute_modules=" + (r.modules.empty() ? std::string(off && bridge ? "null" : "[]") : json_list(r.modules, !bridge)));
  o.push_back("model.recompute_method=" + (r.method.empty() ? std::string("null") : r.method));
  o.push_back("model.recompute_num_layers=" + opt(r.num_layers));
  o.push_back("model.cpu_offloading=" + std::string(boolean(r.offload_layers.has_value())));
  o.push_back("model.cpu_offloading_num_layers=" + num(r.offload_layers.value_or(0)));
  o.push_back("model.distribute_saved_activations=" + std::string(boolean(l.distribute_saved_activations)));
  if (!bridge) {
    o.push_back("model.pipeline_model_parallel_layout=null");
    o.push_back("model.account_for_embedding_in_pipeline_split=false");
    o.push_back("model.account_for_loss_in_pipeline_split=false");
    o.push_back("model.microbatch_group_size_per_vp_stage=null");
    o.push_back("model.overlap_moe_expert_parallel_comm=" + std::string(boolean(s.model.overlap_moe_expert_parallel_comm)));
    char load[32];
    std::snprintf(load, sizeof load, "%.17g", s.model.moe_routing_imbalance);
    o.push_back(std::string("model.moe_routing_imbalance=") + load);
    o.push_back("optimizer.overlap_param_gather_with_optimizer_step=" +
                std::string(boolean(s.optimizer.overlap_param_gather_with_optimizer_step)));
    o.push_back("cluster.num_gpus=" + num(s.cluster.num_gpus));
    o.push_back("cluster.gpu=" + gpu_set_value(s.cluster.gpu));
  }
  return o;
}

}  // namespace

LaunchSettings launch_settings(const model::RunSpec& base, const PlanLayout& l, const RecomputeChoice& c) {
  const model::RunSpec s = layout_spec(base, l);
  const Recompute r = recompute_of(c);
  LaunchSettings out;
  out.megatron_lm = megatron_flags(s, l, r);
  out.bridge_overrides = overrides(s, l, r, true);
  out.peakcast_sets = overrides(s, l, r, false);
  return out;
}

}  // namespace peakcast::sim::planning
