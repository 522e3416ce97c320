"""Make the pinned Megatron Core importable and runnable without Transformer Engine.

Everything here is applied at run time by monkeypatching; nothing in Megatron's own files is
changed. See docs/measurement-format.md and /work/shared/reference/measuring-on-the-device.md.

Workarounds (the three gaps of the pinned revision without TE):
  1. `CheckpointWithoutOutput` (used by the `layernorm` and `moe_act` tags) references the TE names
     FP8GlobalStateManager / activation_recompute_forward / fp8_autocast. We give
     `megatron.core.tensor_parallel.random` no-op stand-ins (FP8 off, null contexts).
  2. MLA passes k_channels/v_channels to its core attention, which the local DotProductAttention does
     not accept. `MLACapableDotProductAttention` accepts them (config copy with kv_channels=v_head_dim;
     MLA passes its own softmax scale) and is installed as the local backend's core attention.
  3. `moe_act` needs grouped GEMM (TE): not worked around; Megatron's ValueError is recorded.
  5. Apex's fused_weight_gradient_mlp_cuda (gradient_accumulation_fusion) gets a stand-in, and
  6. layers.py TE's cached dummy weight gradients (see install_fused_wgrad_standin, patch_dummy_wgrad).
  7. defer_embedding_wgrad_compute fails on the local spec's own column-parallel linears: they are
     given the flag off, as under the TE spec (emulate_te_spec_wgrad_deferral).

For fake-process-group runs (one GPU plays one rank of a larger world) the collectives are
replaced by a *symmetric-rank emulation*: every other rank is assumed to hold exactly what this
rank holds, so all-gathers repeat the local input (uneven ones fill the other ranks' slots with
random values), reduce-scatters keep the local chunk,
all-to-alls return the local chunk for this rank, all-reduces/broadcasts leave the local value,
and point-to-point receives are filled with random data. Shapes (hence memory) are what a real
run with balanced ranks produces; values are not. Nothing is sent anywhere.
"""
import contextlib
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
MEGATRON_DIR = os.environ.get("PEAKCAST_MEGATRON_DIR", os.path.join(REPO, ".megatron"))
MEGATRON_REVISION = "24bad8e677d22625d86ef2a54c9506b6e4992c93"

if MEGATRON_DIR not in sys.path:
    sys.path.insert(0, MEGATRON_DIR)

SHARE_STORAGE_MODE = {"mode": "megatron_cpp_extension"}


def patch_te_standins():
    """Gap 1: no-op stand-ins for the TE names used by CheckpointWithoutOutput."""
    from megatron.core.tensor_parallel import random as mrandom

    class _FP8GlobalStateManagerStandIn:
        @staticmethod
        def is_fp8_enabled():
            return False

        @staticmethod
        def get_fp8_recipe():
            return None

    def _activation_recompute_forward(*args, **kwargs):
        return contextlib.nullcontext()

    def _fp8_autocast(*args, **kwargs):
        return contextlib.nullcontext()

    if not getattr(mrandom, "HAVE_TE", False):
        mrandom.FP8GlobalStateManager = _FP8GlobalStateManagerStandIn
        mrandom.activation_recompute_forward = _activation_recompute_forward
        mrandom.fp8_autocast = _fp8_autocast


def ensure_share_storage():
    """CheckpointWithoutOutput compiles a tiny C++ extension (load_inline) at its first recompute.
    Build it now; if the toolchain is missing, fall back to a copying substitute and say so
    (the fallback holds one extra copy of the recomputed output until the region's backward)."""
    from megatron.core.tensor_parallel import random as mrandom

    try:
        mrandom._get_share_storage()
        SHARE_STORAGE_MODE["mode"] = "megatron_cpp_extension"
    except Exception as e:  # pragma: no cover - device only
        def _copy_share_storage(dst, src):
            st = dst.untyped_storage()
            st.resize_(src.untyped_storage().nbytes())
            st.copy_(src.untyped_storage())

        mrandom._share_storage_ext = type("X", (), {"share_storage": staticmethod(_copy_share_storage)})
        SHARE_STORAGE_MODE["mode"] = "copy_fallback: " + repr(e)[:300]


