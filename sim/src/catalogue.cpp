#include "peakcast/sim/catalogue.hpp"

#include "peakcast/model/spec_parser.hpp"
#include "peakcast/model/validate.hpp"

namespace peakcast::sim {

namespace {

std::string layout_of(const model::RunSpec& s) {
  const auto& m = s.model;
  const model::Derived d = model::derive(s);
  std::string out = "TP" + std::to_string(d.tp) + " PP" + std::to_string(d.pp);
  if (d.vpp > 1) out += " VPP" + std::to_string(d.vpp);
  out += " CP" + std::to_string(d.cp);
  if (m.num_moe_experts) out += " EP" + std::to_string(d.ep) + " ETP" + std::to_string(d.etp);
  if (m.sequence_parallel) out += " SP";
  out += ", MBS " + std::to_string(s.train.micro_batch_size) + " GBS " + std::to_string(s.train.global_batch_size.value_or(0)) +
         ", seq " + std::to_string(m.seq_length);
  return out;
}

std::string precision_of(const model::ModelSpec& m) {
  std::string out = m.bf16 ? "bf16" : m.fp16 ? "fp16"
                                             : "fp32";
  if (m.fp8) {
    const char* recipe = m.fp8_recipe == model::Fp8Recipe::delayed ? "delayed" : m.fp8_recipe == model::Fp8Recipe::tensorwise ? "tensorwise"
                                                                             : m.fp8_recipe == model::Fp8Recipe::mxfp8        ? "mxfp8"
                                                                                                                              : "blockwise";
    out += " + fp8 " + *m.fp8 + " (" + recipe + ")";
  }
  return out;
}

std::string recompute_of(const model::RunSpec& s) {
  const auto& m = s.model;
  if (m.recompute_granularity == model::RecomputeGranularity::full)
    return std::string("full ") + (m.recompute_method == model::RecomputeMethod::block ? "block " : "uniform ") +
           std::to_string(m.recompute_num_layers.value_or(0));
  if (m.recompute_granularity == model::RecomputeGranularity::selective) {
    std::string tags;
    for (const auto t : model::derive(s).selective_tags) tags += (tags.empty() ? "" : ", ") + std::string(model::to_string(t));
    return "selective [" + tags + "]";
  }
  return "none";
}

}  // namespace

std::vector<CatalogueRow> predict_catalogue() {
  std::vector<CatalogueRow> rows;
  for (const auto& info : model::recipe_catalogue()) {
    CatalogueRow row;
    row.recipe = info;
    const auto parsed = model::parse_spec_input("bridge:" + info.name, "", {});
    model::Diagnostics all = parsed.diagnostics;
    if (parsed.spec) {
      const auto v = model::validate(*parsed.spec);
      all.insert(all.end(), v.begin(), v.end());
    }
    for (const auto& d : all)
      if (d.severity == model::Severity::error) {
        row.error_rule = d.rule;
        row.error = (d.path.empty() ? "" : d.path + ": ") + d.message;
        break;
      }
    if (row.error_rule.empty() && parsed.spec) {
      const Prediction p = predict(*parsed.spec);
      row.predicted = true;
      row.layout = layout_of(*parsed.spec);
      row.precision = precision_of(parsed.spec->model);
      row.recompute = recompute_of(*parsed.spec);
      row.max_peak = p.max_peak_allocated;
      row.capacity = p.capacity;
      row.fits = p.fits;
      row.fits_with_allocator_reserve = p.fits_with_allocator_reserve;
      const Verdict v = run_verdict(p);
      row.verdict = v.kind;
      row.margin = v.margin;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace peakcast::sim
