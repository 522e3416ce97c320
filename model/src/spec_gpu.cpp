// cluster.gpu: a shipped GPU (configs/gpus/<name>.json) or an object whose missing figures come
// from the shipped GPU of the same name, else from the one with the closest memory size.
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "peakcast/model/embedded_configs.hpp"
#include "spec_parser_detail.hpp"
#include "spec_suggest.hpp"

namespace peakcast::model::detail {

using nlohmann::json;

namespace {

struct GpuPreset {
  std::string file_name;  // without .json
  json doc;
};

std::vector<GpuPreset> gpu_presets() {
  std::vector<GpuPreset> presets;
  for (const std::string& p : embedded_config_paths("gpus/")) {
    const auto text = embedded_config(p);
    if (!text) continue;
    json doc = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) continue;
    std::string name = p.substr(5);
    if (name.size() > 5) name = name.substr(0, name.size() - 5);
    presets.push_back({name, std::move(doc)});
  }
  return presets;
}

// Copies the figures of `src` (a preset or the user's object) that are present and well typed.
void apply_figures(const json& src, GpuSpec& gpu) {
  auto num = [&](const char* key, double& dst) {
    if (const auto it = src.find(key); it != src.end() && it->is_number()) dst = it->get<double>();
  };
  if (const auto it = src.find("name"); it != src.end() && it->is_string()) gpu.name = it->get<std::string>();
  if (const auto it = src.find("memory_bytes"); it != src.end() && it->is_number_integer()) {
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      gpu.memory_bytes = Bytes{it->get<std::int64_t>()};
  }
  num("bf16_dense_tflops", gpu.bf16_dense_tflops);
  num("fp8_dense_tflops", gpu.fp8_dense_tflops);
  num("fp32_tflops", gpu.fp32_tflops);
  num("hbm_bandwidth_gbps", gpu.hbm_bandwidth_gbps);
  num("nvlink_bandwidth_gbps", gpu.nvlink_bandwidth_gbps);
  if (const auto it = src.find("compute_capability_major"); it != src.end() && it->is_number_integer())
    // Clamped only so the int holds it; validate_magnitudes refuses anything outside [1, 20].
    gpu.compute_capability_major = static_cast<int>(std::clamp<std::int64_t>(it->get<std::int64_t>(), -1, 1000));
  auto count = [&](const char* key, int& dst) {  // clamped only so the int holds it; validate_magnitudes sets the range
    if (const auto it = src.find(key); it != src.end() && it->is_number_integer())
      dst = static_cast<int>(std::clamp<std::int64_t>(it->get<std::int64_t>(), -1, 1000000));
  };
  count("multiprocessor_count", gpu.multiprocessor_count);
  count("max_threads_per_multiprocessor", gpu.max_threads_per_multiprocessor);
  if (const auto it = src.find("source"); it != src.end() && it->is_string()) gpu.source = it->get<std::string>();
}

std::string preset_list(const std::vector<GpuPreset>& presets) {
  std::string list;
  for (const auto& p : presets) list += std::string(list.empty() ? "" : ", ") + p.file_name;
  return list.empty() ? "(none shipped)" : list;
}

const GpuPreset* find_preset(const std::vector<GpuPreset>& presets, const std::string& name) {
  for (const auto& p : presets) {
    if (p.file_name == name) return &p;
    if (const auto it = p.doc.find("name"); it != p.doc.end() && it->is_string() && it->get<std::string>() == name) return &p;
  }
  return nullptr;
}

}  // namespace

void fill_gpu(const json& gpu_value, GpuSpec& gpu, Diagnostics& out) {
  // The shipped GPU files are compiled in: parse them once per process.
  static const std::vector<GpuPreset> presets = gpu_presets();
  if (gpu_value.is_string()) {
    const std::string name = gpu_value.get<std::string>();
    if (const GpuPreset* p = find_preset(presets, name)) {
      apply_figures(p->doc, gpu);
      return;
    }
    std::vector<std::string> names;
    for (const auto& p : presets) names.push_back(p.file_name);
    std::string msg = "no shipped GPU named \"" + name.substr(0, 80) + "\"; available: " + preset_list(presets) +
                      "; or give an object {\"name\": ..., \"memory_bytes\": N}";
    if (auto s = closest_name(name, names)) msg += "; did you mean \"" + *s + "\"?";
    out.push_back({Severity::error, "cluster.gpu", "unknown_gpu", msg});
    return;
  }
  if (!gpu_value.is_object()) return;  // reported by the type check

  std::string name;
  if (const auto it = gpu_value.find("name"); it != gpu_value.end() && it->is_string()) name = it->get<std::string>();
  const auto mem_it = gpu_value.find("memory_bytes");
  const bool has_memory = mem_it != gpu_value.end() && mem_it->is_number_integer();
  if (!has_memory) {
    out.push_back({Severity::error, "cluster.gpu.memory_bytes", "gpu_memory_required",
                   "a GPU given as an object needs memory_bytes (usable allocator capacity in bytes)"});
  }
  // Defaults for the figures left out: the preset of that name, else the closest in memory size.
  const GpuPreset* base = find_preset(presets, name);
  if (base == nullptr && has_memory && !presets.empty()) {
    const double want = mem_it->get<double>();
    double best = std::numeric_limits<double>::infinity();
    for (const auto& p : presets) {
      const auto it = p.doc.find("memory_bytes");
      if (it == p.doc.end() || !it->is_number()) continue;
      const double d = std::abs(it->get<double>() - want);
      if (d < best) {
        best = d;
        base = &p;
      }
    }
  }
  if (base != nullptr) apply_figures(base->doc, gpu);
  apply_figures(gpu_value, gpu);
  if (base != nullptr && gpu.source.empty()) gpu.source = "figures not given default to " + base->file_name;
}

}  // namespace peakcast::model::detail
