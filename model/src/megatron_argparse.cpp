// Megatron-LM's parser over the script's arguments, as Python 3.12's argparse runs
// ArgumentParser(allow_abbrev=False) (arguments.py:118-119) with every argument of
// configs/schema/megatron_args.json: only whole option strings match (no prefixes), --opt=value is
// accepted, the last occurrence wins, a flag given a value leaves that value unrecognized, nargs
// '+' / '*' / N take the following values, the type function and the choices check every value.
// parse_args() exits on any unrecognized argument (arguments.py:128-131); so does this, naming it,
// with the closest defined option.
#include <algorithm>
#include <memory>
#include <mutex>
#include <regex>

#include "megatron_detail.hpp"
#include "peakcast/model/embedded_configs.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

struct Table {
  json doc;
  std::vector<ArgDef> defs;
  std::map<std::string, std::size_t> by_option;
  std::map<std::string, std::size_t> by_dest;  // the first argument of each dest (argparse's namespace default)
  std::vector<std::string> option_names;
};

void add_definitions(Table& out, const json& arguments) {
  for (const auto& a : arguments) {
    ArgDef d;
    d.j = &a;
    d.dest = a.value("dest", "");
    d.action = a.value("action", "store");
    d.type = a["type"].is_string() ? a["type"].get<std::string>() : "";
    d.nargs = a["nargs"].is_string() ? a["nargs"].get<std::string>() : (a["nargs"].is_number() ? std::to_string(a["nargs"].get<int>()) : "");
    d.group = a.value("group", "");
    d.conditional = a.contains("conditional");
    for (const auto& o : a["options"]) d.options.push_back(o.get<std::string>());
    out.defs.push_back(std::move(d));
  }
}

void index_definitions(Table& out) {
  for (std::size_t k = 0; k < out.defs.size(); ++k) {
    out.by_dest.emplace(out.defs[k].dest, k);
    for (const auto& o : out.defs[k].options) {
      out.by_option[o] = k;
      out.option_names.push_back(o);
    }
  }
}

// The pinned parser: add_megatron_arguments (arguments.py:45-85) with pretrain_gpt.py's optional
// modelopt arguments.
const Table& argparse_table() {
  static const Table t = [] {
    Table out;
    const auto text = embedded_config("schema/megatron_args.json");
    out.doc = text ? json::parse(*text, nullptr, false) : json::object();
    if (!out.doc.is_object() || !out.doc.contains("arguments")) return out;
    add_definitions(out, out.doc["arguments"]);
    index_definitions(out);
    return out;
  }();
  return t;
}

// Another training script's parser: the pinned one plus its extra_args_provider's arguments
// (megatron_args.json other_scripts), for checking that script's lines.
const Table& table_for(const std::string& script) {
  if (script.empty()) return argparse_table();
  static std::mutex lock;
  static std::map<std::string, std::unique_ptr<Table>> tables;
  std::lock_guard<std::mutex> guard(lock);
  auto& slot = tables[script];
  if (!slot) {
    slot = std::make_unique<Table>();
    const json& base = argparse_table().doc;
    if (base.is_object() && base.contains("arguments")) {
      add_definitions(*slot, base["arguments"]);
      const json& others = base["other_scripts"];
      if (others.contains(script) && others[script].contains("arguments")) add_definitions(*slot, others[script]["arguments"]);
      index_definitions(*slot);
    }
  }
  return *slot;
}

bool takes_value(const ArgDef& d) { return d.action == "store"; }

// argparse's _negative_number_matcher (Python 3.12): such a token is a value, not an option.
bool negative_number(const std::string& s) {
  static const std::regex re("^-\\d+$|^-\\d*\\.\\d+$");
  return std::regex_match(s, re);
}

// The default argparse puts in the namespace: the literal, a string default run through the type
// function, or (for Python expressions) the enum member it names.
json default_of(const ArgDef& d, bool* is_expr) {
  const json& a = *d.j;
  if (a.contains("namespace_default")) return a["namespace_default"];
  json v = a.contains("default") ? a["default"] : json();
  if (a.value("default_is_expr", false) && v.is_string()) {
    const std::string e = v.get<std::string>();
    const auto dot = e.rfind('.');
    // AttnBackend.auto -> "auto", signal.SIGTERM -> "SIGTERM"; int(os.getenv(...)) stays unknown.
    if (e.find('(') == std::string::npos && dot != std::string::npos) return json(e.substr(dot + 1));
    *is_expr = true;
    return json();
  }
  if (v.is_string() && takes_value(d) && d.type != "" && d.type != "str") {
    std::string why;
    if (auto c = convert_value(d, v.get<std::string>(), &why)) return *c;
  }
  return v;
}

struct Token {
  char kind = 'A';  // 'O' a defined option, 'U' an undefined one, 'A' a value, 'D' the first "--"
  std::size_t def = 0;
  std::string option;  // as written, before '='
  std::optional<std::string> explicit_value;
};

