// torch's sum over the outer dimension, as setReduceConfig configures it (ATen/native/cuda/Reduce.cuh,
// torch 2.11.0+cu130; line numbers of that copy). docs/research/reduce-staging-buffer.md.
#include "peakcast/sim/torch_reduce.hpp"

#include <algorithm>
#include <limits>

namespace peakcast::sim {

namespace {

constexpr std::int64_t kMaxReduceThreads = 512;    // ReduceConfig::MAX_NUM_THREADS (max_reduce_threads for real dtypes)
constexpr std::int64_t kWarp = 32;                 // at::cuda::warp_size() on NVIDIA GPUs
constexpr std::int64_t kMinValuesPerThread = 16;   // setReduceConfig's min_values_per_thread
constexpr std::int64_t kMaxValuesPerThread = 256;  // and max_values_per_thread
constexpr std::int64_t kArgBytes = 4;              // arg_t: float accumulation for bf16, fp16 and fp32 sums

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// floor to a power of two, at least 1 (last_pow2)
std::int64_t last_pow2(std::int64_t n) {
  std::int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// can_use_32bit_indexing: every byte offset of the input fits an int32.
bool indexable_32bit(std::int64_t rows, std::int64_t cols, std::int64_t element_bytes) {
  return 1 + (rows * cols - 1) * element_bytes <= std::numeric_limits<std::int32_t>::max();
}

}  // namespace

OuterSumLaunch outer_sum_launch(std::int64_t rows, std::int64_t cols, std::int64_t element_bytes, const model::GpuSpec& gpu) {
  OuterSumLaunch l;
  if (rows <= 0 || cols <= 0) return l;
  // gpu_reduce_kernel splits the iterator along its largest dimension (here the rows) until each piece
  // is 32-bit indexable; a bf16 / fp16 output cannot accumulate across pieces, an fp32 buffer does.
  std::int64_t r = rows;
  while (!indexable_32bit(r, cols, element_bytes) && r > 1) {
    r = div_up(r, 2);
    l.pieces *= 2;
  }
  if (l.pieces > 1 && element_bytes < kArgBytes) l.accumulation = Bytes{kArgBytes * cols};
  // get_output_vec_size: 4 halved until it divides the output width.
  l.output_vec_size = cols % 4 == 0 ? 4 : (cols % 2 == 0 ? 2 : 1);
  const std::int64_t threads = kMaxReduceThreads / l.output_vec_size;
  const std::int64_t dim0 = cols / l.output_vec_size, dim1 = r;
  const std::int64_t dim0_pow2 = dim0 < threads ? last_pow2(dim0) : threads;
  const std::int64_t dim1_pow2 = dim1 < threads ? last_pow2(dim1) : threads;
  std::int64_t bx = std::min(dim0_pow2, kWarp);
  const std::int64_t by = std::min(dim1_pow2, threads / bx);
  bx = std::min(dim0_pow2, threads / by);
  l.block_x = static_cast<int>(bx);
  l.block_y = static_cast<int>(by);
  // An outer reduction splits the outputs over block_x; the rows over block_y when each thread keeps
  // at least 16 values (or 256); and over blocks when each still has 256 and the grid is small.
  l.grid_x = div_up(dim0, bx);
  const bool split_over_warps = r >= by * kMinValuesPerThread || r >= kMaxValuesPerThread;
  const std::int64_t vpt = split_over_warps ? div_up(r, by) : r;
  const std::int64_t blocks_per_sm = std::max<std::int64_t>(1, gpu.max_threads_per_multiprocessor / (bx * by));
  const std::int64_t target_grid = gpu.multiprocessor_count * blocks_per_sm;
  if (split_over_warps && vpt >= kMaxValuesPerThread && l.grid_x <= target_grid) {
    l.ctas_per_output = std::max(std::min(div_up(target_grid, l.grid_x), div_up(vpt, kMinValuesPerThread)),
                                 div_up(vpt, kMaxValuesPerThread));
  }
  if (l.ctas_per_output > 1) {
    l.staging = Bytes{kArgBytes * cols * l.ctas_per_output * bx * l.output_vec_size};
    l.semaphores = Bytes{4 * l.grid_x};  // sizeof(int) per output block
  }
  return l;
}

Bytes outer_sum_transient(const OuterSumLaunch& launch) { return launch.staging + launch.semaphores + launch.accumulation; }

}  // namespace peakcast::sim
