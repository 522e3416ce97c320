#pragma once
// The caching-allocator replay of one rank's walk: the memory walk (memory_walk.cpp) calls it at
// each forward, backward, flush and optimizer step, and it turns them into the allocations and
// frees of the tensors involved, in program order, fed straight to CachingAllocatorModel (nothing
// is stored: the cost is O(requests), and the walk already covers the schedule with the fewest
// micro-batches that repeat its steady state). Private to peakcast_sim.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "module_script.hpp"
#include "peakcast/model/caching_allocator.hpp"
#include "peakcast/model/static_allocations.hpp"
#include "peakcast/model/static_memory.hpp"
#include "peakcast/sim/allocator_replay.hpp"
#include "peakcast/sim/framework_fixed.hpp"
#include "routing_band.hpp"
#include "segment.hpp"

namespace peakcast::sim::detail {

// Module scripts, computed once per (graph, checkpoint set) and shared by the ranks of a Predictor.
class ScriptCache {
 public:
  const ModuleScript& get(const LayerGraph& g, const CheckpointSet& ckpt);

 private:
  std::map<std::pair<const LayerGraph*, CheckpointSet>, ModuleScript> scripts_;
};

// Everything besides the chunks: the allocator's settings and the blocks the walk holds in `base`.
struct ReplaySetup {
  model::AllocatorSettings settings;
  const model::StaticMemory* sm = nullptr;
  const model::StaticAllocations* statics = nullptr;  // nullptr: the model state as one block per kind
  Bytes global_buffer;                                // Megatron's global memory buffer (one block)
  Bytes cublas_workspace;                             // each cuBLAS workspace
  int forward_workspaces = 1, backward_workspaces = 0;
  std::vector<FixedBlock> rotary_caches;  // a model's cached rotary tables (framework_fixed.hpp)
  std::vector<FixedBlock> te_workspaces;  // Transformer Engine's GEMM workspaces (framework_fixed.hpp)
  Bytes framework_fixed;                  // the profile's fitted framework bytes (one block)
  Bytes dummy_wgrads, drain_buffers, graph_static_buffers;
  int microbatches = 1;
  std::int64_t graph_sets = 1;                        // graph_pool.hpp
  bool local_graphs = false;                          // cuda_graph_impl local: capture_layer_graphs() replays the pool
  const std::vector<ChunkModel>* captured = nullptr;  // the captured layers (checkpoints bypassed)
  bool deallocate_outputs = true;
  std::int64_t deferral_limit = 0;
  ScriptCache* scripts = nullptr;
  std::vector<std::int64_t>* trace = nullptr;       // RankPrediction::allocator_trace, when recorded
  std::vector<std::string>* trace_where = nullptr;  // with trace: each request's module, phase and tensor
  double routing_sigma = 0;                         // > 0: keep the routed request stream for routing_band()
};

class AllocRecorder {
 public:
  AllocRecorder(const std::vector<ChunkModel>& chunks, const ReplaySetup& setup);
  void begin_pass(int iteration, bool first, bool graphed, bool whole_graph);
  void forward(int c, int mb);
  void backward(int c, int mb);
  void combined(int f_chunk, int f_mb, int b_chunk, int b_mb);  // combined_step.hpp
  void backward_started();                                      // iteration 1's first backward GEMM: workspaces and dummy wgrads appear
  void flush(bool first);                                       // the deferred output-layer wgrad's pipeline flush
  void optimizer(bool first);
  AllocatorReplay result() const;
  // The reserved peak over `samples` sampled routings of the recorded stream (routing_band.hpp); absent
  // without routing_sigma or without a routed request.
  std::optional<AllocatorReplay::RoutingBand> routing_band(int samples) const;

 private:
  // What one segment of one (chunk, micro-batch) keeps from its forward to its backward.
  struct Kept {
    std::vector<int> slots;               // script slot -> tensor id (plain segments)
    std::vector<int> owned;               // other tensors it holds: a kept input, residual blocks, a group's input
    std::vector<std::vector<int>> parts;  // full-recompute groups: each part's slots during the replay
    std::vector<Bytes> offloaded;         // sizes to bring back before the backward (cpu_offloading)
  };
  struct KeptChunk {
    std::vector<Kept> segments;
    int extra = -1;
  };

