// parse_spec_input: which reader an input needs, then the one parse pipeline. A Bridge input becomes
// a run-spec document (bridge_container.cpp) and keeps, for every key, the line it came from; a
// Megatron-LM launch line becomes one through megatron_input.cpp.
#include "bridge_container.hpp"
#include "bridge_recipe.hpp"
#include "peakcast/model/megatron_args.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "spec_parser_detail.hpp"

namespace peakcast::model {

using nlohmann::json;

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// By the file's extension, else by its first character (a run_config.yaml begins with a key).
bool looks_like_json(std::string_view name, std::string_view text) {
  if (ends_with(name, ".json")) return true;
  if (ends_with(name, ".yaml") || ends_with(name, ".yml")) return false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return true;  // empty: the JSON reader says so
}

bool sets(const std::vector<std::string>& overrides, const std::string& key) {
  for (const auto& o : overrides)
    if (o.rfind(key + "=", 0) == 0) return true;
  return false;
}

// Bridge records neither the GPU nor, without comm_overlap, the world size: the user gives them.
void require_cluster(const detail::BridgeConversion& c, const std::vector<std::string>& rest, const std::string& file,
                     Diagnostics& out) {
  const json& cluster = c.spec.contains("cluster") ? c.spec["cluster"] : json::object();
  if (!cluster.contains("gpu") && !sets(rest, "cluster.gpu"))
    out.push_back({Severity::error, "cluster.gpu", "bridge_gpu_unknown",
                   file + " does not record the GPU it trains on; give it with --set cluster.gpu=h100-sxm-80gb "
                          "(or h200-141gb, b200, gb200, gb300, a100-80gb)"});
  if (!cluster.contains("num_gpus") && !sets(rest, "cluster.num_gpus"))
    out.push_back({Severity::error, "cluster.num_gpus", "bridge_world_size_unknown",
                   file + " does not record the world size (comm_overlap is null, so comm_overlap.data_parallel_size is "
                          "absent); give it with --set cluster.num_gpus=N"});
}

// The run spec's origins name the Bridge file and line a user value came from.
void attribute(ParseResult& r, const detail::BridgeConversion& c) {
  for (auto& [path, o] : r.origins) {
    if (o.origin != "user") continue;
    if (const auto it = c.origins.find(path); it != c.origins.end()) {
      o.origin = it->second.origin;
      o.source = it->second.source;
    } else {
      o.origin = "--set";
    }
  }
  r.ignored = c.ignored;
}

// A Bridge document (read from YAML, or a recipe) through overrides, the runtime update and the conversion.
ParseResult parse_bridge_document(detail::BridgeDocument d, ParseResult r, const std::vector<std::string>& cluster,
                                  const std::vector<std::string>& overrides) {
  std::vector<std::string> rest = cluster;
  const std::vector<std::string> user = detail::apply_bridge_overrides(d, overrides, r.diagnostics);
  rest.insert(rest.end(), user.begin(), user.end());
  detail::apply_bridge_runtime(d, r.diagnostics);
  const detail::BridgeConversion c = detail::convert_bridge_container(d, r.diagnostics);
  require_cluster(c, rest, d.file, r.diagnostics);
  if (has_errors(r.diagnostics)) return r;
  ParseResult parsed = detail::parse_document(c.spec, rest);
  attribute(parsed, c);
  parsed.input_kind = r.input_kind;
  parsed.diagnostics.insert(parsed.diagnostics.begin(), r.diagnostics.begin(), r.diagnostics.end());
  return parsed;
}

ParseResult parse_bridge_yaml(std::string_view name, std::string_view text, const std::vector<std::string>& overrides) {
  ParseResult r;
  r.input_kind = "Bridge run_config.yaml";
  detail::BridgeDocument d;
  d.file = std::string(name.empty() ? "run_config.yaml" : name);
  const auto doc = detail::parse_yaml_text(text, d.file, r.diagnostics, &d.lines);
  if (!doc) return r;
  d.doc = *doc;
  return parse_bridge_document(std::move(d), std::move(r), {}, overrides);
}

ParseResult parse_bridge_recipe(const std::string& name, const std::vector<std::string>& overrides) {
  ParseResult r;
  r.input_kind = "Bridge recipe";
  // A --set model.vocab_size stands for the tokenizer size the catalogue may lack (recipe_vocab_unknown).
  auto d = detail::recipe_document(name, r.diagnostics, sets(overrides, "model.vocab_size"));
  if (!d) return r;
  return parse_bridge_document(std::move(*d), std::move(r), {}, overrides);
}

}  // namespace

ParseResult parse_spec_input(std::string_view name, std::string_view text, const std::vector<std::string>& overrides) {
  if (name.rfind("bridge:", 0) == 0) return parse_bridge_recipe(std::string(name.substr(7)), overrides);
  if (!looks_like_json(name, text)) {
    // A Megatron-LM launch line (torchrun ... pretrain_gpt.py ..., or the arguments alone), else YAML.
    if (looks_like_megatron_line(text)) return parse_megatron_line(text, overrides);
    return parse_bridge_yaml(name, text, overrides);
  }
  return detail::parse_run_spec_in(text, overrides, detail::spec_directory(name));
}

}  // namespace peakcast::model
