// The caching-allocator replay: each module's allocation script has the lifetimes of its profile,
// the replay leaves every allocated prediction as it was, and its figures hang together.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "module_script.hpp"
#include "peakcast/model/layer_plan.hpp"
#include "peakcast/model/spec_parser.hpp"
#include "peakcast/sim/module_graphs.hpp"
#include "peakcast/sim/prediction.hpp"
#include "peakcast/sim/verdict.hpp"
#include "spec_layer.hpp"

using namespace peakcast;

namespace {

model::RunSpec spec_from(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = model::parse_run_spec(text, sets);
  for (const auto& d : r.diagnostics) INFO(model::format(d));
  REQUIRE(r.spec.has_value());
  return *r.spec;
}

// Dense GQA on the TE stack, the local stack's unfused attention (and under full recompute), MoE with MLA, and a
// Mamba hybrid.
const std::vector<std::string>& specs() {
  static const std::vector<std::string> s = {
      R"({"model": {"preset": "llama3-8b", "num_layers": 4, "tensor_model_parallel_size": 2, "sequence_parallel": true,
                    "seq_length": 4096, "bf16": true},
          "train": {"micro_batch_size": 1, "global_batch_size": 8},
          "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
          "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})",
      R"({"model": {"preset": "llama3-8b", "num_layers": 2, "transformer_impl": "local", "attention_backend": "unfused",
                    "seq_length": 2048, "bf16": true},
          "train": {"micro_batch_size": 1, "global_batch_size": 2},
          "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})",
      R"({"model": {"preset": "llama3-8b", "num_layers": 2, "transformer_impl": "local", "attention_backend": "unfused",
                    "seq_length": 2048, "bf16": true, "recompute_granularity": "full", "recompute_method": "uniform",
                    "recompute_num_layers": 1},
          "train": {"micro_batch_size": 1, "global_batch_size": 2},
          "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})",
      R"({"model": {"preset": "moonlight-16b", "num_layers": 3, "moe_layer_freq": [0, 1, 1], "tensor_model_parallel_size": 2,
                    "sequence_parallel": true, "expert_model_parallel_size": 8, "seq_length": 4096, "bf16": true},
          "train": {"micro_batch_size": 1, "global_batch_size": 8},
          "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
          "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})",
      R"({"model": {"preset": "nemotron-3-nano-30b-a3b", "num_layers": 6, "hybrid_override_pattern": "M*M-E-",
                    "seq_length": 4096, "bf16": true},
          "train": {"micro_batch_size": 1, "global_batch_size": 8},
          "optimizer": {"use_distributed_optimizer": true}, "ddp": {"use_distributed_optimizer": true},
          "cluster": {"num_gpus": 8, "gpu": "h100-sxm-80gb"}})"};
  return s;
}

std::vector<sim::CheckpointSet> checkpoint_sets() {
  std::vector<sim::CheckpointSet> out{sim::CheckpointSet{}};
  for (std::uint32_t bit = 1; bit <= sim::kGdnNormOut; bit <<= 1) {
    sim::CheckpointSet keep, discard;
    keep.keep_inputs = bit;
    discard.discard_output = bit;
    out.push_back(keep);
    out.push_back(discard);
  }
  sim::CheckpointSet whole;
  whole.whole_module = true;
  out.push_back(whole);
  sim::CheckpointSet caller_holds_grad;  // a full-recompute group's last layer
  caller_holds_grad.keep_output_grad = true;
  out.push_back(caller_holds_grad);
  sim::CheckpointSet retained;  // a moe checkpoint whose dispatcher keeps its replay graph
  retained.keep_inputs = sim::kMoe;
  retained.retains_moe_input = true;
  out.push_back(retained);
  return out;
}

}  // namespace

