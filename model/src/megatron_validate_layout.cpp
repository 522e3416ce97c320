// validate_args on the layer stack and its pipeline split (megatron/training/arguments.py:715-980 at
// 24bad8e6): --hybrid-layer-pattern (and the deprecated --hybrid-override-pattern and
// --mtp-hybrid-override-pattern) give the layer count, the virtual pipeline size and the MTP depths;
// otherwise at most one of --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-
// pipeline-rank and --pipeline-model-parallel-layout gives the virtual pipeline size; without one,
// p2p overlap and aligned parameter gathers are switched off.
#include <algorithm>

#include "layer_plan_internal.hpp"
#include "megatron_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

const char* kHybrid = "mcore:megatron/core/models/hybrid/hybrid_layer_allocation.py:";

std::string option(const Namespace& ns) {
  return ns.has("hybrid_override_pattern") && !ns.has("hybrid_layer_pattern") ? option_of(ns, "hybrid_override_pattern")
                                                                              : "--hybrid-layer-pattern";
}

// _validate_pattern (hybrid_layer_allocation.py:284-300): layer symbols only, '|' in the main pattern.
bool valid_symbols(const std::string& pattern, bool allow_pipe, const std::string& opt, ImportContext& ctx) {
  for (char c : pattern) {
    if (std::string("MG*D+-E").find(c) != std::string::npos || (allow_pipe && c == '|')) continue;
    const std::string shown = c >= 0x20 && c < 0x7f ? std::string(1, c) : "?";
    ctx.error(opt, "hybrid_pattern_symbol",
              "In " + std::string(allow_pipe ? "main" : "MTP") + " pattern, '" + shown +
                  "' is not a valid layer symbol; "
                  "valid symbols are M G * D + - E" +
                  (allow_pipe ? " and |" : "") + " (" + kHybrid + "294)");
    return false;
  }
  if (pattern.find('*') != std::string::npos && (pattern.find('D') != std::string::npos || pattern.find('+') != std::string::npos)) {
    ctx.error(opt, "hybrid_pattern_attention_and_mla",
              std::string("Not supported to have both Attention and MLA/DSA in one model (") + kHybrid + "300)");
    return false;
  }
  return true;
}

// The deprecated spellings, folded into --hybrid-layer-pattern (:717-759).
void fold_deprecated_patterns(Namespace& ns, ImportContext& ctx) {
  if (!ns.none("hybrid_override_pattern")) {
    if (!ns.none("hybrid_layer_pattern"))
      ctx.error("--hybrid-override-pattern", "hybrid_pattern_twice",
                "--hybrid-override-pattern and --hybrid-layer-pattern cannot both be specified. --hybrid-override-pattern "
                "is deprecated; use --hybrid-layer-pattern instead (" +
                    arguments_source(722) + ")");
    ctx.warning("--hybrid-override-pattern", "deprecated_argument",
                "--hybrid-override-pattern is deprecated. Use --hybrid-layer-pattern instead (" + arguments_source(726) + ")");
    set_derived(ns, ctx, "hybrid_layer_pattern", ns.at("hybrid_override_pattern"), 730);
  }
  if (ns.none("mtp_hybrid_override_pattern")) return;
  ctx.warning("--mtp-hybrid-override-pattern", "deprecated_argument",
              "--mtp-hybrid-override-pattern is deprecated; use --hybrid-layer-pattern with '/'-separated MTP patterns (" +
                  arguments_source(735) + ")");
  const std::string main = ns.str("hybrid_layer_pattern");
  const auto depths = ns.integer("mtp_num_layers", 0);
  if (depths > 0 && main.find('/') == std::string::npos) {
    std::string unified = main;
    for (std::int64_t k = 0; k < depths && k < 4096; ++k) unified += "/" + ns.str("mtp_hybrid_override_pattern");
    set_derived(ns, ctx, "hybrid_layer_pattern", unified, 757);
    ns.v["mtp_hybrid_override_pattern"] = nullptr;
  }
}