def patch_mla_local_attention():
    """Gap 2: an MLA-capable subclass of the local DotProductAttention."""
    from megatron.core.models import backends
    from megatron.core.transformer.dot_product_attention import DotProductAttention

    class MLACapableDotProductAttention(DotProductAttention):
        def __init__(self, config, layer_number, attn_mask_type, attention_type,
                     attention_dropout=None, softmax_scale=None, k_channels=None,
                     v_channels=None, cp_comm_type=None, pg_collection=None):
            if v_channels is not None:
                config = copy.copy(config)
                config.kv_channels = v_channels
            super().__init__(config=config, layer_number=layer_number,
                             attn_mask_type=attn_mask_type, attention_type=attention_type,
                             attention_dropout=attention_dropout, softmax_scale=softmax_scale,
                             cp_comm_type=cp_comm_type, pg_collection=pg_collection)

    backends.LocalSpecProvider.core_attention = lambda self: MLACapableDotProductAttention
    return MLACapableDotProductAttention


# --------------------------------------------------------------------------------------------
# Symmetric-rank emulation of collectives for fake-process-group runs.
# --------------------------------------------------------------------------------------------
class _DoneWork:
    def wait(self, *a, **k):
        return True

    def is_completed(self):
        return True

    def get_future(self):
        import torch
        f = torch.futures.Future()
        f.set_result(None)
        return f


def _ws(dist, group):
    return dist.get_world_size(group) if group is not None else dist.get_world_size()


def _rk(dist, group):
    return dist.get_rank(group) if group is not None else dist.get_rank()


def _fake_gather_scatter(torch, dist, _ret):
    """install_fake_collectives' all-gathers, reduce-scatters and all-to-all (symmetric ranks)."""
    def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
        w = _ws(dist, group)
        # In place (the distributed optimizer's param all-gather: the input is this rank's slot of
        # the output): the other ranks' slots already hold the right values, so leave them alone;
        # filling them with copies of this shard corrupts the parameters after the first step.
        if input_tensor.untyped_storage().data_ptr() == output_tensor.untyped_storage().data_ptr():
            return _ret(async_op)
        with torch.no_grad():
            if output_tensor.numel() == input_tensor.numel() * w:
                output_tensor.view(w, -1).copy_(input_tensor.reshape(1, -1).expand(w, -1))
        return _ret(async_op)

    def all_gather(tensor_list, tensor, group=None, async_op=False):
        # Uneven gathers (the MoE dispatcher's ETP all-gather with output_split_sizes) get other
        # ranks' slots of another size: fill them like all_to_all_single does, so no uninitialised
        # memory (NaN) reaches the model.
        with torch.no_grad():
            for t in tensor_list:
                if t.numel() == tensor.numel():
                    t.copy_(tensor.view_as(t))
                elif t.numel() > 0:
                    if t.is_floating_point():
                        t.normal_(0.0, 0.02)
                    else:
                        t.zero_()
        return _ret(async_op)

    def reduce_scatter_tensor(output, input, op=None, group=None, async_op=False):
        w, r = _ws(dist, group), _rk(dist, group)
        with torch.no_grad():
            if input.numel() == output.numel() * w:
                output.view(-1).copy_(input.reshape(w, -1)[r])
        return _ret(async_op)

    def reduce_scatter(output, input_list, op=None, group=None, async_op=False):
        r = _rk(dist, group)
        with torch.no_grad():
            output.copy_(input_list[r])
        return _ret(async_op)

    def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                          group=None, async_op=False):
        w, r = _ws(dist, group), _rk(dist, group)
        with torch.no_grad():
            if input_split_sizes is None:
                n = input.shape[0] // w if input.dim() > 0 else 0
                in_sizes = [n] * w
            else:
                in_sizes = [int(x) for x in input_split_sizes]
            if output_split_sizes is None:
                n = output.shape[0] // w if output.dim() > 0 else 0
                out_sizes = [n] * w
            else:
                out_sizes = [int(x) for x in output_split_sizes]
            if output.dim() == 0 or output.numel() == 0:
                return _ret(async_op)
            start_in = sum(in_sizes[:r])
            mine = input.narrow(0, start_in, in_sizes[r]) if input.numel() else None
            off = 0
            for j in range(w):
                dst = output.narrow(0, off, out_sizes[j])
                if mine is not None and out_sizes[j] == in_sizes[r]:
                    dst.copy_(mine)
                elif out_sizes[j] > 0:
                    if dst.is_floating_point():
                        dst.normal_(0.0, 0.02)
                    else:
                        dst.zero_()
                off += out_sizes[j]
        return _ret(async_op)
    return all_gather_into_tensor, all_gather, reduce_scatter_tensor, reduce_scatter, all_to_all_single


