// Every row of docs/megatron-args-mapping.md's hand-checked "argument -> run-spec" table that a run
// spec can express: the expected values are the table's (the pinned validate_args and config
// builders), computed here from the arguments, not taken from the tool's output.
#include "test_megatron_args.hpp"

using namespace megatron_test;
using nlohmann::json;
using peakcast::model::Severity;

namespace {
// The base has hidden 512 and 8 heads.
constexpr std::int64_t kHidden = 512, kHeads = 8, kLayers = 4;
}  // namespace

TEST_CASE("mapping: activations, the MLP width and the attention shape (argument_utils.py:314-333, arguments.py:1268-1281)") {
  const json swiglu = model_of("--swiglu");
  CHECK(swiglu["gated_linear_unit"] == true);
  CHECK(swiglu["activation_func"] == "silu");
  CHECK(swiglu["bias_activation_fusion"] == true);  // bias_swiglu_fusion, on by default
  CHECK(swiglu["ffn_hidden_size"] == static_cast<std::int64_t>(4.0 * kHidden * 2 / 3 / 64) * 64);
  CHECK(model_of("--swiglu --no-bias-swiglu-fusion")["bias_activation_fusion"] == false);
  const json gelu = model_of("");
  CHECK(gelu["bias_activation_fusion"] == true);  // bias_gelu_fusion
  CHECK(gelu["ffn_hidden_size"] == 4 * kHidden);
  CHECK(gelu["kv_channels"] == kHidden / kHeads);
  CHECK_FALSE(gelu.contains("activation_func"));  // TransformerConfig's gelu
  // Without biases validate_args forces bias_gelu_fusion off (arguments.py:1537-1539).
  const json nobias = model_of("--disable-bias-linear");
  CHECK(nobias["add_bias_linear"] == false);
  CHECK(nobias["bias_activation_fusion"] == false);
  CHECK(gelu["add_qkv_bias"] == true);  // bias on: add_qkv_bias (arguments.py:1541-1543)
  CHECK(model_of("--squared-relu")["activation_func"] == "squared_relu");
  refused(kBase + "--squared-relu --swiglu", "squared_relu_with_swiglu", "--squared-relu");
  const json geglu = model_of("--quick-geglu");
  CHECK(geglu["gated_linear_unit"] == true);
  CHECK(geglu["activation_func"] == "quick_gelu");
  CHECK(model_of("--kv-channels 128")["kv_channels"] == 128);
  // --num-query-groups takes effect only with --group-query-attention.
  CHECK(model_of("--group-query-attention --num-query-groups 2")["num_query_groups"] == 2);
  CHECK(model_of("--num-query-groups 2").value("num_query_groups", json()).is_null());
  refused(kBase + "--multi-latent-attention --group-query-attention", "gqa_with_mla", "--group-query-attention");
  const json mla = model_of("--multi-latent-attention --position-embedding-type rope");
  CHECK(mla["multi_latent_attention"] == true);
  CHECK(mla["kv_lora_rank"] == 32);  // Megatron-LM's --kv-lora-rank default, not MLATransformerConfig's 512
  CHECK(mla["q_lora_rank"].is_null());
}

TEST_CASE("mapping: embeddings, norms and positions (argument_utils.py:460-468, arguments.py:1559-1567)") {
  CHECK(resolved(kBase, "model.share_embeddings_and_output_weights") == true);
  CHECK(model_of("--untie-embeddings-and-output-weights")["share_embeddings_and_output_weights"] == false);
  CHECK(model_of("--normalization RMSNorm")["normalization"] == "RMSNorm");
  CHECK(model_of("--norm-epsilon 1e-6")["layernorm_epsilon"] == 1e-6);
  CHECK(model_of("--apply-layernorm-1p")["layernorm_zero_centered_gamma"] == true);
  CHECK(resolved(kBase, "model.position_embedding_type") == "learned_absolute");
  CHECK(model_of("")["apply_rope_fusion"] == false);  // not rope: forced off
  const json rope = model_of("--position-embedding-type rope --rotary-base 500000 --use-rope-scaling --rotary-seq-len-interpolation-factor 2");
  CHECK(rope["position_embedding_type"] == "rope");
  CHECK(rope["apply_rope_fusion"] == true);
  CHECK(rope["rotary_base"] == 500000);
  CHECK(rope["rope_scaling"] == true);
  CHECK(rope["seq_len_interpolation_factor"] == 2.0);
  const auto legacy = import(kBase + "--use-rotary-position-embeddings");
  CHECK(json::parse(legacy.spec_json)["model"]["position_embedding_type"] == "rope");
  CHECK(find(legacy.diagnostics, "deprecated_argument", "--use-rotary-position-embeddings", Severity::warning) != nullptr);
  refused(kBase + "--no-position-embedding", "no_position_embedding", "--no-position-embedding");
  // The model config's length is --max-position-embeddings (argument_utils.py:467), the run spec's
  // max_position_embeddings; the batch is --seq-length, which must not exceed it.
  const json lengths = spec(
      "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 2048 "
      "--max-position-embeddings 4096 --micro-batch-size 1")["model"];
  CHECK(lengths["max_position_embeddings"] == 4096);
  CHECK(lengths["seq_length"] == 2048);
  refused(
      "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 4096 --max-position-embeddings 2048 "
      "--micro-batch-size 1",
      "max_position_embeddings_vs_seq_length", "--max-position-embeddings");
  refused(kBase + "--context-parallel-size 3", "seq_length_vs_cp", "--seq-length");
}

