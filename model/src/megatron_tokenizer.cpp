// The model's vocabulary from the tokenizer arguments, by configs/tokenizers.json's rule: Megatron-LM
// sizes the embedding by the built tokenizer's length, padded to a multiple of
// make_vocab_size_divisible_by x TP (build_tokenizer.py:124-143), unless --padded-vocab-size gives it
// (argument_utils.py:473-475). peakcast cannot open tokenizer files, so the length comes from the
// table's known tokenizers, from what the caller knows, or from --vocab-size as the user's statement
// of it; never from a silent default. The one default it takes is Megatron-LM's own: pretrain_gpt.py's
// GPT2BPETokenizer without vocabulary files downloads GPT-2's (megatron_hf_tokenizer.py:42-46).
#include "megatron_detail.hpp"
#include "peakcast/model/embedded_configs.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

const json& tokenizer_table() {
  static const json t = [] {
    const auto text = embedded_config("tokenizers.json");
    json j = text ? json::parse(*text, nullptr, false) : json::object();
    return j.is_object() ? j : json::object();
  }();
  return t;
}

std::optional<std::int64_t> known(const std::string& name, std::string* source) {
  const json& table = tokenizer_table();
  if (!table.contains("tokenizers")) return std::nullopt;
  const auto it = table["tokenizers"].find(name);
  if (it == table["tokenizers"].end() || !(*it)["vocab_size"].is_number_integer()) return std::nullopt;
  *source = "configs/tokenizers.json tokenizers['" + name + "'] (" + it->value("kind", "") + ")";
  return (*it)["vocab_size"].get<std::int64_t>();
}

// --vocab-size as the user's statement of len(tokenizer), for a tokenizer type whose builder does
// not read it; else the error that says what to give.
Vocabulary stated_or_required(const Namespace& ns, ImportContext& ctx, const std::string& type, const std::string& what) {
  if (!ns.none("vocab_size")) {
    ctx.warning("--vocab-size", "vocab_size_taken_as_tokenizer_length",
                "Megatron-LM's " + type +
                    " does not read --vocab-size: it sizes the embedding by the tokenizer's own length "
                    "(mcore:megatron/core/tokenizers/utils/build_tokenizer.py:36-76); peakcast cannot open " +
                    what +
                    " and takes --vocab-size " + std::to_string(ns.integer("vocab_size")) + " as that length");
    return {ns.at("vocab_size").get<std::int64_t>(), true, "--vocab-size, taken as len(tokenizer) of " + what};
  }
  ctx.error("--vocab-size", "vocabulary_unknown",
            "the vocabulary size of " + what + " (" + type +
                ") is not known to peakcast (configs/tokenizers.json); give "
                "--vocab-size N with the tokenizer's length, or --padded-vocab-size N with the model's embedding rows");
  return {};
}

Vocabulary gpt2(const Namespace& ns, ImportContext& ctx) {
  std::string source;
  const auto size = known("gpt2", &source);
  const std::string vocab = ns.str("vocab_file"), merges = ns.str("merge_file");
  std::string why;
  if (vocab.empty() && merges.empty())
    why =
        "GPT2BPETokenizer without --vocab-file / --merge-file: Megatron-LM downloads GPT-2's own files "
        "(mcore:megatron/core/tokenizers/text/libraries/megatron_hf_tokenizer.py:42-46, :97-101)";
  else if (basename(vocab) == "gpt2-vocab.json" && basename(merges) == "gpt2-merges.txt")
    why =
        "GPT2BPETokenizer with files named as GPT-2's published gpt2-vocab.json / gpt2-merges.txt "
        "(the names megatron_hf_tokenizer.py:42-46 downloads)";
  else
    return stated_or_required(ns, ctx, "GPT2BPETokenizer", "--vocab-file " + (vocab.empty() ? "(none)" : vocab) + " --merge-file " + (merges.empty() ? "(none)" : merges));
  if (!size) return stated_or_required(ns, ctx, "GPT2BPETokenizer", "GPT-2's vocabulary");
  if (!ns.none("vocab_size") && ns.integer("vocab_size") != *size)
    ctx.warning("--vocab-size", "vocab_size_not_read",
                "--vocab-size " + std::to_string(ns.integer("vocab_size")) +
                    " is not read by GPT2BPETokenizer; the vocabulary is "
                    "GPT-2's " +
                    std::to_string(*size) + " (" + source + ")");
  return {size, true, why + ": " + std::to_string(*size) + " (" + source + ")"};
}

