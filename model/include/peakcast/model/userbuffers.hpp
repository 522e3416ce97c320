#pragma once
// Transformer Engine's userbuffers for tensor-parallel communication overlap (tp_comm_overlap):
// one communication buffer per overlapped GEMM and quantization mode, allocated by TE's C++ with
// cudaMalloc, outside PyTorch's caching allocator (comm_gemm_overlap.cpp, register_user_buffer_collective).
#include <string>
#include <vector>

#include "peakcast/model/run_spec.hpp"
#include "peakcast/model/units.hpp"

namespace peakcast::model {

struct Userbuffer {
  std::string gemm;       // e.g. "qkv_fprop"
  bool fp8_mode = false;  // the FP8 quantization mode's set (the other: high precision)
  std::string method;     // ring_exchange | pipeline | bulk | external
  bool reduce_scatter = false;
  Bytes bytes;
};

// The buffers initialize_ub creates for this spec (Megatron / Bridge _initialize_tp_communicators),
// empty without tp_comm_overlap. Assumes a validated spec.
std::vector<Userbuffer> te_userbuffers(const RunSpec& spec);
Bytes total_bytes(const std::vector<Userbuffer>& buffers);

}  // namespace peakcast::model
