// What the program that launches the run checks: Megatron-Bridge's ConfigContainer.validate and its
// training loop (spec.bridge_training, "defaults": "bridge"), Megatron-LM's validate_args (warnings: a
// Megatron Core or Bridge run does not call it), and the batch-size calculator both use.
#include <algorithm>
#include <cctype>
#include <sstream>

#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

void mlm_warning(RuleSink& sink, const std::string& path, const char* rule, const std::string& msg) {
  sink.warning(path, rule, msg + "; Megatron-LM's validate_args refuses it (Megatron Core and Bridge do not check it)");
}

// Megatron-LM's validate_args (megatron/training/arguments.py), only when pretrain_gpt.py parses the run.
void megatron_lm_args(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  if (m.fp16_lm_cross_entropy && !m.fp16)
    mlm_warning(sink, "model.fp16_lm_cross_entropy", "fp16_cross_entropy_needs_fp16", "lm cross entropy in fp16 only support in fp16 mode. (arguments.py:1321)");
  if (m.fp32_residual_connection && !m.fp16 && !m.bf16)
    mlm_warning(sink, "model.fp32_residual_connection", "fp16_cross_entropy_needs_fp16",
                "residual connection in fp32 only supported when using fp16 or bf16. (arguments.py:1323)");
  if (m.fp8_param && !spec.ddp.use_distributed_optimizer && !spec.optimizer.use_distributed_optimizer && !spec.ddp.use_megatron_fsdp)
    mlm_warning(sink, "model.fp8_param", "fp8_param_gather_needs_distopt",
                "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode (arguments.py:1061)");
  if (m.hybrid_context_parallel && (m.pipeline_model_parallel_size > 1 || !m.calculate_per_token_loss))
    mlm_warning(sink, "model.hybrid_context_parallel", "hybrid_cp_restrictions",
                "Hybrid context parallelism is not supported with pipeline parallelism and must be used with "
                "--calculate-per-token-loss (arguments.py:1393-1397)");
  if (m.qk_clip && (m.qk_clip_alpha <= 0.0 || m.qk_clip_alpha >= 1.0))
    mlm_warning(sink, "model.qk_clip_alpha", "qk_clip_range", "--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip. (arguments.py:1548)");
  if (m.qk_clip && m.qk_clip_threshold <= 0.0)
    mlm_warning(sink, "model.qk_clip_threshold", "qk_clip_range", "--qk-clip-threshold must be greater than 0 when using --qk-clip. (arguments.py:1550)");
  if (spec.optimizer.optimizer_cpu_offload && !spec.optimizer.use_precision_aware_optimizer)
    mlm_warning(sink, "optimizer.optimizer_cpu_offload", "cpu_offload_needs_precision_aware",
                "The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer` (arguments.py:1799)");
  if (m.delay_wgrad_compute && m.transformer_impl == TransformerImpl::local)
    mlm_warning(sink, "model.delay_wgrad_compute", "delay_wgrad_restrictions",
                "Delaying wgrad compute is only supported with transformer_engine implementation (arguments.py:1818)");
  if (m.mtp_num_layers > 0 && m.position_embedding_type == PositionEmbedding::yarn)
    mlm_warning(sink, "model.position_embedding_type", "mtp_position_embedding_type",
                "Multi-Token Prediction (MTP) is not supported with 'yarn' position embedding type (arguments.py:1859)");
  // Megatron Core reads moe_latent_size only in MoELayer (moe_layer.py:265), so a dense model ignores it.
  if (m.moe_latent_size && !is_moe_model(m))
    mlm_warning(sink, "model.moe_latent_size", "moe_latent_size_needs_moe", "MoE latent projections are applicable only for MoE models. (arguments.py:1896)");
  if (m.cpu_offloading_num_layers > 0 && !m.cpu_offloading)
    sink.warning("model.cpu_offloading_num_layers", "cpu_offloading_num_layers_without_offloading",
                 "cpu_offloading_num_layers alone does nothing in Megatron Core and Bridge (cpu_offloading is false); "
                 "Megatron-LM's validate_args turns cpu_offloading on for it (arguments.py:1864)");
  // arguments.py:1500-1532, generalized tensor parallelism with MXFP8.
  const bool gtp = m.tensor_parallel_num_weight_shards && *m.tensor_parallel_num_weight_shards > m.tensor_model_parallel_size;
  if (gtp && m.fp8 && m.fp8_recipe == Fp8Recipe::mxfp8 && (!m.fp8_param || !spec.ddp.reuse_grad_buf_for_mxfp8_param_ag))
    mlm_warning(sink, "model.tensor_parallel_num_weight_shards", "gtp_mlm_restrictions",
                "GTP + mxfp8 requires --fp8-param-gather and --reuse-grad-buf-for-mxfp8-param-ag (arguments.py:1524, :1531)");
  if (spec.train.step_batch_size_schedule && spec.train.global_batch_size)
    mlm_warning(sink, "train.step_batch_size_schedule", "step_batch_schedule_vs_global_batch",
                "Cannot specify both --step-batch-size-schedule and --global-batch-size (arguments.py:680)");
  // An absolute position table shorter than the sequence is indexed out of range in any launcher.
  if (m.max_position_embeddings < m.seq_length) {
    if (m.position_embedding_type == PositionEmbedding::learned_absolute)
      sink.error("model.max_position_embeddings", "max_position_embeddings_ge_seq_length",
                 "max_position_embeddings (" + str(m.max_position_embeddings) + ") is smaller than seq_length (" + str(m.seq_length) +
                     "): the learned absolute position embedding has max_position_embeddings rows and the first forward "
                     "indexes it with positions up to seq_length - 1 (arguments.py:1302 refuses it too)");
    else
      mlm_warning(sink, "model.max_position_embeddings", "max_position_embeddings_ge_seq_length",
                  "max_position_embeddings must be greater than or equal to seq_length (arguments.py:1302)");
  }
}

