// Bridge inputs: the run_config.yaml Bridge writes into every checkpoint and the catalogue's recipes give
// the predictions of the hand-written run specs of the same runs; every JSON run spec survives a round
// trip through Bridge-form YAML; bad YAML is an error naming the line. Expectations are the hand-written
// specs' own predictions (the same run described two ways), not numbers pasted from the tool.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../source_file.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/prediction.hpp"

using namespace peakcast;

namespace {

std::string read(const std::string& rel) {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

model::RunSpec parsed(const model::ParseResult& r) {
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(model::format(d));
  REQUIRE(r.spec);
  REQUIRE_FALSE(model::has_errors(model::validate(*r.spec)));
  return *r.spec;
}

// Every rank's allocated peaks, the verdicts of the two descriptions must be the same run's.
void same_allocated(const sim::Prediction& a, const sim::Prediction& b) {
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (std::size_t i = 0; i < a.ranks.size(); ++i) {
    INFO("rank " << i);
    CHECK(a.ranks[i].peak_allocated == b.ranks[i].peak_allocated);
    CHECK(a.ranks[i].first_iteration_peak_allocated == b.ranks[i].first_iteration_peak_allocated);
    CHECK(a.ranks[i].peak_phase == b.ranks[i].peak_phase);
    CHECK(a.ranks[i].peak_with_graph_pool == b.ranks[i].peak_with_graph_pool);
  }
  CHECK(a.fits == b.fits);
}

const char* const kSeeds[] = {"moonlight-16b-8xh100", "nemotron-3-nano-16xh100", "llama3-70b-fp8-32xh100"};

}  // namespace

TEST_CASE("each seed study's run_config.yaml predicts what its hand-written run spec predicts", "[model][bridge]") {
  for (const char* seed : kSeeds) {
    INFO(seed);
    const auto hand = sim::predict(parsed(model::parse_run_spec(read(std::string("configs/runs/") + seed + ".json"))));
    const std::string file = std::string("tests/data/bridge/") + seed + ".run_config.yaml";
    const auto yaml = model::parse_spec_input(file, read(file), {"cluster.gpu=h100-sxm-80gb"});
    CHECK(yaml.input_kind == "Bridge run_config.yaml");
    same_allocated(hand, sim::predict(parsed(yaml)));
    // The world size is the file's comm_overlap.data_parallel_size x TP x PP x CP.
    CHECK(yaml.spec->cluster.num_gpus == parsed(model::parse_run_spec(read(std::string("configs/runs/") + seed + ".json"))).cluster.num_gpus);
  }
}

TEST_CASE("the seed studies from recipe names with the studies' own settings", "[model][bridge]") {
  struct Study {
    const char* seed;
    const char* recipe;
    std::vector<std::string> overrides;
  };
  const std::vector<Study> studies = {
      // The seed: GBS 4, the [] control row (configs/runs/moonlight-16b-8xh100.json).
      {"moonlight-16b-8xh100", "bridge:moonlight_16b_pretrain_8gpu_h100_bf16_config", {"train.global_batch_size=4", "model.recompute_modules=[]"}},
      // The seed's 16-GPU run of the 8-GPU recipe, GBS 16, TE cross-entropy (configs/runs/nemotron-3-nano-16xh100.json).
      {"nemotron-3-nano-16xh100", "bridge:nemotron_3_nano_pretrain_8gpu_h100_bf16_config", {"cluster.num_gpus=16", "train.global_batch_size=16", "model.cross_entropy_fusion_impl=te"}},
      // Bridge PR #3107's run of the Llama 3 70B SFT recipe: FP8 current scaling, TP4 PP4 VPP5 SP, TE graphs on the
      // MLP, core_attn, TP overlap and the deferred output-layer wgrad (configs/runs/llama3-70b-fp8-32xh100.json).
      {"llama3-70b-fp8-32xh100", "bridge:llama3_70b_sft_32gpu_h100_bf16_config", {"model.tensor_model_parallel_size=4", "model.virtual_pipeline_model_parallel_size=5", "model.sequence_parallel=true", "model.cuda_graph_impl=transformer_engine", "model.use_te_rng_tracker=true", "model.cuda_graph_modules=[\"mlp\"]", "model.cuda_graph_scope=null", "model.recompute_granularity=selective", "model.recompute_modules=[\"core_attn\"]", "model.cross_entropy_fusion_impl=te", "mixed_precision=bf16_with_fp8_current_scaling_mixed", "mixed_precision.grad_reduce_in_fp32=false", "comm_overlap.tp_comm_overlap=true", "comm_overlap.defer_embedding_wgrad_compute=true", "comm_overlap.wgrad_deferral_limit=22", "train.global_batch_size=32"}},
  };
  for (const auto& s : studies) {
    INFO(s.recipe);
    const auto hand = sim::predict(parsed(model::parse_run_spec(read(std::string("configs/runs/") + s.seed + ".json"))));
    const auto recipe = model::parse_spec_input(s.recipe, "", s.overrides);
    CHECK(recipe.input_kind == "Bridge recipe");
    same_allocated(hand, sim::predict(parsed(recipe)));
  }
}

TEST_CASE("every shipped JSON run spec survives a round trip through Bridge-form YAML", "[model][bridge]") {
  std::vector<std::string> specs;
  for (const char* dir : {"configs/runs", "examples"})
    for (const auto& e : std::filesystem::directory_iterator(std::string(PEAKCAST_SOURCE_DIR) + "/" + dir))
      if (e.path().extension() == ".json") specs.push_back(std::string(dir) + "/" + e.path().filename().string());
  REQUIRE(specs.size() >= 6);
  for (const auto& path : specs) {
    INFO(path);
    const auto r = model::parse_run_spec(read(path));
    const model::RunSpec spec = parsed(r);
    const std::string yaml = model::to_bridge_run_config_yaml(r, "megatron.bridge.models.gpt_provider.GPTModelProvider");
    const auto back = model::parse_spec_input("roundtrip.yaml", yaml, {"cluster.gpu=" + spec.cluster.gpu.name});
    for (const auto& d : back.diagnostics) UNSCOPED_INFO(model::format(d));
    REQUIRE(back.spec);
    model::RunSpec expected = spec;
    expected.model.preset.reset();  // a ConfigContainer names no preset: every value is written out
    // ...so the keys the rules ask "did the spec name it" of are all named (spec_fill_checks.cpp r.has).
    expected.train.train_iters_given = back.spec->train.train_iters_given;
    expected.model.moe_flex_dispatcher_backend_set = back.spec->model.moe_flex_dispatcher_backend_set;
    expected.bridge_training = true;                                                                  // a ConfigContainer is what Bridge's training loop runs
    expected.model.cuda_graph_modules_full_listed = back.spec->model.cuda_graph_modules_full_listed;  // the default "full"
    CHECK(*back.spec == expected);
    CHECK(sim::to_json(sim::predict(*back.spec)) == sim::to_json(sim::predict(spec)));
  }
}

TEST_CASE("a run_config.yaml value says which line it came from", "[model][bridge]") {
  const std::string file = "tests/data/bridge/moonlight-16b-8xh100.run_config.yaml";
  const auto r = model::parse_spec_input(file, read(file), {"cluster.gpu=h100-sxm-80gb"});
  REQUIRE(r.spec);
  const auto& tp = r.origins.at("model.tensor_model_parallel_size");
  CHECK(tp.origin == "Bridge config");
  // The line of the key in the fixture.
  const std::string text = read(file);
  const auto at = text.find("\n  tensor_model_parallel_size:");
  REQUIRE(at != std::string::npos);
  const auto line = 2 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  CHECK(tp.source == file + ":" + std::to_string(line) + " (model.tensor_model_parallel_size)");
  bool ignored_logger = false;
  for (const auto& i : r.ignored) ignored_logger = ignored_logger || i.find("logger") != std::string::npos;
  CHECK(ignored_logger);
  CHECK(r.spec->cluster.expandable_segments);  // env_vars: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
}

TEST_CASE("overrides on a run_config.yaml go through Bridge's sections and its runtime update", "[model][bridge]") {
  const std::string file = "tests/data/bridge/moonlight-16b-8xh100.run_config.yaml";
  const std::string text = read(file);
  // mixed_precision.grad_reduce_in_fp32 reaches the DDP config through MixedPrecisionConfig.setup.
  auto r = model::parse_spec_input(file, text, {"cluster.gpu=h100-sxm-80gb", "mixed_precision.grad_reduce_in_fp32=true"});
  REQUIRE(r.spec);
  CHECK(r.spec->ddp.grad_reduce_in_fp32);
  CHECK(r.origins.at("ddp.grad_reduce_in_fp32").origin == "Bridge runtime");
  // A model field mixed precision owns is overwritten, and the user is told.
  r = model::parse_spec_input(file, text, {"cluster.gpu=h100-sxm-80gb", "model.fp8=\"hybrid\"", "mixed_precision.bf16=true"});
  REQUIRE(r.spec);
  CHECK_FALSE(r.spec->model.fp8);
  bool warned = false;
  for (const auto& d : r.diagnostics) warned = warned || d.rule == "overridden_by_mixed_precision";
  CHECK(warned);
  // The file records neither the GPU nor (without comm_overlap) the world size.
  r = model::parse_spec_input(file, text, {});
  CHECK_FALSE(r.spec);
  bool gpu = false;
  for (const auto& d : r.diagnostics) gpu = gpu || d.rule == "bridge_gpu_unknown";
  CHECK(gpu);
}

namespace {
// The first error's rule and message for a YAML text.
model::Diagnostic first_error(const std::string& text, std::vector<std::string> overrides = {"cluster.gpu=h100-sxm-80gb"}) {
  const auto r = model::parse_spec_input("bad.yaml", text, overrides);
  for (const auto& d : r.diagnostics)
    if (d.severity == model::Severity::error) return d;
  FAIL("no error for:\n"
       << text);
  return {};
}
}  // namespace

TEST_CASE("bad YAML is an error naming the file, the line and the rule", "[model][bridge][yaml]") {
  auto d = first_error("_target_: megatron.bridge.training.config.ConfigContainer\nmodel:\n  hidden_size: [1, 2\n");
  CHECK(d.rule == "yaml_syntax");
  CHECK(d.message.rfind("bad.yaml:", 0) == 0);
  d = first_error("model:\n  hidden_size: 1\n  hidden_size: 2\n");
  CHECK(d.rule == "duplicate_key");
  CHECK(d.message.find("bad.yaml:3") == 0);
  d = first_error("model: !!python/object:os.system {}\n");
  CHECK(d.rule == "yaml_tag");
  d = first_error(
      "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
      "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
      "g: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n");
  CHECK(d.rule == "yaml_too_large");
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  d = first_error(deep + std::string(200, ' ') + "k: 1\n");
  CHECK(d.rule == "yaml_too_deep");
  std::string flow = "a:";
  for (int i = 0; i < 100000; ++i) flow += " [";
  first_error(flow + "\n");  // an error, not a stack overflow
  d = first_error(std::string(17u << 20, '#'));
  CHECK(d.rule == "yaml_too_large");
  d = first_error("a: 1\n---\nb: 2\n");
  CHECK(d.rule == "yaml_documents");
  d = first_error("- 1\n- 2\n");
  CHECK(d.rule == "spec_not_object");
  d = first_error("_target_: megatron.bridge.training.config.ConfigContainer\nmodle: {}\n");
  CHECK(d.rule == "unknown_key");
  CHECK(d.message.find("did you mean \"model\"") != std::string::npos);
}

TEST_CASE("plain YAML scalars read as PyYAML's safe_load reads them", "[model][bridge][yaml]") {
  // model.kv_channels must be an int: 0x80 is 128 in YAML 1.1; 1e-5 without a dot is a string for
  // PyYAML, so a float field given that way is refused as Bridge's loader would hand it over.
  auto text = read("tests/data/bridge/moonlight-16b-8xh100.run_config.yaml");
  const auto replace = [&](const std::string& from, const std::string& to) {
    auto t = text;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    return t;
  };
  auto r = model::parse_spec_input("x.yaml", replace("\n  kv_channels: 64\n", "\n  kv_channels: 0x40\n"), {"cluster.gpu=h100-sxm-80gb"});
  REQUIRE(r.spec);
  CHECK(r.spec->model.kv_channels == 64);
  r = model::parse_spec_input("x.yaml", replace("\n  sequence_parallel: true\n", "\n  sequence_parallel: yes\n"), {"cluster.gpu=h100-sxm-80gb"});
  REQUIRE(r.spec);
  CHECK(r.spec->model.sequence_parallel);
  r = model::parse_spec_input("x.yaml", replace("\n  hidden_dropout: 0.0\n", "\n  hidden_dropout: 1e-1\n"), {"cluster.gpu=h100-sxm-80gb"});
  CHECK_FALSE(r.spec);
}

TEST_CASE("recipe names and Hugging Face architectures outside the catalogue are errors that say so", "[model][bridge]") {
  auto r = model::parse_spec_input("bridge:moonlight_16b_pretrain_8gpu_h100_bf16", "", {});
  REQUIRE_FALSE(r.diagnostics.empty());
  CHECK(r.diagnostics.front().rule == "unknown_recipe");
  CHECK(r.diagnostics.front().message.find("did you mean bridge:moonlight_16b_pretrain_8gpu_h100_bf16_config?") != std::string::npos);
}
