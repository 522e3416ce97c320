#pragma once
// Small helpers that let module builders read like the module code they describe.
#include <initializer_list>
#include <string>
#include <vector>

#include "peakcast/sim/layer_graph.hpp"
#include "peakcast/sim/module_graphs.hpp"

namespace peakcast::sim::detail {

class GraphBuilder {
 public:
  GraphBuilder(LayerGraph& g, const ShapeContext& c, std::string prefix) : g_(g), c_(c), prefix_(std::move(prefix)) {
    g_.act_bytes = c.act_bytes;
  }

  // An activation of `rows` x `cols` elements in the activation dtype.
  Bytes act(std::int64_t rows, std::int64_t cols) const { return Bytes{checked_mul(checked_mul(rows, cols), c_.act_bytes)}; }
  Bytes fp32(std::int64_t rows, std::int64_t cols) const { return Bytes{checked_mul(checked_mul(rows, cols), 4)}; }

  int input(const std::string& name, Bytes b) { return g_.add_input(prefix_ + name, b); }
  // `element_bytes`: its dtype's size when not the activation dtype's (TensorNode::element_bytes).
  int tensor(const std::string& name, Bytes b, bool requires_grad = true, std::int32_t element_bytes = 0) {
    const int t = g_.add_tensor(prefix_ + name, b, requires_grad);
    g_.tensors.back().element_bytes = element_bytes;
    g_.tensors.back().row_group = row_group_;
    g_.tensors.back().row_groups = row_groups_;
    return t;
  }
  // Tensors made from here on have routed rows (TensorNode::row_group): local expert `group` of `groups`, or all
  // of them with group == groups; routed_rows(-1, 0) ends it.
  void routed_rows(std::int16_t group, std::int16_t groups) {
    row_group_ = group;
    row_groups_ = groups;
  }

  // Fine-grained activation offloading: the ops from `first` on ran inside group `group`'s saved-tensor hooks
  // (FineGrainedActivationOffloadingInterface), which commit after op `commit` (the last of them when -1) and
  // then free the storage of `forced` (forced_released_tensors).
  void offload_group(OffloadGroup group, std::size_t first, int commit = -1, std::vector<int> forced = {});

  struct OpArgs {
    std::initializer_list<int> in{}, out{}, save{}, keep{};
    std::uint32_t region = kNoRegion;
    double flops = 0;            // forward
    double backward_flops = -1;  // default 2 x forward (dgrad + wgrad) for GEMMs, 1 x otherwise
    Bytes ws{}, bws{};
    Bytes param_grad{};       // the part of bws that is a parameter's .grad (OpNode::param_grad)
    double bytes_moved = -1;  // default: inputs read + outputs written
    bool gemm = false, attention = false, passthrough = false;
    bool fused_attention = false;  // one fused kernel (cuDNN / flash), not the unfused batched GEMMs
    bool movement = false;         // moves rows without arithmetic (gathers, block copies): its own measured rate
    double calls = 1;              // host calls per forward (see OpNode::host_calls)
    bool sync = false;             // blocks the host on the GPU
    double comm = 0;               // collective bytes per rank, forward
    double bcomm = -1;             // backward; default: the same as forward
  };
  int op(const std::string& name, const OpArgs& a);
  // The same with inputs and outputs counted at run time (a.in and a.out are ignored).
  int op(const std::string& name, const std::vector<int>& in, const std::vector<int>& out, const OpArgs& a);

  // A linear layer at per-rank shapes. Column-parallel under SP gathers its [local_tokens, k]
  // input to [tokens, k] for the GEMM (TE: a transient; local: Megatron's global buffer) and saves
  // the un-gathered input; row-parallel under SP reduce-scatters its [tokens, n] result.
  enum class Parallel { column,
                        row,
                        none };
  // `keep_original_input`: under FP8 the layer saves its bf16 input instead of a quantised copy
  // (TE's save_original_input, which Megatron sets on linear_proj for non-delayed FP8 recipes).
  // `with_adapter` false leaves a targeted layer's LoRA adapter to the caller (it wraps a module that
  // does more after the GEMM, e.g. a post-norm).
  int linear(const std::string& name, int input, std::int64_t k, std::int64_t n, Parallel par,
             std::uint32_t region = kNoRegion, std::int64_t rows = -1, bool save_input = true,
             bool keep_original_input = false, bool with_adapter = true);

  // LoRA beside the linear `name` (peft/lora_layers.py:65-88 LoRALinear.forward): A and B of the
  // adapter's own local Megatron linears, then out + adapter(x). Returns the sum, or base_out
  // unchanged when no target names the layer.
  int lora_adapter(const std::string& name, int input, int base_out, std::int64_t k, std::int64_t n, Parallel par,
                   std::uint32_t region, std::int64_t rows);
  bool lora_targeted(const std::string& name) const;

  const ShapeContext& ctx() const { return c_; }
  LayerGraph& graph() { return g_; }

 private:
  LayerGraph& g_;
  const ShapeContext& c_;
  std::string prefix_;
  std::int16_t row_group_ = -1, row_groups_ = 0;
};

}  // namespace peakcast::sim::detail
