// YAML text -> JSON as Megatron-Bridge reads its run_config.yaml back: PyYAML's safe_load, whose
// YAML 1.1 resolver decides what a plain scalar is (bridge:src/megatron/bridge/training/utils/
// checkpoint_utils.py:391-450 calls yaml.safe_load; docs/bridge/run-config-yaml.md section 6). The
// text is untrusted: size, nesting and alias expansion are capped, duplicate keys and explicit tags
// are errors (PyYAML would keep the last duplicate silently), every error names the line.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxYamlBytes = 16u << 20;  // a run_config.yaml is about 40 KB
constexpr std::size_t kMaxYamlDepth = 64;         // ConfigContainer nests 5 deep
constexpr std::size_t kMaxYamlNodes = 2'000'000;  // after alias expansion (an alias bomb stops here)

// PyYAML's implicit resolvers for plain scalars (yaml/resolver.py, Resolver.add_implicit_resolver):
// YAML 1.1 booleans, ints (with 0b/0x/0 octal, underscores, base 60), floats (a dot is required, an
// exponent needs its sign), nulls. Anything else is a string.
const std::regex& bool_re() {
  static const std::regex r("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF");
  return r;
}
const std::regex& int_re() {
  static const std::regex r(
      "[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+");
  return r;
}
const std::regex& float_re() {
  static const std::regex r(
      "[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9_]+(?:[eE][-+][0-9]+)?|"
      "[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN)");
  return r;
}