// The pattern's layer count, pipeline segments and MTP depths (:761-889).
void read_pattern(Namespace& ns, ImportContext& ctx) {
  const std::string pattern = ns.str("hybrid_layer_pattern");
  const std::string opt = option(ns);
  const std::string main = pattern.substr(0, pattern.find('/'));
  if (!valid_symbols(main, true, opt, ctx)) return;
  const auto layers = static_cast<std::int64_t>(std::count_if(main.begin(), main.end(), [](char c) { return c != '|'; }));
  if (!ns.none("num_layers") && ns.integer("num_layers") != layers)
    ctx.warning(option_of(ns, "num_layers"), "num_layers_from_pattern",
                opt + " is set; ignoring --num-layers (" + std::to_string(ns.integer("num_layers")) +
                    ") and using the layer count derived from the pattern (" + std::to_string(layers) + ") (" + arguments_source(767) + ")");
  set_derived(ns, ctx, "num_layers", layers, 771);
  const bool pipes = main.find('|') != std::string::npos;
  const struct {
    const char* dest;
    const char* text;
    int line;
    bool applies;
  } refused[] = {
      {"decoder_first_pipeline_num_layers", "--decoder-first-pipeline-num-layers", 778, pipes},
      {"decoder_last_pipeline_num_layers", "--decoder-last-pipeline-num-layers", 783, pipes},
      {"num_layers_per_virtual_pipeline_stage", "--num-layers-per-virtual-pipeline-stage", 788, true},
      {"num_virtual_stages_per_pipeline_rank", "--num-virtual-stages-per-pipeline-rank", 794, true},
      {"pipeline_model_parallel_layout", "--pipeline-model-parallel-layout", 799, true},
      {"account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split", 803, true},
      {"account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split", 808, true}};
  for (const auto& r : refused)
    if (r.applies && ns.flag(r.dest))
      ctx.error(r.text, "not_with_hybrid_pattern",
                std::string(r.text) + " should not be used with " + opt +
                    (pipes ? " (its '|' separators define the pipeline layout)" : "") + " (" + arguments_source(r.line) + ")");
  const auto segments = static_cast<std::int64_t>(std::count(main.begin(), main.end(), '|')) + 1;
  const auto pp = ns.integer("pipeline_model_parallel_size", 1);
  if (segments == 1 && pp > 1) {
    set_derived(ns, ctx, "virtual_pipeline_model_parallel_size", nullptr, 821);
  } else if (pp <= 0 || segments % pp != 0) {
    ctx.error(opt, "hybrid_segments_vs_pp",
              "The number of hybrid pipeline segments described by " + opt + " (" + std::to_string(segments) +
                  ") must be evenly divisible by --pipeline-model-parallel-size (" + std::to_string(pp) + ") (" + arguments_source(824) + ")");
  } else {
    set_derived(ns, ctx, "virtual_pipeline_model_parallel_size", segments > pp ? json(segments / pp) : json(nullptr), segments > pp ? 832 : 836);
  }
  // MTP depths after '/', all identical (parse_hybrid_pattern, hybrid_layer_allocation.py:236-282).
  if (pattern.find('/') == std::string::npos) return;
  std::vector<std::string> parts;
  std::size_t start = pattern.find('/') + 1;
  while (true) {
    const auto slash = pattern.find('/', start);
    parts.push_back(pattern.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (std::all_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) return;
  for (const auto& p : parts)
    if (p != parts[0]) {
      ctx.error(opt, "hybrid_mtp_patterns_differ",
                "All MTP patterns must be identical: '" + parts[0] + "' and '" + p + "' (" + kHybrid + "262)");
      return;
    }
  if (!valid_symbols(parts[0], false, opt, ctx)) return;
  const auto depths = static_cast<std::int64_t>(parts.size());
  if (!ns.none("mtp_num_layers") && ns.integer("mtp_num_layers") != depths)
    ctx.warning(option_of(ns, "mtp_num_layers"), "mtp_num_layers_from_pattern",
                "--mtp-num-layers (" + std::to_string(ns.integer("mtp_num_layers")) + ") conflicts with the MTP depth count (" +
                    std::to_string(depths) + ") in the pattern; using the pattern's (" + arguments_source(847) + ")");
  if (ns.none("mtp_num_layers") || ns.integer("mtp_num_layers") != depths)
    set_derived(ns, ctx, "mtp_num_layers", depths, ns.none("mtp_num_layers") ? 844 : 853);
}

void check_mtp(Namespace& ns, ImportContext& ctx, bool hybrid) {
  if (ns.flag("mtp_num_layers")) {
    const std::string pe = ns.str("position_embedding_type");
    if (pe != "rope" && pe != "none")
      ctx.error(option_of(ns, "mtp_num_layers"), "mtp_position_embedding",
                "Multi-Token Prediction (MTP) is not supported with " + pe +
                    " position embedding type; the supported types are rope and none (" + arguments_source(857) + ")");
  }
  if (!hybrid && !ns.none("mtp_hybrid_override_pattern"))
    ctx.warning("--mtp-hybrid-override-pattern", "ignored_for_gpt",
                "--mtp-hybrid-override-pattern is for Mamba/hybrid models only; it is ignored (" + arguments_source(878) + ")");
  const std::string p = ns.str("hybrid_layer_pattern");
  if (p.find('+') != std::string::npos || p.find('D') != std::string::npos) set_derived(ns, ctx, "multi_latent_attention", true, 889);
}

std::int64_t layers_for_split(const Namespace& ns) {
  std::int64_t n = ns.none("num_layers") ? ns.integer("decoder_num_layers", 0) : ns.integer("num_layers");
  if (ns.flag("account_for_embedding_in_pipeline_split")) ++n;
  if (ns.flag("account_for_loss_in_pipeline_split")) ++n;
  return n;
}

// The virtual pipeline size without a pattern (:891-965).
void virtual_pipeline(Namespace& ns, ImportContext& ctx) {
  const bool per_stage = !ns.none("num_layers_per_virtual_pipeline_stage"), per_rank = !ns.none("num_virtual_stages_per_pipeline_rank");
  const bool layout = !ns.none("pipeline_model_parallel_layout");
  if (int(per_stage) + int(per_rank) + int(layout) > 1) {
    ctx.error(per_rank ? "--num-virtual-stages-per-pipeline-rank" : "--pipeline-model-parallel-layout", "vpp_given_twice",
              "No more than one of --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank, "
              "--pipeline-model-parallel-layout can be set at the same time (" +
                  arguments_source(899) + ")");
    return;
  }
  const auto pp = std::max<std::int64_t>(1, ns.integer("pipeline_model_parallel_size", 1));
  json vpp = ns.at("virtual_pipeline_model_parallel_size");
  int line = 949;
  if (layout) {
    std::vector<std::string> stages;
    try {
      stages = expand_pipeline_layout(ns.str("pipeline_model_parallel_layout"));
    } catch (const std::exception& e) {
      ctx.error("--pipeline-model-parallel-layout", "pipeline_layout", std::string("the layout cannot be read: ") + e.what());
      return;
    }
    const auto n = static_cast<std::int64_t>(stages.size());
    if (n % pp != 0) {
      ctx.error("--pipeline-model-parallel-layout", "pipeline_layout_vs_pp",
                "The length of pipeline_model_parallel_layout (" + std::to_string(n) +
                    " stages) must be divisible by pipeline_model_parallel_size (" + std::to_string(pp) + ") (" + arguments_source(911) + ")");
      return;
    }
    vpp = n / pp;
    line = 916;
  } else if (per_stage || per_rank) {
    if (!per_rank) {
      if (!ns.none("decoder_first_pipeline_num_layers") || !ns.none("decoder_last_pipeline_num_layers")) {
        ctx.error("--num-layers-per-virtual-pipeline-stage", "vpp_layers_with_uneven_pp",
                  "please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree when "
                  "enable uneven pipeline parallelism (" +
                      arguments_source(922) + ")");
        return;
      }
      const auto layers = layers_for_split(ns), per = ns.integer("num_layers_per_virtual_pipeline_stage");
      if (layers % pp != 0 || per <= 0 || (layers / pp) % per != 0) {
        ctx.error("--num-layers-per-virtual-pipeline-stage", "vpp_layers_divide",
                  layers % pp != 0 ? "number of layers of the model must be divisible pipeline model parallel size (" + arguments_source(935) + ")"
                                   : "number of layers per pipeline stage must be divisible number of layers per virtual pipeline stage (" +
                                         arguments_source(939) + ")");
        return;
      }
      vpp = layers / pp / per;
      line = 940;
    } else {
      vpp = ns.at("num_virtual_stages_per_pipeline_rank");
      line = 943;
    }
  } else {
    if (ns.none("hybrid_layer_pattern")) vpp = nullptr;
    if (ns.none("decoder_first_pipeline_num_layers") && ns.none("decoder_last_pipeline_num_layers") && !ns.none("num_layers") &&
        ns.none("hybrid_layer_pattern") && layers_for_split(ns) % pp != 0)
      ctx.error("--pipeline-model-parallel-size", "layers_vs_pp",
                "Number of layers (" + std::to_string(layers_for_split(ns)) +
                    ", with the embedding / loss when they are accounted for) should be divisible by the "
                    "pipeline-model-parallel size (" +
                    std::to_string(pp) + ") (" + arguments_source(964) + ")");
  }
  if (vpp.is_number_integer() && vpp.get<std::int64_t>() == 1) {
    vpp = nullptr;
    line = layout ? 918 : 945;
  }
  if (vpp != ns.at("virtual_pipeline_model_parallel_size") || layout || per_stage || per_rank)
    set_derived(ns, ctx, "virtual_pipeline_model_parallel_size", vpp, line);
}

// Without the interleaved schedule p2p overlap and aligned parameter gathers are off (:967-979).
void interleaving(Namespace& ns, ImportContext& ctx) {
  const auto pp = ns.integer("pipeline_model_parallel_size", 1);
  if (!ns.none("virtual_pipeline_model_parallel_size")) {
    if (ns.flag("overlap_p2p_comm") ? pp <= 1 : pp <= 2)
      ctx.error("--pipeline-model-parallel-size", "interleaved_schedule_pp",
                ns.flag("overlap_p2p_comm")
                    ? "When interleaved schedule is used, pipeline-model-parallel size should be greater than 1 (" + arguments_source(970) + ")"
                    : "When interleaved schedule is used and p2p communication overlap is disabled, pipeline-model-parallel "
                      "size should be greater than 2 (" +
                          arguments_source(974) + ")");
    return;
  }
  if (ns.flag("overlap_p2p_comm")) set_derived(ns, ctx, "overlap_p2p_comm", false, 978);
  if (ns.flag("align_param_gather")) set_derived(ns, ctx, "align_param_gather", false, 979);
}

}  // namespace

void apply_hybrid_pattern(Namespace& ns, ImportContext& ctx) {
  fold_deprecated_patterns(ns, ctx);
  if (!ns.none("hybrid_layer_pattern")) read_pattern(ns, ctx);
  check_mtp(ns, ctx, ctx.hybrid);
  virtual_pipeline(ns, ctx);
  interleaving(ns, ctx);
}

}  // namespace peakcast::model::detail