def _fake_point_to_point(torch):
    """install_fake_collectives' point-to-point stand-ins: receives filled with random values."""
    def batch_isend_irecv(p2p_op_list):
        from torch.distributed import distributed_c10d as c10d
        with torch.no_grad():
            for op in p2p_op_list:
                if op.op is c10d.irecv or getattr(op.op, "__name__", "") == "irecv":
                    if op.tensor.is_floating_point():
                        op.tensor.normal_(0.0, 0.02)
                    else:
                        op.tensor.zero_()
        return [_DoneWork() for _ in p2p_op_list]

    def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
        return _DoneWork()

    def irecv(tensor, src=None, group=None, tag=0, group_src=None):
        with torch.no_grad():
            if tensor.is_floating_point():
                tensor.normal_(0.0, 0.02)
        return _DoneWork()

    def send(tensor, dst=None, group=None, tag=0, group_dst=None):
        return None

    def recv(tensor, src=None, group=None, tag=0, group_src=None):
        irecv(tensor)
        return 0
    return batch_isend_irecv, isend, irecv, send, recv


def install_fake_collectives():
    import torch
    import torch.distributed as dist

    def _ret(async_op):
        return _DoneWork() if async_op else None

    def all_reduce(tensor, op=None, group=None, async_op=False):
        return _ret(async_op)

    def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
        return _ret(async_op)

    def barrier(group=None, async_op=False, device_ids=None):
        return _ret(async_op)

    (all_gather_into_tensor, all_gather, reduce_scatter_tensor, reduce_scatter,
     all_to_all_single) = _fake_gather_scatter(torch, dist, _ret)
    batch_isend_irecv, isend, irecv, send, recv = _fake_point_to_point(torch)

    repl = dict(all_reduce=all_reduce, broadcast=broadcast, barrier=barrier,
                all_gather_into_tensor=all_gather_into_tensor,
                _all_gather_base=all_gather_into_tensor, all_gather=all_gather,
                reduce_scatter_tensor=reduce_scatter_tensor,
                _reduce_scatter_base=reduce_scatter_tensor, reduce_scatter=reduce_scatter,
                all_to_all_single=all_to_all_single, batch_isend_irecv=batch_isend_irecv,
                send=send, recv=recv)
    for k, v in repl.items():
        setattr(dist, k, v)
    # Megatron modules that bound torch's collectives at import time (layers.py:85-92,
    # mappings.py:12, utils.py:1225-1231): the deferred wgrad's flush gathers through utils'.
    import importlib
    for name in ("megatron.core.utils", "megatron.core.tensor_parallel.layers",
                 "megatron.core.tensor_parallel.mappings"):
        try:
            mod = importlib.import_module(name)
        except Exception:
            continue
        if hasattr(mod, "dist_all_gather_func"):
            mod.dist_all_gather_func = all_gather_into_tensor
        if hasattr(mod, "dist_reduce_scatter_func"):
            mod.dist_reduce_scatter_func = reduce_scatter_tensor

    # Megatron's param_and_grad_buffer wraps grad reduce-scatters in _coalescing_manager: with
    # no real collectives issued, a no-op context is the faithful equivalent.
    class _CM:
        def __init__(self):
            self.works = []

        def append(self, w):
            self.works.append(w)

        def wait(self):
            return None

    @contextlib.contextmanager
    def _coalescing_manager(group=None, device=None, async_ops=False):
        yield _CM()

    dist._coalescing_manager = _coalescing_manager
    try:
        import megatron.core.distributed.param_and_grad_buffer as pgb
        pgb._coalescing_manager = _coalescing_manager
    except Exception:
        pass
    # isend/irecv are left alone: torch.distributed.P2POp validates its op against the original
    # functions, and Megatron's default batch_p2p_comm path goes through batch_isend_irecv.
    return sorted(repl)


def patch_torch_norm_sequence_parallel():
    """Gap 4: WrappedTorchNorm (the torch RMSNorm/LayerNorm of the local spec when Apex is absent)
    asserts `not sequence_parallel`. Build it with SP hidden from that assert and mark its
    parameters `sequence_parallel=True`, which is what Megatron's own SP-capable norms do so that
    finalize_model_grads all-reduces their gradients over the TP group. The norm math on the
    local s/t slice is unchanged."""
    from megatron.core.transformer import torch_norm

    cls = torch_norm.WrappedTorchNorm
    if getattr(cls, "_peakcast", False):
        return
    orig_new = cls.__new__

    def _new(klass, config, hidden_size, eps=1e-5, *args, **kwargs):
        if not config.sequence_parallel:
            return orig_new(klass, config, hidden_size, eps, *args, **kwargs)
        cfg = copy.copy(config)
        cfg.sequence_parallel = False
        mod = orig_new(klass, cfg, hidden_size, eps, *args, **kwargs)
        for p in mod.parameters():
            setattr(p, "sequence_parallel", True)
        return mod

    cls.__new__ = staticmethod(_new)
    cls._peakcast = True