// The batch-size calculator (num_microbatches_calculator.py) and the training loop's own checks.
void batch_schedule(const RunSpec& spec, RuleSink& sink) {
  const TrainSpec& t = spec.train;
  if (t.rampup_batch_size)
    sink.warning("train.rampup_batch_size", "rampup_batch_size_ignored",
                 "rampup_batch_size is deprecated and will be removed in a future release. Use step_batch_size_schedule instead. "
                 "(num_microbatches_calculator.py:101): it is not passed on, the batch size stays constant (what is predicted)");
  if (t.step_batch_size_schedule) {
    if (spec.bridge_training)
      sink.warning("train.step_batch_size_schedule", "step_batch_schedule_vs_decrease",
                   "Bridge never passes step_batch_size_schedule to the micro-batch calculator (Bridge initialize.py:115): ignored");
    else if (t.decrease_batch_size_if_needed)
      sink.error("train.step_batch_size_schedule", "step_batch_schedule_vs_decrease",
                 "Cannot specify both --step-batch-size-schedule and --decrease-batch-size-if-needed (num_microbatches_calculator.py:266)");
    std::string text = *t.step_batch_size_schedule;
    for (char& c : text)
      if (c == ',') c = ' ';
    std::istringstream in(text);
    std::string entry;
    std::int64_t entries = 0, previous = -1;
    bool ok = true;
    while (ok && in >> entry) {
      ++entries;
      const auto colon = entry.find(':');
      if (colon == std::string::npos) {
        sink.error("train.step_batch_size_schedule", "step_batch_schedule_format",
                   "Invalid schedule entry \"" + entry.substr(0, 40) + "\". Expected format: \"THRESHOLD:BATCH_SIZE\" (num_microbatches_calculator.py:517)");
        ok = false;
        break;
      }
      const std::string a = entry.substr(0, colon), b = entry.substr(colon + 1);
      const auto digits = [](const std::string& s) { return !s.empty() && s.size() < 18 && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }); };
      if (!digits(a) || !digits(b)) continue;  // suffixed values (1M, ...) are not checked further
      const std::int64_t threshold = std::stoll(a), batch = std::stoll(b);
      if ((entries == 1 && threshold != 0) || (entries > 1 && threshold <= previous) || batch <= 0) {
        sink.error("train.step_batch_size_schedule", "step_batch_schedule_format",
                   "the schedule's first threshold must be 0, thresholds strictly increasing and batch sizes positive "
                   "(num_microbatches_calculator.py:539-556)");
        ok = false;
      }
      previous = threshold;
    }
    if (ok && entries == 0)
      sink.error("train.step_batch_size_schedule", "step_batch_schedule_format", "schedule must have at least one entry (num_microbatches_calculator.py:538)");
  }
  if (t.manual_gc && t.manual_gc_interval < 0)
    sink.error("train.manual_gc_interval", "manual_gc_interval_non_negative",
               "Manual garbage collection interval should be larger than or equal to 0 (Bridge train.py:211; training.py:3629)");
  // Rounding the batch down leaves no micro-batch when it is below one per data-parallel rank (num_microbatches_calculator.py:389).
  const ModelSpec& m = spec.model;
  const std::int64_t tpppcp = m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size;
  if (t.decrease_batch_size_if_needed && t.global_batch_size && tpppcp > 0 &&
      *t.global_batch_size < t.micro_batch_size * (spec.cluster.num_gpus / tpppcp))
    sink.error("train.global_batch_size", "decrease_batch_size_rounds_down",
               "number of microbatches should be at least 1 (num_microbatches_calculator.py:389): decrease_batch_size_if_needed "
               "rounds global_batch_size down to a multiple of micro_batch_size x data-parallel size, here 0");
}

