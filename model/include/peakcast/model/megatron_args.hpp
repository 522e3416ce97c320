#pragma once
// A Megatron-LM launch line -> a run spec. The whole line a user pastes:
//   [VAR=value ...] [torchrun OPTS | python[3] [-m torch.distributed.run OPTS]] pretrain_gpt.py ARGS
// (or pretrain_hybrid.py / pretrain_mamba.py, examples/bert/pretrain_bert.py, examples/t5/pretrain_t5.py, or ARGS alone), with backslash-newline continuations
// and quotes. ARGS are read as the pinned Megatron-LM 24bad8e6 parser reads them
// (configs/schema/megatron_args.json: every argument it defines, argparse with allow_abbrev=False),
// then validate_args and the config builders (core_transformer_config_from_args, gpt/hybrid
// _config_from_args, the optimizer and DDP configs) turn them into Megatron Core's config fields,
// which are the run spec's keys. docs/megatron-args-mapping.md has the rules and their source lines.
//
// Strict: an option the parser does not define, a flag given a value, a value of the wrong type or
// outside its choices, a shell variable ($VAR) and a deprecated option Megatron-LM refuses are
// errors whose path is the argument ("--tensor-parallel-size"). Every defined argument either maps
// to the run spec or is listed in `ignored`; none is dropped silently.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/model/diagnostics.hpp"
#include "peakcast/model/spec_parser.hpp"

namespace peakcast::model {

struct MegatronLineOptions {
  // World size and GPU when the line does not give them (torchrun --nnodes x --nproc-per-node, or a
  // WORLD_SIZE=N assignment, gives the world size; nothing on a line names the GPU).
  std::optional<std::int64_t> num_gpus;
  std::optional<std::string> gpu;
  // len(tokenizer) known from elsewhere (the functional tests' tokenizer table), with where it came
  // from; used when the line itself does not determine the vocabulary.
  std::optional<std::int64_t> tokenizer_vocab_size;
  std::string tokenizer_vocab_source;
};

struct MegatronLineImport {
  std::string spec_json;                     // the run spec (pretty JSON); empty when there are errors
  Diagnostics diagnostics;                   // errors and warnings; path = the argument
  std::vector<std::string> ignored;          // defined arguments with no memory effect in peakcast
  std::vector<std::string> notes;            // values Megatron-LM derives or defaults, said once each
  std::map<std::string, KeyOrigin> origins;  // run-spec key path -> the argument or rule it came from
  std::string script;                        // pretrain_gpt.py / _hybrid.py / _mamba.py / _bert.py / _t5.py, or ""
};

// The line -> a run-spec document (not yet parsed as a run spec).
MegatronLineImport import_megatron_line(std::string_view line, const MegatronLineOptions& options = {});

// The line -> a parsed run spec, as parse_spec_input gives for a file: `overrides` ("section.key=JSON")
// apply to the imported spec. A spec without cluster.gpu / cluster.num_gpus (neither the line, the
// options nor an override gives them) is an error naming the key.
ParseResult parse_megatron_line(std::string_view line, const std::vector<std::string>& overrides = {},
                                const MegatronLineOptions& options = {});

// Only the shell split and the argument parser: what Megatron-LM's own parse_args would refuse
// (unknown options, flags given values, bad types or choices). For checking lines that name paths
// with shell variables, `allow_variables` reads $VAR as literal text.
Diagnostics check_megatron_line(std::string_view line, bool allow_variables = false);
// The same for the arguments alone, as the parser of `script` reads them: "" for pretrain_gpt.py /
// pretrain_hybrid.py, or another training script of megatron_args.json other_scripts (its
// extra_args_provider's arguments are then defined too, e.g. "pretrain_vlm.py").
Diagnostics check_megatron_arguments(const std::vector<std::string>& args, const std::string& script = "");

// True when the text reads as a launch line rather than JSON or YAML: its first word is an
// option ("--..."), an environment assignment, export/env, torchrun, python or a pretrain_*.py script.
bool looks_like_megatron_line(std::string_view text);

}  // namespace peakcast::model
