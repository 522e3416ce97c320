#include "spec_suggest.hpp"

#include <algorithm>

#include "spec_schema.hpp"

namespace peakcast::model::detail {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Two-row Levenshtein; inputs are key names, so sizes are small, but cap them to bound the work.
  a = a.substr(0, 128);
  b = b.substr(0, 128);
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {
std::size_t allowed_distance(std::string_view word) { return std::max<std::size_t>(2, word.size() / 3); }
}  // namespace

std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = allowed_distance(word) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::optional<std::string> suggest_key(std::string_view section, std::string_view key) {
  static const std::vector<std::string> kSpecSections = {"model", "train", "optimizer", "ddp", "cluster"};
  // Same key in another section: the commonest mistake (model.micro_batch_size).
  if (section != "cluster.gpu") {
    for (const auto& s : kSpecSections) {
      if (s != section && find_field(s, key) != nullptr) return s + "." + std::string(key);
    }
  }
  if (const SectionSchema* own = section_schema(section)) {
    std::vector<std::string> names;
    for (const auto& [name, _] : *own) names.push_back(name);
    if (auto c = closest_name(key, names)) return section == "top" ? *c : std::string(section) + "." + *c;
  }
  if (section == "top" || section == "cluster.gpu") return std::nullopt;
  std::vector<std::string> qualified;
  for (const auto& s : kSpecSections) {
    if (s == section) continue;
    if (const SectionSchema* other = section_schema(s)) {
      for (const auto& [name, _] : *other) qualified.push_back(name);
    }
  }
  if (auto c = closest_name(key, qualified)) {
    for (const auto& s : kSpecSections) {
      if (find_field(s, *c) != nullptr) return s + "." + *c;
    }
  }
  return std::nullopt;
}

}  // namespace peakcast::model::detail
