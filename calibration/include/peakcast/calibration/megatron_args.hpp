#pragma once
// Megatron-LM command-line arguments (pretrain_gpt.py / pretrain_mamba.py) -> a peakcast run spec.
// Keys the command line leaves out take Megatron-LM's CLI defaults (megatron/training/arguments.py),
// which differ from TransformerConfig's dataclass defaults (fusions on, dropout 0.1, learned
// absolute positions, LayerNorm, biases, GeLU, tied embeddings, GPT-2 BPE vocabulary).
#include <string>
#include <vector>

namespace peakcast::calibration {

struct ImportOptions {
  int num_gpus = 8;                      // world size (not part of the model arguments)
  std::string gpu = "h100-sxm-80gb";     // cluster.gpu preset
  bool mamba = false;                    // pretrain_mamba.py (also implied by --hybrid-override-pattern)
};

struct ImportedSpec {
  std::string spec_json;              // pretty-printed run spec (empty when there are errors)
  std::vector<std::string> errors;    // arguments peakcast cannot represent (the run is not importable)
  std::vector<std::string> ignored;   // arguments with no memory effect known to peakcast
  std::vector<std::string> notes;     // defaults that were assumed
};

// Shell-like split: whitespace separated, single/double quotes group, backslash escapes.
std::vector<std::string> split_command_line(const std::string& text);

ImportedSpec import_megatron_args(const std::vector<std::string>& args, const ImportOptions& options = {});

}  // namespace peakcast::calibration
