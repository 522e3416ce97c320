#pragma once
// "Did you mean ...?" for misspelt keys and values: Levenshtein distance over the known names.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peakcast::model::detail {

std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate within a distance that scales with the word's length, if any.
std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& candidates);

// For an unknown key of `section`: the same key in another section ("train.micro_batch_size"),
// else the closest key of this section, else the closest key anywhere (as "section.key").
std::optional<std::string> suggest_key(std::string_view section, std::string_view key);

}  // namespace peakcast::model::detail
