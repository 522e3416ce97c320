// The checked JSON document -> the typed RunSpec. Types were checked already (spec_keys.cpp), so a
// value of the wrong kind here is skipped; the conversions that can still fail (names, tags) report.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <regex>
#include <set>
#include <string>
#include <utility>

#include "layer_plan_internal.hpp"
#include "peakcast/model/caching_allocator.hpp"
#include "spec_fill_detail.hpp"
#include "spec_parser_detail.hpp"
#include "spec_schema.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

std::optional<DType> dtype_from_name(const std::string& n) {
  if (n == "fp32" || n == "float32" || n == "float") return DType::fp32;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "fp16" || n == "float16" || n == "half") return DType::fp16;
  if (n == "fp8" || n == "uint8") return DType::fp8;
  return std::nullopt;
}

}  // namespace

void read_dtype(const Reader& r, const char* key, DType& dst) {
  if (auto n = r.name(key)) {
    if (auto d = dtype_from_name(*n)) dst = *d;
    else r.error(r.path(key), "unsupported_dtype", "dtype \"" + *n + "\" is not one peakcast models (fp32, bf16, fp16, fp8)");
  }
}

namespace {

void fill_train(const Reader& r, TrainSpec& t) {
  r.read("micro_batch_size", t.micro_batch_size);
  r.read("global_batch_size", t.global_batch_size);
  r.read("train_iters", t.train_iters);
  r.read("packed_sequence", t.packed_sequence);
}

void fill_optimizer(const Reader& r, OptimizerSpec& o) {
  r.read("optimizer", o.optimizer);
  r.read("use_distributed_optimizer", o.use_distributed_optimizer);
  r.read("use_precision_aware_optimizer", o.use_precision_aware_optimizer);
  read_dtype(r, "main_grads_dtype", o.main_grads_dtype);
  read_dtype(r, "main_params_dtype", o.main_params_dtype);
  read_dtype(r, "exp_avg_dtype", o.exp_avg_dtype);
  read_dtype(r, "exp_avg_sq_dtype", o.exp_avg_sq_dtype);
  r.read("store_param_remainders", o.store_param_remainders);
  r.read("loss_scale", o.loss_scale);
  if (auto n = r.name("implementation")) {
    o.implementation = *n == "apex_fused_adam" ? OptimizerImpl::apex_fused_adam
                       : *n == "torch_adamw"   ? OptimizerImpl::torch_adamw
                                               : OptimizerImpl::te_fused_adam;
  }
  r.read("overlap_param_gather_with_optimizer_step", o.overlap_param_gather_with_optimizer_step);
  r.read("optimizer_cpu_offload", o.optimizer_cpu_offload);
  r.read("clip_grad", o.clip_grad);
}

void fill_ddp(const Reader& r, DdpSpec& d, ModelSpec& m) {
  r.read("grad_reduce_in_fp32", d.grad_reduce_in_fp32);
  r.read("overlap_grad_reduce", d.overlap_grad_reduce);
  r.read("overlap_param_gather", d.overlap_param_gather);
  r.read("use_distributed_optimizer", d.use_distributed_optimizer);
  r.read("bucket_size", d.bucket_size);
  r.read("num_distributed_optimizer_instances", d.num_distributed_optimizer_instances);
  r.read("pad_buckets_for_high_nccl_busbw", d.pad_buckets_for_high_nccl_busbw);
  // ddp.fp8_param_gather and model.fp8_param are the same switch (Bridge copies the mixed-precision
  // fp8_param_gather into both, mixed_precision.py); either one keeps parameters in FP8.
  bool fp8_param_gather = false;
  r.read("fp8_param_gather", fp8_param_gather);
  if (fp8_param_gather) m.fp8_param = true;
  // Megatron-FSDP (static_memory_fsdp.cpp). A null dtype is Megatron's "auto" (the parameter dtype).
  r.read("use_megatron_fsdp", d.use_megatron_fsdp);
  r.read("data_parallel_sharding_strategy", d.data_parallel_sharding_strategy);
  r.read("outer_dp_sharding_strategy", d.outer_dp_sharding_strategy);
  r.read("suggested_communication_unit_size", d.suggested_communication_unit_size);
  for (auto [key, dst] : {std::pair{"megatron_fsdp_main_params_dtype", &d.megatron_fsdp_main_params_dtype},
                          std::pair{"megatron_fsdp_main_grads_dtype", &d.megatron_fsdp_main_grads_dtype},
                          std::pair{"megatron_fsdp_grad_comm_dtype", &d.megatron_fsdp_grad_comm_dtype}}) {
    const json* v = r.find(key);
    if (v == nullptr) continue;
    if (v->is_null()) {
      dst->reset();
      continue;
    }
    DType t = DType::fp32;
    read_dtype(r, key, t);
    *dst = t;
  }
  r.read("megatron_fsdp_use_decoupled_grad", d.megatron_fsdp_use_decoupled_grad);
  r.read("megatron_fsdp_cuda_graph_mode", d.megatron_fsdp_cuda_graph_mode);
}

// cluster.pytorch_cuda_alloc_conf: what torch would refuse is an error; the options the allocator
// model does not follow are named; its expandable_segments is cluster.expandable_segments.
void fill_alloc_conf(const Reader& r, ClusterSpec& c) {
  r.read("pytorch_cuda_alloc_conf", c.pytorch_cuda_alloc_conf);
  if (c.pytorch_cuda_alloc_conf.empty()) return;
  const AllocConfParse p = parse_alloc_conf(c.pytorch_cuda_alloc_conf);
  const std::string path = r.path("pytorch_cuda_alloc_conf");
  if (!p.error.empty()) r.error(path, "alloc_conf_invalid", "PYTORCH_CUDA_ALLOC_CONF: " + p.error + " (torch refuses it)");
  for (const auto& o : p.unmodelled)
    r.warning(path, "not_simulated", "caching-allocator option " + o + " is not simulated; the allocator replay assumes its default");
  if (!p.expandable_given) return;
  if (r.has("expandable_segments") && c.expandable_segments != p.settings.expandable_segments)
    r.error(path, "alloc_conf_conflict",
            "sets expandable_segments:" + std::string(p.settings.expandable_segments ? "True" : "False") +
                " against cluster.expandable_segments " + (c.expandable_segments ? "true" : "false"));
  c.expandable_segments = p.settings.expandable_segments;
}

// cluster.cublas_workspace_config: PyTorch reads the ":SIZE:COUNT" pairs (KiB, count) of
// CUBLAS_WORKSPACE_CONFIG and warns and takes its default when there is none
// (CublasHandlePool.cpp parseChosenWorkspaceSize); here that is an error, never a silent default.
void fill_cublas_workspace_config(const Reader& r, ClusterSpec& c) {
  r.read("cublas_workspace_config", c.cublas_workspace_config);
  if (c.cublas_workspace_config.empty()) return;
  static const std::regex form("(:[0-9]{1,9}:[0-9]{1,6})+");
  if (!std::regex_match(c.cublas_workspace_config, form))
    r.error(r.path("cublas_workspace_config"), "cublas_workspace_config_invalid",
            "CUBLAS_WORKSPACE_CONFIG '" + c.cublas_workspace_config.substr(0, 80) +
                "' is not a list of :SIZE_KiB:COUNT pairs (PyTorch would warn and use its default size)");
}

// cluster.transformer_engine_version: "major.minor" or "major.minor.patch".
void fill_te_version(const Reader& r, ClusterSpec& c) {
  r.read("transformer_engine_version", c.transformer_engine_version);
  static const std::regex form("[0-9]{1,3}\\.[0-9]{1,3}(\\.[0-9]{1,4})?");
  if (!std::regex_match(c.transformer_engine_version, form))
    r.error(r.path("transformer_engine_version"), "transformer_engine_version_invalid",
            "'" + c.transformer_engine_version.substr(0, 40) + "' is not a Transformer Engine release (\"major.minor\" or \"major.minor.patch\", e.g. \"2.18\")");
}

void fill_cluster(const Reader& r, ClusterSpec& c, Diagnostics& out) {
  r.read("num_gpus", c.num_gpus);
  r.read("expandable_segments", c.expandable_segments);
  if (const json* gpu = r.find("gpu")) fill_gpu(*gpu, c.gpu, out);
  fill_alloc_conf(r, c);
  fill_cublas_workspace_config(r, c);
  fill_te_version(r, c);
}

}  // namespace