TEST_CASE("a module's allocation script peaks where its profile does", "[sim][allocator]") {
  for (const auto& text : specs()) {
    model::RunSpec spec = spec_from(text);
    const model::Derived d = model::derive(spec);
    const sim::ShapeContext ctx = sim::make_shape_context(spec, d);
    std::vector<sim::LayerGraph> graphs{sim::build_embedding_graph(spec, d, ctx), sim::build_output_graph(spec, d, ctx)};
    for (const auto& stage : model::build_layer_plan(spec, d).stages)
      for (const auto& chunk : stage.chunks)
        for (const auto& l : chunk.layers) graphs.push_back(sim::build_layer_graph(spec, d, ctx, l, spec.model.hybrid_override_pattern.has_value()));
    for (const auto& g : graphs) {
      for (const auto& ckpt : checkpoint_sets()) {
        INFO(g.name << " keep " << ckpt.keep_inputs << " discard " << ckpt.discard_output << " whole " << ckpt.whole_module
                    << " keep_output_grad " << ckpt.keep_output_grad << " retains_moe_input " << ckpt.retains_moe_input);
        const sim::ModuleProfile p = sim::profile_module(g, ckpt);
        const auto script = sim::detail::module_script(g, ckpt);
        const auto e = sim::detail::script_excess(script, g);
        CHECK(e.forward == p.forward_peak_excess);
        CHECK(e.backward == p.backward_peak_excess);
        Bytes held{};
        for (const int t : script.held) held += g.tensors[static_cast<std::size_t>(t)].bytes;
        CHECK(held == p.held);
      }
    }
  }
}

TEST_CASE("the allocator replay leaves every allocated prediction as it was", "[sim][allocator]") {
  for (const auto& text : specs()) {
    for (const bool expandable : {false, true}) {
      const model::RunSpec spec = spec_from(text, {std::string("cluster.expandable_segments=") + (expandable ? "true" : "false")});
      sim::PredictOptions replay;
      replay.replay_allocator = true;
      sim::PredictOptions no_replay;
      no_replay.replay_allocator = false;
      const auto plain = sim::predict(spec, no_replay);
      const auto replayed = sim::predict(spec, replay);
      REQUIRE(plain.ranks.size() == replayed.ranks.size());
      for (std::size_t i = 0; i < plain.ranks.size(); ++i) {
        const auto& a = plain.ranks[i];
        const auto& b = replayed.ranks[i];
        CHECK(a.peak_allocated == b.peak_allocated);
        CHECK(a.first_iteration_peak_allocated == b.first_iteration_peak_allocated);
        CHECK(a.steady_peak_allocated == b.steady_peak_allocated);
        CHECK(a.peak_op == b.peak_op);
        CHECK(a.estimated_peak_reserved_p90 == b.estimated_peak_reserved_p90);
        CHECK_FALSE(a.allocator.has_value());
        REQUIRE(b.allocator.has_value());
        // What the allocator hands out covers what the tensors asked for, and it reserves at least that.
        CHECK(b.allocator->peak_allocated >= b.allocator->peak_requested);
        CHECK(b.allocator->peak_reserved >= b.allocator->peak_allocated);
        CHECK(b.allocator->requests > 0);
      }
    }
  }
}

TEST_CASE("the replayed stream's requested peak is the walk's, within what the walk approximates", "[sim][allocator]") {
  // The walk counts a module's transients as its profile's excess at one moment and a whole-module
  // replay's at its no-grad forward's; the stream allocates them one by one. Without full recompute
  // and with the slack the walk adds left out, the two peaks agree closely.
  for (const auto& text : specs()) {
    const model::RunSpec spec = spec_from(text);
    sim::PredictOptions replay;
    replay.replay_allocator = true;
    for (const auto& r : sim::predict(spec, replay).ranks) {
      const double walk = static_cast<double>(r.peak_allocated.value);
      const double stream = static_cast<double>(r.allocator->peak_requested.value);
      INFO("pp_rank " << r.rank.pp_rank << " walk " << walk << " stream " << stream);
      CHECK(std::abs(stream - walk) / walk < 0.02);
    }
  }
}