Token classify(const Table& tab, const std::string& s, bool after_double_dash) {
  Token t;
  if (after_double_dash || s.empty() || s[0] != '-' || s == "-") return t;
  if (s == "--") {  // argparse: every later token is positional
    t.kind = 'D';
    return t;
  }
  if (const auto it = tab.by_option.find(s); it != tab.by_option.end()) return {'O', it->second, s, std::nullopt};
  const auto eq = s.find('=');
  if (eq != std::string::npos) {
    const std::string name = s.substr(0, eq);
    if (const auto it = tab.by_option.find(name); it != tab.by_option.end()) return {'O', it->second, name, s.substr(eq + 1)};
  }
  if (negative_number(s) || s.find(' ') != std::string::npos) return t;
  t.kind = 'U';
  t.option = s.substr(0, eq);
  return t;
}

std::string suggestion(const Table& tab, const std::string& option) {
  std::string dashed = option;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  if (dashed != option && tab.by_option.count(dashed)) return "; did you mean " + dashed + "?";
  std::string prefix_of;
  for (const auto& o : tab.option_names)
    if (o.rfind(option, 0) == 0 && o != option) {
      prefix_of = o;
      break;
    }
  if (!prefix_of.empty())
    return "; Megatron-LM's parser takes no abbreviations (allow_abbrev=False, arguments.py:119): write the whole "
           "option, e.g. " +
           prefix_of;
  if (auto c = closest_name(option, tab.option_names)) return "; did you mean " + *c + "?";
  return "";
}

class Parser {
 public:
  Parser(const Table& tab, const std::vector<std::string>& tokens, Diagnostics& out) : tab_(tab), tokens_(tokens), out_(out) {}

  std::optional<Namespace> run() {
    const Table& tab = tab_;
    if (tab.defs.empty()) {
      error("", "internal", "configs/schema/megatron_args.json is missing from the build");
      return std::nullopt;
    }
    for (const auto& d : tab.defs) {
      if (ns_.v.count(d.dest)) continue;
      bool expr = false;
      ns_.v[d.dest] = default_of(tab.defs[tab.by_dest.at(d.dest)], &expr);
      if (expr) ns_.expr_default.insert(d.dest);
    }
    bool dd = false;
    for (const auto& s : tokens_) {
      classes_.push_back(classify(tab, s, dd));
      if (!dd && s == "--") dd = true;
    }
    std::size_t i = 0;
    while (i < tokens_.size()) i = step(i);
    if (errors_) return std::nullopt;
    return ns_;
  }

 private:
  const Table& tab_;
  const std::vector<std::string>& tokens_;
  Diagnostics& out_;
  std::vector<Token> classes_;
  Namespace ns_;
  bool errors_ = false;
  std::string last_option_;  // the option the previous values belonged to
  bool last_full_ = false;   // ... and it had all it takes

  void error(const std::string& path, const std::string& rule, const std::string& message) {
    out_.push_back({Severity::error, path, rule, message});
    errors_ = true;
  }

  std::size_t stray(std::size_t i) {
    const std::string& s = tokens_[i];
    if (!last_option_.empty() && last_full_) {
      const ArgDef& d = tab_.defs[tab_.by_option.at(last_option_)];
      if (!takes_value(d))
        error(last_option_, "flag_given_value",
              last_option_ + " is a flag and takes no value; '" + s +
                  "' is left over, and Megatron-LM's parser exits "
                  "with 'unrecognized arguments: " +
                  s + "'" +
                  (d.action == "store_true" || d.action == "store_false" ? " (leave the flag out to keep its default)" : ""));
      else
        error(last_option_, "unexpected_value",
              "'" + s + "' follows " + last_option_ + ", which takes " + (d.nargs.empty() ? "one value" : d.nargs + " values") +
                  "; Megatron-LM's parser exits with 'unrecognized arguments: " + s + "'");
    } else {
      error(s, "not_an_argument", "'" + s +
                                      "' is not an option (Megatron-LM's parser takes no positional arguments: "
                                      "'unrecognized arguments: " +
                                      s + "')");
    }
    return i + 1;
  }

  std::size_t unknown(std::size_t i) {
    std::string values;
    std::size_t j = i + 1;
    while (j < tokens_.size() && classes_[j].kind == 'A') values += " " + tokens_[j++];
    const std::string& opt = classes_[i].option;
    error(opt, "unknown_argument",
          opt +
              " is not an argument of Megatron-LM 24bad8e6 (configs/schema/megatron_args.json); its parser exits with "
              "'unrecognized arguments: " +
              tokens_[i] + values + "'" + suggestion(tab_, opt));
    last_option_.clear();
    return j;
  }

  void store(const ArgDef& d, const std::string& option, json value) {
    if (const auto it = ns_.given.find(d.dest); it != ns_.given.end() && ns_.v[d.dest] != value)
      out_.push_back({Severity::warning, option, "repeated_argument",
                      option + " is given more than once; the last one wins (" + value.dump() + "), as argparse keeps it"});
    ns_.v[d.dest] = std::move(value);
    ns_.given[d.dest] = option;
  }