bool is_null_scalar(const std::string& v) { return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL"; }

std::string without_underscores(const std::string& v) {
  std::string s;
  for (char c : v)
    if (c != '_') s += c;
  return s;
}

// The value PyYAML's SafeConstructor builds for a resolved int (construct_yaml_int); nullopt when it
// does not fit in 64 bits (PyYAML would build a big int; no run-spec field takes one).
std::optional<json> yaml_int(const std::string& text) {
  std::string v = without_underscores(text);
  int sign = 1;
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
    if (v[0] == '-') sign = -1;
    v = v.substr(1);
  }
  try {
    long double value = 0;
    if (v == "0") value = 0;
    else if (v.rfind("0b", 0) == 0) value = static_cast<long double>(std::stoull(v.substr(2), nullptr, 2));
    else if (v.rfind("0x", 0) == 0) value = static_cast<long double>(std::stoull(v.substr(2), nullptr, 16));
    else if (v[0] == '0') value = static_cast<long double>(std::stoull(v.substr(1), nullptr, 8));
    else if (v.find(':') != std::string::npos) {
      std::stringstream parts(v);
      std::string part;
      while (std::getline(parts, part, ':')) value = value * 60 + static_cast<long double>(std::stoull(part));
    } else {
      value = static_cast<long double>(std::stoull(v));
    }
    value *= sign;
    if (value > static_cast<long double>(std::numeric_limits<std::int64_t>::max()) ||
        value < static_cast<long double>(std::numeric_limits<std::int64_t>::min()))
      return std::nullopt;
    return json(static_cast<std::int64_t>(value));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

json yaml_float(const std::string& text) {
  std::string v = without_underscores(text);
  std::string lower;
  for (char c : v) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // JSON has neither: infinity is held as the largest double (Bridge's default
  // optimizer.grad_norm_skip_threshold is .inf), NaN as the string, which no numeric field takes.
  if (lower.find("inf") != std::string::npos)
    return json((lower[0] == '-' ? -1.0 : 1.0) * std::numeric_limits<double>::max());
  if (lower.find("nan") != std::string::npos) return json(text);
  if (v.find(':') != std::string::npos) {
    int sign = 1;
    if (v[0] == '-' || v[0] == '+') {
      if (v[0] == '-') sign = -1;
      v = v.substr(1);
    }
    double value = 0;
    std::stringstream parts(v);
    std::string part;
    while (std::getline(parts, part, ':')) value = value * 60 + std::stod(part);
    return json(sign * value);
  }
  return json(std::stod(v));
}

struct YamlError {
  YAML::Mark mark;
  std::string rule, message;
};

// Builds the JSON value from yaml-cpp's events, keeping the line of every mapping key.
class JsonBuilder final : public YAML::EventHandler {
 public:
  explicit JsonBuilder(std::map<std::string, int>* lines) : lines_(lines) {}

  json result;
  int documents = 0;

  void OnDocumentStart(const YAML::Mark&) override { ++documents; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { add(json(nullptr), mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw YamlError{mark, "yaml_alias", "alias to an undefined anchor"};
    nodes_ += it->second.second;
    if (nodes_ > kMaxYamlNodes)
      throw YamlError{mark, "yaml_too_large", "aliases expand to more than " + std::to_string(kMaxYamlNodes) + " values"};
    add(it->second.first, mark, 0, it->second.second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    check_tag(mark, tag);
    add(tag == "!" ? json(value) : resolve(value, mark), mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    check_tag(mark, tag);
    open(json::array(), mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    check_tag(mark, tag);
    open(json::object(), mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    json value;
    YAML::anchor_t anchor = 0;
    std::size_t nodes_at_open = 0;
    std::optional<std::string> key;  // a mapping's pending key
    std::set<std::string> keys;
    std::string path;
  };

  static void check_tag(const YAML::Mark& mark, const std::string& tag) {
    if (tag.empty() || tag == "?" || tag == "!") return;
    throw YamlError{mark, "yaml_tag", "explicit tag '" + tag.substr(0, 60) + "': Bridge's run_config.yaml (yaml.safe_dump of plain data) has none"};
  }

  // PyYAML's resolution of a plain scalar.
  static json resolve(const std::string& v, const YAML::Mark& mark) {
    if (is_null_scalar(v)) return json(nullptr);
    if (std::regex_match(v, bool_re())) {
      const char c = v[0];
      return json(c == 'y' || c == 'Y' || c == 't' || c == 'T' || v == "on" || v == "On" || v == "ON");
    }
    if (std::regex_match(v, int_re())) {
      if (auto i = yaml_int(v)) return *i;
      throw YamlError{mark, "yaml_number", "integer " + v.substr(0, 40) + " does not fit in 64 bits"};
    }
    if (std::regex_match(v, float_re())) return yaml_float(v);
    return json(v);
  }

  std::string child_path() const {
    if (stack_.empty()) return "";
    const Frame& top = stack_.back();
    const std::string sep = top.path.empty() ? "" : ".";
    if (top.value.is_object()) return top.path + sep + top.key.value_or("");
    return top.path + "[" + std::to_string(top.value.size()) + "]";
  }

  void open(json value, const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (stack_.size() >= kMaxYamlDepth)
      throw YamlError{mark, "yaml_too_deep", "nested more than " + std::to_string(kMaxYamlDepth) + " levels deep"};
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().key)
      throw YamlError{mark, "yaml_key", "a mapping key must be a scalar, not a mapping or a list"};
    Frame f;
    f.value = std::move(value);
    f.anchor = anchor;
    f.nodes_at_open = nodes_;
    f.path = child_path();
    count(mark);
    stack_.push_back(std::move(f));
  }

  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.anchor != 0) anchors_[f.anchor] = {f.value, nodes_ - f.nodes_at_open};
    place(std::move(f.value));
  }

  void count(const YAML::Mark& mark, std::size_t n = 1) {
    nodes_ += n;
    if (nodes_ > kMaxYamlNodes)
      throw YamlError{mark, "yaml_too_large", "more than " + std::to_string(kMaxYamlNodes) + " values"};
  }

  // A scalar, null or alias value: a mapping key when the mapping waits for one.
  void add(json value, const YAML::Mark& mark, YAML::anchor_t anchor, std::size_t nodes = 1) {
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().key) {
      Frame& top = stack_.back();
      if (!value.is_string() && !value.is_number_integer() && !value.is_boolean())
        throw YamlError{mark, "yaml_key", "a mapping key must be a string"};
      const std::string key = value.is_string() ? value.get<std::string>() : value.dump();
      if (!top.keys.insert(key).second)
        throw YamlError{mark, "duplicate_key", "key '" + key.substr(0, 80) + "' appears twice in the same mapping (" + (top.path.empty() ? std::string("top level") : top.path) + "); PyYAML would silently keep the last"};
      top.key = key;
      if (lines_) (*lines_)[child_path()] = mark.line + 1;
      return;
    }
    if (nodes == 1) count(mark);
    if (anchor != 0) anchors_[anchor] = {value, 1};
    place(std::move(value));
  }

  void place(json value) {
    if (stack_.empty()) {
      result = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_object()) {
      top.value[*top.key] = std::move(value);
      top.key.reset();
    } else {
      top.value.push_back(std::move(value));
    }
  }

  std::map<std::string, int>* lines_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, std::pair<json, std::size_t>> anchors_;
  std::size_t nodes_ = 0;
};

}  // namespace

std::optional<json> parse_yaml_text(std::string_view text, const std::string& file, Diagnostics& out,
                                    std::map<std::string, int>* lines) {
  const auto error = [&](int line, const std::string& rule, const std::string& message) {
    out.push_back({Severity::error, "", rule, file + (line > 0 ? ":" + std::to_string(line) : "") + ": " + message});
  };
  if (text.size() > kMaxYamlBytes) {
    error(0, "yaml_too_large", "the file is " + std::to_string(text.size()) + " bytes; a run_config.yaml is under 16 MiB");
    return std::nullopt;
  }
  std::string owned(text);
  std::istringstream in(owned);
  JsonBuilder builder(lines);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      if (builder.documents > 1) {
        error(0, "yaml_documents", "more than one YAML document; a run_config.yaml is one mapping");
        return std::nullopt;
      }
    }
  } catch (const YamlError& e) {
    error(e.mark.line + 1, e.rule, e.message);
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    error(e.mark.is_null() ? 0 : e.mark.line + 1, "yaml_syntax", "not valid YAML: " + e.msg);
    return std::nullopt;
  } catch (const std::exception& e) {
    error(0, "yaml_syntax", std::string("not valid YAML: ") + e.what());
    return std::nullopt;
  }
  if (builder.documents == 0 || builder.result.is_null()) {
    error(0, "yaml_empty", "the file holds no YAML document");
    return std::nullopt;
  }
  if (!builder.result.is_object()) {
    error(1, "spec_not_object", "the document is not a mapping of sections");
    return std::nullopt;
  }
  return builder.result;
}

}  // namespace peakcast::model::detail