TEST_CASE("near the capacity the replay frees its cache and retries; a request it still cannot serve is the verdict",
          "[sim][allocator][verdict]") {
  const std::string text = specs()[0];
  sim::PredictOptions replay;
  replay.replay_allocator = true;
  const auto roomy = sim::predict(spec_from(text), replay);
  const auto& r = roomy.ranks.front();
  REQUIRE_FALSE(r.allocator->first_failure.has_value());
  const std::int64_t need = r.peak_with_graph_pool.value, reserved = r.allocator->peak_reserved.value;
  REQUIRE(reserved > need);
  // Devices from just under the allocated need to what the roomy replay reserved.
  for (const double f : {-0.001, 0.0005, 0.002, 0.01, 0.25, 0.5, 1.0}) {
    const std::int64_t cap = f < 0 ? need - 1 : need + static_cast<std::int64_t>(f * static_cast<double>(reserved - need));
    const auto p = sim::predict(
        spec_from(text, {"cluster.gpu={\"name\": \"h100-sxm-80gb\", \"memory_bytes\": " + std::to_string(cap) + "}"}), replay);
    const auto v = sim::run_verdict(p);
    INFO("capacity " << cap << " need " << need << " reserved " << reserved << ": " << v.reason);
    CHECK(v.reservation_replayed);
    const auto& a = *p.ranks.front().allocator;
    if (cap < need) {
      CHECK(v.kind == sim::FitKind::does_not_fit);
      CHECK(v.cause == sim::FitCause::allocated);
    } else if (a.first_failure) {
      // The allocated bytes fit, a request did not: an out-of-memory error by fragmentation.
      CHECK(v.kind == sim::FitKind::does_not_fit);
      CHECK(v.cause == sim::FitCause::reservation);
      CHECK(a.first_failure->request.value > 0);
      CHECK(a.first_failure->reserved.value <= cap);
    } else {
      // Served every request: what it reserved stayed within the device; at risk inside the edge.
      CHECK(a.peak_reserved.value <= cap);
      const bool edge = cap - a.peak_reserved.value < sim::reservation_edge(Bytes{cap}).value;
      CHECK(v.kind == (edge ? sim::FitKind::fits_without_reservation_margin : sim::FitKind::fits));
    }
    CHECK(p.fits_with_allocator_reserve == (v.kind == sim::FitKind::fits));
  }
}

TEST_CASE("the output layer's backward marks where the cuBLAS workspaces appear: after its input gradient", "[sim][allocator]") {
  // Traced (fam_gpt3, alloc_traces_s16): the first backward GEMM's input gradient, then the autograd
  // thread's 32 MiB workspace, then the weight gradient. Only the output layer's script has the mark.
  for (const auto& text : specs()) {
    model::RunSpec spec = spec_from(text);
    const model::Derived d = model::derive(spec);
    const sim::ShapeContext ctx = sim::make_shape_context(spec, d);
    const sim::LayerGraph out = sim::build_output_graph(spec, d, ctx);
    const auto script = sim::detail::module_script(out, sim::CheckpointSet{});
    std::vector<std::size_t> marks;
    for (std::size_t i = 0; i < script.backward.size(); ++i)
      if (script.backward[i].kind == sim::detail::ModuleScript::Kind::workspaces) marks.push_back(i);
    REQUIRE(marks.size() == 1);
    REQUIRE(marks[0] > 0);
    const auto& before = script.backward[marks[0] - 1];
    CHECK(before.kind == sim::detail::ModuleScript::Kind::alloc);
    CHECK(before.slot == script.grad(out.deferred_input));  // the final norm's output gradient
    const model::LayerPlan plan = model::build_layer_plan(spec, d);
    for (const auto& l : plan.stages.front().chunks.front().layers) {
      const auto ls = sim::detail::module_script(sim::build_layer_graph(spec, d, ctx, l, spec.model.hybrid_override_pattern.has_value()), sim::CheckpointSet{});
      for (const auto& st : ls.backward) CHECK(st.kind != sim::detail::ModuleScript::Kind::workspaces);
    }
  }
}

