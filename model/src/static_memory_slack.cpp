// The caching allocator's slack on a stage's per-parameter tensors without the distributed optimizer.
// Parameters are separate tensors there, and so are Float16OptimizerWithFloat16Params' fp32 main
// parameters and each parameter's Adam moments; a tensor of, say, 11 MiB gets a 12 MiB segment whose
// 1 MiB rest is too small to split off, and max_memory_allocated() counts all 12.
#include <algorithm>

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

AllocatorSlack allocator_slack(const PipelineStage& stage, const std::vector<std::vector<DdpBuffer>>& buffers,
                               const RunSpec& spec, const Derived& d) {
  AllocatorSlack out;
  CachingAllocatorModel alloc;
  struct Param { std::int64_t numel; DType dtype; };
  std::vector<Param> params;
  const bool fp8_params = spec.model.fp8_param && spec.model.fp8.has_value();
  // Model build: every parameter of every chunk in registration order (use_cpu_initialization off).
  std::vector<CachingAllocatorModel::Handle> handles;
  for (const auto& chunk : stage.chunks) {
    const ChunkParams cp = chunk_params(chunk, spec, d);
    for (const ParamTensor* t : cp.tensors) {
      const DType dt = fp8_params && t->gemm_weight ? DType::uint8 : d.param_dtype;
      params.push_back({t->numel, dt});
      handles.push_back(alloc.allocate(Bytes{t->numel * dtype_bytes(dt)}));
    }
  }
  for (const auto h : handles) out.parameters += alloc.slack(h);
  // DDP: one gradient buffer per (dtype, expert) group of each chunk.
  for (const auto& chunk : buffers)
    for (const DdpBuffer& b : chunk) alloc.allocate(Bytes{b.numel * dtype_bytes(b.grad_dtype)});

  // Optimizer build: main_param = param.detach().clone().float() for each low-precision parameter
  // (optimizer.py Float16OptimizerWithFloat16Params): the clone is freed, the fp32 copy stays.
  std::vector<OptimizerBytes> per_param;
  for (const Param& p : params) per_param.push_back(optimizer_bytes(spec, d, p.dtype, d.grad_dtype));
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (per_param[i].main_param == 0) continue;
    const auto clone = alloc.allocate(Bytes{params[i].numel * dtype_bytes(params[i].dtype)});
    const auto main = alloc.allocate(Bytes{params[i].numel * per_param[i].main_param});
    alloc.release(clone);
    out.main_params += alloc.slack(main);
  }

  // First step(), in order: main.grad = model_grad.float() where the grads are not fp32, then the
  // moments (AdamW _init_group: exp_avg, exp_avg_sq per parameter), then torch AdamW's foreach
  // temporaries, freed at the end. A chain of optimizers (expert parallelism) steps its members one
  // after the other, each reusing the last one's freed temporaries: not replayed here.
  if (expert_params_have_own_optimizer(spec)) return out;
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
  for (std::size_t i = 0; i < params.size(); ++i) before += Bytes{params[i].numel * per_param[i].step_transient};
  for (std::size_t i = 0; i < params.size(); ++i)
    for (const std::int64_t t : per_param[i].state_tensors) record(Bytes{params[i].numel * t}, nullptr);
  out.moments = out.step_slack.size();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (per_param[i].step_foreach_temporary > 0)
      record(Bytes{params[i].numel * per_param[i].step_foreach_temporary}, &transient);
  for (const auto h : transient) alloc.release(h);
  return out;
}

}  // namespace detail
}  // namespace peakcast::model
