// DeepSeek-V4 (DeepseekV4ForCausalLM) through Bridge 600d069b's DeepSeekV4Bridge (deepseek_v4_bridge.py:390-523): the
// shipped config.json files (configs/hf/deepseek-ai--DeepSeek-V4-{Flash,Pro}.json) mapped as provider_bridge maps them,
// their shapes against the checkpoint inventories found with them, and the refusal: the pinned Megatron Core builds no
// dsv4_hybrid attention, hyper-connections or hash routing (docs/research/dsv4-memory-facts.md).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "hf_config.hpp"
#include "peakcast/model/recipes.hpp"
#include "peakcast/model/spec_parser.hpp"

using nlohmann::json;
using namespace peakcast;

namespace {

json shipped(const std::string& name) {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/configs/hf/deepseek-ai--" + name + ".json");
  REQUIRE(in);
  return json::parse(in);
}

struct Mapped {
  model::detail::HfModel model;
  model::Diagnostics out;
};

Mapped map_config(const json& config) {
  Mapped m;
  m.model = model::detail::map_hf_fields(config, "config.json", m.out);
  for (const auto& d : m.out) UNSCOPED_INFO(model::format(d));
  return m;
}

std::vector<std::string> errors(const model::Diagnostics& out) {
  std::vector<std::string> rules;
  for (const auto& d : out)
    if (d.severity == model::Severity::error) rules.push_back(d.rule + "@" + d.path);
  return rules;
}

// The ratios the release lists: Flash two window-only layers, then 4 / 128 alternating, 4 last; Pro two 128 layers, then
// 4 / 128 alternating, 4 last; one 0 for the MTP layer.
std::vector<int> ratios(int first, int pairs) {
  std::vector<int> r = {first, first};
  for (int i = 0; i < pairs; ++i) r.insert(r.end(), {4, 128});
  r.insert(r.end(), {4, 0});
  return r;
}

}  // namespace

TEST_CASE("hf_config: DeepSeek-V4-Flash through DeepSeekV4Bridge", "[model][hf][dsv4]") {
  const Mapped m = map_config(shipped("DeepSeek-V4-Flash"));
  const json& f = m.model.fields;
  CHECK(m.model.bridge == "DeepSeekV4Bridge");
  // The shared mapping (model_bridge.py:456-499).
  CHECK(f["num_layers"] == 43);
  CHECK(f["hidden_size"] == 4096);
  CHECK(f["num_attention_heads"] == 64);
  CHECK(f["kv_channels"] == 512);
  CHECK(f["num_moe_experts"] == 256);
  CHECK(f["moe_ffn_hidden_size"] == 2048);
  CHECK(f["vocab_size"] == 129280);
  // provider_bridge (deepseek_v4_bridge.py:410-511).
  CHECK(f["v_head_dim"] == 512);
  CHECK(f["qk_pos_emb_head_dim"] == 64);
  CHECK(f["q_lora_rank"] == 1024);
  CHECK(f["o_groups"] == 8);
  CHECK(f["o_lora_rank"] == 1024);
  CHECK(f["rotary_base"] == 10000);
  CHECK(f["csa_compress_rotary_base"] == 160000);
  CHECK(f["rotary_scaling_factor"] == 16);
  CHECK(f["original_max_position_embeddings"] == 65536);
  CHECK(f["beta_fast"] == 32);
  CHECK(f["beta_slow"] == 1);
  CHECK(f["mscale"] == 1.0);
  CHECK(f["mscale_all_dim"] == 1.0);
  CHECK(f["rotary_percent"] == 1.0);
  CHECK(f["csa_compress_ratios"].get<std::vector<int>>() == ratios(0, 20));  // 43 layers + the MTP layer's 0
  CHECK(f["csa_window_size"] == 128);
  CHECK(f["dsa_indexer_n_heads"] == 64);
  CHECK(f["dsa_indexer_head_dim"] == 128);
  CHECK(f["dsa_indexer_topk"] == 512);
  CHECK(f["enable_hyper_connections"] == true);
  CHECK(f["num_residual_streams"] == 4);
  CHECK(f["mhc_sinkhorn_iterations"] == 20);
  CHECK(f["moe_router_score_function"] == "sqrtsoftplus");
  CHECK(f["moe_router_topk"] == 6);
  CHECK(f["moe_router_topk_scaling_factor"] == 1.5);
  CHECK(f["moe_router_load_balancing_type"] == "noaux_tc");
  CHECK(f["moe_n_hash_layers"] == 3);
  CHECK(f["actual_vocab_size"] == 129280);
  CHECK(f["activation_func_clamp_value"] == 10.0);
  CHECK(f["moe_layer_freq"].get<std::vector<int>>() == std::vector<int>(43, 1));
  CHECK(f["moe_shared_expert_intermediate_size"] == 2048);
  CHECK(f["mtp_num_layers"] == 1);
  CHECK(f["share_embeddings_and_output_weights"] == false);
  CHECK(f["make_vocab_size_divisible_by"] == 1280);
  CHECK(f["seq_length"] == 4096);
  CHECK(f["experimental_attention_variant"] == "dsv4_hybrid");
  CHECK_FALSE(f.contains("add_qkv_bias"));  // attention_bias false, dropped for MLA
  // Every key is read or classified; the one error is the refusal, naming what the pinned Megatron Core lacks.
  REQUIRE(errors(m.out) == std::vector<std::string>{"dsv4_hybrid_not_in_pinned_megatron@architectures"});
  const std::string& msg = m.out.front().message;
  for (const char* name : {"o_groups", "o_lora_rank", "csa_compress_ratios", "csa_window_size", "csa_compress_rotary_base", "enable_hyper_connections",
                           "num_residual_streams", "mhc_sinkhorn_iterations", "moe_n_hash_layers", "actual_vocab_size", "norm_topk_prob"})
    CHECK(msg.find(name) != std::string::npos);
  // Fields the pinned TransformerConfig has are not listed as missing.
  CHECK(msg.find("dsa_indexer_topk") == std::string::npos);
  CHECK(msg.find("activation_func_clamp_value") == std::string::npos);
  model::Diagnostics out;
  CHECK_FALSE(model::detail::map_hf_config(shipped("DeepSeek-V4-Flash"), "config.json", out));
}