TEST_CASE("the output layer's and the embedding's weight gradients are the blocks the DDP hook drops", "[sim][allocator]") {
  // param.grad of the output layer (unfused wgrad, [V/TP, h]) and the embedding's dense gradient (whatever
  // the wgrad fusion): their frees are the ones local CUDA graphs defer to the optimizer step.
  for (const auto& text : specs()) {
    model::RunSpec spec = spec_from(text);
    const model::Derived d = model::derive(spec);
    const sim::ShapeContext ctx = sim::make_shape_context(spec, d);
    const std::int64_t wgrad = d.padded_vocab / spec.model.tensor_model_parallel_size * spec.model.hidden_size * 2;  // bf16
    const auto param_grad_frees = [](const sim::LayerGraph& g) {
      const auto script = sim::detail::module_script(g, sim::CheckpointSet{});
      std::vector<std::int64_t> slot_bytes(static_cast<std::size_t>(script.slots()), 0), freed;
      for (const auto& st : script.backward) {
        if (st.kind == sim::detail::ModuleScript::Kind::alloc) slot_bytes[static_cast<std::size_t>(st.slot)] = st.bytes;
        if (st.kind == sim::detail::ModuleScript::Kind::free && st.param_grad) freed.push_back(slot_bytes[static_cast<std::size_t>(st.slot)]);
      }
      return freed;
    };
    const auto out = param_grad_frees(sim::build_output_graph(spec, d, ctx));
    if (spec.model.gradient_accumulation_fusion) {
      CHECK(out.empty());  // the GEMM accumulates into main_grad; autograd gets the cached dummy
    } else {
      CHECK(out == std::vector<std::int64_t>{wgrad});
    }
    CHECK(param_grad_frees(sim::build_embedding_graph(spec, d, ctx)) == std::vector<std::int64_t>{wgrad});
  }
}

TEST_CASE("a full-recompute group's backward keeps the replay's output and its output gradient until it ends", "[sim][allocator]") {
  // CheckpointFunction.backward (random.py:648-664) holds `outputs` (the replayed layer's output) and `args` (the
  // gradient the group receives) until torch.autograd.backward returns. Measured (distribute_history_b.jsonl,
  // families_history.jsonl): at the attention backward's peak one more hidden-sized block from the bias-dropout-add
  // and one more received or backward gradient than the group's own tensors.
  const model::RunSpec spec = spec_from(specs()[2]);
  sim::PredictOptions o;
  o.replay_allocator = true;
  o.record_allocator_trace = true;
  const auto p = sim::predict(spec, o);
  const auto& r = p.ranks.front();
  REQUIRE(r.allocator_trace_where.size() == static_cast<std::size_t>(std::count_if(r.allocator_trace.begin(), r.allocator_trace.end(), [](std::int64_t e) { return e > 0; })));
  const std::int64_t hidden = 2048 * 4096 * 2;  // [s, b, h] bf16
  std::vector<std::int64_t> bytes;
  std::vector<bool> live;
  bool checked = false;
  for (const std::int64_t e : r.allocator_trace) {
    if (e < 0) {
      live[static_cast<std::size_t>(-e - 1)] = false;
      continue;
    }
    const std::string& w = r.allocator_trace_where[bytes.size()];
    bytes.push_back(e);
    live.push_back(true);
    if (w.rfind("L1(full recompute) backward it1: grad ", 0) != 0 || w.find("softmax.out") == std::string::npos) continue;
    // The last layer's attention backward: the replay's output and the output layer's input gradient are alive.
    int replay_out = 0, received = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (!live[i]) continue;
      const std::string& l = r.allocator_trace_where[i];
      if (l.rfind("L1(full recompute) backward it1: ", 0) == 0 && test::ends_with(l, "mlp_bda.out") && bytes[i] == hidden) ++replay_out;
      if (l.rfind("output backward it1: grad ", 0) == 0 && bytes[i] == hidden) ++received;
    }
    CHECK(replay_out == 1);
    CHECK(received == 1);
    checked = true;
    break;
  }
  CHECK(checked);
}

