// Text from input on its way to a terminal: control characters escaped (issue #27, item 8).
#include <catch2/catch.hpp>

#include "peakcast/model/diagnostics.hpp"

using namespace peakcast::model;

TEST_CASE("printable escapes C0, DEL and UTF-8 C1 controls, keeps newline, tab and other UTF-8") {
  CHECK(printable("plain text") == "plain text");
  CHECK(printable("a\x1b[31mred") == "a\\x1B[31mred");  // ESC
  CHECK(printable("bell\a") == "bell\\x07");
  CHECK(printable("del\x7f") == "del\\x7F");
  CHECK(printable("csi\xc2\x9b"
                  "2J") == "csi\\xC2\\x9B2J");  // U+009B, the one-byte CSI
  CHECK(printable("line\nnext\tcol") == "line\nnext\tcol");
  CHECK(printable("caf\xc3\xa9 \xc2\xa0") == "caf\xc3\xa9 \xc2\xa0");  // é and a no-break space are text
  CHECK(printable("cr\r") == "cr\\x0D");
}

TEST_CASE("a diagnostic that quotes a key from the input is printable") {
  const Diagnostic d{Severity::error, "model.\x1b]0;pwned\a", "unknown_key", "unknown key \"\x1b]0;pwned\a\""};
  const std::string s = format(d);
  CHECK(s.find('\x1b') == std::string::npos);
  CHECK(s.find('\a') == std::string::npos);
  CHECK(s.find("\\x1B]0;pwned\\x07") != std::string::npos);
}
