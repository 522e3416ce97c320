// parse_alloc_conf: PYTORCH_CUDA_ALLOC_CONF as torch reads it (c10/core/AllocatorConfig.cpp,
// AllocatorConfig::parseArgs and its parse* helpers): tokens split at ',', ':', '[' and ']', spaces
// dropped; max_split_size_mb and max_non_split_rounding_mb at least 20 (kLargeBuffer in MiB);
// roundup_power2_divisions a power of two for every interval, or a list "[MiB:divisions, ..., >:d]"
// whose MiB keys are powers of two naming the interval [2^k MiB, 2^(k+1) MiB), the first entry also
// filling the intervals below it and ">" the rest; expandable_segments True or False.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/model/caching_allocator.hpp"

namespace peakcast::model {

namespace {

constexpr std::size_t kIntervals = 16;  // kRoundUpPowerOfTwoIntervals (1 MiB .. 64 GiB)
constexpr std::int64_t kMiB = 1 << 20;
constexpr std::int64_t kMinSplitMb = 20;  // kLargeBuffer / kMB: the least max_split_size_mb

std::vector<std::string> lex(const std::string& env) {
  std::vector<std::string> out;
  std::string buf;
  for (const char c : env) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!buf.empty()) out.push_back(buf);
      buf.clear();
      out.emplace_back(1, c);
    } else if (c != ' ') {
      buf += c;
    }
  }
  if (!buf.empty()) out.push_back(buf);
  return out;
}

bool to_int(const std::string& s, std::int64_t& v) {
  if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  v = std::stoll(s);
  return true;
}

bool power_of_two(std::int64_t v) { return v > 0 && std::has_single_bit(static_cast<std::uint64_t>(v)); }

struct Lexed {
  const std::vector<std::string>& t;
  std::size_t i = 0;
  std::string error;
  bool take(const char* what) {
    if (i < t.size() && t[i] == what) {
      ++i;
      return true;
    }
    if (error.empty()) error = std::string("expected '") + what + "'" + (i < t.size() ? " before '" + t[i] + "'" : " at the end");
    return false;
  }
  bool value(std::string& v) {
    if (i < t.size()) {
      v = t[i++];
      return true;
    }
    if (error.empty()) error = "a value is missing at the end";
    return false;
  }
};

// "[256:1,512:2,>:4]" or one number, into the 16 interval entries.
bool divisions(Lexed& lx, std::vector<std::int64_t>& out) {
  out.assign(kIntervals, 0);
  std::string v;
  if (!lx.value(v)) return false;
  std::int64_t d = 0;
  if (v != "[") {
    if (!to_int(v, d) || !power_of_two(d)) return lx.error = "roundup_power2_divisions: " + v + " is not a power of two", false;
    out.assign(kIntervals, d);
    return true;
  }
  std::size_t last = 0;
  bool first = true;
  while (lx.i < lx.t.size() && lx.t[lx.i] != "]") {
    std::string key, val;
    if (!lx.value(key) || !lx.take(":") || !lx.value(val)) return false;
    if (!to_int(val, d) || (d != 0 && !power_of_two(d)))
      return lx.error = "roundup_power2_divisions: " + val + " is neither 0 nor a power of two", false;
    if (key == ">") {
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(last), out.end(), d);
    } else {
      std::int64_t mb = 0;
      if (!to_int(key, mb) || !power_of_two(mb)) return lx.error = "roundup_power2_divisions: interval " + key + " is not a power of two", false;
      const std::size_t index = std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(mb)) - 1), kIntervals - 1);
      if (first) std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(index), d);
      first = false;
      out[index] = d;
      last = index;
    }
    if (lx.i < lx.t.size() && lx.t[lx.i] == ",") ++lx.i;
  }
  return lx.take("]");
}

bool megabytes(Lexed& lx, const std::string& name, std::int64_t& bytes) {
  std::string v;
  std::int64_t mb = 0;
  if (!lx.value(v)) return false;
  if (!to_int(v, mb) || mb < kMinSplitMb) return lx.error = name + " must be a whole number of MiB >= 20, not " + v, false;
  bytes = mb * kMiB;
  return true;
}

bool boolean(Lexed& lx, const std::string& name, bool& b) {
  std::string v;
  if (!lx.value(v)) return false;
  if (v != "True" && v != "False") return lx.error = name + " takes True or False, not " + v, false;
  b = v == "True";
  return true;
}

// One option at lx.i (its name already read); false with lx.error on a bad value or unknown name.
bool option(Lexed& lx, const std::string& name, AllocConfParse& out) {
  if (!lx.take(":")) return false;
  AllocatorSettings& s = out.settings;
  if (name == "max_split_size_mb") return megabytes(lx, name, s.max_split_size);
  if (name == "max_non_split_rounding_mb") return megabytes(lx, name, s.max_non_split_rounding);
  if (name == "roundup_power2_divisions") return divisions(lx, s.roundup_power2_divisions);
  if (name == "expandable_segments") return out.expandable_given = true, boolean(lx, name, s.expandable_segments);
  static const char* const kAccepted[] = {"garbage_collection_threshold", "backend", "release_lock_on_cudamalloc",
                                          "pinned_use_cuda_host_register", "pinned_num_register_threads",
                                          "pinned_use_background_threads"};
  for (const char* k : kAccepted) {
    if (name != k) continue;
    std::string v;
    if (!lx.value(v)) return false;
    // backend:native is the allocator modelled; the others change what it does, or only pinned memory.
    if (!(name == "backend" && v == "native")) out.unmodelled.push_back(name + ":" + v);
    return true;
  }
  lx.error = "unrecognized caching-allocator option " + name;
  return false;
}

}  // namespace

AllocConfParse parse_alloc_conf(const std::string& conf) {
  AllocConfParse out;
  const std::vector<std::string> tokens = lex(conf);
  Lexed lx{tokens, 0, {}};
  while (lx.i < tokens.size()) {
    const std::string name = tokens[lx.i++];
    if (!option(lx, name, out)) break;
    if (lx.i < tokens.size() && !lx.take(",")) break;
  }
  out.error = lx.error;
  // An all-zero division table is the default (plain 512 B rounding).
  auto& d = out.settings.roundup_power2_divisions;
  if (std::all_of(d.begin(), d.end(), [](std::int64_t x) { return x == 0; })) d.clear();
  return out;
}

}  // namespace peakcast::model
