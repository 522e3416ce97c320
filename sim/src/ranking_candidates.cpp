// Candidate enumeration for `peakcast rank`: which recompute policies exist for a model, and which
// of them Megatron's TransformerConfig accepts (decided by validate(), never duplicated here).
#include <algorithm>
#include <set>
#include <string>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/validate.hpp"
#include "peakcast/sim/ranking.hpp"

namespace peakcast::sim {

using model::RecomputeTag;

std::string describe(const RecomputeChoice& c) {
  using model::RecomputeGranularity;
  if (c.cpu_offloading) return "cpu_offloading N=" + std::to_string(c.cpu_offloading_num_layers);
  if (c.granularity == RecomputeGranularity::full) {
    const char* m = c.method == model::RecomputeMethod::block ? "block" : "uniform";
    return std::string("full ") + m + " N=" + std::to_string(c.num_layers.value_or(0));
  }
  if (c.granularity == RecomputeGranularity::none) return "none";
  std::string s = "[";
  for (std::size_t i = 0; i < c.modules.size(); ++i) s += (i ? ", " : "") + std::string(model::to_string(c.modules[i]));
  return s + "]";
}

model::RunSpec with_choice(model::RunSpec spec, const RecomputeChoice& c) {
  auto& m = spec.model;
  m.recompute_granularity = c.granularity;
  m.recompute_modules = c.modules;
  m.recompute_method = c.method;
  m.recompute_num_layers = c.num_layers;
  m.cpu_offloading = c.cpu_offloading;
  m.cpu_offloading_num_layers = c.cpu_offloading_num_layers;
  m.moe_layer_recompute = false;  // deprecated alias of the `moe` tag; the candidate says it explicitly
  return spec;
}

std::vector<RecomputeTag> applicable_tags(const model::RunSpec& spec) {
  const model::Derived d = model::derive(spec);
  const model::LayerPlan plan = model::build_layer_plan(spec, d);
  bool attention = false, mla = false, dense = false, moe = false, gdn = false;
  for (const auto& l : plan.decoder_layers) {
    attention |= l.mixer == model::MixerKind::attention || l.mixer == model::MixerKind::mla || l.mixer == model::MixerKind::dsa;
    mla |= l.mixer == model::MixerKind::mla || l.mixer == model::MixerKind::dsa;
    gdn |= l.mixer == model::MixerKind::gdn;
    dense |= l.ffn == model::FfnKind::dense;
    moe |= l.ffn == model::FfnKind::moe;
  }
  const auto& m = spec.model;
  std::vector<RecomputeTag> tags;
  if (attention) tags.push_back(RecomputeTag::core_attn);
  if (mla) tags.push_back(RecomputeTag::mla_up_proj);
  tags.push_back(RecomputeTag::layernorm);
  if (moe && m.moe_grouped_gemm) tags.push_back(RecomputeTag::moe_act);
  if (dense) tags.push_back(RecomputeTag::mlp);
  if (moe) tags.push_back(RecomputeTag::moe);
  if (moe && m.moe_shared_expert_intermediate_size.value_or(0) > 0 && !m.moe_shared_expert_overlap)
    tags.push_back(RecomputeTag::shared_experts);
  if (gdn) tags.push_back(RecomputeTag::gdn_norm_out);
  return tags;
}

std::int64_t max_layers_per_chunk(const model::RunSpec& spec) {
  const model::LayerPlan plan = model::build_layer_plan(spec, model::derive(spec));
  std::int64_t most = 0;
  for (const auto& st : plan.stages)
    for (const auto& c : st.chunks) {
      std::int64_t n = 0;
      for (const auto& l : c.layers) n += l.is_mtp ? 0 : 1;
      most = std::max(most, n);
    }
  return most;
}

std::vector<std::int64_t> uniform_layer_counts(std::int64_t layers_per_chunk) {
  // Divisors give groups that tile a chunk exactly; powers of two cover the usual recipes
  // (recompute_num_layers 1, 2, 4, 8) when the chunk size is prime or odd.
  std::set<std::int64_t> n;
  for (std::int64_t k = 1; k <= layers_per_chunk; ++k)
    if (layers_per_chunk % k == 0) n.insert(k);
  for (std::int64_t k = 1; k < layers_per_chunk; k *= 2) n.insert(k);
  return {n.begin(), n.end()};
}

std::vector<std::int64_t> block_layer_counts(std::int64_t layers_per_chunk) {
  std::vector<std::int64_t> n;
  for (std::int64_t k = 1; k <= layers_per_chunk; ++k) n.push_back(k);
  return n;
}

std::vector<std::int64_t> block_layer_samples(std::int64_t layers_per_chunk) {
  if (layers_per_chunk <= kBlockCountsInFull) return block_layer_counts(layers_per_chunk);
  std::set<std::int64_t> n{layers_per_chunk};
  for (std::int64_t k = 1; k < layers_per_chunk; k *= 2) n.insert(k);
  for (std::int64_t k = 1; k * k <= layers_per_chunk; ++k)
    if (layers_per_chunk % k == 0) n.insert({k, layers_per_chunk / k});
  return {n.begin(), n.end()};
}

namespace {

std::string first_error(const model::Diagnostics& diags) {
  for (const auto& d : diags)
    if (d.severity == model::Severity::error) return d.path + ": " + d.message + " [" + d.rule + "]";
  return {};
}

std::vector<RecomputeChoice> structural_candidates(const model::RunSpec& spec, std::int64_t per_chunk) {
  std::vector<RecomputeChoice> out;
  // Selective: every subset of the applicable tags, in the order Megatron lists them.
  const auto tags = applicable_tags(spec);
  const std::size_t subsets = std::size_t{1} << tags.size();
  std::vector<std::vector<RecomputeTag>> lists;
  for (std::size_t mask = 0; mask < subsets; ++mask) {
    std::vector<RecomputeTag> l;
    for (std::size_t i = 0; i < tags.size(); ++i)
      if (mask & (std::size_t{1} << i)) l.push_back(tags[i]);
    lists.push_back(std::move(l));
  }
  std::stable_sort(lists.begin(), lists.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  for (auto& l : lists) {
    RecomputeChoice c;
    c.granularity = model::RecomputeGranularity::selective;
    c.modules = std::move(l);
    out.push_back(std::move(c));
  }
  // Full recompute counts layers per model chunk (recompute.py); so do these N values.
  for (const auto method : {model::RecomputeMethod::uniform, model::RecomputeMethod::block}) {
    const auto counts = method == model::RecomputeMethod::uniform ? uniform_layer_counts(per_chunk)
                                                                  : block_layer_samples(per_chunk);
    for (const std::int64_t n : counts) {
      RecomputeChoice c;
      c.granularity = model::RecomputeGranularity::full;
      c.method = method;
      c.num_layers = n;
      out.push_back(c);
    }
  }
  // Layer-level CPU offloading: N in [1, num_layers - 1] (rule 1); PP == 1 and no recompute
  // (rules 2, 3). Powers of two and the maximum keep the list short.
  if (spec.model.pipeline_model_parallel_size == 1) {
    std::set<std::int64_t> ns;
    const std::int64_t most = spec.model.num_layers - 1;
    for (std::int64_t k = 1; k <= most; k *= 2) ns.insert(k);
    if (most >= 1) ns.insert(most);
    for (const std::int64_t n : ns) {
      RecomputeChoice c;
      c.cpu_offloading = true;
      c.cpu_offloading_num_layers = n;
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string megatron_refusal(const model::RunSpec& spec, const RecomputeChoice& c) {
  return first_error(model::validate(with_choice(spec, c)));
}

CandidateSet enumerate_candidates(const model::RunSpec& spec) {
  CandidateSet set;
  const std::int64_t per_chunk = max_layers_per_chunk(spec);
  if (per_chunk > kBlockCountsInFull) set.block_layers_per_chunk_sampled = per_chunk;
  for (auto& c : structural_candidates(spec, per_chunk)) {
    const std::string err = megatron_refusal(spec, c);
    if (err.empty()) set.accepted.push_back(std::move(c));
    else set.rejected.push_back({std::move(c), err});
  }
  return set;
}

}  // namespace peakcast::sim
