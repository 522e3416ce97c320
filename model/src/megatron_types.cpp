// The type functions of Megatron-LM's parser, applied to one command-line token as argparse applies
// them: Python's int() and float(), type=bool (any non-empty string is True), the enum lookups, and
// the pattern types of megatron/training/arguments.py (moe_freq_type :326, la_freq_type :351,
// no_rope_freq_type :302 through _eval_pattern :244; tuple_type :353).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "megatron_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

std::string_view strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Digits with single underscores between them (Python's digitpart); appends the digits to `out`.
std::size_t digit_part(std::string_view s, std::size_t i, std::string& out) {
  const std::size_t start = i;
  while (i < s.size()) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      out += s[i++];
    } else if (s[i] == '_' && i > start && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      ++i;
    } else {
      break;
    }
  }
  return i;
}

// The largest list a pattern may expand to: far beyond any layer count, small enough to hold.
constexpr std::size_t kMaxPatternItems = 1 << 20;

// _eval_pattern: Python's eval over the characters , digits [ ] ( ) + * only.
class PatternEval {
 public:
  explicit PatternEval(std::string_view s) : s_(s) {}
  std::optional<json> run(std::string* why) {
    auto v = expr();
    if (v && i_ != s_.size()) v = fail("unexpected '" + std::string(1, s_[i_]) + "'");
    if (!v && why) *why = why_;
    return v;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
  std::string why_;
  // A Python tuple is kept as {"tuple": [...]}: it adds only to tuples and is not a layer list.
  static bool is_tuple(const json& v) { return v.is_object(); }

  std::optional<json> fail(const std::string& why) {
    if (why_.empty()) why_ = why;
    return std::nullopt;
  }

  std::optional<json> repeat(const json& seq, std::int64_t n) {
    const json& items = is_tuple(seq) ? seq["tuple"] : seq;
    if (n > 0 && items.size() > 0 && static_cast<std::size_t>(n) > kMaxPatternItems / items.size())
      return fail("the pattern expands to more than " + std::to_string(kMaxPatternItems) + " items");
    json out = json::array();
    for (std::int64_t k = 0; k < n; ++k)
      for (const auto& e : items) out.push_back(e);
    return is_tuple(seq) ? json{{"tuple", out}} : out;
  }

  std::optional<json> multiply(const json& a, const json& b) {
    if (a.is_number_integer() && b.is_number_integer()) {
      const auto x = a.get<std::int64_t>(), y = b.get<std::int64_t>();
      if (x != 0 && std::llabs(y) > std::numeric_limits<std::int64_t>::max() / std::llabs(x)) return fail("integer overflow");
      return json(x * y);
    }
    if (a.is_number_integer() && !b.is_number()) return repeat(b, a.get<std::int64_t>());
    if (b.is_number_integer() && !a.is_number()) return repeat(a, b.get<std::int64_t>());
    return fail("can't multiply sequence by non-int");
  }

  std::optional<json> add(const json& a, const json& b) {
    if (a.is_number_integer() && b.is_number_integer()) {
      const auto x = a.get<std::int64_t>(), y = b.get<std::int64_t>();
      if (y > 0 && x > std::numeric_limits<std::int64_t>::max() - y) return fail("integer overflow");
      return json(x + y);
    }
    if (a.is_array() && b.is_array()) {
      if (a.size() + b.size() > kMaxPatternItems) return fail("the pattern expands too far");
      json out = a;
      out.insert(out.end(), b.begin(), b.end());
      return out;
    }
    if (is_tuple(a) && is_tuple(b)) {
      json out = a["tuple"];
      for (const auto& e : b["tuple"]) out.push_back(e);
      return json{{"tuple", out}};
    }
    return fail("can only concatenate a list to a list (or add integers)");
  }

  std::optional<json> expr() {
    auto v = term();
    while (v && i_ < s_.size() && s_[i_] == '+') {
      ++i_;
      auto r = term();
      if (!r) return r;
      v = add(*v, *r);
    }
    return v;
  }
  std::optional<json> term() {
    auto v = factor();
    while (v && i_ < s_.size() && s_[i_] == '*') {
      ++i_;
      auto r = factor();
      if (!r) return r;
      v = multiply(*v, *r);
    }
    return v;
  }
  // Items up to `close`; a trailing comma is allowed, and a comma makes a parenthesis a tuple.
  std::optional<json> items(char close, bool* had_comma) {
    json out = json::array();
    while (i_ < s_.size() && s_[i_] != close) {
      auto v = expr();
      if (!v) return v;
      out.push_back(*v);
      if (i_ < s_.size() && s_[i_] == ',') {
        *had_comma = true;
        ++i_;
      } else break;
    }
    if (i_ >= s_.size() || s_[i_] != close) return fail(std::string("missing '") + close + "'");
    ++i_;
    return out;
  }
  std::optional<json> factor() {
    if (i_ >= s_.size()) return fail("unexpected end of the pattern");
    const char c = s_[i_];
    if (c == '+') {
      ++i_;
      auto v = factor();
      if (v && !v->is_number()) return fail("bad operand for unary +");
      return v;
    }
    if (c == '[') {
      ++i_;
      bool comma = false;
      return items(']', &comma);
    }
    if (c == '(') {
      ++i_;
      bool comma = false;
      auto v = items(')', &comma);
      if (!v) return v;
      if (!comma && v->size() == 1) return (*v)[0];
      return json{{"tuple", *v}};
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::string digits;
      const std::size_t end = digit_part(s_, i_, digits);
      if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos)
        return fail("leading zeros in decimal integer literals are not permitted");
      i_ = end;
      const auto v = python_int(digits);
      if (!v) return fail("integer too large");
      return json(*v);
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }
};

}  // namespace

