// Each model chunk as Megatron runs it: the embedding on the first chunk, the decoder layers under
// the chunk's checkpoint sets (full-recompute groups as one segment), then on the last chunk the MTP
// depths and the loss heads.
#include "stage_builder.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lifetimes.hpp"
#include "module_blocks.hpp"
#include "peakcast/model/dsa.hpp"

namespace peakcast::sim::detail {

namespace {
// "L<index>", the decoder layer's name in reports (built by append: GCC 12 warns falsely on
// `"L" + std::to_string(...)`, PR 105329).
std::string layer_name(std::int64_t index) {
  std::string name(1, 'L');
  name += std::to_string(index);
  return name;
}
// Fine-grained activation offloading of a decoder (or MTP) layer: the offload_modules groups, each layer's saves
// of at least min_offloaded_tensor_size elements leave at their group's commit and are reloaded when autograd
// unpacks them (docs/research/fine-grained-offloading-memory-facts.md sections 2-4: the warm-up iteration offloads
// every group and each start-backward event pops an already consumed group). Not simulated, so no context (the saves
// stay on the GPU; warning fine_grained_offloading_not_simulated): CUDA graphs, and models without the GPT / hybrid
// chunk handler (BERT, T5: gpt_model.py:554-555, fine_grained_activation_offload.py:1285-1287).
std::optional<OffloadContext> layer_offload(const model::ModelSpec& m) {
  if (!m.fine_grained_activation_offloading || m.architecture != model::Architecture::gpt ||
      m.cuda_graph_impl != model::CudaGraphImpl::none)
    return std::nullopt;
  OffloadContext o;
  for (const std::string& name : m.offload_modules)
    for (int k = 0; k < kOffloadGroupCount; ++k)
      if (name == offload_group_name(1u << k)) o.offloaded |= 1u << k;
  o.min_elements = m.min_offloaded_tensor_size;
  return o;
}
}  // namespace

StageBuilder::StageBuilder(const model::RunSpec& spec, const model::Derived& d)
    : ctx_(make_shape_context(spec, d)), hybrid_(spec.model.hybrid_override_pattern.has_value()) {
  t5_ = spec.model.architecture == model::Architecture::t5;
  dec_ctx_ = t5_ ? t5_decoder_shape_context(spec, d, ctx_) : ctx_;
  embedding_ = build_embedding_graph(spec, d, ctx_);
  output_ = build_output_graph(spec, d, dec_ctx_);
  if (t5_) t5_bridge_ = t5_bridge_graph(spec, d, ctx_, dec_ctx_);
  if (spec.model.mtp_num_layers > 0) mtp_wrapper_ = build_mtp_wrapper_graph(spec, d, ctx_);
}

const LayerGraph& StageBuilder::layer_graph(const model::RunSpec& spec, const model::Derived& d, const model::LayerSpec& l) {
  // A selective `mlp` checkpoint turns mlp_chunks_for_training off (module_graphs.cpp ffn_block).
  const bool unchunked_by_recompute = spec.model.mlp_chunks_for_training > 1 &&
                                      spec.model.recompute_granularity == model::RecomputeGranularity::selective &&
                                      model::has_tag(d, model::RecomputeTag::mlp);
  const std::string key = std::to_string(static_cast<int>(l.mixer)) + "/" + std::to_string(static_cast<int>(l.ffn)) +
                          (l.high_precision ? "/bf16" : "") + (unchunked_by_recompute ? "/mlp-recompute" : "") +
                          (l.t5_encoder ? "/t5-encoder" : "") + (l.cross_attention ? "/cross-attention" : "") +
                          (model::dsa_computes_topk(spec.model, l) ? "/dsa-indexer" : "") +
                          (spec.model.fine_grained_activation_offloading ? "/fine-grained-offloading" : "");
  auto it = graph_cache_.find(key);
  if (it == graph_cache_.end()) {
    // A BF16 edge layer under FP8 saves its GEMM inputs unquantised.
    ShapeContext layer_ctx = l.cross_attention ? dec_ctx_ : ctx_;
    if (l.high_precision) layer_ctx.fp8 = false;
    if (l.t5_encoder) layer_ctx.padding_mask = true;  // t5_spec.py:64 (padding), :137 (arbitrary)
    it = graph_cache_.emplace(key, build_layer_graph(spec, d, layer_ctx, l, hybrid_)).first;
  }
  return it->second;
}

// One deferral entry (tensor_parallel/layers.py:1147-1152 and :603-606): the output layer's input,
// [tokens / TP with SP, hidden], and the gradient of its logits, [tokens, vocab / TP], both in the
// activation dtype. Every call of the shared output layer (MTP depths too) adds one.
Bytes StageBuilder::deferred_wgrad_bytes(const model::RunSpec& spec, const model::Derived& d) const {
  if (!spec.model.defer_embedding_wgrad_compute) return Bytes{};
  return Bytes{(ctx_.local_tokens * ctx_.hidden + ctx_.tokens * (d.padded_vocab / ctx_.tp)) * ctx_.act_bytes};
}

Bytes StageBuilder::dummy_wgrads(const model::RunSpec& spec, const model::Derived& d, const model::PipelineStage& stage) {
  std::set<std::pair<std::int64_t, std::int64_t>> shapes;
  const auto add = [&](const LayerGraph& g) { shapes.insert(g.dummy_wgrad_shapes.begin(), g.dummy_wgrad_shapes.end()); };
  for (const auto& c : stage.chunks) {
    for (const auto& l : c.layers) add(layer_graph(spec, d, l));
    if (c.has_output_layer) add(output_);
  }
  std::int64_t elements = 0;
  for (const auto& [rows, cols] : shapes) elements += rows * cols;
  return Bytes{elements * ctx_.act_bytes};
}

std::vector<FixedBlock> StageBuilder::persistent_blocks(const model::RunSpec& spec, const model::Derived& d,
                                                        const model::PipelineStage& stage) {
  // One per layer number (the holder's key, dsa.py:2216): an MTP layer numbered like a decoder layer of the same
  // rank replaces that layer's entry.
  std::map<std::int64_t, Bytes> by_number;
  for (const auto& c : stage.chunks)
    for (const auto& l : c.layers)
      if (const Bytes b = layer_graph(spec, d, l).persistent; b.value > 0) by_number[model::dsa_layer_number(l)] = b;
  std::vector<FixedBlock> out;
  for (const auto& [number, bytes] : by_number)
    out.push_back({"dsa.topk_holder.L" + std::to_string(number), bytes, 1,
                   "dsa.py:1593-1612, :2214-2218 (the top-k of the layer's latest forward, on the TransformerConfig)"});
  return out;
}

std::vector<ChunkModel> StageBuilder::stage(const model::RunSpec& spec, const model::Derived& d,
                                            const model::PipelineStage& stage, std::int64_t pp_rank, GraphBypass bypass,
                                            const TimeModel& time) {
  std::vector<ChunkModel> chunks;
  for (const auto& c : stage.chunks) chunks.push_back(chunk(spec, d, c, pp_rank, bypass));
  for (auto& cm : chunks) {
    for (auto& seg : cm.segments) {
      seg.forward_s = time.seconds(seg.forward_work);
      seg.backward_s = time.backward_seconds(seg.forward_work);
      seg.replay_s = time.seconds(seg.replay_work);
    }
  }
  return chunks;
}

ChunkModel StageBuilder::chunk(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c,
                               std::int64_t pp_rank, GraphBypass bypass) {
  ChunkModel cm;
  const bool first_chunk_overall = pp_rank == 0 && c.vpp_index == 0;
  cm.receives_input = !first_chunk_overall;
  cm.sends_output = !c.has_output_layer;
  if (c.has_embedding) {
    cm.segments.push_back(plain_segment(profiles_, embedding_, CheckpointSet{}, -1));
    cm.segments.back().is_embedding = true;
  }
  const ChunkPolicy pol = chunk_policy(spec, d, c, bypass);
  add_layers(spec, d, c, pol, cm);
  if (c.has_output_layer) add_mtp_and_output(spec, d, c, pol, cm);
  if (t5_) link_t5_stacks(spec, d, c, cm);
  return cm;
}

// T5's one stage (pretrain_t5.py:97-98): the step between the stacks goes after the last encoder layer. It holds the
// encoder's output, whose gradient the decoder layers sum from the last one's backward on (carried until then), and
// the decoder tokens' lookup, whose dense weight gradient waits for the encoder tokens' lookup unless the tied output
// layer's already holds that weight's gradient.
void StageBuilder::link_t5_stacks(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c, ChunkModel& cm) {
  std::size_t at = 0, last_decoder = 0;
  for (std::size_t i = 0; i < cm.segments.size(); ++i) {
    const int l = cm.segments[i].layer;
    if (l >= 0 && l < spec.model.num_layers) at = i + 1;
    if (l >= spec.model.num_layers) last_decoder = i;
  }
  if (at == 0 || last_decoder == 0) return;
  Segment bridge = plain_segment(profiles_, t5_bridge_, CheckpointSet{}, -1);
  bridge.name = "t5_bridge";
  bridge.takes_carried_activation_grad = true;
  const bool tied_carry = c.has_embedding && spec.model.share_embeddings_and_output_weights && !ctx_.grad_accumulation_fusion;
  if (c.has_embedding && !tied_carry) bridge.carried_weight_grad = Bytes{d.padded_vocab / ctx_.tp * ctx_.hidden * ctx_.act_bytes};
  cm.segments[last_decoder].carried_activation_grad = Bytes{ctx_.local_tokens * ctx_.hidden * ctx_.act_bytes};
  cm.segments.insert(cm.segments.begin() + static_cast<std::ptrdiff_t>(at), std::move(bridge));
}

void StageBuilder::add_layers(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c,
                              const ChunkPolicy& pol, ChunkModel& cm) {
  std::size_t i = 0;
  while (i < c.layers.size()) {
    const auto& l = c.layers[i];
    if (l.is_mtp) {
      ++i;
      continue;
    }  // MTP depths are added with the output layer
    if (pol.layers[i].whole_module) {
      std::vector<const LayerGraph*> group;
      const int gid = pol.group_of_layer[i];
      std::size_t j = i;
      while (j < c.layers.size() && pol.layers[j].whole_module && (gid < 0 ? j == i : pol.group_of_layer[j] == gid)) {
        group.push_back(&layer_graph(spec, d, c.layers[j]));
        ++j;
      }
      cm.segments.push_back(group_segment(profiles_, group, static_cast<int>(l.index)));
      if (spec.model.distribute_saved_activations && d.tp > 1) distribute_group_input(cm.segments.back(), d.tp);
      std::string& name = cm.segments.back().name;
      name = layer_name(l.index);
      if (group.size() > 1) name += ".." + layer_name(l.index + static_cast<std::int64_t>(group.size()) - 1);
      name += "(full recompute)";
      i = j;
      continue;
    }
    const std::optional<OffloadContext> offload = layer_offload(spec.model);
    const auto dispatcher = spec.model.moe_token_dispatcher_type;
    CheckpointSet ckpt = pol.layers[i];
    ckpt.retains_moe_input = l.ffn == model::FfnKind::moe && (ckpt.keep_inputs & kMoe) && !spec.model.fp8 &&
                             (dispatcher == model::Dispatcher::allgather || dispatcher == model::Dispatcher::alltoall);
    const LayerGraph& g = layer_graph(spec, d, l);
    Segment& s = cm.segments.emplace_back(plain_segment(profiles_, g, ckpt, static_cast<int>(l.index), offload ? &*offload : nullptr));
    s.name = layer_name(l.index);
    if (ckpt.retains_moe_input) {  // the checkpoint's input and its gradient, the tensors the module script parks
      const TensorNode& t = g.tensors[static_cast<std::size_t>(moe_checkpoint_input(g))];
      s.retained_after_backward = t.bytes + t.gradient_bytes();
    }
    const GraphCapture capture = graph_capture(spec, l);
    s.graph_captured = capture == GraphCapture::whole;
    if (capture == GraphCapture::mixer || capture == GraphCapture::ffn)
      s.captured_held = captured_half_bytes(*s.held_tensors, capture == GraphCapture::ffn);
    // A captured layer's forward and backward are each one graph replay on the host, not one
    // Python call per op (its kernels still take their GPU time).
    if (s.graph_captured) s.forward_work.host_calls = 1;
    // TE's CPU offload context moves the saved activations of the first N layers to the host.
    s.offloaded = spec.model.cpu_offloading && spec.model.cpu_offloading_activations &&
                  static_cast<std::int64_t>(i) < spec.model.cpu_offloading_num_layers;
    ++i;
  }
}

// Each MTP depth adds its wrapper and a layer of the last decoder layer's kind, all before any head
// (gpt_model.py runs the MTP block, then process_mtp_loss); then each depth's head and loss. In
// backward autograd takes the later-created nodes first: every head and loss (main, then the depths
// in reverse) before the MTP layers, so the heads' saved logits are gone by then. The layer is built
// from the decoder's layer spec, so the selective checkpoints apply to it as to a decoder layer.
// Under full recompute the MTP block checkpoints each depth's projection and layer when the method is
// uniform (multi_token_prediction.py:1420-1427; the embedding lookup and the final norm stay outside,
// so the checkpoint keeps the hidden input and the embedding) and skips recompute for block
// (:1429-1433).
void StageBuilder::add_mtp_and_output(const model::RunSpec& spec, const model::Derived& d, const model::ModelChunk& c,
                                      const ChunkPolicy& pol, ChunkModel& cm) {
  std::vector<std::size_t> mtp_at;  // positions of the MTP depths' layers in the chunk
  for (std::size_t j = 0; j < c.layers.size(); ++j)
    if (c.layers[j].is_mtp) mtp_at.push_back(j);
  const bool mtp_full_uniform = spec.model.recompute_granularity == model::RecomputeGranularity::full &&
                                spec.model.recompute_method == model::RecomputeMethod::uniform;
  // Each depth looks its shifted tokens up in the embedding weight, whose dense gradient autograd
  // then sums with the decoder lookup's in the weight's input buffer: the first one (the last
  // depth's, first in backward) stays until the embedding's backward on this chunk (measured: a
  // [V/TP, h] block alive through the decoder's backward). Already carried when the tied output
  // layer's gradient is (same weight, same buffer).
  const Bytes embedding_grad{d.padded_vocab / ctx_.tp * ctx_.hidden * ctx_.act_bytes};
  const bool tied_carry = c.has_embedding && spec.model.share_embeddings_and_output_weights && !ctx_.grad_accumulation_fusion;
  const Bytes mtp_embedding_grad = c.has_embedding && !tied_carry ? embedding_grad : Bytes{};
  // A hybrid model's depth runs the layers of its MTP pattern in order ("*E": an attention and a MoE layer,
  // mcore:megatron/core/models/hybrid/hybrid_model.py:288-306); a GPT depth holds one layer.
  const std::size_t per_depth = c.mtp_layers > 0 ? std::max<std::size_t>(1, mtp_at.size() / static_cast<std::size_t>(c.mtp_layers)) : 1;
  for (std::int64_t k = 0; k < c.mtp_layers && !c.layers.empty(); ++k) {
    const bool first_in_backward = k + 1 == c.mtp_layers;
    std::vector<std::size_t> at;  // this depth's layers' positions in the chunk
    for (std::size_t j = 0; j < per_depth; ++j) {
      const std::size_t i = static_cast<std::size_t>(k) * per_depth + j;
      at.push_back(i < mtp_at.size() ? mtp_at[i] : c.layers.size() - 1);
    }
    if (mtp_full_uniform) {
      std::vector<const LayerGraph*> group = {&mtp_wrapper_};
      for (const std::size_t i : at) group.push_back(&layer_graph(spec, d, c.layers[i]));
      Segment& g = cm.segments.emplace_back(group_segment(profiles_, group, -1));
      g.held += Bytes{ctx_.local_tokens * ctx_.hidden * ctx_.act_bytes};  // the embedding lookup's [s, h]
      g.name = "mtp" + std::to_string(k) + "(full recompute)";
      if (first_in_backward) g.carried_weight_grad = mtp_embedding_grad;
      continue;
    }
    Segment& w = cm.segments.emplace_back(plain_segment(profiles_, mtp_wrapper_, CheckpointSet{}, -1));
    w.name = "mtp" + std::to_string(k) + ".wrapper";
    if (first_in_backward) w.carried_weight_grad = mtp_embedding_grad;
    for (std::size_t j = 0; j < at.size(); ++j) {
      const bool is_mtp = c.layers[at[j]].is_mtp;
      const CheckpointSet mtp_ckpt = is_mtp && !pol.layers[at[j]].whole_module ? pol.layers[at[j]] : CheckpointSet{};
      const std::optional<OffloadContext> offload = layer_offload(spec.model);
      cm.segments.push_back(plain_segment(profiles_, layer_graph(spec, d, c.layers[at[j]]), mtp_ckpt, -1, offload ? &*offload : nullptr));
      cm.segments.back().name = "mtp" + std::to_string(k) + (per_depth > 1 ? "." + std::to_string(j) : std::string());
    }
  }
  const Bytes deferred = deferred_wgrad_bytes(spec, d);
  for (std::int64_t k = 0; k <= c.mtp_layers; ++k) {  // each depth's head, then the main one
    Segment& head = cm.segments.emplace_back(plain_segment(profiles_, output_, CheckpointSet{}, -1));
    head.is_output = true;
    head.deferred_wgrad = deferred;
  }
  Segment& main_head = cm.segments.back();
  if (cm.receives_input && main_head.deferred_wgrad.value > 0) main_head.deferred_graph = cm.segments.front().input_bytes * 2;
  if (tied_carry) main_head.carried_weight_grad = embedding_grad;
}

}  // namespace peakcast::sim::detail
