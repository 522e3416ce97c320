// AllocRecorder: tensor ids over the allocator model, the model state's creation order, the fixed
// framework blocks, the optimizer steps and the result. The forward and backward of the segments:
// alloc_recorder_walk.cpp.
#include "alloc_recorder.hpp"

#include <algorithm>

namespace peakcast::sim::detail {

const ModuleScript& ScriptCache::get(const LayerGraph& g, const CheckpointSet& ckpt) {
  const auto key = std::make_pair(&g, ckpt);
  auto it = scripts_.find(key);
  if (it == scripts_.end()) it = scripts_.emplace(key, module_script(g, ckpt)).first;
  return it->second;
}

AllocRecorder::AllocRecorder(const std::vector<ChunkModel>& chunks, const ReplaySetup& setup)
    : chunks_(chunks), setup_(setup), alloc_(setup.settings), pool_(setup.settings) {
  pool_.set_capacity(0);  // the verdict sets the pool and the cache together against the device
  kept_.resize(chunks.size() * static_cast<std::size_t>(std::max(1, setup.microbatches)));
  retained_.resize(chunks.size());
  for (std::size_t c = 0; c < chunks.size(); ++c) retained_[c].assign(chunks[c].segments.size(), {});
}

int AllocRecorder::alloc(Bytes bytes, std::int16_t row_group, std::int16_t row_groups) {
  if (bytes.value <= 0) return -1;
  auto h = alloc_.allocate(bytes, stream_);
  if (h == model::CachingAllocatorModel::kFailed) {
    if (!out_.first_failure) {
      AllocatorReplay::Failure f;
      f.request = bytes;
      f.allocated = alloc_.allocated();
      f.reserved = alloc_.reserved();
      f.where = (where_name_ ? *where_name_ + " " : std::string()) + "(" + where_phase_ + ", iteration " + std::to_string(iteration_) + ")";
      out_.first_failure = std::move(f);
    }
    // Go on as if the device were larger: the rest of the run still says what it would reserve.
    alloc_.set_capacity(0);
    h = alloc_.allocate(bytes, stream_);
  }
  ++out_.requests;
  if (captured_) total_peak_after_capture_ = max(total_peak_after_capture_, alloc_.reserved() + pool_.peak_reserved());
  requested_ += bytes.value;
  out_.peak_requested = max(out_.peak_requested, Bytes{requested_});
  if (alloc_.allocated() > out_.peak_allocated) {
    out_.peak_allocated = alloc_.allocated();
    out_.largest_free_at_peak = alloc_.largest_free_block();
    out_.reserved_at_peak = alloc_.reserved();
  }
  handle_.push_back(h);
  bytes_.push_back(bytes);
  if (setup_.trace) setup_.trace->push_back(bytes.value);
  if (setup_.trace_where)
    setup_.trace_where->push_back((where_name_ ? *where_name_ + " " : std::string()) + where_phase_ + " it" +
                                  std::to_string(iteration_) + (where_tensor_.empty() ? "" : ": " + where_tensor_));
  const int id = static_cast<int>(handle_.size()) - 1;
  if (setup_.routing_sigma > 0) routed_.push_back({bytes.value, id, row_group, row_groups, instance_});
  return id;
}

void AllocRecorder::free(int id) {
  if (id < 0) return;
  int& h = handle_[static_cast<std::size_t>(id)];
  if (h < 0) return;  // already freed (two owners let go of one tensor)
  alloc_.release(h);
  h = -1;
  if (setup_.trace) setup_.trace->push_back(-static_cast<std::int64_t>(id) - 1);
  if (setup_.routing_sigma > 0) routed_.push_back({0, id});
  requested_ -= bytes_[static_cast<std::size_t>(id)].value;
}

// A parameter's gradient, dropped by the DDP hook. Under Megatron's local CUDA graphs every AccumulateGrad
// node was made on the manager's side stream (DDP is built after the first CudaGraphManager switched to it,
// and a node keeps the stream current when it was made: torch input_metadata.cpp), so once the eager modules
// run on the default stream the autograd engine record_stream()s each gradient on the side stream
// (input_buffer.cpp, InputBuffer::add) and its free waits for that stream's event (CUDACachingAllocator
// free -> insert_events). The events are only found complete at the next malloc after the host waits for the
// GPU, which the training loop first does in the optimizer step (optimizer()): measured on cg_gqa8b_* (H100,
// session 24), the output layer's and the embedding's bf16 weight gradients of every micro-batch stayed out of
// the cache until the step.
void AllocRecorder::free_param_grad(int id) {
  if (!defer_param_grads_ || id < 0) return free(id);
  int& h = handle_[static_cast<std::size_t>(id)];
  if (h < 0) return;
  alloc_.release_deferred(h);
  h = -1;
  if (setup_.trace) setup_.trace->push_back(-static_cast<std::int64_t>(id) - 1);
  if (setup_.routing_sigma > 0) routed_.push_back({0, id});
  requested_ -= bytes_[static_cast<std::size_t>(id)].value;
}

void AllocRecorder::free_all(std::vector<int>& ids) {
  for (const int id : ids) free(id);
  ids.clear();
}

namespace {

// A module script over slot -> id, through `allocate(step) -> id` and `release(id, param_grad)` (which
// ignores id < 0); a free of `keep_slot` or `also_keep` is skipped (the caller keeps that tensor).
template <class Steps, class Allocate, class Release, class Workspaces>
void play_script(const Steps& steps, std::vector<int>& slots, int keep_slot, int also_keep, Allocate&& allocate,
                 Release&& release, Workspaces&& workspaces) {
  for (const auto& st : steps) {
    if (st.kind == ModuleScript::Kind::workspaces) {
      workspaces();
      continue;
    }
    int& s = slots[static_cast<std::size_t>(st.slot)];
    switch (st.kind) {
      case ModuleScript::Kind::alloc:
        release(s, false);
        s = allocate(st);
        break;
      case ModuleScript::Kind::free:
        if (st.slot == keep_slot || st.slot == also_keep) break;
        release(s, st.param_grad);
        s = -1;
        break;
      case ModuleScript::Kind::move: {
        int& f = slots[static_cast<std::size_t>(st.from)];
        if (s != f) release(s, false);
        s = f;
        f = -1;
        break;
      }
      case ModuleScript::Kind::workspaces: break;
    }
  }
}

}  // namespace

// A script over slot -> tensor id.
void AllocRecorder::play(const ModuleScript& sc, std::span<const ModuleScript::Step> steps, std::vector<int>& slots,
                         int keep_slot, int also_keep) {
  play_script(
      steps, slots, keep_slot, also_keep,
      [this, &sc](const ModuleScript::Step& st) {
        if (setup_.trace_where) where_tensor_ = slot_name(sc, st.slot);
        const int id = alloc(Bytes{st.bytes}, st.row_group, st.row_groups);
        where_tensor_.clear();
        return id;
      },
      [this](int id, bool param_grad) { param_grad ? free_param_grad(id) : free(id); }, [this] { backward_started(); });
}

// Model build (a tensor per parameter), the DDP wrap (param_data and grad_data per buffer; with the
// distributed optimizer the parameters then move into param_data and their own storage goes), the
// optimizer build (a clone per owned range turned into its fp32 main parameter). Whatever the sums
// of static_memory_per_rank hold beyond these tensors comes as one block per kind.
void AllocRecorder::static_state() {
  const model::StaticMemory& sm = *setup_.sm;
  note(nullptr, "model build");
  Bytes params{}, grads{}, mains{};
  if (setup_.statics) {
    const auto& st = *setup_.statics;
    std::vector<int> ids;
    std::vector<bool> in_buffer(st.parameters.size(), false);
    for (std::size_t k = 0; k < st.parameters.size(); ++k) {
      const int first = k < st.rebuilt.size() && st.rebuilt[k] ? alloc(st.parameters[k]) : -1;
      ids.push_back(alloc(st.parameters[k]));
      free(first);
    }
    for (const auto& buf : st.buffers) {
      alloc(buf.param_data);
      alloc(buf.grad_data);
      params += buf.param_data;
      grads += buf.grad_data;
      for (const std::size_t m : buf.members) {
        in_buffer[m] = true;
        if (st.parameters_move_into_buffers) free(ids[m]);
      }
    }
    // Parameters that stay in their own storage: all of them without the distributed optimizer,
    // the frozen (PEFT) ones, which no buffer holds, with it.
    for (std::size_t k = 0; k < st.parameters.size(); ++k)
      if (!st.parameters_move_into_buffers || !in_buffer[k]) params += st.parameters[k];
    for (const auto& t : st.optimizer) {
      const int clone = alloc(t.clone);
      alloc(t.main);
      free(clone);
      mains += t.main;
    }
  }
  alloc(sm.buffers);
  alloc(sm.parameters > params ? sm.parameters - params : Bytes{});
  alloc(sm.gradients > grads ? sm.gradients - grads : Bytes{});
  alloc(sm.main_params > mains ? sm.main_params - mains : Bytes{});
  alloc(sm.fp8_weight_cache);
  // The framework's fixed blocks: the global memory buffer, the forward's cuBLAS workspaces (PyTorch's,
  // then Transformer Engine's), the profile's fitted remainder.
  note(nullptr, "forward");
  for (const auto& b : setup_.rotary_caches)  // GPTModel._preprocess computes them before the first layer
    for (int k = 0; k < b.count; ++k) alloc(b.bytes);
  alloc(setup_.global_buffer);
  for (int k = 0; k < setup_.forward_workspaces; ++k) alloc(setup_.cublas_workspace);
  for (const auto& b : setup_.te_workspaces)
    for (int k = 0; k < b.count; ++k) alloc(b.bytes);
  alloc(setup_.framework_fixed);
}

void AllocRecorder::begin_pass(int iteration, bool first, bool graphed, bool whole_graph) {
  iteration_ = iteration;
  graphed_ = graphed;
  whole_graph_ = whole_graph;
  if (first) {
    // The first CudaGraphManager switches to a side stream "since capture requires no operations on
    // the default stream prior to the capture" (cuda_graphs.py:1857-1859): the model state, DDP
    // buffers, optimizer build and iteration 1's forward-backward are requested on it.
    if (setup_.local_graphs && !whole_graph) stream_ = kManagerStream;
    static_state();
  }
  out_.pass_starts.push_back(out_.requests);
  if (graphed && !graph_static_taken_) {  // local graphs took theirs at the end of iteration 1's schedule
    graph_static_taken_ = true;
    alloc(setup_.graph_static_buffers);
  }
}

// A module script over slot -> pool handle (-1: not in the pool, e.g. a static input buffer).
void AllocRecorder::play_in_pool(const std::vector<ModuleScript::Step>& steps, std::vector<int>& slots) {
  play_script(
      steps, slots, -1, -1, [this](const ModuleScript::Step& st) { return pool_.allocate(Bytes{st.bytes}); },
      [this](int h, bool) {
        if (h >= 0) pool_.release(h);
      },
      [] {});  // a captured layer's workspaces are the eager cache's
}

// Megatron's local graphs (cuda_graphs.py _create_cudagraphs, :540-620): every recorded graph is
// captured once, in the order of its first run (each captured layer's forward, then their backwards
// in reverse), into the one private pool all runners share (CudaGraphManager.global_mempool,
// :1851-1852). A forward's saved tensors stay allocated in the pool until its backward's capture;
// whatever a capture frees goes back to the pool for the next one. The static inputs, outputs and
// gradients are the eager blocks of graph_static_buffers. Measured per pool on the H200
// (calibration/data/diagnostics/graph_pool_s20.json): the pool within 0.6 % (MLA) to 16 % under.
// The eager side's streams and the empty_cache() before the captures: capture_at_schedule_end. Not
// modelled: the static buffers the captures take from the pool (cuda_graphs.py:285-295) are eager
// blocks here, and the captures' warm-up runs. Replayed only for one graph set of single-module
// segments; otherwise (false) the pool stays the simulator's sum (graph_pool.cpp).
bool AllocRecorder::capture_layer_graphs() {
  if (setup_.graph_sets != 1 || !setup_.captured) return false;
  std::vector<const Segment*> captured;
  for (const auto& cm : *setup_.captured)
    for (const auto& s : cm.segments) {
      if (s.captured_held.value > 0 && !s.graph_captured) return false;
      if (!s.graph_captured) continue;
      if (s.parts.size() != 1 || !s.parts.front().graph) return false;
      captured.push_back(&s);
    }
  if (captured.empty()) return false;
  eager_peak_before_capture_ = alloc_.peak_reserved();
  std::vector<std::vector<int>> kept;
  for (const Segment* s : captured) {
    const ModuleScript& sc = setup_.scripts->get(*s->parts.front().graph, s->parts.front().ckpt);
    std::vector<int> slots(static_cast<std::size_t>(sc.slots()), -1);
    play_in_pool(sc.forward, slots);
    std::vector<bool> held(slots.size(), false);
    for (const int t : sc.held) held[static_cast<std::size_t>(t)] = true;
    for (std::size_t t = 0; t < slots.size(); ++t)
      if (!held[t] && slots[t] >= 0) {  // the output goes to its static buffer, the rest back to the pool
        pool_.release(slots[t]);
        slots[t] = -1;
      }
    kept.push_back(std::move(slots));
  }
  for (std::size_t k = captured.size(); k-- > 0;) {
    const Segment::Part& part = captured[k]->parts.front();
    const ModuleScript& sc = setup_.scripts->get(*part.graph, part.ckpt);
    play_in_pool(sc.backward, kept[k]);
    for (int& h : kept[k])
      if (h >= 0) pool_.release(h);
  }
  total_peak_after_capture_ = alloc_.reserved() + pool_.peak_reserved();
  return true;
}

// create_cudagraphs() at the end of iteration 1's schedule (schedules.py:871), before its optimizer
// step: each capture's torch.cuda.graph.__enter__ first runs torch.cuda.empty_cache() (torch/cuda/graphs.py),
// which returns the side stream's wholly free segments (iteration 1's activations) to the device; the
// graphs' static buffers are taken on the side stream; then set_stream(default_stream()) (cuda_graphs.py:674):
// the optimizer steps and every later iteration are requested on the default stream, whose cached blocks
// the side stream's do not serve, and whose first GEMMs take cuBLAS workspaces of their own (PyTorch keys
// them by handle and stream, CublasHandlePool.cpp getCurrentCUDABlasHandle). The graphs' warm-up runs
// and gradient backups between captures are not replayed (each is freed before the next empty_cache()).
void AllocRecorder::capture_at_schedule_end() {
  if (stream_ != kManagerStream || graph_static_taken_ || !setup_.captured) return;  // side stream: local graphs only
  bool recorded = false;                                                             // nothing recorded: create_cudagraphs() returns at once (cuda_graphs.py:558-560)
  for (const auto& cm : *setup_.captured)
    for (const auto& s : cm.segments) recorded = recorded || s.graph_captured;
  if (!recorded) return;
  graph_static_taken_ = true;
  alloc_.empty_cache();
  captured_ = capture_layer_graphs();
  alloc(setup_.graph_static_buffers);
  stream_ = kDefaultStream;
  defer_param_grads_ = true;  // free_param_grad
  for (int k = 0; k < setup_.forward_workspaces + setup_.backward_workspaces; ++k) alloc(setup_.cublas_workspace);
}

void AllocRecorder::backward_started() {
  if (workspaces_taken_) return;
  workspaces_taken_ = true;
  for (int k = 0; k < setup_.backward_workspaces; ++k) alloc(setup_.cublas_workspace);
  alloc(setup_.dummy_wgrads);
}

void AllocRecorder::flush(bool first) {
  if (deferred_entries_ == 0) return;
  static const std::string flush_name = "output_layer.deferred_wgrad";
  note(&flush_name, "backward");
  if (first) {
    alloc(Bytes{setup_.drain_buffers.value / 2});  // the two alternating gather buffers "mpu_0", "mpu_1"
    alloc(Bytes{setup_.drain_buffers.value - setup_.drain_buffers.value / 2});
  }
  free_all(deferred_);
  deferred_entries_ = 0;
}

// step(), as MixedPrecisionOptimizer.step / ChainedOptimizer.step run it (optimizer.py:816-846,
// :1855-1930): prepare_grads makes every main.grad copy; clipping scales each gradient (a temporary per
// gradient on torch's fallback, static_memory_optimizer.cpp); then each member of the chain (the dense
// optimizer, then the expert one) steps: the first step creates its state tensors (AdamW _init_group,
// parameter by parameter), every step its foreach temporaries, freed by its end. The copies go at the
// next zero_grad, before the next forward.
void AllocRecorder::optimizer(bool first) {
  if (first) capture_at_schedule_end();
  alloc_.complete_deferred();  // the step's first host sync (free_param_grad)
  static const std::string step_name = "optimizer.step";
  note(&step_name, "optimizer");
  const model::StaticMemory& sm = *setup_.sm;
  Bytes states{};
  std::vector<int> copies, temporaries;
  if (setup_.statics) {
    const auto& opt = setup_.statics->optimizer;
    for (const auto& t : opt) copies.push_back(alloc(t.grad_copy));
    for (const auto& t : opt) free(alloc(t.clip_temporary));
    for (const bool own : {false, true}) {
      if (first)
        for (const auto& t : opt)
          if (t.own_optimizer == own)
            for (const Bytes b : t.states) {
              alloc(b);
              states += b;
            }
      for (const auto& t : opt)
        if (t.own_optimizer == own) temporaries.push_back(alloc(t.temporary));
      free_all(temporaries);
    }
  } else {
    copies.push_back(alloc(first ? sm.step_transient_first : sm.step_transient_steady));
  }
  if (first) alloc(sm.optimizer_states > states ? sm.optimizer_states - states : Bytes{});
  free_all(copies);
}

AllocatorReplay AllocRecorder::result() const {
  AllocatorReplay r = out_;
  r.peak_reserved = alloc_.peak_reserved();  // a pool summed by the simulator comes on top there
  if (captured_) {
    r.graph_pool_replayed = pool_.peak_reserved();
    r.peak_reserved = max(eager_peak_before_capture_, total_peak_after_capture_);
  }
  r.segments = alloc_.segments();
  return r;
}

std::optional<AllocatorReplay::RoutingBand> AllocRecorder::routing_band(int samples) const {
  const bool routed = std::any_of(routed_.begin(), routed_.end(), [](const RoutedRequest& r) { return r.row_group >= 0; });
  if (setup_.routing_sigma <= 0 || samples <= 0 || !routed) return std::nullopt;
  std::vector<Bytes> peaks = routing_band_peaks(routed_, setup_.settings, setup_.routing_sigma, samples);
  std::sort(peaks.begin(), peaks.end());
  AllocatorReplay::RoutingBand band;
  band.min = peaks.front();
  band.median = peaks[peaks.size() / 2];
  band.max = peaks.back();
  band.samples = samples;
  band.sigma = setup_.routing_sigma;
  return band;
}

}  // namespace peakcast::sim::detail
