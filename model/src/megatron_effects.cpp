// Defined Megatron-LM arguments that do not become run-spec keys: the few peakcast refuses (they
// build another model or another training loop, which peakcast does not simulate), and the entry
// that lists every other one as ignored when a line gives it.
#include "megatron_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

struct Refusal {
  const char* dest;
  const char* why;
};

// Each changes what a rank holds in a way no run-spec key describes.
const Refusal kRefused[] = {
    {"yaml_cfg",
     "the run is then described by the YAML file, which replaces the parsed arguments "
     "(mcore:megatron/training/arguments.py:136-139); peakcast does not read it"},
    {"heterogeneous_layers_config_path",
     "a heterogeneous model (per-layer shapes from a Hugging Face config; "
     "mcore:megatron/training/argument_utils.py:295-297) is not modelled"},
    {"heterogeneous_layers_config_encoded_json",
     "a heterogeneous model (per-layer shapes; "
     "mcore:megatron/training/argument_utils.py:295-297) is not modelled"},
    {"use_torch_fsdp2",
     "PyTorch FSDP2 replaces DDP and the distributed optimizer "
     "(TorchFullyShardedDataParallelConfig, mcore:megatron/training/training.py:2001-2003); not modelled"},
    {"perform_rl_step",
     "the RL loop runs an inference engine with its KV cache beside training "
     "(mcore:megatron/training/training.py:1248); not modelled"},
    {"te_precision_config_file",
     "a Transformer Engine quantization recipe read from a file "
     "(mcore:megatron/training/argument_utils.py:365-368) is not modelled"},
    {"kitchen_config_file", "a Kitchen quantization recipe (mcore:megatron/training/argument_utils.py:356-358) is not modelled"},
    {"kitchen_recipe_number", "a Kitchen quantization recipe (mcore:megatron/training/argument_utils.py:359-361) is not modelled"},
    {"freeze_all_layers",
     "frozen layers run forward-only without gradients, gradient buffers or optimizer state "
     "(mcore:megatron/training/training.py:1727-1728, :2076-2078); not modelled"},
    {"logits_load_dir",
     "distillation from stored teacher logits loads them per batch (mcore:pretrain_gpt.py:227, "
     "mcore:megatron/training/training.py:2140); not modelled"},
    {"logits_save_dir", "saving top-k logits per batch (mcore:megatron/training/training.py:2128-2132) is not modelled"},
};

// --spec names the layer spec module; the hybrid default is what pretrain_hybrid.py builds without it
// (mcore:megatron/training/models/hybrid.py:10, :151-161); pretrain_bert.py reads "local" as its local layer spec
// (examples/bert/pretrain_bert.py:41-43).
bool default_spec(const json& spec, bool hybrid, bool bert, bool t5) {
  if (!spec.is_array()) return spec.is_null() || t5;
  if (t5) return true;  // pretrain_t5.py never reads --spec (:105-114); megatron_config.cpp warns
  if (bert) return spec.size() == 1 && spec[0] == "local";
  std::string joined;
  for (const auto& s : spec) {
    if (!joined.empty()) joined += ' ';
    joined += s.is_string() ? s.get<std::string>() : s.dump();
  }
  if (joined.size() >= 2 && joined.front() == '[' && joined.back() == ']') joined = joined.substr(1, joined.size() - 2);
  return hybrid && joined == "megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec";
}

bool away_from_default(const Namespace& ns, const ArgDef& def) {
  if (!ns.has(def.dest)) return false;
  const json& d = (*def.j)["default"];
  return ns.at(def.dest) != d;
}

std::string shown(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v) {
      if (!out.empty()) out += ' ';
      out += shown(e);
    }
    return out;
  }
  return v.dump();
}

}  // namespace

void refuse_unmodelled(const Namespace& ns, ImportContext& ctx) {
  for (const auto& r : kRefused) {
    const ArgDef* def = find_arg_by_dest(r.dest);
    if (def && away_from_default(ns, *def))
      ctx.error(option_of(ns, r.dest), "megatron_argument_not_modelled", option_of(ns, r.dest) + ": " + r.why);
  }
  if (ns.has("spec") && !default_spec(ns.at("spec"), ctx.hybrid, ctx.bert, ctx.t5))
    ctx.error("--spec", "megatron_argument_not_modelled",
              "--spec " + shown(ns.at("spec")) +
                  ": a layer spec module other than the default one "
                  "(mcore:megatron/training/argument_utils.py:456-457, :506-507) builds layers peakcast does not know");
  for (const auto& def : megatron_arg_defs()) {
    if (!def.conditional || !away_from_default(ns, def)) continue;
    ctx.error(option_of(ns, def.dest), "megatron_argument_not_modelled",
              option_of(ns, def.dest) + " exists only when an optional package is installed (" +
                  (*def.j)["conditional"].get<std::string>() + "); what it changes is not modelled");
  }
}

std::string ignored_entry(const Namespace& ns, const ArgDef& def) {
  const std::string opt = option_of(ns, def.dest);
  const json& v = ns.at(def.dest);
  const bool flag = def.action != "store";
  std::string entry = flag ? opt : opt + " " + shown(v);
  entry += " (Megatron-LM group '" + def.group + "'; no memory effect in peakcast's model";
  if ((*def.j).value("deprecated", false)) entry += "; deprecated";
  if (def.conditional) entry += "; exists only with an optional package";
  return entry + ")";
}

}  // namespace peakcast::model::detail
