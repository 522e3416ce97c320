#include "step_time.hpp"

namespace peakcast::sim::detail {

namespace {

// PCIe Gen5 x16, one direction: 32 GT/s x 16 lanes with 128b/130b encoding, about 63 GB/s
// (PCI-SIG PCIe 5.0 base specification); H100/H200 SXM hosts attach over it.
constexpr double kHostLinkBytesPerSecond = 63.0e9;

// Bytes the optimizer step reads and writes on a rank: the fp32 master shard (or the parameters
// themselves when there is none) read and written, its gradient read and the model-dtype
// parameter written, and the moments read and written. Per fp32 master byte the gradient read
// and the parameter write are 4 + 2 bytes per 4, i.e. 1.5 (fp32 grads, bf16 params).
constexpr double kGradReadParamWritePerMasterByte = 1.5;
double optimizer_touched_bytes(const model::StaticMemory& sm) {
  const double master = static_cast<double>((sm.main_params.value > 0 ? sm.main_params : sm.parameters).value);
  return (2.0 + kGradReadParamWritePerMasterByte) * master + 2.0 * static_cast<double>(sm.optimizer_states.value);
}

// Gradient sync a step waits for: with overlap_grad_reduce the reduce-scatter/all-reduce runs
// under the backward and none is exposed; without it the whole gradient buffer goes over the
// data-parallel ring (reduce-scatter with the distributed optimizer, else all-reduce) after the
// backward. Priced at the intra-node link; data-parallel rings that span nodes are not modelled.
double exposed_grad_sync_seconds(const model::RunSpec& spec, const model::Derived& d, const model::StaticMemory& sm,
                                 const TimeModel& time) {
  if (spec.ddp.overlap_grad_reduce || d.dp <= 1) return 0.0;
  const double ring = static_cast<double>(d.dp - 1) / static_cast<double>(d.dp);
  const double wire = static_cast<double>(sm.gradients.value) * ring * (spec.ddp.use_distributed_optimizer ? 1.0 : 2.0);
  return time.comm_seconds(wire);
}

// A segment's work without its host side: what TimeModel::seconds takes as the GPU part.
ModuleProfile::Work gpu_part(ModuleProfile::Work w) {
  w.host_calls = 0;
  w.host_syncs = 0;
  w.checkpoint_regions = 0;
  return w;
}

}  // namespace

RankTime rank_step_time(const std::vector<ChunkModel>& chunks, const model::RunSpec& spec, const model::Derived& d,
                        const model::StaticMemory& sm, const TimeModel& time) {
  double fwd_s = 0, bwd_s = 0, replay_s = 0, replay_flops = 0;
  double host_fwd_calls = 0, host_bwd_calls = 0, gpu_s = 0, wire = 0, regions = 0, module_wire = 0, gpu_fb_s = 0;
  for (const auto& cm : chunks) {
    for (const auto& s : cm.segments) {
      fwd_s += time.seconds(s.forward_work);
      bwd_s += time.backward_seconds(s.forward_work);
      replay_s += time.seconds(s.replay_work);
      host_fwd_calls += s.forward_work.host_calls + s.replay_work.host_calls;
      regions += s.replay_work.checkpoint_regions;
      host_bwd_calls += s.forward_work.host_calls;
      wire += s.forward_work.comm_bytes + s.forward_work.backward_comm_bytes + s.replay_work.comm_bytes;
      module_wire += s.forward_work.comm_bytes + s.forward_work.backward_comm_bytes;
      const ModuleProfile::Work gpu_work = gpu_part(s.forward_work);
      gpu_fb_s += time.seconds(gpu_work) + time.backward_seconds(gpu_work);
      gpu_s += time.compute_seconds(s.forward_work) + time.backward_compute_seconds(s.forward_work) + time.compute_seconds(s.replay_work);
      // CPU offloading pays its copies out and back over the host link instead of a replay
      // (counted without overlap: an upper bound on what it adds to the step).
      if (s.offloaded) replay_s += 2.0 * static_cast<double>(s.held.value) / kHostLinkBytesPerSecond;
      replay_flops += s.replay_flops;
    }
  }
  RankTime r;
  const double m = static_cast<double>(d.num_microbatches);
  // Pipeline bubble: (pp - 1) / vpp extra micro-batch slots (Narayanan et al. 2021).
  const double slots = m + static_cast<double>(d.pp - 1) / static_cast<double>(d.vpp);
  r.replay_flops = replay_flops * m;
  r.replay_time_s = replay_s * m;
  r.time.forward_backward_s = (fwd_s + bwd_s + replay_s) * slots + time.host_microbatch_seconds() * m;
  r.time.bubble_s = (fwd_s + bwd_s + replay_s) * (slots - m);
  r.time.module_comm_s = time.comm_seconds(module_wire) * m;
  r.time.microbatches = m;
  r.time.host_forward_calls = host_fwd_calls * m;
  r.time.host_backward_calls = host_bwd_calls * m;
  r.time.checkpoint_regions = regions * m;
  r.time.compute_s = gpu_s * m;
  r.time.comm_wire_bytes = wire * m;
  r.time.optimizer_touched_bytes = optimizer_touched_bytes(sm);
  r.time.optimizer_s = time.optimizer_seconds(r.time.optimizer_touched_bytes);
  r.time.grad_sync_s = exposed_grad_sync_seconds(spec, d, sm, time);
  r.step_time_s = r.time.forward_backward_s + r.time.grad_sync_s + r.time.optimizer_s;
  r.any_policy_lower_bound_s = gpu_fb_s * slots + time.host_microbatch_seconds() * m + r.time.grad_sync_s + r.time.optimizer_s;
  return r;
}

}  // namespace peakcast::sim::detail