TEST_CASE("a moe checkpoint's input and its gradient stay until the dispatcher takes new probabilities", "[sim][allocator]") {
  // The alltoall dispatcher's self.probs (token_dispatcher.py:639) keeps the checkpoint's replay graph, whose leaf is
  // the detached input: the layer's input to the MoE (the pre-MLP norm's output, [s, b, h]) and that input's gradient
  // live from the backward to the next forward's dispatch_preprocess. Measured (alloc_traces_s16,
  // trace_moe_gqa_moe_r0 and layout_fake_ep8_moonlight4_moe_r0): one such pair of hidden-sized blocks per MoE layer
  // freed in the next iteration's forward, after the router's and before the dispatch's allocations.
  const model::RunSpec spec = spec_from(R"({"model": {"num_layers": 2, "transformer_impl": "local",
      "attention_backend": "unfused", "hidden_size": 1024, "num_attention_heads": 8, "num_query_groups": 8,
      "ffn_hidden_size": 2048, "vocab_size": 1024, "seq_length": 1024, "bf16": true, "normalization": "RMSNorm",
      "gated_linear_unit": true, "activation_func": "silu", "add_bias_linear": false, "hidden_dropout": 0.0,
      "attention_dropout": 0.0, "position_embedding_type": "rope", "num_moe_experts": 4, "moe_ffn_hidden_size": 512,
      "moe_router_topk": 2, "moe_layer_freq": [0, 1], "moe_token_dispatcher_type": "alltoall",
      "moe_router_load_balancing_type": "aux_loss", "moe_aux_loss_coeff": 0.001, "recompute_granularity": "selective",
      "recompute_modules": ["moe"]},
    "train": {"micro_batch_size": 1, "global_batch_size": 2}, "optimizer": {"bf16": true},
    "cluster": {"num_gpus": 1, "gpu": "h200-141gb"}})");
  sim::PredictOptions o;
  o.replay_allocator = true;
  o.record_allocator_trace = true;
  const auto p = sim::predict(spec, o);
  const auto& r = p.ranks.front();
  const std::int64_t hidden = 1024 * 1024 * 2;  // [s, b, h] bf16
  std::vector<std::string> where;               // per request
  std::vector<std::int64_t> bytes;
  int checked = 0;
  for (const std::int64_t e : r.allocator_trace) {
    if (e > 0) {
      where.push_back(r.allocator_trace_where[where.size()]);
      bytes.push_back(e);
      continue;
    }
    const std::string& freed = where[static_cast<std::size_t>(-e - 1)];
    const bool input = test::ends_with(freed, "L1.pre_mlp_layernorm.out") && freed.rfind("L1 forward", 0) == 0;
    const bool grad = test::ends_with(freed, "grad L1.pre_mlp_layernorm.out") && freed.rfind("L1 backward", 0) == 0;
    if (!input && !grad) continue;
    INFO(freed << " freed after " << where.back());
    CHECK(bytes[static_cast<std::size_t>(-e - 1)] == hidden);
    // Freed in a later forward of L1, by the router's last request, before the dispatch's first.
    CHECK(where.back().rfind("L1 forward", 0) == 0);
    CHECK(where.back().find("router") != std::string::npos);
    ++checked;
  }
  // Two micro-batches per iteration, two iterations: the input and the gradient of each of the first three backwards
  // are freed in a later forward (the last backward's stay to the end of the run).
  CHECK(checked == 6);
}
