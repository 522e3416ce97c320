// GLM 5.2 (GlmMoeDsaForCausalLM) through Bridge 600d069b's GLM5Bridge (glm5_bridge.py:57-143): the shipped config.json
// (configs/hf/zai-org--GLM-5.2.json) mapped onto MLAModelProvider with DeepSeek sparse attention, the recipes' model,
// the published parameter counts, and the keys the bridge does not read refused by name.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "peakcast/model/dsa.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/model/validate.hpp"

using nlohmann::json;
using namespace peakcast;

namespace {

json shipped() {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/configs/hf/zai-org--GLM-5.2.json");
  REQUIRE(in);
  return json::parse(in);
}

model::ParseResult parse_config(const std::string& name, const json& config) {
  const auto dir = std::filesystem::temp_directory_path() / ("peakcast-hf-glm5-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << config.dump();
  const json doc = {{"model", {{"hf_config", p.string()}, {"seq_length", 4096}, {"expert_model_parallel_size", 8}, {"dsa_kernel_backend", "cudnn"}}},
                    {"cluster", {{"num_gpus", 8}, {"gpu", "h100-sxm-80gb"}}}};
  model::ParseResult r = model::parse_run_spec(doc.dump());
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(model::format(d));
  return r;
}

bool has(const model::ParseResult& r, const std::string& rule, const std::string& path) {
  for (const auto& d : r.diagnostics)
    if (d.rule == rule && d.path == path) return true;
  return false;
}

}  // namespace

TEST_CASE("hf_config: GLM 5.2 through GLM5Bridge", "[model][hf][dsa]") {
  const auto r = parse_config("glm52.json", shipped());
  REQUIRE(r.spec);
  const auto& m = r.spec->model;
  CHECK(m.experimental_attention_variant == std::optional<std::string>("dsa"));  // the DSA block spec (glm5_bridge.py:79, :131)
  CHECK(m.multi_latent_attention);
  CHECK(m.num_layers == 78);
  CHECK(m.hidden_size == 6144);
  CHECK(m.num_attention_heads == 64);
  CHECK(m.q_lora_rank == 2048);
  CHECK(m.kv_lora_rank == 512);
  CHECK(m.qk_head_dim == 192);         // qk_nope_head_dim (model_bridge.py CONFIG_MAPPING)
  CHECK(m.qk_pos_emb_head_dim == 64);  // qk_head_dim 256 - qk_nope_head_dim 192 (:117-120)
  CHECK(m.v_head_dim == 256);
  CHECK(m.dsa_indexer_n_heads == 32);  // :132-135
  CHECK(m.dsa_indexer_head_dim == 128);
  CHECK(m.dsa_indexer_topk == 2048);
  CHECK(m.dsa_indexer_topk_freq == 4);  // :136-137
  CHECK(m.dsa_indexer_skip_topk_offset == 3);
  CHECK_FALSE(m.dsa_indexer_rotate_activation);  // :138-141
  CHECK(m.dsa_indexer_loss_coeff == 0.001);
  CHECK(m.dsa_indexer_use_sparse_loss);
  CHECK(m.num_moe_experts == 256);
  CHECK(m.moe_router_topk == 8);
  CHECK(m.moe_shared_expert_intermediate_size == 2048);  // moe_intermediate_size x n_shared_experts (:116)
  CHECK(m.mtp_num_layers == 0);                          // None whatever num_nextn_predict_layers says (:92)
  CHECK(m.vocab_size == 154880);
  CHECK(m.make_vocab_size_divisible_by == 1280);  // :110
  CHECK_FALSE(m.share_embeddings_and_output_weights);
  // moe_layer_freq from first_k_dense_replace (:113-115): three dense layers, then MoE.
  const auto d = model::derive(*r.spec);
  const auto plan = model::build_layer_plan(*r.spec, d);
  REQUIRE(plan.decoder_layers.size() == 78);
  CHECK(plan.decoder_layers[2].ffn == model::FfnKind::dense);
  CHECK(plan.decoder_layers[3].ffn == model::FfnKind::moe);
  // 21 layers compute their top-k (numbers 1, 2, 3, 7, ..., 75: dsa.py:37-47) and build an indexer.
  int computing = 0;
  for (const auto& l : plan.decoder_layers) {
    CHECK(l.mixer == model::MixerKind::dsa);
    computing += model::dsa_computes_topk(m, l) ? 1 : 0;
  }
  CHECK(computing == 21);
  CHECK(model::dsa_computes_topk(m, plan.decoder_layers[6]));
  CHECK_FALSE(model::dsa_computes_topk(m, plan.decoder_layers[77]));
  // Transformers' parameter count for the checkpoint without its MTP layer, the e_score_correction_bias buffers
  // aside: Bridge's verification card, 743,377,000,704 (examples/model_verification_cards/glm5-2/card.yaml:88, :107).
  CHECK(model::total_parameters(*r.spec, d, false) == 743377000704);
  CHECK_FALSE(model::has_errors(model::validate(*r.spec)));
}

TEST_CASE("GLM 5.2's recipe model: the checkpoint's element count with its MTP layer", "[model][recipes][dsa][params]") {
  const auto r = model::parse_spec_input("bridge:glm52_pretrain_416gpu_h100_bf16_config", "", {});
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(model::format(d));
  REQUIRE(r.spec);
  const auto& m = r.spec->model;
  CHECK(m.mtp_num_layers == 1);  // recipes/glm/h100/glm5.py:63
  CHECK(m.dsa_kernel_backend == "cudnn");
  CHECK(m.seq_length == 4096);
  // len(tokenizer) lies in [154830, 154880] (configs/tokenizers.json) and pads to 154880 at 1280 x TP 1.
  const auto d = model::derive(*r.spec);
  CHECK(d.padded_vocab == 154880);
  // The MTP depth's layer (numbered 1, so with an indexer), enorm, hnorm, eh_proj and final norm, and 76 routers'
  // fp32 expert biases: the card's 753,329,940,480 checkpoint elements (card.yaml:54, :70, :86).
  CHECK(model::total_parameters(*r.spec, d, true) + model::total_checkpointed_buffers(*r.spec, d, true) == 753329940480);
  CHECK_FALSE(model::has_errors(model::validate(*r.spec)));
}

TEST_CASE("hf_config: GLM5Bridge refuses the keys it does not read where they differ", "[model][hf][dsa]") {
  // indexer_types disagreeing with index_topk_freq / index_skip_topk_offset: Transformers would build another model.
  json c = shipped();
  c["indexer_types"][3] = "full";
  CHECK(has(parse_config("types.json", c), "hf_unmapped_shape_key", "model.hf_config.indexer_types"));
  c = shipped();
  c["index_topk_pattern"] = "FSSS";
  CHECK(has(parse_config("pattern.json", c), "hf_unmapped_shape_key", "model.hf_config.index_topk_pattern"));
  c = shipped();
  c["mlp_layer_types"][3] = "dense";
  CHECK(has(parse_config("mlp.json", c), "hf_unmapped_shape_key", "model.hf_config.mlp_layer_types"));
  c = shipped();
  c["moe_layer_freq"] = 2;
  CHECK(has(parse_config("freq.json", c), "hf_unmapped_shape_key", "model.hf_config.moe_layer_freq"));
  // The RoPE width needs qk_head_dim (:120); without it the bridge raises.
  c = shipped();
  c.erase("qk_head_dim");
  CHECK(has(parse_config("total.json", c), "hf_value_out_of_range", "model.hf_config.qk_head_dim"));
  // GLM-5 / 5.1 style: no sharing keys, getattr defaults 1 and 0 (:136-137); no per-layer lists then.
  c = shipped();
  for (const char* k : {"index_topk_freq", "index_skip_topk_offset", "indexer_types", "index_topk_pattern", "index_share_for_mtp_iteration"})
    c.erase(k);
  const auto r = parse_config("glm5.json", c);
  REQUIRE(r.spec);
  CHECK(r.spec->model.dsa_indexer_topk_freq == 1);
  CHECK(r.spec->model.dsa_indexer_skip_topk_offset == 0);
}