  bool check_choice(const ArgDef& d, const std::string& option, const json& v, const std::string& token) {
    const json& choices = (*d.j)["choices"];
    if (!choices.is_array() || d.type.rfind("enum:", 0) == 0) return true;
    for (const auto& c : choices)
      if (c == v) return true;
    std::string list;
    for (const auto& c : choices) {
      if (!list.empty()) list += ", ";
      if (c.is_string()) list.append("'").append(c.get<std::string>()).append("'");
      else list += c.dump();
    }
    error(option, "invalid_choice", "argument " + option + ": invalid choice: '" + token + "' (choose from " + list + ")");
    return false;
  }

  std::size_t flag(std::size_t i, const ArgDef& d) {
    const Token& t = classes_[i];
    if (t.explicit_value) {
      error(t.option, "flag_given_value",
            "argument " + t.option + ": ignored explicit argument '" + *t.explicit_value + "' (a flag takes no value)");
      return i + 1;
    }
    bool value = d.action == "store_true";
    if (d.action == "BooleanOptionalAction") value = t.option.rfind("--no-", 0) != 0;
    store(d, t.option, json(value));
    return i + 1;
  }

  std::size_t values(std::size_t i, const ArgDef& d) {
    const Token& t = classes_[i];
    std::vector<std::string> raw;
    std::size_t j = i + 1;
    if (t.explicit_value) {
      raw.push_back(*t.explicit_value);
    } else {
      const std::size_t most = d.nargs.empty() ? 1 : (d.nargs == "+" || d.nargs == "*") ? tokens_.size()
                                                                                        : std::stoul(d.nargs);
      while (j < tokens_.size() && classes_[j].kind == 'A' && raw.size() < most) raw.push_back(tokens_[j++]);
    }
    const std::size_t need = d.nargs.empty() ? 1 : d.nargs == "+" ? 1
                                               : d.nargs == "*"   ? 0
                                                                  : std::stoul(d.nargs);
    const bool exact = d.nargs.empty() || (d.nargs != "+" && d.nargs != "*");
    if (raw.size() < need || (exact && raw.size() != need)) {
      error(t.option, "missing_value",
            "argument " + t.option + ": expected " +
                (d.nargs.empty() ? "one argument" : d.nargs == "+" ? "at least one argument"
                                                                   : d.nargs + " arguments"));
      return j;
    }
    json converted = json::array();
    for (const auto& r : raw) {
      std::string why;
      auto v = convert_value(d, r, &why);
      if (!v) {
        error(t.option, "invalid_value", "argument " + t.option + ": " + why);
        return j;
      }
      if (!check_choice(d, t.option, *v, r)) return j;
      converted.push_back(*v);
    }
    store(d, t.option, d.nargs.empty() ? converted[0] : converted);
    return j;
  }

  std::size_t step(std::size_t i) {
    const Token& t = classes_[i];
    if (t.kind == 'D') {
      last_option_.clear();
      return i + 1;
    }
    if (t.kind == 'U') return unknown(i);
    if (t.kind == 'A') return stray(i);
    const ArgDef& d = tab_.defs[t.def];
    const std::size_t next = takes_value(d) ? values(i, d) : flag(i, d);
    last_option_ = t.option;
    last_full_ = true;
    return next;
  }
};

}  // namespace

const json& Namespace::at(const std::string& dest) const {
  static const json null_value;
  const auto it = v.find(dest);
  return it == v.end() ? null_value : it->second;
}

bool Namespace::flag(const std::string& dest) const {
  const json& x = at(dest);
  if (x.is_boolean()) return x.get<bool>();
  if (x.is_number()) return x.get<double>() != 0;
  if (x.is_string()) return !x.get<std::string>().empty();
  if (x.is_array()) return !x.empty();
  return false;
}

std::int64_t Namespace::integer(const std::string& dest, std::int64_t fallback) const {
  const json& x = at(dest);
  return x.is_number_integer() ? x.get<std::int64_t>() : fallback;
}

std::string Namespace::str(const std::string& dest) const {
  const json& x = at(dest);
  return x.is_string() ? x.get<std::string>() : "";
}

const std::vector<ArgDef>& megatron_arg_defs() { return argparse_table().defs; }

const ArgDef* find_arg_by_dest(const std::string& dest) {
  const auto it = argparse_table().by_dest.find(dest);
  return it == argparse_table().by_dest.end() ? nullptr : &argparse_table().defs[it->second];
}

const json& megatron_args_document() { return argparse_table().doc; }

std::string option_of(const Namespace& ns, const std::string& dest) {
  if (const auto it = ns.given.find(dest); it != ns.given.end()) return it->second;
  const ArgDef* d = find_arg_by_dest(dest);
  return d && !d->options.empty() ? d->options[0] : "--" + dest;
}

std::optional<Namespace> parse_megatron_args(const std::vector<std::string>& tokens, Diagnostics& out, const std::string& script) {
  return Parser(table_for(script), tokens, out).run();
}

}  // namespace peakcast::model::detail