  // `row_group`, `row_groups`: the request's routed rows (ModuleScript::Step), kept for routing_band().
  int alloc(Bytes bytes, std::int16_t row_group = -1, std::int16_t row_groups = 0);
  void free(int id);
  void free_param_grad(int id);
  void free_all(std::vector<int>& ids);
  Bytes bytes_of(int id) const { return id >= 0 ? bytes_[static_cast<std::size_t>(id)] : Bytes{}; }
  void play(const ModuleScript& sc, std::span<const ModuleScript::Step> steps, std::vector<int>& slots, int keep_slot,
            int also_keep = -1);
  bool capture_layer_graphs();
  void capture_at_schedule_end();
  void play_in_pool(const std::vector<ModuleScript::Step>& steps, std::vector<int>& slots);
  void static_state();
  // A forward or backward of one (chunk, micro-batch) in progress, module by module.
  struct Run {
    int c = 0, mb = 0;
    bool whole = false;          // nothing module by module (an empty virtual stage, a full-iteration graph)
    KeptChunk kc;                // backward: what the forward kept
    int flow = -1;               // forward: the tensor passed between modules; backward: the flowing gradient
    std::vector<int> in_flight;  // forward: offloaded tensors whose copy to the host completes with the next layer
  };
  Run forward_begin(int c, int mb);
  void forward_module(Run& f, std::size_t i);
  void forward_end(Run& f);
  Run backward_begin(int c, int mb);
  void backward_module(Run& b, std::size_t i);
  void backward_end(Run& b);
  void forward_plain(const Segment& s, std::vector<int>& retained, bool input_kept, int& flow, Kept& k);
  void forward_group(const Segment& s, int& flow, Kept& k);
  int backward_plain(const Segment& s, std::size_t i, int mb, int grad, Kept& k, std::vector<int>& retained);
  int backward_group(const Segment& s, int grad, Kept& k);
  int backward_part(const Segment::Part& part, std::vector<int>& slots, int grad, std::vector<int>* deferred = nullptr,
                    int* callers_grad = nullptr, std::vector<int>* retained = nullptr);
  void prefetch(Kept& k);
  // The layer instance the next requests belong to (routing_band.hpp).
  void at(int c, int mb, std::size_t module) {
    at_ = {c, mb, module};
    at_part(0);
  }
  void at_part(std::size_t part) { instance_ = routing_instance(iteration_, at_.c, at_.mb, at_.module, part); }
  void note(const std::string* name, const char* phase) {
    where_name_ = name;
    where_phase_ = phase;
  }

  const std::vector<ChunkModel>& chunks_;
  ReplaySetup setup_;
  model::CachingAllocatorModel alloc_;
  model::CachingAllocatorModel pool_;  // the local graphs' private pool (CudaGraphManager.global_mempool)
  bool captured_ = false;
  bool defer_param_grads_ = false;  // local graphs, after the captures: free_param_grad defers
  // The stream the eager requests are made on: Megatron's local graphs switch to a side stream when the
  // first CudaGraphManager is built and back to the default one after the captures.
  static constexpr int kDefaultStream = 0, kManagerStream = 1;
  int stream_ = kDefaultStream;
  Bytes eager_peak_before_capture_, total_peak_after_capture_;
  std::vector<int> handle_;   // tensor id -> allocator handle (-1: freed)
  std::vector<Bytes> bytes_;  // tensor id -> requested bytes
  std::vector<KeptChunk> kept_;
  std::vector<std::vector<std::vector<int>>> retained_;  // (chunk, segment): blocks kept past its backward
  std::vector<int> carried_, deferred_;
  std::vector<int> carried_activation_;  // Segment::carried_activation_grad's blocks
  std::int64_t deferred_entries_ = 0;
  int iteration_ = 1;
  bool graphed_ = false, whole_graph_ = false, workspaces_taken_ = false, graph_static_taken_ = false;
  const std::string* where_name_ = nullptr;
  const char* where_phase_ = "setup";
  std::string where_tensor_;  // the script slot being allocated, named (trace_where only)
  std::int64_t requested_ = 0;
  AllocatorReplay out_;
  std::vector<RoutedRequest> routed_;  // with routing_sigma: every request and free, in order
  struct At {
    int c = 0, mb = 0;
    std::size_t module = 0;
  } at_;
  std::uint64_t instance_ = 0;
};

}  // namespace peakcast::sim::detail