// ConfigContainer.validate and the model providers (bridge:src/megatron/bridge/training/config.py).
void bridge_config(const RunSpec& spec, RuleSink& sink) {
  if (!spec.bridge_training) return;
  const ModelSpec& m = spec.model;
  const TrainSpec& t = spec.train;
  const int lengths = (t.train_iters_given ? 1 : 0) + (t.train_samples ? 1 : 0) + (t.num_epochs ? 1 : 0);
  if (lengths > 1)
    sink.error("train.train_iters", "one_training_length",
               "Cannot specify more than one of train_iters, train_samples, or num_epochs (Bridge config.py:480)");
  if (t.rampup_batch_size && (t.num_epochs || t.train_samples))
    sink.error("train.rampup_batch_size", "rampup_batch_size_ignored",
               "Batch size rampup not supported with epoch-based or sample-based training yet (Bridge config.py:483, :487)");
  if ((t.num_epochs && *t.num_epochs <= 0) || (t.train_samples && *t.train_samples <= 0))
    sink.error(t.num_epochs ? "train.num_epochs" : "train.train_samples", "rampup_batch_size_ignored",
               "num_epochs and train_samples must be positive (Bridge config.py:482, :486)");
  if (m.deterministic_mode && m.cross_entropy_loss_fusion)
    sink.error("model.cross_entropy_loss_fusion", "deterministic_vs_cross_entropy_fusion",
               "Cross Entropy Fusion is currently not deterministic. (Bridge config.py:1052)");
  if ((m.fp8_param || spec.ddp.fp8_param_gather) && m.fp8 && m.fp8_recipe == Fp8Recipe::mxfp8 && !spec.ddp.use_megatron_fsdp &&
      !spec.ddp.reuse_grad_buf_for_mxfp8_param_ag)
    sink.error("ddp.reuse_grad_buf_for_mxfp8_param_ag", "mxfp8_param_gather_needs_grad_buf_reuse",
               "When fp8_param_gather=True and fp8_recipe='mxfp8', reuse_grad_buf_for_mxfp8_param_ag must be set to True "
               "(Bridge config.py:1493)");
  if (m.restore_modelopt_state && m.gradient_accumulation_fusion)
    sink.error("model.gradient_accumulation_fusion", "modelopt_no_grad_accumulation_fusion",
               "Gradient accumulation fusion is not supported with ModelOpt/Quantized models. Please set "
               "model.gradient_accumulation_fusion=False (Bridge config.py:1516)");
  if (spec.optimizer.overlap_param_gather != spec.ddp.overlap_param_gather)
    sink.warning("optimizer.overlap_param_gather", "overlap_param_gather_out_of_sync",
                 "overlap_param_gather settings were not in sync; Bridge enables overlap_param_gather for both (Bridge config.py:2128)");
  if (spec.optimizer.use_precision_aware_optimizer) {
    const OptimizerSpec& o = spec.optimizer;
    if (m.bf16 && !o.bf16)
      sink.error("optimizer.bf16", "precision_aware_optimizer_dtype_sync",
                 "optimizer.bf16=True must be set when model.bf16=True and use_precision_aware_optimizer=True. (Bridge config.py:2163)");
    if (m.fp16 && !o.fp16)
      sink.error("optimizer.fp16", "precision_aware_optimizer_dtype_sync",
                 "optimizer.fp16=True must be set when model.fp16=True and use_precision_aware_optimizer=True. (Bridge config.py:2168)");
    if (!m.bf16 && !m.fp16 && (o.bf16 || o.fp16))
      sink.error("optimizer.bf16", "precision_aware_optimizer_dtype_sync",
                 "optimizer.bf16 and optimizer.fp16 must be False when the model trains in fp32 (Bridge config.py:2173)");
  }
  if (m.gtp_weight_remat_size > 1 || m.expert_gtp_weight_remat_size > 1 ||
      (m.tensor_parallel_num_weight_shards && *m.tensor_parallel_num_weight_shards > m.tensor_model_parallel_size))
    sink.warning("model.tensor_parallel_num_weight_shards", "gtp_not_wired_in_bridge",
                 "Bridge's initialize_model_parallel does not pass gtp_remat_size / expert_gtp_remat_size "
                 "(Bridge initialize.py:805-825): generalized tensor parallelism gets no process groups under Bridge");
}

}  // namespace

void validate_launcher(const RunSpec& spec, RuleSink& sink) {
  megatron_lm_args(spec, sink);
  batch_schedule(spec, sink);
  bridge_config(spec, sink);
}

}  // namespace peakcast::model::detail
