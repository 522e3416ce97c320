#pragma once
// The device blocks one CUDA launch of torch's sum over a tensor's outer dimension holds beyond its
// output: a biased linear's bias gradient, grad_output.sum(dim=0) in Megatron's own linears
// (tensor_parallel/layers.py:725) or the broadcast bias's sum_to_size after a skip_bias_add linear.
// Facts from ATen/native/cuda/Reduce.cuh as shipped in torch 2.11.0+cu130, checked on the H200
// (docs/research/reduce-staging-buffer.md).
#include <cstdint>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/units.hpp"

namespace peakcast::sim {

// setReduceConfig's choice for a contiguous [rows, cols] input reduced over rows to [cols].
struct OuterSumLaunch {
  int output_vec_size = 1;           // 4, 2 or 1: the largest that divides cols (L1008-1030)
  int block_x = 1, block_y = 1;      // set_block_dimension with 512 / output_vec_size threads (L100-107)
  std::int64_t grid_x = 1;           // output blocks: ceil(cols / output_vec_size / block_x)
  std::int64_t ctas_per_output = 1;  // > 1: the rows are split over blocks, reduced through global memory
  std::int64_t pieces = 1;           // 32-bit index splits: rows halved until each piece is under 2 GiB (L1206-1236)
  Bytes staging;                     // global_memory_size: fp32 partials of every output per block (L193-201)
  Bytes semaphores;                  // one int per output block (L204-209)
  Bytes accumulation;                // fp32 [cols] shared by the pieces when there is more than one
};

// The launch for `rows` x `cols` elements of `element_bytes` each, on `gpu` (its multiprocessors and
// threads per multiprocessor size the target grid, L1151-1156). fp32 accumulation (arg_t is float for
// bf16, fp16 and fp32 sums).
OuterSumLaunch outer_sum_launch(std::int64_t rows, std::int64_t cols, std::int64_t element_bytes, const model::GpuSpec& gpu);

// What the launch holds at once beyond its output, freed when it returns: one piece's staging and
// semaphores plus the accumulation buffer.
Bytes outer_sum_transient(const OuterSumLaunch& launch);

}  // namespace peakcast::sim