// Megatron's int-or-list layer fields (moe_layer_freq, linear_attention_freq): an int, or one 0/1 entry
// per layer; anything else (null) leaves the field as it was.
std::optional<LayerPattern> int_or_pattern(const json& v) {
  if (auto k = Reader::as_int(v)) return LayerPattern{*k};
  if (!v.is_array()) return std::nullopt;
  std::vector<std::int64_t> pattern;
  for (const auto& e : v) pattern.push_back(Reader::as_int(e).value_or(0));
  return LayerPattern{std::move(pattern)};
}

// tp_comm_overlap_cfg, the object form Transformer Engine's initialize_ub takes as ub_cfgs: GEMM
// name -> add_ub keyword arguments (module/base.py). Names and keywords outside TE's are errors
// there too (KeyError / TypeError); only method and fp8_buf change the buffers' sizes.
void read_userbuffer_overrides(const Reader& r, ModelSpec& m) {
  const json* v = r.find("tp_comm_overlap_cfg");
  if (v == nullptr || v->is_null()) return;
  if (v->is_string()) {
    m.tp_comm_overlap_cfg_is_path = true;
    return;
  }
  if (!v->is_object()) return;
  static const std::set<std::string> kGemms = {"qkv_fprop", "qkv_dgrad", "qkv_wgrad", "proj_fprop", "proj_dgrad", "proj_wgrad",
                                               "fc1_fprop", "fc1_dgrad", "fc1_wgrad", "fc2_fprop", "fc2_dgrad", "fc2_wgrad"};
  static const std::set<std::string> kKeywords = {"method", "is_reduce_scatter", "num_sm", "cga_size", "set_sm_margin",
                                                  "num_splits", "aggregate", "atomic_gemm", "use_ce", "fp8_buf",
                                                  "comm_priority", "gemm_priority", "pipeline_rs_overlap_first_gemm"};
  static const std::set<std::string> kMethods = {"ring_exchange", "pipeline", "bulk", "external"};
  const std::string base = r.path("tp_comm_overlap_cfg");
  for (const auto& [gemm, cfg] : v->items()) {
    const std::string at = base + "." + gemm;
    if (kGemms.count(gemm) == 0) {
      r.error(at, "unknown_userbuffer_gemm", "\"" + gemm + "\" is not one of Transformer Engine's userbuffer GEMMs (qkv/proj/fc1/fc2 _fprop, _dgrad, _wgrad)");
      continue;
    }
    if (!cfg.is_object()) {
      r.error(at, "type_mismatch", "expected an object of initialize_ub settings (method, num_sm, ...)");
      continue;
    }
    ModelSpec::UserbufferOverride o;
    for (const auto& [key, val] : cfg.items()) {
      const std::string kat = at + "." + key;
      if (kKeywords.count(key) == 0) {
        r.error(kat, "unknown_key", "\"" + key + "\" is not a setting of Transformer Engine's add_ub (module/base.py initialize_ub)");
      } else if (key == "method") {
        if (!val.is_string() || kMethods.count(val.get<std::string>()) == 0) {
          r.error(kat, "unsupported_value", "method must be \"ring_exchange\", \"pipeline\", \"bulk\" or \"external\"");
        } else {
          o.method = val.get<std::string>();
        }
      } else if (key == "fp8_buf") {
        if (!val.is_boolean()) r.error(kat, "type_mismatch", "expected a bool");
        else o.fp8_buf = val.get<bool>();
      }
    }
    m.tp_comm_overlap_cfg[gemm] = o;
  }
}

void fill_run_spec(const json& doc, const FillContext& ctx, RunSpec& spec, Diagnostics& out) {
  fill_model(Reader(doc, "model", ctx, out), spec.model);
  fill_train(Reader(doc, "train", ctx, out), spec.train);
  fill_optimizer(Reader(doc, "optimizer", ctx, out), spec.optimizer);
  fill_ddp(Reader(doc, "ddp", ctx, out), spec.ddp, spec.model);
  fill_cluster(Reader(doc, "cluster", ctx, out), spec.cluster, out);
  fill_model_checks(Reader(doc, "model", ctx, out), spec.model);
  fill_train_checks(Reader(doc, "train", ctx, out), spec.train);
  fill_optimizer_checks(Reader(doc, "optimizer", ctx, out), spec.optimizer);
  fill_ddp_checks(Reader(doc, "ddp", ctx, out), spec.ddp);
  fill_cluster_checks(Reader(doc, "cluster", ctx, out), spec.cluster);
  if (doc.contains("peft") && doc["peft"].is_object()) fill_peft(Reader(doc, "peft", ctx, out), spec.model, spec.peft);
  spec.bridge_training = ctx.profile == DefaultsProfile::bridge;
}

}  // namespace peakcast::model::detail
