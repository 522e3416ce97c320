#include "spec_reader.hpp"

#include <limits>

#include "bridge_defaults.hpp"
#include "spec_schema.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

Reader::Reader(const json& doc, const char* section, const FillContext& ctx, Diagnostics& out)
    : section_(section), ctx_(ctx), out_(out) {
  if (doc.is_object()) {
    const auto it = doc.find(section);
    if (it != doc.end() && it->is_object()) obj_ = &*it;
  }
}

const json* Reader::in_document(const char* key) const {
  if (obj_ == nullptr) return nullptr;
  const auto it = obj_->find(key);
  return it == obj_->end() ? nullptr : &*it;
}

bool Reader::has(const char* key) const {
  const json* v = in_document(key);
  return v != nullptr && !v->is_null();
}

const json* Reader::find(const char* key) const {
  const std::string section(section_);
  const auto record = [&](const char* origin, const std::string& source, const json& value) {
    if (ctx_.origins) (*ctx_.origins)[path(key)] = KeyOrigin{origin, source, value.dump()};
  };
  if (const json* v = in_document(key)) {
    const bool preset = section == "model" && ctx_.preset_keys && ctx_.preset_keys->count(key) > 0;
    const bool from_hf = section == "model" && ctx_.hf_keys && ctx_.hf_keys->count(key) > 0;
    if (from_hf) record("Hugging Face config", ctx_.hf_keys->at(key), *v);
    else record(preset ? "preset" : "user", "", *v);
    return v;
  }
  if (ctx_.profile == DefaultsProfile::bridge && ctx_.bridge) {
    if (const BridgeDefault* b = ctx_.bridge->lookup(section, key)) {
      record("Bridge default", b->source, b->value);
      return &b->value;
    }
  }
  const FieldSchema* f = find_field(section, key);
  if (f == nullptr || !f->default_value) return nullptr;
  record(f->extension ? "peakcast default" : "Megatron Core default", f->source, *f->default_value);
  return &*f->default_value;
}

void Reader::read(const char* key, bool& dst) const {
  if (const json* v = find(key); v && v->is_boolean()) dst = v->get<bool>();
}
void Reader::read(const char* key, std::int64_t& dst) const {
  if (const json* v = find(key); v && as_int(*v)) dst = *as_int(*v);
}
void Reader::read(const char* key, std::optional<std::int64_t>& dst) const {
  if (const json* v = find(key)) {
    if (v->is_null()) dst.reset();
    else if (as_int(*v)) dst = *as_int(*v);
  }
}
void Reader::read(const char* key, double& dst) const {
  if (const json* v = find(key); v && v->is_number()) dst = v->get<double>();
}
void Reader::read(const char* key, std::optional<double>& dst) const {
  if (const json* v = find(key)) {
    if (v->is_null()) dst.reset();
    else if (v->is_number()) dst = v->get<double>();
  }
}
void Reader::read(const char* key, std::string& dst) const {
  if (const json* v = find(key); v && v->is_string()) dst = v->get<std::string>();
}
void Reader::read(const char* key, std::optional<std::string>& dst) const {
  if (const json* v = find(key)) {
    if (v->is_null()) dst.reset();
    else if (v->is_string()) dst = v->get<std::string>();
  }
}
std::optional<std::string> Reader::name(const char* key) const {
  const json* v = find(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return normalize_object_name(v->get<std::string>());
}

void Reader::error(const std::string& path, const char* rule, const std::string& message) const {
  out_.push_back({Severity::error, path, rule, message});
}
void Reader::warning(const std::string& path, const char* rule, const std::string& message) const {
  out_.push_back({Severity::warning, path, rule, message});
}

std::optional<std::int64_t> Reader::as_int(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

}  // namespace peakcast::model::detail
