// Kernels of replay_bench.cu (included there; one translation unit, so the single nvcc command of
// calibration/harness/device_smoke.sh still builds it): random fill, softmax, RMSNorm, SwiGLU and a
// generic bandwidth op, all on bf16.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

using bf16 = __nv_bfloat16;

// ------------------------------------------------------------------------------------------
// kernels
__global__ void fill_random(bf16* p, size_t n, uint64_t seed) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (; i < n; i += stride) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    float u = (float)(x >> 40) / (float)(1ull << 24);  // [0,1)
    p[i] = __float2bfloat16((u - 0.5f) * 0.5f);         // small, non-zero, both signs
  }
}

template <int MAXE>
__global__ void softmax_rows(const bf16* __restrict__ in, bf16* __restrict__ out, int cols) {
  extern __shared__ float red[];
  const bf16* x = in + (size_t)blockIdx.x * cols;
  bf16* y = out + (size_t)blockIdx.x * cols;
  float v[MAXE];
  float mx = -INFINITY;
#pragma unroll
  for (int j = 0; j < MAXE; ++j) {
    int c = threadIdx.x + j * blockDim.x;
    v[j] = c < cols ? __bfloat162float(x[c]) : -INFINITY;
    mx = fmaxf(mx, v[j]);
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffff, t, o));
    if (threadIdx.x == 0) red[32] = t;
  }
  __syncthreads();
  mx = red[32];
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < MAXE; ++j) {
    int c = threadIdx.x + j * blockDim.x;
    v[j] = c < cols ? __expf(v[j] - mx) : 0.f;
    s += v[j];
  }
  __syncthreads();
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffff, t, o);
    if (threadIdx.x == 0) red[33] = t;
  }
  __syncthreads();
  float inv = 1.f / red[33];
#pragma unroll
  for (int j = 0; j < MAXE; ++j) {
    int c = threadIdx.x + j * blockDim.x;
    if (c < cols) y[c] = __float2bfloat16(v[j] * inv);
  }
}

__global__ void rmsnorm_rows(const bf16* __restrict__ in, const bf16* __restrict__ w,
                             bf16* __restrict__ out, float* __restrict__ rstd, int cols) {
  __shared__ float red[33];
  const bf16* x = in + (size_t)blockIdx.x * cols;
  bf16* y = out + (size_t)blockIdx.x * cols;
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float a = __bfloat162float(x[c]);
    s += a * a;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffff, t, o);
    if (threadIdx.x == 0) red[32] = rsqrtf(t / cols + 1e-5f);
  }
  __syncthreads();
  float r = red[32];
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    y[c] = __float2bfloat16(__bfloat162float(x[c]) * r * __bfloat162float(w[c]));
}

__global__ void swiglu_k(const bf16* __restrict__ a, const bf16* __restrict__ b,
                         bf16* __restrict__ out, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    float x = __bfloat162float(a[i]);
    out[i] = __float2bfloat16(x / (1.f + __expf(-x)) * __bfloat162float(b[i]));
  }
}

// generic bandwidth op: reads nr bf16 elements, writes nw bf16 elements
__global__ void elementwise_k(const bf16* __restrict__ in, bf16* __restrict__ out, size_t nr,
                              size_t nw) {
  size_t n = nr > nw ? nr : nw;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = 1.f;
    if (i < nr) v = __bfloat162float(in[i]);
    if (nr > nw && i + nw < nr && i < nw) v += __bfloat162float(in[i + nw]);
    if (i < nw) out[i] = __float2bfloat16(v * 1.0001f);
  }
}
