#pragma once
// The run spec's sections that are not Megatron configs: the cluster (world size, GPU, allocator and
// library settings of the environment) and Bridge's LoRA section. Part of run_spec.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/model/units.hpp"

namespace peakcast::model {

// One GPU type: usable allocator capacity plus the ceilings the time model needs.
struct GpuSpec {
  std::string name;
  Bytes memory_bytes;            // usable by PyTorch's caching allocator
  double bf16_dense_tflops = 0;  // peak dense bf16 matrix rate, TFLOP/s
  double fp8_dense_tflops = 0;
  double fp32_tflops = 0;
  double hbm_bandwidth_gbps = 0;  // GB/s
  double nvlink_bandwidth_gbps = 0;
  int compute_capability_major = 9;  // CUDA's (8: A100, 9: H100/H200, 10: B200); sizes cuBLAS workspaces
  // cudaDeviceProp's multiProcessorCount and maxThreadsPerMultiProcessor: torch's reductions size the
  // grid, and so the staging buffer of a split sum, by them (sim/include/peakcast/sim/torch_reduce.hpp).
  int multiprocessor_count = 132;
  int max_threads_per_multiprocessor = 2048;
  std::string source;  // where the figures come from

  bool operator==(const GpuSpec&) const = default;
};

struct ClusterSpec {
  std::int64_t num_gpus = 1;
  GpuSpec gpu;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows segments instead
  // of caching fixed-size ones; it changes the reserved estimate (not the simulated allocated peak).
  bool expandable_segments = false;
  // Transformer Engine importable where the run trains (every NeMo / Megatron-Bridge container has it).
  // Read only by the validation rules: CheckpointWithoutOutput and the CPU-offload contexts need it
  // whatever transformer_impl says (tensor_parallel/random.py:84-91, :744).
  bool transformer_engine_available = true;
  bool calibration_harness = false;  // peakcast's harness patches ran the local spec (peakcast_extensions.json)
  // PYTORCH_CUDA_ALLOC_CONF as the run exports it ("expandable_segments:True,max_split_size_mb:512"):
  // the caching-allocator replay follows expandable_segments, max_split_size_mb,
  // max_non_split_rounding_mb and roundup_power2_divisions (parse_alloc_conf, caching_allocator.hpp).
  std::string pytorch_cuda_alloc_conf;
  std::string cublas_workspace_config;              // the run's CUBLAS_WORKSPACE_CONFIG (":4096:8"); "": PyTorch's default
  std::string transformer_engine_version = "2.16";  // "major.minor[.patch]": TE's cross-entropy gradient

  bool operator==(const ClusterSpec&) const = default;
};

// Megatron-Bridge's LoRA (bridge:src/megatron/bridge/peft/lora.py:101-115, the `peft` section): every base
// parameter frozen (peft/base.py:176-190), a low-rank adapter beside each linear whose attribute name is in
// target_modules (module_matcher.py:141-146); docs/research/lora-memory-facts.md.
struct PeftSpec {
  bool enabled = false;  // the spec has a peft section
  std::vector<std::string> target_modules = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};
  std::int64_t dim = 32;
  double alpha = 32;
  double dropout = 0.0;
  std::string dropout_position = "pre";  // pre | post
  bool sequence_parallel_input_regather = false;
  bool a2a_experimental = false;
  std::optional<DType> lora_dtype;  // None: the base layer's parameter dtype
  bool normalize_moe_lora = false;
  bool share_expert_adapters = true;
  bool experts_shared_outer_loras = false;

  bool operator==(const PeftSpec&) const = default;
};

}  // namespace peakcast::model
