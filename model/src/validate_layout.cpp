// Parallel layout: Megatron's divisibility rules for TP/PP/VPP/CP/EP, pipeline splits and batches.
#include <cstdlib>
#include <limits>

#include "layer_plan_internal.hpp"
#include "validate_detail.hpp"

namespace peakcast::model::detail {

namespace {

// A split Megatron accepts for num_layers over pp stages when the even one does not: the last stage
// (else the first) takes what makes the other pp-1 stages equal (transformer_block.py:97-137), the
// stage sizes closest to num_layers / pp. Empty when none exists.
std::string uneven_split_hint(std::int64_t layers, std::int64_t pp) {
  if (pp < 2 || layers <= pp) return "";
  std::int64_t best = 0;
  for (std::int64_t edge = 1; edge < layers; ++edge)
    if ((layers - edge) % (pp - 1) == 0 && (best == 0 || std::llabs(edge * pp - layers) < std::llabs(best * pp - layers)))
      best = edge;
  if (best == 0) return "";
  const std::string rest = std::to_string(pp - 1) + " stages of " + std::to_string((layers - best) / (pp - 1));
  return "; Megatron accepts an uneven split, e.g. num_layers_in_last_pipeline_stage=" + std::to_string(best) + " (" + rest +
         ") or num_layers_in_first_pipeline_stage=" + std::to_string(best);
}

void pipeline_split(const ModelSpec& m, RuleSink& sink) {
  const std::int64_t pp = m.pipeline_model_parallel_size;
  const auto& vpp = m.virtual_pipeline_model_parallel_size;
  const bool uneven = m.num_layers_in_first_pipeline_stage || m.num_layers_in_last_pipeline_stage;
  const bool account = m.account_for_embedding_in_pipeline_split || m.account_for_loss_in_pipeline_split;

  if (uneven && account) {
    sink.error(m.num_layers_in_first_pipeline_stage ? "model.num_layers_in_first_pipeline_stage" : "model.num_layers_in_last_pipeline_stage",
               "uneven_pp_vs_account_for",
               "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot be set at the same time "
               "with account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split "
               "(transformer_config.py:1955)");
    return;
  }
  if (m.pipeline_model_parallel_layout) {
    if (uneven || account) {
      sink.error("model.pipeline_model_parallel_layout", "layout_vs_other_pipeline_args",
                 "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments. "
                 "(transformer_config.py:1972)");
    }
    const std::string problem = pipeline_layout_problem(m);
    if (!problem.empty()) sink.error("model.pipeline_model_parallel_layout", "pipeline_layout_invalid", problem);
    return;
  }
  if (m.hybrid_override_pattern) {
    // Hybrid models split by the pattern's '|' stages, or evenly when there are none (arguments.py:815-830).
    const auto& p = *m.hybrid_override_pattern;
    const std::string main = p.substr(0, p.find('/'));
    const std::int64_t segments = 1 + static_cast<std::int64_t>(std::count(main.begin(), main.end(), '|'));
    if (segments > 1 && segments % pp != 0) {
      sink.error("model.hybrid_override_pattern", "hybrid_segments_divisible_by_pp",
                 "The number of hybrid pipeline segments described by --hybrid-layer-pattern must be evenly divisible "
                 "by --pipeline-model-parallel-size. Got " +
                     str(segments) + " segments and " + str(pp) +
                     " pipeline parallel size. (arguments.py:822)");
    }
    return;
  }

  if (uneven) {
    // transformer_config.py:2017-2091
    std::int64_t layers = m.num_layers;
    std::int64_t stages = pp;
    auto edge = [&](const std::optional<std::int64_t>& n, const char* key, const char* which, int line_pos, int line_vpp) {
      if (!n) return;
      if (*n <= 0) {
        sink.error(std::string("model.") + key, "uneven_pp_stage_positive",
                   std::string(key) + " must be larger than 0 (transformer_config.py:" + std::to_string(line_pos) + ")");
      } else if (*n > m.num_layers) {
        // Megatron's __post_init__ lets this pass when the middle count's sign matches (transformer_config.py:2062:
        // bool(-1) is true); the first (last) stage then builds n layers and a middle one a negative count
        // (transformer_block.py:114-140), a model of more than num_layers layers that peakcast does not simulate.
        sink.error(std::string("model.") + key, "uneven_pp_stage_exceeds_num_layers",
                   std::string(key) + " " + str(*n) + " is more than num_layers " + str(m.num_layers) +
                       ": the stage would build more layers than the model has (transformer_block.py:114-140)");
      } else if (vpp && *n % *vpp != 0) {
        sink.error(std::string("model.") + key, "uneven_pp_stage_divisible_by_vpp",
                   std::string("number of layers at ") + which + " stage: " + str(*n) +
                       " must be divisible by virtual pipeline parallel degree " + str(*vpp) +
                       " (transformer_config.py:" + std::to_string(line_vpp) + ")");
      }
      // Saturating: a stage size near INT64's ends still reads as a mismatch below, never wraps.
      if (__builtin_sub_overflow(layers, *n, &layers)) layers = *n > 0 ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
      stages -= 1;
    };
    edge(m.num_layers_in_first_pipeline_stage, "num_layers_in_first_pipeline_stage", "first", 2024, 2032);
    edge(m.num_layers_in_last_pipeline_stage, "num_layers_in_last_pipeline_stage", "last", 2043, 2051);
    if (stages < 0) {
      sink.error("model.num_layers_in_last_pipeline_stage", "uneven_pp_needs_stages",
                 "first and last pipeline stages are set but pipeline_model_parallel_size is 1");
      return;
    }
    if ((layers != 0) != (stages != 0)) {
      sink.error("model.num_layers", "uneven_pp_middle_mismatch",
                 "Mismatch: " + str(layers) + " middle layers remaining but " + str(stages) +
                     " middle PP stages available. (transformer_config.py:2062)");
    } else if (stages > 0 && layers % stages != 0) {
      sink.error("model.num_layers", "uneven_pp_middle_divisible",
                 "number of layers at middle stage: " + str(layers) +
                     " must be divisible by the middle pipeline model "
                     "parallel size " +
                     str(stages) + " (transformer_config.py:2070)");
    } else if (stages > 0 && vpp && (layers / stages) % *vpp != 0) {
      sink.error("model.virtual_pipeline_model_parallel_size", "uneven_pp_middle_divisible_by_vpp",
                 "number of layers on each middle pipeline rank: " + str(layers / stages) +
                     " must be divisible by virtual pipeline parallel degree " + str(*vpp) + " (transformer_config.py:2084)");
    }
    return;
  }

  // Even split, with the embedding/loss counted as layers when asked (transformer_block.py:140-176).
  std::int64_t layers = m.num_layers + (m.account_for_embedding_in_pipeline_split ? 1 : 0) +
                        (m.account_for_loss_in_pipeline_split ? 1 : 0);
  if (layers % pp != 0) {
    sink.error(account ? "model.num_layers" : "model.pipeline_model_parallel_size", "layers_divisible_by_pp",
               "num_layers=" + str(layers) + " should be divisible by pipeline_model_parallel_size=" + str(pp) +
                   (account ? " (after account_for_embedding/loss_in_pipeline_split)" : "") + " (transformer_block.py:151)" +
                   (account || vpp ? "" : uneven_split_hint(layers, pp)));
    return;
  }
  if (vpp && pp > 1 && (layers / pp) % *vpp != 0) {
    sink.error("model.virtual_pipeline_model_parallel_size", "layers_per_rank_divisible_by_vpp",
               "num_layers_per_pipeline_rank " + str(layers / pp) + " should be divisible by vp_size " + str(*vpp) +
                   " (transformer_block.py:173)");
  }
}

void heads_vs_tp(const ModelSpec& m, RuleSink& sink) {
  const std::int64_t tp = m.tensor_model_parallel_size;
  // Heads and query groups against TP (transformer_config.py:1323-1345)
  if (m.num_attention_heads % tp != 0) {
    sink.error("model.num_attention_heads", "heads_divisible_by_tp",
               "num_attention_heads (" + str(m.num_attention_heads) + ") must be a multiple of tensor_model_parallel_size (" +
                   str(tp) + "). (transformer_config.py:1324)");
  }
  const std::int64_t groups = m.num_query_groups.value_or(m.num_attention_heads);
  if (groups % tp != 0 && tp % groups != 0) {
    sink.error("model.num_query_groups", "query_groups_vs_tp",
               "num_query_groups (" + str(groups) + ") must be a multiple or divisor of tensor_model_parallel_size (" +
                   str(tp) + "). (transformer_config.py:1342)");
  }
  if (m.num_query_groups && m.num_attention_heads % groups != 0) {
    sink.error("model.num_query_groups", "heads_divisible_by_query_groups",
               "num_attention_heads (" + str(m.num_attention_heads) + ") must be a multiple of num_query_groups (" +
                   str(groups) + "): each query group shares one key/value head");
  }
}

// Sequence parallelism, the pipeline's dtype and p2p settings, and EP with TP.
void pipeline_config(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const std::int64_t tp = m.tensor_model_parallel_size;
  const std::int64_t pp = m.pipeline_model_parallel_size;
  const std::int64_t ep = m.expert_model_parallel_size;
  // SP needs TP (model_parallel_config.py:502-504)
  if (m.sequence_parallel && tp <= 1) {
    sink.error("model.sequence_parallel", "sequence_parallel_needs_tp",
               "Cannot use sequence parallelism without tensor parallelism (model_parallel_config.py:504)");
  }
  // ModelParallelConfig.__post_init__ (model_parallel_config.py:527-531). Bridge's finalize sets it to
  // params_dtype (bridge:src/megatron/bridge/models/transformer_config.py:173-174), as Megatron-LM's
  // arguments do; a Megatron Core spec must say it.
  if (pp > 1 && !m.pipeline_dtype && !spec.bridge_training) {
    sink.error("model.pipeline_dtype", "pipeline_dtype_required",
               "When using pipeline parallelism, pipeline_dtype must be specified (model_parallel_config.py:529): the "
               "dtype of the pipeline's send/receive buffers; set it to the activation dtype (\"bf16\" for a bf16 run)");
  }
  // The pipelined schedules (schedules.py:1066-1070 interleaved, :2162-2166 non-interleaved).
  if (pp > 1 && m.overlap_p2p_comm) {
    if (!m.virtual_pipeline_model_parallel_size)
      sink.error("model.overlap_p2p_comm", "overlap_p2p_needs_interleaved",
                 "Non-interleaved pipeline parallelism does not support overlapping p2p communication (schedules.py:2164)");
    else if (m.batch_p2p_comm)
      sink.error("model.batch_p2p_comm", "overlap_p2p_vs_batch_p2p",
                 "Can not use both overlap_p2p_comm and batch_p2p_comm (schedules.py:1069): batch_p2p_comm defaults to true");
  }
  // EP with TP wants SP (model_parallel_config.py:560-565): a warning in Megatron.
  if (ep > 1 && tp > 1 && !m.sequence_parallel) {
    sink.warning("model.sequence_parallel", "ep_tp_wants_sequence_parallel",
                 "When using expert parallelism and tensor parallelism for training, sequence parallelism must be used "
                 "(model_parallel_config.py:562)");
  }
}

void deferred_wgrad(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const std::int64_t pp = m.pipeline_model_parallel_size;
  // Deferred output-layer wgrad (model_parallel_config.py:545-558): it drains in the pipeline flush
  // and writes main_grad with the fused wgrad kernels.
  if (m.defer_embedding_wgrad_compute) {
    if (pp == 1)
      sink.error("model.defer_embedding_wgrad_compute", "defer_wgrad_needs_pp",
                 "Cannot defer embedding wgrad compute when pipeline model parallel is not used (model_parallel_config.py:547)");
    if (!m.gradient_accumulation_fusion)
      sink.error("model.defer_embedding_wgrad_compute", "defer_wgrad_needs_grad_accumulation_fusion",
                 "Cannot defer embedding wgrad compute when gradient accumulation fusion is not used (model_parallel_config.py:552)");
    if (m.wgrad_deferral_limit < 0)
      sink.error("model.wgrad_deferral_limit", "wgrad_deferral_limit_non_negative",
                 "Wgrad deferral limit should be greater than or equal to 0 when it is enabled! (model_parallel_config.py:557)");
    // Every Megatron ColumnParallelLinear appends to its embedding_activation_buffer, which only the
    // output layer is given (tensor_parallel/layers.py:1150-1152); the local spec's linear_qkv / fc1
    // are such linears. The harness gives them the flag off, as under the TE spec (Gap 7).
    if (m.transformer_impl == TransformerImpl::local && !spec.cluster.calibration_harness)
      sink.error("model.defer_embedding_wgrad_compute", "defer_wgrad_needs_te_spec",
                 "defer_embedding_wgrad_compute with the local spec fails at the first forward: the decoder's ColumnParallelLinears "
                 "append their inputs to an embedding_activation_buffer that only the output layer has "
                 "(tensor_parallel/layers.py:1150): AttributeError / TypeError on None");
  }
}

// The world size against the parallel groups, the interleaved schedule and context parallelism.
void world_and_context(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const std::int64_t tp = m.tensor_model_parallel_size;
  const std::int64_t pp = m.pipeline_model_parallel_size;
  const std::int64_t cp = m.context_parallel_size;
  const std::int64_t ep = m.expert_model_parallel_size;
  const std::int64_t etp = m.expert_tensor_parallel_size.value_or(tp);
  const std::int64_t world = spec.cluster.num_gpus;
  // World size (parallel_state.py:815-885)
  if (world % (tp * pp * cp) != 0) {
    sink.error("cluster.num_gpus", "world_divisible_by_tp_pp_cp",
               "world_size (" + str(world) + ") is not divisible by " + str(tp * pp * cp) +
                   " = tensor_model_parallel_size * pipeline_model_parallel_size * context_parallel_size (parallel_state.py:823)");
  }
  if (world % (etp * ep * pp) != 0) {
    sink.error("cluster.num_gpus", "world_divisible_by_etp_ep_pp",
               "world_size (" + str(world) + ") is not divisible by expert_tensor_model_pipeline_parallel size (" +
                   str(etp * ep * pp) +
                   ") = expert_tensor_parallel_size * expert_model_parallel_size * "
                   "pipeline_model_parallel_size (parallel_state.py:882)");
  }

  // VPP (parallel_state.py:827-831)
  if (m.virtual_pipeline_model_parallel_size && pp <= 1) {
    sink.error("model.virtual_pipeline_model_parallel_size", "vpp_needs_pp",
               "pipeline-model-parallel size should be greater than 1 with interleaved schedule (parallel_state.py:830)");
  }

  // CP runs only through TE's attention (dot_product_attention.py:57-59)
  if (cp > 1 && (m.transformer_impl == TransformerImpl::local || m.attention_backend == AttentionBackend::local ||
                 m.core_attention_module == CoreAttentionModule::dot_product)) {
    sink.error("model.context_parallel_size", "context_parallel_needs_te_attention",
               "Context parallelism is only supported by TEDotProductAttention! (dot_product_attention.py:59); "
               "transformer_impl local, attention_backend local or a layer spec naming it (exaone4_provider.py:79) builds DotProductAttention");
  }
  if (cp > 1 && m.seq_length % (2 * cp) != 0) {
    sink.error("model.seq_length", "seq_divisible_by_2cp",
               "seq_length (" + str(m.seq_length) + ") must be divisible by 2 * context_parallel_size (" + str(2 * cp) +
                   "): get_batch_on_this_cp_rank splits the sequence into 2 * cp_size equal chunks (utils.py:2462)");
  }
  if (m.sequence_parallel && (m.seq_length / cp) % tp != 0) {
    sink.error("model.seq_length", "seq_divisible_by_tp_under_sp",
               "with sequence_parallel the per-CP-rank sequence (" + str(m.seq_length / cp) +
                   ") must be divisible by tensor_model_parallel_size (" + str(tp) +
                   "): First dimension of the tensor should be divisible by tensor parallel size (mappings.py:74)");
  }
}

// Global batch, micro-batches and the interleaved schedule's micro-batch groups.
void batches(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const std::int64_t tp = m.tensor_model_parallel_size;
  const std::int64_t pp = m.pipeline_model_parallel_size;
  const std::int64_t cp = m.context_parallel_size;
  const std::int64_t world = spec.cluster.num_gpus;
  // Batches (num_microbatches_calculator.py:381-391)
  const std::int64_t dp = world / std::max<std::int64_t>(1, tp * pp * cp);
  const std::int64_t mbs = spec.train.micro_batch_size;
  const std::int64_t gbs = spec.train.global_batch_size.value_or(mbs * dp);
  if (dp >= 1 && world % (tp * pp * cp) == 0) {
    if (gbs % (mbs * dp) != 0) {
      sink.error("train.global_batch_size", "global_batch_divisible",
                 "global batch size (" + str(gbs) + ") is not divisible by micro batch size (" + str(mbs) +
                     ") times data parallel size (" + str(dp) + ") (num_microbatches_calculator.py:381)");
    } else if (m.virtual_pipeline_model_parallel_size && pp > 1) {
      // Interleaved schedule groups (schedules.py:1143-1162)
      const std::int64_t micro = gbs / (mbs * dp);
      const std::int64_t group = m.microbatch_group_size_per_vp_stage.value_or(pp);
      const std::string group_path = m.microbatch_group_size_per_vp_stage ? "model.microbatch_group_size_per_vp_stage" : "train.global_batch_size";
      if (group > micro || group < pp) {
        sink.error(group_path, "microbatch_group_range",
                   "The number of contiguous micro-batches in a virtual pipeline stage should range in [PP=" + str(pp) +
                       " , M=" + str(micro) + "] (schedules.py:1148); microbatch_group_size_per_vp_stage is " + str(group));
      } else if (const std::int64_t rest = micro % group; rest > 0 && rest < pp) {
        sink.error(group_path, "microbatch_group_remainder",
                   "The remainder of M (the total micro-batches) divided by N (number of contiguous micro-batches in a "
                   "virtual pipeline stage) should be 0, or larger than or equal to the pipeline-parallel size, but it is " +
                       str(rest) + ". (schedules.py:1155)");
      }
    }
  }
  // Megatron's post-init sets it to PP without VPP (transformer_config.py); only another value is the user's.
  if (m.microbatch_group_size_per_vp_stage && !m.virtual_pipeline_model_parallel_size &&
      *m.microbatch_group_size_per_vp_stage != m.pipeline_model_parallel_size) {
    sink.warning("model.microbatch_group_size_per_vp_stage", "microbatch_group_without_vpp",
                 "only the interleaved (virtual pipeline) schedule uses microbatch_group_size_per_vp_stage; ignored");
  }
}

void distributed_optimizer_sync(const RunSpec& spec, RuleSink& sink) {
  // Megatron-Bridge keeps the two distributed-optimizer switches in sync (config.py:2109-2121).
  if (spec.optimizer.use_distributed_optimizer != spec.ddp.use_distributed_optimizer) {
    sink.warning(spec.ddp.use_distributed_optimizer ? "optimizer.use_distributed_optimizer" : "ddp.use_distributed_optimizer",
                 "distributed_optimizer_out_of_sync",
                 "Distributed optimizer settings were not in sync: ddp.use_distributed_optimizer=" +
                     std::string(spec.ddp.use_distributed_optimizer ? "True" : "False") +
                     ", optimizer.use_distributed_optimizer=" + (spec.optimizer.use_distributed_optimizer ? "True" : "False") +
                     ". Automatically enabling distributed optimizer for both settings. (Bridge config.py:2114)");
  }
}

}  // namespace

void validate_layout(const RunSpec& spec, RuleSink& sink) {
  heads_vs_tp(spec.model, sink);
  pipeline_config(spec, sink);
  deferred_wgrad(spec, sink);
  world_and_context(spec, sink);
  pipeline_split(spec.model, sink);
  batches(spec, sink);
  distributed_optimizer_sync(spec, sink);
}

}  // namespace peakcast::model::detail
