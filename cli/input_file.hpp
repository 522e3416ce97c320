// Every file a command reads goes through here: read up to a cap, refused beyond it without reading
// the rest (`predict /dev/zero` stops at the cap instead of filling memory).
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace peakcast::cli {

// Run specs, run_config.yaml files and Megatron argument files are kilobytes.
inline constexpr std::size_t kMaxSpecBytes = 16u << 20;
// Corpus JSON-lines files, golden CSVs and profiles: the shipped ones are under 10 MiB.
inline constexpr std::size_t kMaxDataBytes = 256u << 20;

// The file's text; nullopt after printing "error: WHAT: cannot read PATH: REASON" (or "... is larger
// than N MiB") when it cannot be opened, read, or is larger than `max_bytes`.
std::optional<std::string> read_input(const std::string& what, const std::string& path, std::size_t max_bytes);

}  // namespace peakcast::cli