TEST_CASE("mapping: precision and gradient reduction (arguments.py:1158-1181, argument_utils.py:306, :312)") {
  const json bf16 = spec(kBase + "--bf16");
  CHECK(bf16["model"]["bf16"] == true);
  CHECK(bf16["model"]["params_dtype"] == "bf16");
  CHECK(bf16["model"]["pipeline_dtype"] == "bf16");
  CHECK(bf16["optimizer"]["params_dtype"] == "bf16");
  CHECK(bf16["ddp"]["grad_reduce_in_fp32"] == true);
  CHECK(spec(kBase + "--bf16 --grad-reduce-in-bf16")["ddp"]["grad_reduce_in_fp32"] == false);
  // --main-grads-dtype bf16: no fp32 accumulation (arguments.py:1180); OptimizerConfig then refuses it
  // without --use-precision-aware-optimizer (optimizer_config.py:469-472), as the run spec's validation does.
  CHECK_FALSE(spec(kBase + "--bf16 --main-grads-dtype bf16")["ddp"].value("grad_reduce_in_fp32", false));
  CHECK(model_of("--fp16")["params_dtype"] == "fp16");
  CHECK(model_of("")["params_dtype"] == "fp32");
  const json fp8 = model_of("--bf16 --fp8-format hybrid --fp8-recipe tensorwise");
  CHECK(fp8["fp8"] == "hybrid");
  CHECK(fp8["fp8_recipe"] == "tensorwise");
  CHECK(model_of("--bf16 --fp8-format e4m3 --fp8-param-gather --use-distributed-optimizer")["fp8_param"] == true);
  refused(kBase + "--bf16 --fp8-format e4m3 --fp8-param-gather", "fp8_param_gather_needs_distopt", "--fp8-param-gather");
}

TEST_CASE("mapping: recompute (arguments.py:583-591, :1373-1376)") {
  CHECK(model_of("--recompute-activations")["recompute_granularity"] == "selective");
  CHECK(model_of("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")["recompute_method"] == "uniform");
  refused(kBase + "--recompute-granularity selective --recompute-method uniform", "selective_with_method", "--recompute-method");
  // Left out, recompute_modules is TransformerConfig's ["core_attn"] (transformer_config.py:1789-1790):
  // the run spec's own default, so it is not written.
  CHECK_FALSE(model_of("--recompute-activations").contains("recompute_modules"));
}

TEST_CASE("mapping: the pipeline split and the virtual pipeline size (arguments.py:893-979)") {
  const std::string eight =
      "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
      "--max-position-embeddings 1024 --micro-batch-size 1 --pipeline-model-parallel-size 4 ";
  // (num_layers [+1 embedding] [+1 loss]) / PP / layers per virtual stage.
  CHECK(spec(eight + "--num-layers-per-virtual-pipeline-stage 1")["model"]["virtual_pipeline_model_parallel_size"] == 8 / 4 / 1);
  CHECK(spec("--num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
             "--micro-batch-size 1 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1 "
             "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split")["model"]
                                                                                              ["virtual_pipeline_model_parallel_size"] == (6 + 1 + 1) / 4 / 1);
  // A virtual size of 1 is no interleaving.
  CHECK(spec(eight + "--num-layers-per-virtual-pipeline-stage 2")["model"].value("virtual_pipeline_model_parallel_size", json()).is_null());
  CHECK(spec(eight + "--num-virtual-stages-per-pipeline-rank 2")["model"]["virtual_pipeline_model_parallel_size"] == 2);
  CHECK(spec(eight + "--pipeline-model-parallel-layout 'Et|t|t|t|t|t|t|tL'")["model"]["virtual_pipeline_model_parallel_size"] == 8 / 4);
  refused(eight + "--num-virtual-stages-per-pipeline-rank 2 --num-layers-per-virtual-pipeline-stage 1", "vpp_given_twice",
          "--num-virtual-stages-per-pipeline-rank");
  refused(eight + "--num-layers-per-virtual-pipeline-stage 1 --decoder-first-pipeline-num-layers 1", "vpp_layers_with_uneven_pp",
          "--num-layers-per-virtual-pipeline-stage");
  // Interleaved: Megatron-LM's p2p overlap default (on) stays and batch_p2p_comm = not overlap
  // (argument_utils.py:307); --no-overlap-p2p-communication turns it off. Without interleaving both are off.
  const json vpp = spec(eight + "--num-virtual-stages-per-pipeline-rank 2")["model"];
  CHECK(vpp["overlap_p2p_comm"] == true);
  CHECK(vpp["batch_p2p_comm"] == false);
  const json no_overlap = spec(eight + "--num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication")["model"];
  CHECK(no_overlap["overlap_p2p_comm"] == false);
  CHECK(no_overlap.value("batch_p2p_comm", true) == true);
  CHECK(spec(eight)["model"].value("overlap_p2p_comm", false) == false);
  const json uneven = spec(eight + "--decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 3")["model"];
  CHECK(uneven["num_layers_in_first_pipeline_stage"] == 1);
  CHECK(uneven["num_layers_in_last_pipeline_stage"] == 3);
  refused(
      "--num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 1 --pipeline-model-parallel-size 4",
      "layers_vs_pp", "--pipeline-model-parallel-size");
}

