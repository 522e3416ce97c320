#include "peakcast/model/diagnostics.hpp"

#include <algorithm>
#include <cstdio>

namespace peakcast::model {

bool has_errors(const Diagnostics& d) {
  return std::any_of(d.begin(), d.end(), [](const Diagnostic& x) { return x.severity == Severity::error; });
}

std::string format(const Diagnostic& d) {
  std::string s = d.severity == Severity::error ? "error: " : "warning: ";
  if (!d.path.empty()) s += d.path + ": ";
  s += d.message;
  if (!d.rule.empty()) s += " [" + d.rule + "]";
  return printable(s);
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char c) {
    char buf[5];
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    out += buf;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool c0 = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F;
    const bool c1 = c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    if (c0) {
      escape(c);
    } else if (c1) {
      escape(c);
      escape(static_cast<unsigned char>(text[++i]));
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace peakcast::model
