#pragma once
// The steps of import_megatron_line, one file each. Private to peakcast_model.
//   megatron_line.cpp      shell words and environment assignments
//   megatron_launcher.cpp  the launcher (torchrun, python -m torch.distributed.run) and the script
//   megatron_argparse.cpp  argparse over configs/schema/megatron_args.json -> a namespace
//   megatron_types.cpp     the parser's type functions (int, float, moe_freq_type, tuple_type, ...)
//   megatron_validate*.cpp what validate_args does to the namespace (and what it refuses)
//   megatron_config.cpp    the config builders: namespace -> run-spec document
//   megatron_tokenizer.cpp the vocabulary (configs/tokenizers.json)
//   megatron_effects.cpp   arguments peakcast refuses, and what the ignored ones are
//   megatron_input.cpp     the public functions
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/megatron_args.hpp"

namespace peakcast::model::detail {

// ---- megatron_line.cpp ----
struct LaunchLine {
  std::vector<std::pair<std::string, std::string>> env;  // the launched process's environment assignments
  std::string launcher;                                  // "torchrun", "python -m torch.distributed.run", "python", ""
  std::string script;                                    // basename of the training script, "" for bare arguments
  std::vector<std::string> args;                         // the script's arguments
  std::optional<std::int64_t> world_size;                // from the launcher or WORLD_SIZE=
  std::string world_size_from;
  std::vector<std::string> ignored;  // launcher options and environment read as no memory effect
};

// Shell words of one command line (continuations, quotes, comments). `allow_variables` keeps $VAR as
// text instead of reporting it.
std::optional<LaunchLine> read_launch_line(std::string_view text, bool allow_variables, Diagnostics& out);
bool looks_like_launch_line(std::string_view text);

// ---- megatron_launcher.cpp ----
// The command's words from the launcher on: torchrun / python [-m torch.distributed.run] options
// (the world size read from --nnodes x --nproc-per-node), the script, its arguments.
bool read_launcher(const std::vector<std::string>& words, LaunchLine& line, Diagnostics& out);

// ---- megatron_argparse.cpp ----
struct ArgDef {
  const nlohmann::json* j = nullptr;      // the argument's record in megatron_args.json
  std::string dest, action, type, nargs;  // nargs "" = one value
  std::vector<std::string> options;
  std::string group;
  bool conditional = false;
};

struct Namespace {
  std::map<std::string, nlohmann::json> v;   // every dest: the parsed value, else the default
  std::map<std::string, std::string> given;  // dest -> the option as written (last occurrence)
  std::set<std::string> expr_default;        // dests whose default is a Python expression
  const nlohmann::json& at(const std::string& dest) const;
  bool has(const std::string& dest) const { return given.count(dest) > 0; }
  bool flag(const std::string& dest) const;  // truthy as Python would read it
  std::int64_t integer(const std::string& dest, std::int64_t fallback = 0) const;
  std::string str(const std::string& dest) const;  // "" for None
  bool none(const std::string& dest) const { return at(dest).is_null(); }
};

const std::vector<ArgDef>& megatron_arg_defs();
const ArgDef* find_arg_by_dest(const std::string& dest);
const nlohmann::json& megatron_args_document();  // the whole megatron_args.json

// `script` names another training script of megatron_args.json other_scripts whose own arguments
// are defined too (for checking its lines; the import refuses those scripts).
std::optional<Namespace> parse_megatron_args(const std::vector<std::string>& tokens, Diagnostics& out,
                                             const std::string& script = "");

// The option a dest is written with on the line ("--" + the first option string when not given).
std::string option_of(const Namespace& ns, const std::string& dest);

// ---- megatron_types.cpp ----
// Python's int() / float() of a command-line string (sign, digits, underscores, exponents). nullopt
// when Python would raise; `why` says what is wrong.
std::optional<std::int64_t> python_int(std::string_view s, std::string* why = nullptr);
std::optional<double> python_float(std::string_view s, std::string* why = nullptr);
// moe_freq_type / la_freq_type / no_rope_freq_type: an int, or a Python list expression of
// digits , [ ] ( ) + * (arguments.py:244-252 _eval_pattern) evaluated to a flat list of ints.
std::optional<nlohmann::json> python_freq_pattern(std::string_view s, std::string* why = nullptr);
// tuple_type: "1,2" or "(1,2)" -> [1, 2] (arguments.py:353-363).
std::optional<nlohmann::json> python_int_tuple(std::string_view s, std::string* why = nullptr);
// The value of one command-line token under the argument's type; nullopt (with `why`) when the
// type function raises.
std::optional<nlohmann::json> convert_value(const ArgDef& def, const std::string& token, std::string* why);

// ---- megatron_validate.cpp / megatron_validate_model.cpp ----
struct ImportContext {
  LaunchLine line;
  MegatronLineOptions options;
  bool hybrid = false;  // a HybridModel (pretrain_hybrid.py / pretrain_mamba.py, or a pattern without a script)
  Diagnostics& out;
  std::vector<std::string>& notes;
  // Run-spec keys whose value validate_args or a builder derived, with the rule's source line.
  std::map<std::string, std::string> derived;
  bool bert = false;  // a BertModel (examples/bert/pretrain_bert.py)
  bool t5 = false;    // a T5Model (examples/t5/pretrain_t5.py)
  void error(const std::string& path, const std::string& rule, const std::string& message) const;
  void warning(const std::string& path, const std::string& rule, const std::string& message) const;
};

// The source of a validate_args rule: "mcore:megatron/training/arguments.py:LINE".
// The last path component, as os.path.basename returns it.
inline std::string basename(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

inline std::string arguments_source(int line) { return "mcore:megatron/training/arguments.py:" + std::to_string(line); }

// validate_args sets `dest` (arguments.py:LINE): the value, and where it came from.
inline void set_derived(Namespace& ns, ImportContext& ctx, const std::string& dest, nlohmann::json v, int line) {
  ns.v[dest] = std::move(v);
  ctx.derived[dest] = arguments_source(line);
}

void apply_validate_args(Namespace& ns, ImportContext& ctx);        // parallelism, batch, precision, graphs
void apply_validate_model_args(Namespace& ns, ImportContext& ctx);  // shape, layers, MoE, rope, optimizer
void apply_hybrid_pattern(Namespace& ns, ImportContext& ctx);       // --hybrid-layer-pattern and VPP

// ---- megatron_effects.cpp ----
// Arguments set away from their default that peakcast refuses (a different model or training loop),
// each an error naming it.
void refuse_unmodelled(const Namespace& ns, ImportContext& ctx);
// "--log-interval 1: ... (group logging)" for an argument given on the line that no run-spec key takes.
std::string ignored_entry(const Namespace& ns, const ArgDef& def);

// ---- megatron_tokenizer.cpp ----
struct Vocabulary {
  std::optional<std::int64_t> size;  // the model's vocab_size key
  bool pad = true;                   // should_pad_vocab
  std::string why;                   // how it was decided
};
Vocabulary resolve_vocabulary(const Namespace& ns, ImportContext& ctx);

// ---- megatron_config.cpp ----
struct BuiltSpec {
  nlohmann::json doc = nlohmann::json::object();
  std::map<std::string, KeyOrigin> origins;
  std::set<std::string> consumed;  // dests that some run-spec key took
};
BuiltSpec build_run_spec_document(const Namespace& ns, ImportContext& ctx);

}  // namespace peakcast::model::detail