def install_fused_wgrad_standin():
    """Gap 5: Apex's fused_weight_gradient_mlp_cuda (gradient_accumulation_fusion, and the deferred
    output-layer wgrad's drain, utils.py:1234) is absent. The stand-in accumulates
    grad_output^T @ input into main_grad in row blocks of at most 4 MiB of temporaries, so the
    allocator sees what the fused GEMM allocates (nothing) to within 4 MiB. Installed before Megatron
    is imported; used only when a case sets gradient_accumulation_fusion."""
    try:
        import fused_weight_gradient_mlp_cuda  # noqa: F401
        return
    except ImportError:
        pass
    import types

    def _accumulate(total_input, grad_output, main_grad):
        import torch

        out_dim, in_dim = main_grad.shape
        rows = max(1, (4 << 20) // (in_dim * (2 + main_grad.element_size())))
        # A kernel records no autograd: outside a backward (the deferred wgrad's flush) the input
        # still requires grad, and an add_ under grad mode would chain main_grad to it.
        with torch.no_grad():
            for i in range(0, out_dim, rows):
                block = torch.matmul(grad_output[:, i:i + rows].t(), total_input)
                main_grad[i:i + rows].add_(block)
                del block

    mod = types.ModuleType("fused_weight_gradient_mlp_cuda")
    mod.wgrad_gemm_accum_fp32 = _accumulate
    mod.wgrad_gemm_accum_fp16 = _accumulate
    mod.PEAKCAST_STANDIN = True
    sys.modules["fused_weight_gradient_mlp_cuda"] = mod


def patch_dummy_wgrad():
    """Gap 6: with gradient_accumulation_fusion Megatron's linears hand autograd a dummy weight
    gradient: Transformer Engine's get_dummy_wgrad, one cached buffer per (shape, dtype) kept for
    the run (transformer_engine/pytorch/module/base.py), or without TE a fresh torch.empty per
    backward (tensor_parallel/layers.py:697-717). Training containers have TE: give layers.py TE's
    cache."""
    import torch
    from megatron.core.tensor_parallel import layers

    if getattr(layers, "_peakcast_dummy_wgrad", False):
        return
    cache = {}

    def get_dummy_wgrad(shape, dtype, zero=False):
        key = (shape[0], shape[1], dtype)
        if key not in cache:
            cache[key] = torch.empty(shape, dtype=dtype, device="cuda", requires_grad=False)
        if zero:
            cache[key].fill_(0)
        return cache[key].detach()

    layers.get_dummy_wgrad = get_dummy_wgrad
    layers.HAVE_TE = True
    layers._peakcast_dummy_wgrad = True


def emulate_te_spec_wgrad_deferral(chunks):
    """Gap 7: defer_embedding_wgrad_compute makes every Megatron ColumnParallelLinear append its
    input to its own deferral buffer, which only the output layer has: the local spec's
    linear_qkv / linear_fc1 fail their first forward (tensor_parallel/layers.py:1147-1152). Under
    the TE spec, the only Megatron ColumnParallelLinear is the output layer. To measure what the
    deferral holds, the decoder's column-parallel linears get a config copy with the flag off, as
    TE's linears ignore it."""
    from megatron.core.tensor_parallel.layers import ColumnParallelLinear

    for chunk in chunks:
        for name, mod in chunk.named_modules():
            if isinstance(mod, ColumnParallelLinear) and not name.endswith("output_layer"):
                cfg = copy.copy(mod.config)
                cfg.defer_embedding_wgrad_compute = False
                mod.config = cfg


def apply_all(fake_process_group=False, gradient_accumulation_fusion=False):
    if gradient_accumulation_fusion:
        patch_dummy_wgrad()
    patch_torch_norm_sequence_parallel()
    patch_te_standins()
    patch_mla_local_attention()
    if fake_process_group:
        install_fake_collectives()


# Before anything imports megatron.core.tensor_parallel.layers, which probes for the extension once.
install_fused_wgrad_standin()
