// Parses untrusted text into JSON without letting it crash or exhaust the process.
#include <cstddef>
#include <string>
#include <vector>

#include "spec_parser_detail.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxTextBytes = 64u << 20;  // a run spec is a few KB; refuse absurd inputs
constexpr std::size_t kMaxDepth = 64;             // run specs nest 3 deep

struct TooDeep {};

struct Frame {
  bool object = false;
  std::set<std::string> keys;
  std::string key;
  std::size_t count = 0;
};

std::string frames_path(const std::vector<Frame>& frames, const std::string& root) {
  std::string p = root;
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    const Frame& f = frames[i];
    if (f.object) {
      if (!p.empty()) p += '.';
      p += f.key;
    } else {
      p += '[';
      p += std::to_string(f.count);
      p += ']';
    }
  }
  return p;
}

// Parser messages quote the bytes they stopped at; keep them printable and short.
std::string printable(std::string s) {
  for (char& c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  if (s.size() > 200) s = s.substr(0, 197) + "...";
  return s;
}

}  // namespace

std::optional<json> parse_json_text(std::string_view text, const std::string& path, const std::string& origin,
                                    Diagnostics& out) {
  const std::string where = origin.empty() ? "" : origin + ": ";
  if (text.size() > kMaxTextBytes) {
    out.push_back({Severity::error, path, "json_syntax",
                   where + "input is " + std::to_string(text.size()) + " bytes; a run spec must be under 64 MiB"});
    return std::nullopt;
  }
  bool only_space = true;
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      only_space = false;
      break;
    }
  }
  if (only_space) {
    out.push_back({Severity::error, path, "json_syntax", where + "input is empty; expected a JSON object"});
    return std::nullopt;
  }

  std::vector<Frame> frames;
  std::vector<std::string> duplicates;
  auto on_event = [&](int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (frames.size() >= kMaxDepth) throw TooDeep{};
        frames.push_back(Frame{event == json::parse_event_t::object_start, {}, {}, 0});
        break;
      case json::parse_event_t::key:
        if (!frames.empty() && parsed.is_string()) {
          Frame& top = frames.back();
          top.key = parsed.get<std::string>();
          if (!top.keys.insert(top.key).second && duplicates.size() < 20) {
            std::string p = frames_path(frames, path);
            duplicates.push_back(p + std::string(p.empty() ? "" : ".") + top.key);
          }
        }
        break;
      case json::parse_event_t::value:
        if (!frames.empty() && !frames.back().object) ++frames.back().count;
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        if (!frames.empty() && !frames.back().object) ++frames.back().count;
        break;
    }
    return true;
  };

  // Where the parser stopped, as a key path (the key being read when a number overflowed, say).
  auto current_path = [&]() {
    if (frames.empty()) return path;
    std::string p = frames_path(frames, path);
    const Frame& top = frames.back();
    if (top.object) return top.key.empty() ? p : p + std::string(p.empty() ? "" : ".") + top.key;
    return p + "[" + std::to_string(top.count) + "]";
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const TooDeep&) {
    out.push_back({Severity::error, frames_path(frames, path), "json_syntax",
                   where + "nested more than " + std::to_string(kMaxDepth) + " levels deep; a run spec nests 3"});
    return std::nullopt;
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    if (const auto pos = msg.find("] "); msg.rfind("[json.exception", 0) == 0 && pos != std::string::npos) {
      msg = msg.substr(pos + 2);
    }
    out.push_back({Severity::error, current_path(), "json_syntax", where + "not valid JSON: " + printable(msg)});
    return std::nullopt;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (const auto pos = msg.find("] "); msg.rfind("[json.exception", 0) == 0 && pos != std::string::npos) {
      msg = msg.substr(pos + 2);
    }
    out.push_back({Severity::error, current_path(), "json_syntax",
                   where + "not valid JSON: " + printable(msg) + " (numbers must be finite and fit in a double)"});
    return std::nullopt;
  }
  for (const auto& d : duplicates) {
    out.push_back({Severity::error, d, "duplicate_key",
                   where + "key appears more than once in the same object; JSON readers would silently keep only one"});
  }
  if (!duplicates.empty()) return std::nullopt;
  return doc;
}

}  // namespace peakcast::model::detail