TEST_CASE("hf_config: DeepSeek-V4-Pro through DeepSeekV4Bridge", "[model][hf][dsv4]") {
  const Mapped m = map_config(shipped("DeepSeek-V4-Pro"));
  const json& f = m.model.fields;
  CHECK(f["num_layers"] == 61);
  CHECK(f["hidden_size"] == 7168);
  CHECK(f["num_attention_heads"] == 128);
  CHECK(f["q_lora_rank"] == 1536);
  CHECK(f["o_groups"] == 16);
  CHECK(f["num_moe_experts"] == 384);
  CHECK(f["moe_ffn_hidden_size"] == 3072);
  CHECK(f["dsa_indexer_topk"] == 1024);
  CHECK(f["moe_router_topk_scaling_factor"] == 2.5);
  CHECK(f["csa_compress_ratios"].get<std::vector<int>>() == ratios(128, 29));  // 61 layers + the MTP layer's 0
  CHECK(errors(m.out) == std::vector<std::string>{"dsv4_hybrid_not_in_pinned_megatron@architectures"});
}

// The shapes the mapping reads reproduce the checkpoints' tensor lists found with the configs
// (configs/hf/index.json): every tensor of the DeepSeek checkpoint format written from the mapped fields, FP8 weights
// with one E8M0 scale per 128 x 128 block, routed experts FP4-packed two to an int8 with one scale per 32 inputs, the
// hash layers' int64 tid2eid [vocab, top-k], the fp32 hc_* / attn_sink / compressor ape / gate.bias.
TEST_CASE("hf_config: DeepSeek-V4 shapes give the checkpoints' element and tensor counts", "[model][hf][dsv4]") {
  struct Count {
    std::int64_t stored = 0, tensors = 0, params = 0;  // params: logical, FP4 unpacked, no scales or tid2eid
    void add(std::int64_t n, std::int64_t elements, bool param = true) {
      stored += n * elements;
      tensors += n;
      if (param) params += n * elements;
    }
    void fp8(std::int64_t out, std::int64_t in) {
      add(1, out * in);
      add(1, ((out + 127) / 128) * ((in + 127) / 128), false);
    }
  };
  const auto count = [](const json& f, bool mtp) {
    const std::int64_t h = f["hidden_size"], V = f["vocab_size"], H = f["num_attention_heads"], D = f["v_head_dim"], qr = f["q_lora_rank"];
    const std::int64_t G = f["o_groups"], orank = f["o_lora_rank"], E = f["num_moe_experts"], F = f["moe_ffn_hidden_size"];
    const std::int64_t ih = f["dsa_indexer_n_heads"], id = f["dsa_indexer_head_dim"], n = f["num_residual_streams"], hash = f["moe_n_hash_layers"];
    const std::int64_t topk = f["moe_router_topk"], shared = f["moe_shared_expert_intermediate_size"];
    const auto ratios = f["csa_compress_ratios"].get<std::vector<std::int64_t>>();
    Count c;
    const auto attention = [&](std::int64_t r) {
      c.add(1, H);                  // attn_sink fp32
      c.add(1, D);                  // kv_norm
      c.add(1, qr);                 // q_norm
      c.fp8(D, h);                  // wkv
      c.fp8(G * orank, H * D / G);  // wo_a: o_groups x o_lora_rank rows over a group's heads
      c.fp8(h, G * orank);          // wo_b
      c.fp8(qr, h);                 // wq_a
      c.fp8(H * D, qr);             // wq_b
      c.add(1, h);                  // attn_norm
      if (r == 0) return;
      const std::int64_t coff = r == 4 ? 2 : 1;  // overlapping compression at ratio 4
      c.add(1, r * coff * D);                    // compressor.ape fp32
      c.add(2, coff * D * h);                    // compressor.wgate, wkv
      c.add(1, D);                               // compressor.norm
      if (r != 4) return;
      c.add(1, r * coff * id);  // indexer.compressor.ape
      c.add(1, id);             // indexer.compressor.norm
      c.add(2, coff * id * h);  // indexer.compressor.wgate, wkv
      c.add(1, ih * h);         // indexer.weights_proj
      c.fp8(ih * id, qr);       // indexer.wq_b
    };
    const auto moe = [&](bool bias, bool hashed) {
      for (const auto& [out, in] : {std::pair{F, h}, std::pair{h, F}, std::pair{F, h}}) {
        c.add(E, out * in / 2);
        c.params += E * out * in / 2;  // two FP4 values a byte
        c.add(E, out * in / 32, false);
      }
      c.add(1, E * h);  // gate.weight
      c.fp8(shared, h);
      c.fp8(h, shared);
      c.fp8(shared, h);
      c.add(1, h);  // ffn_norm
      if (bias) c.add(1, E);
      if (hashed) c.add(1, V * topk, false);  // tid2eid
    };
    const auto hc = [&] {
      for (int i = 0; i < 2; ++i) {  // hc_attn_* and hc_ffn_*: base, fn [(2 + n) x n, n x h], scale
        c.add(1, (2 + n) * n);
        c.add(1, (2 + n) * n * n * h);
        c.add(1, 3);
      }
    };
    c.add(2, V * h);  // embed, head
    c.add(1, h);      // norm
    c.add(1, n);      // hc_head_base, fn, scale
    c.add(1, n * n * h);
    c.add(1, 1);
    const std::int64_t layers = f["num_layers"];
    for (std::int64_t i = 0; i < layers; ++i) {
      attention(ratios[static_cast<std::size_t>(i)]);
      moe(i >= hash, i < hash);
      hc();
    }
    if (mtp) {
      attention(ratios[static_cast<std::size_t>(layers)]);
      moe(true, false);
      hc();
      c.fp8(h, h);  // e_proj
      c.fp8(h, h);  // h_proj
      c.add(3, h);  // enorm, hnorm, norm
      c.add(1, n);  // hc_head_base, fn, scale
      c.add(1, n * n * h);
      c.add(1, 1);
    }
    return c;
  };
  const json flash = map_config(shipped("DeepSeek-V4-Flash")).model.fields;
  const json pro = map_config(shipped("DeepSeek-V4-Pro")).model.fields;
  // The found tensor lists (search index file ids 62608729298, 62525154746; the Flash count and MTP share also in
  // 66449069933: 69,187 tensors, 1,575 of them mtp.0.*).
  CHECK(count(flash, true).stored == 158069433298);
  CHECK(count(flash, true).tensors == 69187);
  CHECK(count(flash, true).tensors - count(flash, false).tensors == 1575);
  CHECK(count(pro, true).stored == 861608274846);
  CHECK(count(pro, true).tensors == 145116);
  // DeepSeek's "284B" and "1.6T" totals (no exact published integer): the main model's logical parameters.
  CHECK(count(flash, false).params == 284332240471);
  CHECK(count(pro, false).params == 1572997201763);
}

