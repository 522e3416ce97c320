#pragma once
// Stage model building: the segments each model chunk of a pipeline stage runs, under a recompute
// policy. Layer graphs depend on shapes (and, for chunked MLPs, on whether `mlp` is recomputed), so
// one builder serves every policy of a run; the spec handed to stage() may differ from the
// builder's in its recompute and offloading fields only.
// Private to peakcast_sim.
#include <map>
#include <string>
#include <vector>

#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/run_spec.hpp"
#include "peakcast/sim/framework_fixed.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "peakcast/sim/policy.hpp"
#include "peakcast/sim/time_model.hpp"
#include "segment.hpp"

namespace peakcast::sim::detail {

class StageBuilder {
 public:
  StageBuilder(const model::RunSpec& spec, const model::Derived& d);

  // The chunks of pipeline rank `pp_rank` in schedule order, with each segment's time filled in.
  std::vector<ChunkModel> stage(const model::RunSpec& spec, const model::Derived& d, const model::PipelineStage& stage,
                                std::int64_t pp_rank, GraphBypass bypass, const TimeModel& time);

  // The dummy weight gradients a stage keeps under gradient_accumulation_fusion: one per distinct
  // [out, in] shape (and the activation dtype) among the linears of its layers and loss head.
  Bytes dummy_wgrads(const model::RunSpec& spec, const model::Derived& d, const model::PipelineStage& stage);

  // What the stage's layers keep for the rest of the run (LayerGraph::persistent): DSA's top-k holders.
  std::vector<FixedBlock> persistent_blocks(const model::RunSpec& spec, const model::Derived& d, const model::PipelineStage& stage);

  const ShapeContext& shapes() const { return ctx_; }

 private:
  const LayerGraph& layer_graph(const model::RunSpec& spec, const model::Derived& d, const model::LayerSpec& l);
  ChunkModel chunk(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c, std::int64_t pp_rank,
                   GraphBypass bypass);
  void add_layers(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c, const ChunkPolicy& pol,
                  ChunkModel& cm);
  void add_mtp_and_output(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c,
                          const ChunkPolicy& pol, ChunkModel& cm);
  Bytes deferred_wgrad_bytes(const model::RunSpec& spec, const model::Derived& d) const;
  void link_t5_stacks(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c, ChunkModel& cm);

  ShapeContext ctx_;
  // T5: the decoder's shapes (its sequence, the encoder's as the cross-attention's keys), and the step between
  // the stacks (the encoder's final norm, the decoder tokens' embedding).
  bool t5_ = false;
  ShapeContext dec_ctx_;
  LayerGraph t5_bridge_;
  bool hybrid_ = false;
  std::map<std::string, LayerGraph> graph_cache_;
  ProfileCache profiles_;
  LayerGraph embedding_, output_, mtp_wrapper_;
};

}  // namespace peakcast::sim::detail