TEST_CASE("mapping: hybrid patterns (arguments.py:717-889, argument_utils.py:345-349, :510)") {
  const std::string hybrid =
      "torchrun pretrain_hybrid.py --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
      "--max-position-embeddings 1024 --micro-batch-size 1 --position-embedding-type rope ";
  const std::string pattern = "M*M-|M*M-|M*M-|M*M-/MM/MM";
  const json m = spec(hybrid + "--pipeline-model-parallel-size 2 --hybrid-layer-pattern '" + pattern + "'")["model"];
  CHECK(m["hybrid_layer_pattern"] == pattern);
  CHECK(m["num_layers"] == 16);                               // layers of the main pattern, '|' dropped
  CHECK(m["virtual_pipeline_model_parallel_size"] == 4 / 2);  // '|'-segments / PP
  CHECK(m["mtp_num_layers"] == 2);                            // '/'-depths
  CHECK(m["is_hybrid_model"] == true);
  // --num-layers is overridden by the pattern, with a warning.
  const auto over = import(hybrid + "--num-layers 7 --hybrid-layer-pattern M*M-");
  CHECK(json::parse(over.spec_json)["model"]["num_layers"] == 4);
  CHECK(find(over.diagnostics, "num_layers_from_pattern", "--num-layers", Severity::warning) != nullptr);
  // The deprecated spelling is the same pattern; both together are refused.
  const auto old = import(hybrid + "--hybrid-override-pattern M*M-");
  CHECK(json::parse(old.spec_json)["model"]["hybrid_layer_pattern"] == "M*M-");
  CHECK(find(old.diagnostics, "deprecated_argument", "--hybrid-override-pattern", Severity::warning) != nullptr);
  refused(hybrid + "--hybrid-override-pattern M*M- --hybrid-layer-pattern M*M-", "hybrid_pattern_twice", "--hybrid-override-pattern");
  // --mtp-hybrid-override-pattern appends '/'-depths when --mtp-num-layers > 0.
  CHECK(spec(hybrid + "--hybrid-layer-pattern M*M- --mtp-hybrid-override-pattern MM --mtp-num-layers 2")["model"]["hybrid_layer_pattern"] ==
        "M*M-/MM/MM");
  // MLA symbols switch MLA on; an unknown symbol is refused.
  CHECK(spec(hybrid + "--hybrid-layer-pattern 'M+M-'")["model"]["multi_latent_attention"] == true);
  refused(hybrid + "--hybrid-layer-pattern MXM-", "hybrid_pattern_symbol", "--hybrid-layer-pattern");
}