TEST_CASE("hf_config: DeepSeekV4Bridge's native and legacy forms and what it refuses", "[model][hf][dsv4]") {
  const json flash = shipped("DeepSeek-V4-Flash");
  SECTION("layer_types / compress_rates give the same ratios (deepseek_v4_bridge.py:196-213)") {
    json c = flash;
    c.erase("compress_ratios");
    json types = json::array({"sliding_attention", "sliding_attention"});
    for (int i = 0; i < 20; ++i) types.insert(types.end(), {"compressed_sparse_attention", "heavily_compressed_attention"});
    types.push_back("compressed_sparse_attention");
    c["layer_types"] = types;
    c["compress_rates"] = {{"compressed_sparse_attention", 4}, {"heavily_compressed_attention", 128}};
    const Mapped m = map_config(c);
    CHECK(m.model.fields["csa_compress_ratios"].get<std::vector<int>>() == ratios(0, 20));
    CHECK(errors(m.out).size() == 1);
  }
  SECTION("hash layers from a hash_moe prefix of mlp_layer_types; a later one is refused (:171-182)") {
    json c = flash;
    c.erase("num_hash_layers");
    c["mlp_layer_types"] = json::array({"hash_moe", "hash_moe", "moe", "moe"});
    CHECK(map_config(c).model.fields["moe_n_hash_layers"] == 2);
    c["mlp_layer_types"] = json::array({"hash_moe", "moe", "hash_moe"});
    CHECK(errors(map_config(c).out).front() == "hf_value_out_of_range@mlp_layer_types");
  }
  SECTION("a split rope_scaling takes the compress part's YaRN factors (:430-446)") {
    json c = flash;
    c["rope_scaling"] = {{"main", {{"rope_theta", 20000}}}, {"compress", {{"rope_theta", 80000}, {"factor", 8}, {"original_max_position_embeddings", 4096}, {"beta_fast", 16}}}};
    c.erase("compress_rope_theta");
    const json f = map_config(c).model.fields;
    CHECK(f["rotary_base"] == 20000);
    CHECK(f["csa_compress_rotary_base"] == 80000);
    CHECK(f["rotary_scaling_factor"] == 8);
    CHECK(f["original_max_position_embeddings"] == 4096);
    CHECK(f["beta_fast"] == 16);
    CHECK(f["beta_slow"] == 1);
  }
  SECTION("keys the bridge reads unconditionally are errors naming them when missing") {
    for (const char* key : {"o_groups", "o_lora_rank", "hc_mult", "swiglu_limit", "sliding_window", "index_topk"}) {
      json c = flash;
      c.erase(key);
      CHECK(errors(map_config(c).out).front() == std::string("hf_value_out_of_range@") + key);
    }
    json c = flash;
    c["rope_scaling"].erase("factor");
    CHECK(errors(map_config(c).out).front() == "hf_value_out_of_range@rope_scaling");
  }
  SECTION("ratios shorter than the layers and MTP layers; unread lists that disagree; a dense prefix") {
    json c = flash;
    c["compress_ratios"] = json::array({0, 4, 128});
    CHECK(errors(map_config(c).out).front() == "hf_value_out_of_range@compress_ratios");
    c = flash;
    c["mlp_layer_types"] = json::array({"hash_moe", "moe"});  // num_hash_layers 3 is what the bridge reads
    CHECK(errors(map_config(c).out).front() == "hf_unmapped_shape_key@mlp_layer_types");
    c = flash;
    c["first_k_dense_replace"] = 1;
    CHECK(errors(map_config(c).out).front() == "hf_unmapped_shape_key@first_k_dense_replace");
    c = flash;
    c["an_unread_key"] = 1;  // reported beside the refusal: errors are found in one pass
    CHECK(errors(map_config(c).out) ==
          std::vector<std::string>{"dsv4_hybrid_not_in_pinned_megatron@architectures", "hf_unknown_key@an_unread_key"});
  }
}

TEST_CASE("the DeepSeek-V4 recipes are refused for the pinned Megatron Core", "[model][recipes][dsv4]") {
  int seen = 0;
  for (const auto& info : model::recipe_catalogue()) {
    if (info.name.rfind("deepseek_v4_", 0) != 0) continue;
    ++seen;
    INFO(info.name);
    const auto parsed = model::parse_spec_input("bridge:" + info.name, "", {});
    CHECK_FALSE(parsed.spec);
    std::string first;
    for (const auto& d : parsed.diagnostics)
      if (d.severity == model::Severity::error && first.empty()) first = d.rule;
    CHECK(first == "dsv4_hybrid_not_in_pinned_megatron");
  }
  CHECK(seen == 11);
}