std::optional<std::int64_t> python_int(std::string_view text, std::string* why) {
  std::string_view s = strip(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::string digits;
  if (s.empty() || digit_part(s, 0, digits) != s.size() || digits.empty()) {
    if (why) *why = "invalid int value: '" + std::string(text) + "'";
    return std::nullopt;
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll((negative ? "-" + digits : digits).c_str(), &end, 10);
  if (errno == ERANGE) {
    if (why) *why = "'" + std::string(text) + "' is outside the 64-bit integer range";
    return std::nullopt;
  }
  return static_cast<std::int64_t>(v);
}

std::optional<double> python_float(std::string_view text, std::string* why) {
  std::string_view s = strip(text);
  std::string lowered;
  for (char c : s) lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string_view bare = !lowered.empty() && (lowered[0] == '+' || lowered[0] == '-') ? std::string_view(lowered).substr(1)
                                                                                             : std::string_view(lowered);
  if (bare == "inf" || bare == "infinity" || bare == "nan") {
    if (why) *why = "'" + std::string(text) + "' is not a finite number (Python reads it; a run spec holds finite numbers)";
    return std::nullopt;
  }
  std::string number;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) number += s[i++];
  const std::size_t before = number.size();
  i = digit_part(s, i, number);
  bool mantissa = number.size() > before;
  if (i < s.size() && s[i] == '.') {
    number += s[i++];
    const std::size_t frac = number.size();
    i = digit_part(s, i, number);
    mantissa = mantissa || number.size() > frac;
  }
  if (mantissa && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    number += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) number += s[i++];
    const std::size_t exp = number.size();
    i = digit_part(s, i, number);
    if (number.size() == exp) mantissa = false;
  }
  if (!mantissa || i != s.size()) {
    if (why) *why = "invalid float value: '" + std::string(text) + "'";
    return std::nullopt;
  }
  const double v = std::strtod(number.c_str(), nullptr);
  if (!std::isfinite(v)) {
    if (why) *why = "'" + std::string(text) + "' overflows a double";
    return std::nullopt;
  }
  return v;
}

std::optional<json> python_freq_pattern(std::string_view s, std::string* why) {
  if (s.find('[') == std::string_view::npos) {  // "a single int but in str"
    const auto v = python_int(s, why);
    return v ? std::optional<json>(json(*v)) : std::nullopt;
  }
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && std::string_view(",[]()+*").find(c) == std::string_view::npos) {
      if (why) *why = "Invalid pattern: " + std::string(s) + " (_eval_pattern allows only digits and , [ ] ( ) + *)";
      return std::nullopt;
    }
  }
  auto v = PatternEval(s).run(why);
  if (!v) return v;
  if (v->is_number_integer()) return v;
  const bool flat = v->is_array() && std::all_of(v->begin(), v->end(), [](const json& e) { return e.is_number_integer(); });
  if (!flat) {
    if (why) *why = "'" + std::string(s) + "' does not evaluate to a list of integers";
    return std::nullopt;
  }
  return v;
}

std::optional<json> python_int_tuple(std::string_view s, std::string* why) {
  std::string_view t = s;
  while (!t.empty() && (t.front() == '(' || t.front() == ')')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == '(' || t.back() == ')')) t.remove_suffix(1);
  json out = json::array();
  std::size_t start = 0;
  while (true) {
    const auto comma = t.find(',', start);
    const auto v = python_int(t.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start), why);
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<json> convert_value(const ArgDef& def, const std::string& token, std::string* why) {
  const std::string& type = def.type;
  if (type == "int") {
    const auto v = python_int(token, why);
    return v ? std::optional<json>(json(*v)) : std::nullopt;
  }
  if (type == "float") {
    const auto v = python_float(token, why);
    return v ? std::optional<json>(json(*v)) : std::nullopt;
  }
  if (type == "bool") return json(!token.empty());  // type=bool: bool("False") is True
  if (type == "moe_freq_type" || type == "la_freq_type" || type == "no_rope_freq_type") return python_freq_pattern(token, why);
  if (type == "tuple_type") return python_int_tuple(token, why);
  if (type == "_parse_cuda_graph_modules_arg") {
    // Deprecated spellings pass through; anything else is CudaGraphModule[scope] (enums.py:61-72).
    for (const char* ok : {"full", "full_iteration", "full_iteration_inference", "attn", "mlp", "moe", "moe_router",
                           "moe_preprocess", "mamba"})
      if (token == ok) return json(token);
    if (why) *why = "invalid _parse_cuda_graph_modules_arg value: '" + token + "'";
    return std::nullopt;
  }
  if (type.rfind("enum:", 0) == 0) {
    const json& choices = (*def.j)["choices"];
    if (choices.is_array()) {
      for (const auto& c : choices)
        if (c.is_string() && c.get<std::string>() == token) return json(token);
    } else if (token.rfind("SIG", 0) == 0 && token.size() > 3 &&
               std::all_of(token.begin() + 3, token.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)); })) {
      return json(token);  // signal.Signals[name]: the platform's signal names
    }
    if (why) *why = "invalid " + type.substr(5) + " value: '" + token + "'";
    return std::nullopt;
  }
  return json(token);  // str, or no type: the token itself
}

}  // namespace peakcast::model::detail
