// Limits on the work a spec asks for and on the sizes it implies: peakcast's own rules, not
// Megatron's (issue #27). Each is far above any run Megatron has been used for, and far below where
// the simulation's time, the timeline's size or int64 byte counts would run away. Documented in
// docs/interface.md ("Limits").
#include <cmath>
#include <string>

#include "peakcast/model/userbuffers.hpp"
#include "validate_detail.hpp"

namespace peakcast::model::detail {
namespace {

// The deepest published models have about 200 layers; the simulator's work grows linearly with them
// (1,048,576 layers took 53 s).
constexpr std::int64_t kMaxLayers = 4096;
// Pipeline stages per model (PP x VPP): each is walked as its own chunk.
constexpr std::int64_t kMaxVirtualStages = 4096;
// Sequence chunks of the MLP (mlp_chunks_for_training): each is a module of the layer graph.
constexpr std::int64_t kMaxMlpChunks = 1024;
// Micro-batches per step: a deferred output-layer wgrad walks every one (its entries pile up).
constexpr std::int64_t kMaxMicrobatches = 65536;
// No tensor and no rank's total is larger than this (1 EiB): sums of such terms stay exact in int64.
constexpr long double kMaxBytes = 1152921504606846976.0L;  // 2^60

void limit(RuleSink& sink, const std::string& path, std::int64_t value, std::int64_t max, const std::string& what) {
  if (value > max)
    sink.error(path, "limit_exceeded",
               std::to_string(value) + " " + what + " is above peakcast's limit of " + std::to_string(max) +
                   " (docs/interface.md, Limits)");
}

// The largest tensors a rank can build, bounded from above without the layout's divisors: the
// unfused attention's fp32 scores [b, heads, s, s] and the fp32 logits [b, s, vocab].
void tensor_sizes(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const long double b = spec.train.micro_batch_size, s = m.seq_length;
  if (b * m.num_attention_heads * s * s * 4 > kMaxBytes)
    sink.error("model.seq_length", "size_out_of_range",
               "micro_batch_size x num_attention_heads x seq_length^2 attention scores would exceed 2^60 bytes");
  if (b * s * m.vocab_size * 4 > kMaxBytes)
    sink.error("model.vocab_size", "size_out_of_range", "micro_batch_size x seq_length x vocab_size logits would exceed 2^60 bytes");
}

// The GPU's figures must leave room for the caching allocator and give finite times.
void gpu_figures(const RunSpec& spec, RuleSink& sink) {
  const GpuSpec& g = spec.cluster.gpu;
  const auto rate = [&](const char* key, double v, double min) {
    if (!(v >= min && v <= 1e7))
      sink.error(std::string("cluster.gpu.") + key, "value_out_of_range",
                 "must lie in [" + std::to_string(static_cast<int>(min)) + ", 10^7]: step times divide by it");
  };
  rate("bf16_dense_tflops", g.bf16_dense_tflops, 1);
  rate("fp32_tflops", g.fp32_tflops, 1);
  rate("hbm_bandwidth_gbps", g.hbm_bandwidth_gbps, 1);
  rate("nvlink_bandwidth_gbps", g.nvlink_bandwidth_gbps, 1);
  rate("fp8_dense_tflops", g.fp8_dense_tflops, 0);
  if (g.compute_capability_major < 1 || g.compute_capability_major > 20)
    sink.error("cluster.gpu.compute_capability_major", "value_out_of_range",
               "must lie in [1, 20] (a CUDA compute capability's major number: 8 for A100, 9 for H100, 10 for B200)");
  if (g.multiprocessor_count < 1 || g.multiprocessor_count > 10000)
    sink.error("cluster.gpu.multiprocessor_count", "value_out_of_range",
               "must lie in [1, 10000] (cudaDeviceProp.multiProcessorCount: 132 on H100 SXM / H200, 148 on B200, 108 on A100)");
  if (g.max_threads_per_multiprocessor < 32 || g.max_threads_per_multiprocessor > 65536)
    sink.error("cluster.gpu.max_threads_per_multiprocessor", "value_out_of_range",
               "must lie in [32, 65536] (cudaDeviceProp.maxThreadsPerMultiProcessor: 2048 on compute capability 8.0, 9.0, 10.0)");
  if (spec.model.tp_comm_overlap && !sink.failed()) {  // te_userbuffers needs a valid layout
    const Bytes ub = total_bytes(te_userbuffers(spec));
    if (ub >= g.memory_bytes)
      sink.error("cluster.gpu.memory_bytes", "gpu_smaller_than_userbuffers",
                 "the GPU's " + std::to_string(g.memory_bytes.value) + " bytes do not hold TE's tp_comm_overlap userbuffers (" +
                     std::to_string(ub.value) + " bytes), which are allocated outside the caching allocator");
  }
}

}  // namespace

void validate_magnitudes(const RunSpec& spec, RuleSink& sink) {
  const ModelSpec& m = spec.model;
  const Derived d = derive(spec);
  limit(sink, "model.num_layers", m.num_layers, kMaxLayers, "layers");
  limit(sink, "model.virtual_pipeline_model_parallel_size", d.pp * d.vpp, kMaxVirtualStages, "pipeline stages (PP x VPP)");
  limit(sink, "model.mlp_chunks_for_training", m.mlp_chunks_for_training, kMaxMlpChunks, "MLP sequence chunks");
  limit(sink, "train.global_batch_size", d.num_microbatches, kMaxMicrobatches, "micro-batches per step");
  tensor_sizes(spec, sink);
  gpu_figures(spec, sink);
}

}  // namespace peakcast::model::detail