Vocabulary huggingface(const Namespace& ns, ImportContext& ctx) {
  const std::string name = ns.str("tokenizer_model");
  std::string source;
  if (const auto size = known(name, &source)) {
    if (!ns.none("vocab_size") && ns.integer("vocab_size") != *size)
      ctx.warning("--vocab-size", "vocab_size_not_read",
                  "HuggingFaceTokenizer does not read --vocab-size (mcore:megatron/core/tokenizers/utils/build_tokenizer.py:67-76); "
                  "the vocabulary is len(tokenizer) of " +
                      name + " = " + std::to_string(*size) + " (" + source + ")");
    return {size, true, "HuggingFaceTokenizer " + name + ": len(tokenizer) = " + std::to_string(*size) + " (" + source + ")"};
  }
  return stated_or_required(ns, ctx, "HuggingFaceTokenizer", name.empty() ? "the tokenizer (no --tokenizer-model)" : "--tokenizer-model " + name);
}

Vocabulary by_type(const Namespace& ns, ImportContext& ctx) {
  const std::string type = ns.str("tokenizer_type");
  if (type == "NullTokenizer") {
    if (ns.none("vocab_size")) {
      ctx.error("--vocab-size", "required_argument", "NullTokenizer needs --vocab-size (mcore:megatron/core/tokenizers/text/libraries/null_tokenizer.py:18)");
      return {};
    }
    return {ns.integer("vocab_size"), true, "NullTokenizer: --vocab-size as is (mcore:megatron/core/tokenizers/text/libraries/null_tokenizer.py:18)"};
  }
  if (type == "TikTokenizer") {
    if (!ns.none("vocab_size")) return {ns.integer("vocab_size"), true, "TikTokenizer: --vocab-size (mcore:megatron/core/tokenizers/utils/build_tokenizer.py:63-64)"};
    // DEFAULT_TIKTOKEN_MAX_VOCAB (tiktoken_tokenizer.py:24), the vocabulary when --vocab-size is absent.
    return {131072, true,
            "TikTokenizer without --vocab-size: DEFAULT_TIKTOKEN_MAX_VOCAB 131072 "
            "(mcore:megatron/core/tokenizers/text/libraries/tiktoken_tokenizer.py:24, :86)"};
  }
  if (type == "HuggingFaceTokenizer") return huggingface(ns, ctx);
  if (type == "GPT2BPETokenizer") return gpt2(ns, ctx);
  const std::string model = ns.str("tokenizer_model"), vocab = ns.str("vocab_file");
  return stated_or_required(ns, ctx, type, !model.empty() ? "--tokenizer-model " + model : (!vocab.empty() ? "--vocab-file " + vocab : "the tokenizer"));
}

}  // namespace

Vocabulary resolve_vocabulary(const Namespace& ns, ImportContext& ctx) {
  if (!ns.none("padded_vocab_size"))
    return {ns.integer("padded_vocab_size"), false,
            "--padded-vocab-size: the model's vocabulary as given, not padded (mcore:megatron/training/argument_utils.py:473-475)"};
  if (!ns.flag("pad_vocab_size")) {
    // No padded size is set from the tokenizer (build_tokenizer.py:104, :142): the model takes
    // --vocab-size and pads it in the builder (mcore:megatron/training/models/gpt.py:289-294).
    if (ns.none("vocab_size")) {
      ctx.error("--vocab-size", "required_argument",
                "Either --padded-vocab-size or --vocab-size must be specified with --no-pad-vocab-size "
                "(mcore:megatron/training/argument_utils.py:477)");
      return {};
    }
    return {ns.integer("vocab_size"), true,
            "--no-pad-vocab-size: --vocab-size, padded by the model builder "
            "(mcore:megatron/training/models/gpt.py:289-294)"};
  }
  if (ctx.options.tokenizer_vocab_size)
    return {ctx.options.tokenizer_vocab_size, true, "len(tokenizer) " + std::to_string(*ctx.options.tokenizer_vocab_size) + " given with the line (" + ctx.options.tokenizer_vocab_source + ")"};
  Vocabulary v = by_type(ns, ctx);
  if (v.size && ns.flag("special_tokens") && ns.str("tokenizer_type") != "NullTokenizer")
    ctx.warning("--tokenizer-special-tokens", "special_tokens_not_counted",
                "special tokens not already in the vocabulary grow len(tokenizer) "
                "(mcore:megatron/core/tokenizers/text/libraries/huggingface_tokenizer.py:141-181); peakcast cannot tell which "
                "are new and keeps " +
                    std::to_string(*v.size));
  return v;
}

}  // namespace peakcast::model::detail
