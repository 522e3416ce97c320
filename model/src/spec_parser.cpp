// parse_run_spec: text -> JSON -> overrides -> preset -> aliases -> keys and types -> typed RunSpec.
// Every step reports into one list, so a user fixes the whole file in one pass; nothing throws out.
#include "peakcast/model/spec_parser.hpp"

#include <filesystem>

#include "bridge_defaults.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "spec_parser_detail.hpp"
#include "spec_reader.hpp"
#include "spec_schema.hpp"
#include "unsimulated_keys.hpp"

namespace peakcast::model {

using nlohmann::json;

namespace {

// Removes "section.key" (or "section.key[i]...") for every unknown-key or wrong-type error.
// Returns false when an error is of another kind, which leaves nothing safe to read.
bool drop_offending_keys(json& doc, const Diagnostics& diagnostics) {
  for (const auto& d : diagnostics) {
    if (d.severity != Severity::error) continue;
    if (d.rule != "unknown_key" && d.rule != "wrong_type") return false;
    const auto dot = d.path.find('.');
    if (dot == std::string::npos) return false;
    const std::string section = d.path.substr(0, dot);
    std::string key = d.path.substr(dot + 1);
    key = key.substr(0, key.find_first_of(".["));
    if (!doc.contains(section) || !doc[section].is_object()) return false;
    doc[section].erase(key);
  }
  return true;
}

// The first step: the text as a JSON object, or the errors that stop the parse there.
std::optional<json> parse_text_unguarded(std::string_view json_text, Diagnostics& out) {
  if (!detail::schema_load_error().empty()) {
    out.push_back({Severity::error, "", "internal", "run-spec schema missing from the build: " + detail::schema_load_error()});
    return std::nullopt;
  }
  std::optional<json> doc = detail::parse_json_text(json_text, "", "", out);
  if (!doc) return std::nullopt;
  if (!doc->is_object()) {
    out.push_back({Severity::error, "", "spec_not_object",
                   "a run spec is a JSON object with sections model, train, optimizer, ddp, cluster (and peft); got " +
                       detail::json_kind(*doc)});
    return std::nullopt;
  }
  return doc;
}

// The defaults a document asks for (top-level "defaults"), else the rule of DefaultsProfile.
DefaultsProfile profile_of(const json& doc) {
  if (const auto it = doc.find("defaults"); it != doc.end() && it->is_string())
    return *it == "bridge" ? DefaultsProfile::bridge : DefaultsProfile::megatron_core;
  // Every shipped preset is a Megatron-Bridge model: a spec built on one gets Bridge's defaults.
  const auto model = doc.find("model");
  const bool preset = model != doc.end() && model->is_object() && model->contains("preset") && (*model)["preset"].is_string();
  return preset ? DefaultsProfile::bridge : DefaultsProfile::megatron_core;
}

// The typed fill with the document's defaults profile; records every read in `result.origins`.
void fill(const json& doc, const std::set<std::string>& preset_keys, const detail::HfApplied& hf, ParseResult& result,
          RunSpec& spec) {
  detail::FillContext ctx;
  ctx.profile = profile_of(doc);
  ctx.preset_keys = &preset_keys;
  ctx.hf_keys = &hf.keys;
  ctx.origins = &result.origins;
  if (ctx.profile == DefaultsProfile::bridge) {
    const json& model = doc.contains("model") && doc["model"].is_object() ? doc["model"] : json::object();
    const bool named = doc.contains("bridge_model_class") && doc["bridge_model_class"].is_string();
    ctx.bridge = detail::BridgeDefaults::for_provider(named ? doc["bridge_model_class"].get<std::string>()
                                                            : detail::default_provider_class(model));
  }
  result.defaults = ctx.profile;
  detail::fill_run_spec(doc, ctx, spec, result.diagnostics);
  detail::warn_unsimulated_keys(doc, ctx, result.diagnostics);
}

// The remaining steps on the parsed text; `result.diagnostics` holds what the first step reported.
ParseResult parse_doc_unguarded(ParseResult result, std::optional<json> doc, const std::vector<std::string>& overrides,
                                const std::string& base_dir = "") {
  Diagnostics& out = result.diagnostics;
  if (!doc) return result;
  detail::apply_overrides(*doc, overrides, out);
  const detail::HfApplied hf = detail::apply_hf_config(*doc, base_dir, out);
  result.ignored.insert(result.ignored.end(), hf.ignored.begin(), hf.ignored.end());
  const std::set<std::string> preset_keys = detail::apply_model_preset(*doc, out);
  detail::resolve_aliases(*doc, preset_keys, out);
  detail::check_keys_and_types(*doc, preset_keys, out);
  if (has_errors(out)) {
    // Typed reads below assume well-typed values: drop the offending keys and read the rest into
    // `partial`, so the caller can still report every other problem.
    if (json cleaned = *doc; drop_offending_keys(cleaned, out)) {
      Diagnostics scratch;
      detail::check_keys_and_types(cleaned, preset_keys, scratch);
      if (!has_errors(scratch)) {
        RunSpec partial;
        fill(cleaned, preset_keys, hf, result, partial);
        result.partial = std::move(partial);
      }
    }
    return result;
  }

  RunSpec spec;
  fill(*doc, preset_keys, hf, result, spec);
  if (!has_errors(out)) result.spec = std::move(spec);
  return result;
}

// The steps do not throw by design; this guard keeps a missed case (or bad_alloc) inside the library.
template <typename F>
ParseResult guarded(F&& steps) {
  try {
    return steps();
  } catch (const std::exception& e) {
    ParseResult r;
    r.diagnostics.push_back({Severity::error, "", "internal", std::string("run spec could not be read: ") + e.what()});
    return r;
  } catch (...) {
    ParseResult r;
    r.diagnostics.push_back({Severity::error, "", "internal", "run spec could not be read"});
    return r;
  }
}

}  // namespace

namespace detail {
ParseResult parse_document(nlohmann::json doc, const std::vector<std::string>& overrides) {
  return guarded([&] { return parse_doc_unguarded(ParseResult{}, std::optional<json>(std::move(doc)), overrides); });
}
}  // namespace detail

ParseResult parse_run_spec(std::string_view json_text, const std::vector<std::string>& overrides) {
  return detail::parse_run_spec_in(json_text, overrides, "");
}

namespace detail {
ParseResult parse_run_spec_in(std::string_view json_text, const std::vector<std::string>& overrides, const std::string& base_dir) {
  return guarded([&] {
    ParseResult result;
    std::optional<json> doc = parse_text_unguarded(json_text, result.diagnostics);
    return parse_doc_unguarded(std::move(result), std::move(doc), overrides, base_dir);
  });
}

std::string spec_directory(std::string_view name) {
  if (name.empty() || name == "-" || name.rfind("bridge:", 0) == 0) return "";
  return std::filesystem::path(std::string(name)).parent_path().string();
}
}  // namespace detail

struct SpecText::Parsed {
  std::optional<json> doc;  // nullopt when the text itself was rejected
  Diagnostics diagnostics;  // what reading the text reported
  bool bridge = false;      // a Bridge input: parsed whole each time
  std::string name, text;
  std::string base_dir;  // the spec file's directory (model.hf_config paths)
};

SpecText::SpecText(std::string_view json_text, std::string_view name) {
  auto parsed = std::make_shared<Parsed>();
  const bool json_like = json_text.find_first_not_of(" \t\r\n") == std::string_view::npos ||
                         json_text[json_text.find_first_not_of(" \t\r\n")] == '{';
  if (name.rfind("bridge:", 0) == 0 || (!json_like && !(name.size() >= 5 && name.substr(name.size() - 5) == ".json"))) {
    parsed->bridge = true;
    parsed->name = std::string(name);
    parsed->text = std::string(json_text);
    parsed_ = std::move(parsed);
    return;
  }
  const ParseResult r = guarded([&] {
    ParseResult out;
    parsed->doc = parse_text_unguarded(json_text, out.diagnostics);
    return out;
  });
  parsed->diagnostics = r.diagnostics;
  parsed->base_dir = detail::spec_directory(name);
  parsed_ = std::move(parsed);
}

ParseResult SpecText::parse(const std::vector<std::string>& overrides) const {
  if (parsed_->bridge) return parse_spec_input(parsed_->name, parsed_->text, overrides);
  return guarded([&] {
    ParseResult result;
    result.diagnostics = parsed_->diagnostics;
    return parse_doc_unguarded(std::move(result), parsed_->doc, overrides, parsed_->base_dir);
  });
}

const char* to_string(DefaultsProfile p) { return p == DefaultsProfile::bridge ? "bridge" : "megatron-core"; }

std::optional<GpuSpec> gpu_preset(const std::string& name, Diagnostics& out) {
  GpuSpec gpu;
  const std::size_t before = out.size();
  detail::fill_gpu(json(name), gpu, out);
  if (has_errors(Diagnostics(out.begin() + static_cast<std::ptrdiff_t>(before), out.end()))) return std::nullopt;
  return gpu;
}

std::string_view default_run_spec_text() {
  const auto text = embedded_config("runs/moonlight-16b-8xh100.json");
  return text ? *text : std::string_view("{}");
}

}  // namespace peakcast::model