TEST_CASE("mapping: parallelism, MoE and list-valued arguments (arguments.py:569-570, :1381-1387, :1581-1597)") {
  CHECK(model_of("--sequence-parallel").value("sequence_parallel", false) == false);  // forced off at TP 1
  const json tp = model_of("--tensor-model-parallel-size 2 --sequence-parallel");
  CHECK(tp["sequence_parallel"] == true);
  CHECK(tp["expert_tensor_parallel_size"] == 2);  // defaults to TP
  const json moe = model_of(
      "--num-experts 8 --moe-router-topk 2 --moe-router-load-balancing-type aux_loss "
      "--moe-aux-loss-coeff 1e-2 --moe-layer-freq '([0]*1+[1]*3)' --moe-grouped-gemm");
  CHECK(moe["num_moe_experts"] == 8);
  CHECK(moe["moe_ffn_hidden_size"] == 4 * kHidden);            // defaults to ffn_hidden_size
  CHECK(moe["moe_router_load_balancing_type"] == "aux_loss");  // one value: the scalar
  CHECK(moe["moe_aux_loss_coeff"] == 0.01);
  CHECK(moe["moe_layer_freq"] == json::array({0, 1, 1, 1}));
  CHECK(model_of("--num-experts 8 --moe-aux-loss-coeff 1e-2 1e-3")["moe_aux_loss_coeff"] == json::array({0.01, 0.001}));
  CHECK(model_of("--num-experts 8 --moe-layer-freq 2")["moe_layer_freq"] == 2);
  CHECK(model_of("--num-experts 0").value("num_moe_experts", json()).is_null());
  refused(kBase + "--num-experts 6 --expert-model-parallel-size 4", "experts_vs_ep", "--expert-model-parallel-size");
  CHECK(model_of("--context-parallel-size 2")["cp_comm_type"] == "p2p");  // one value: the string
  CHECK(model_of("--context-parallel-size 2 --cp-comm-type p2p a2a")["cp_comm_type"] == json::array({"p2p", "a2a"}));
  (void)kLayers;
}

TEST_CASE("mapping: CUDA graphs, offloading and fusions (arguments.py:593-623, :1864-1874, :2747-2808)") {
  const auto local = import(kBase + "--enable-cuda-graph");
  CHECK(json::parse(local.spec_json)["model"]["cuda_graph_impl"] == "local");
  CHECK(find(local.diagnostics, "deprecated_argument", "--enable-cuda-graph", Severity::warning) != nullptr);
  CHECK(model_of("--external-cuda-graph")["cuda_graph_impl"] == "transformer_engine");
  refused(kBase + "--enable-cuda-graph --cuda-graph-impl local", "cuda_graph_flag_with_impl", "--enable-cuda-graph");
  CHECK(model_of("--cuda-graph-impl local --cuda-graph-scope attn mlp")["cuda_graph_modules"] == json::array({"attn", "mlp"}));
  CHECK(model_of("--cpu-offloading-num-layers 1")["cpu_offloading"] == true);
  // Megatron-LM's fusion flags default on (store_false), unlike TransformerConfig's dataclass.
  const json on = model_of("");
  for (const char* k : {"masked_softmax_fusion", "bias_dropout_fusion", "gradient_accumulation_fusion", "persist_layer_norm"}) {
    INFO(k);
    CHECK(on[k] == true);
  }
  const json off = model_of("--no-masked-softmax-fusion --no-bias-dropout-fusion --no-gradient-accumulation-fusion --no-persist-layer-norm");
  for (const char* k : {"masked_softmax_fusion", "bias_dropout_fusion", "gradient_accumulation_fusion", "persist_layer_norm"}) {
    INFO(k);
    CHECK(off[k] == false);
  }
  CHECK(model_of("--apply-query-key-layer-scaling")["attention_softmax_in_fp32"] == true);
  CHECK(model_of("")["deallocate_pipeline_outputs"] == true);  // argument_utils.py:305
}

TEST_CASE("mapping: optimizer, DDP and batch (arguments.py:684-685, :1657-1670, training.py:2006-2018)") {
  const json d = spec(kBase +
                      "--bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather "
                      "--ddp-bucket-size 40000000 --ddp-average-in-collective --global-batch-size 16");
  CHECK(d["optimizer"]["use_distributed_optimizer"] == true);
  CHECK(d["ddp"]["use_distributed_optimizer"] == true);
  CHECK(d["ddp"]["overlap_grad_reduce"] == true);
  CHECK(d["ddp"]["overlap_param_gather"] == true);
  CHECK(d["ddp"]["bucket_size"] == 40000000);
  CHECK(d["ddp"]["average_in_collective"] == true);
  CHECK(d["train"]["global_batch_size"] == 16);
  CHECK(d["train"]["micro_batch_size"] == 2);
  CHECK_FALSE(spec(kBase)["train"].contains("global_batch_size"));  // MBS x DP, computed by the run spec
  refused(kBase + "--overlap-param-gather --overlap-grad-reduce", "overlap_param_gather_needs_distopt", "--overlap-param-gather");
  const json muon = spec(kBase + "--optimizer dist_muon --use-distributed-optimizer");
  CHECK(muon["optimizer"]["optimizer"] == "muon");
  CHECK(muon["optimizer"]["use_layer_wise_distributed_optimizer"] == true);
  CHECK(muon["optimizer"]["use_distributed_optimizer"] == false);
}
