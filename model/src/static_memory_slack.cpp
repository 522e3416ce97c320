// The caching allocator's slack on a stage's per-parameter tensors without the distributed optimizer.
// Parameters are separate tensors there, and so are Float16OptimizerWithFloat16Params' fp32 main
// parameters and each parameter's Adam moments; a tensor of, say, 11 MiB gets a 12 MiB segment whose
// 1 MiB rest is too small to split off, and max_memory_allocated() counts all 12.
//
// The replay depends only on the request sizes in order, so it is memoized on them: a plan visits
// the same stage under many data-parallel, context-parallel and micro-batch settings (issue #24:
// DeepSeek-V3 on 1,024 GPUs spent most of its time here, replaying every expert tensor per layout).
// The key is the request list run-length encoded (a stage's experts are runs of equal tensors), and
// the replay reads the key itself, so nothing it uses can be missing from it.
#include <algorithm>
#include <array>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "peakcast/model/caching_allocator.hpp"
#include "static_memory_internal.hpp"

namespace peakcast::model {

AllocatorSlack::Step AllocatorSlack::step(Bytes cached) const {
  Step s;
  for (std::size_t i = 0; i < step_slack.size(); ++i) {
    if (step_request_end[i] <= cached) continue;  // carved from the freed memory: no segment of its own
    (i < moments ? s.moments : s.temporaries) += step_slack[i];
  }
  return s;
}

namespace detail {

namespace {

// One parameter's requests, bytes: the parameter, its fp32 main copy (0: none; the clone it is made
// from has the parameter's size), the step's transient (main.grad) and foreach temporary, and its
// optimizer state tensors.
constexpr std::size_t kMaxStates = 3;  // exp_avg, exp_avg_sq and a TE remainder (static_memory_optimizer.cpp)
struct ParamRequests {
  std::int64_t param = 0, main = 0, step_transient = 0, foreach_temporary = 0;
  std::int64_t rebuilt = 0;  // 1: built twice at model build, the first copy freed (param_count.hpp)
  std::array<std::int64_t, kMaxStates> states{};
  std::size_t nstates = 0;
  bool operator==(const ParamRequests&) const = default;
};

// [own optimizer, #buffers, buffers..., then runs of (count, param, main, transient, foreach, rebuilt, #states, states...)].
using SlackKey = std::vector<std::int64_t>;

SlackKey slack_key(const std::vector<ParamRequests>& params, const std::vector<std::int64_t>& buffers, bool own_optimizer) {
  SlackKey k{own_optimizer ? 1 : 0, static_cast<std::int64_t>(buffers.size())};
  k.insert(k.end(), buffers.begin(), buffers.end());
  for (std::size_t i = 0; i < params.size();) {
    std::size_t j = i + 1;
    while (j < params.size() && params[j] == params[i]) ++j;
    const ParamRequests& p = params[i];
    k.insert(k.end(), {static_cast<std::int64_t>(j - i), p.param, p.main, p.step_transient, p.foreach_temporary, p.rebuilt,
                       static_cast<std::int64_t>(p.nstates)});
    k.insert(k.end(), p.states.begin(), p.states.begin() + static_cast<std::ptrdiff_t>(p.nstates));
    i = j;
  }
  return k;
}

// The runs of a key, each with its count.
std::vector<std::pair<std::int64_t, ParamRequests>> runs_of(const SlackKey& k, std::size_t first) {
  std::vector<std::pair<std::int64_t, ParamRequests>> runs;
  for (std::size_t i = first; i < k.size();) {
    std::pair<std::int64_t, ParamRequests> r;
    r.first = k[i];
    r.second.param = k[i + 1];
    r.second.main = k[i + 2];
    r.second.step_transient = k[i + 3];
    r.second.foreach_temporary = k[i + 4];
    r.second.rebuilt = k[i + 5];
    const auto n = static_cast<std::size_t>(k[i + 6]);
    r.second.nstates = n;
    for (std::size_t s = 0; s < n; ++s) r.second.states[s] = k[i + 7 + s];
    runs.push_back(std::move(r));
    i += 7 + n;
  }
  return runs;
}

AllocatorSlack replay(const SlackKey& key) {
  AllocatorSlack out;
  CachingAllocatorModel alloc;
  const bool own_optimizer = key[0] != 0;
  const auto nbuf = static_cast<std::size_t>(key[1]);
  const auto runs = runs_of(key, 2 + nbuf);
  const auto each = [&](const std::function<void(const ParamRequests&)>& f) {
    for (const auto& [count, p] : runs)
      for (std::int64_t c = 0; c < count; ++c) f(p);
  };
  // Model build: every parameter of every chunk in registration order (use_cpu_initialization off).
  std::vector<CachingAllocatorModel::Handle> handles;
  each([&](const ParamRequests& p) {
    const auto first = p.rebuilt ? alloc.allocate(Bytes{p.param}) : CachingAllocatorModel::kFailed;
    handles.push_back(alloc.allocate(Bytes{p.param}));
    if (first != CachingAllocatorModel::kFailed) alloc.release(first);
  });
  for (const auto h : handles) out.parameters += alloc.slack(h);
  // DDP: one gradient buffer per (dtype, expert) group of each chunk.
  for (std::size_t b = 0; b < nbuf; ++b) alloc.allocate(Bytes{key[2 + b]});

  // Optimizer build: main_param = param.detach().clone().float() for each low-precision parameter
  // (optimizer.py Float16OptimizerWithFloat16Params): the clone is freed, the fp32 copy stays.
  each([&](const ParamRequests& p) {
    if (p.main == 0) return;
    const auto clone = alloc.allocate(Bytes{p.param});
    const auto main = alloc.allocate(Bytes{p.main});
    alloc.release(clone);
    out.main_params += alloc.slack(main);
  });

  // First step(), in order: main.grad = model_grad.float() where the grads are not fp32, then the
  // moments (AdamW _init_group: exp_avg, exp_avg_sq per parameter), then torch AdamW's foreach
  // temporaries, freed at the end. A chain of optimizers (expert parallelism) steps its members one
  // after the other, each reusing the last one's freed temporaries: not replayed here.
  if (own_optimizer) return out;
  Bytes before{};
  const auto record = [&](Bytes request, std::vector<CachingAllocatorModel::Handle>* keep) {
    const auto h = alloc.allocate(request);
    before += request;
    out.step_request_end.push_back(before);
    out.step_slack.push_back(alloc.slack(h));
    if (keep) keep->push_back(h);
  };
  std::vector<CachingAllocatorModel::Handle> transient;
  // The grad copies come first in time but count as step transients: keep the moments first in
  // the lists (AllocatorSlack::moments) and the copies' bytes ahead of them in `before`.
  each([&](const ParamRequests& p) { before += Bytes{p.step_transient}; });
  each([&](const ParamRequests& p) {
    for (std::size_t s = 0; s < p.nstates; ++s) record(Bytes{p.states[s]}, nullptr);
  });
  out.moments = out.step_slack.size();
  each([&](const ParamRequests& p) {
    if (p.foreach_temporary > 0) record(Bytes{p.foreach_temporary}, &transient);
  });
  for (const auto h : transient) alloc.release(h);
  return out;
}

struct KeyHash {
  std::size_t operator()(const SlackKey& k) const noexcept {
    std::size_t h = k.size();
    for (const std::int64_t v : k) h ^= std::hash<std::int64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
};

// Process-wide, shared by the planner's threads; emptied when it holds this many results (a
// DeepSeek-V3 stage's result is about 1 MB: two entries per optimizer state tensor).
constexpr std::size_t kSlackMemoEntries = 256;

AllocatorSlack memoized_replay(const SlackKey& key) {
  static std::mutex mutex;
  static std::unordered_map<SlackKey, AllocatorSlack, KeyHash> memo;
  {
    const std::lock_guard lock(mutex);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  AllocatorSlack out = replay(key);
  const std::lock_guard lock(mutex);
  if (memo.size() >= kSlackMemoEntries) memo.clear();
  memo.emplace(key, out);
  return out;
}

}  // namespace

AllocatorSlack allocator_slack(const PipelineStage& stage, const std::vector<std::vector<DdpBuffer>>& buffers,
                               const RunSpec& spec, const Derived& d) {
  const bool fp8_params = spec.model.fp8_param && spec.model.fp8.has_value();
  // Per element, for the stage's two possible parameter dtypes.
  const OptimizerBytes per_dtype[2] = {optimizer_bytes(spec, d, d.param_dtype, d.grad_dtype),
                                       optimizer_bytes(spec, d, DType::uint8, d.grad_dtype)};
  std::vector<ParamRequests> params;
  for (const auto& chunk : stage.chunks) {
    const ChunkParams cp = chunk_params(chunk, spec, d);
    for (const ParamTensor* t : cp.tensors) {
      const bool fp8 = fp8_params && t->gemm_weight;
      const DType dt = fp8 ? DType::uint8 : d.param_dtype;
      const OptimizerBytes& o = per_dtype[fp8 ? 1 : 0];
      // A frozen (PEFT) parameter is only its own tensor: the optimizer never sees it.
      const std::int64_t n = t->frozen ? 0 : t->numel;
      ParamRequests p{t->numel * dtype_bytes(dt), n * o.main_param, n * o.step_transient, n * o.step_foreach_temporary, t->rebuilt ? 1 : 0, {}, t->frozen ? 0 : o.state_tensors.size()};
      if (p.nstates > kMaxStates) throw std::logic_error("allocator_slack: more optimizer states than kMaxStates");
      for (std::size_t s = 0; s < p.nstates; ++s) p.states[s] = n * o.state_tensors[s];
      params.push_back(p);
    }
  }
  std::vector<std::int64_t> buffer_bytes;
  for (const auto& chunk : buffers)
    for (const DdpBuffer& b : chunk) buffer_bytes.push_back(b.numel * dtype_bytes(b.grad_dtype));
  return memoized_replay(slack_key(params, buffer_bytes, expert_params_have_own_optimizer(spec)));
}

}  // namespace detail
}  // namespace peakcast::model
