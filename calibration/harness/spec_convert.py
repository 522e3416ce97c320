"""Turn a peakcast run spec (Megatron key names) into Megatron Core config objects.

Strict: every key must be a field of the target Megatron dataclass, or one of the few GPT-model
arguments listed in GPT_MODEL_KEYS. Unknown keys raise KeyError (like the simulator's parser).
"""
import dataclasses

# GPTModel constructor arguments / GPT-provider fields that are not TransformerConfig fields.
GPT_MODEL_KEYS = {
    "vocab_size",                        # already padded (see docs/measurement-format.md)
    "seq_length",                        # max_sequence_length and the data's sequence length
    "make_vocab_size_divisible_by",      # informational: vocab_size is already padded
    "share_embeddings_and_output_weights",
    "position_embedding_type",
    "rotary_base",
    "rotary_percent",
    "preset",
}
DTYPE_KEYS = {"params_dtype", "pipeline_dtype", "autocast_dtype", "main_grads_dtype",
              "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"}
OPTIMIZER_TOOL_KEYS = {"implementation"}


def _dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16,
            "float16": torch.float16, "fp32": torch.float32, "float32": torch.float32,
            "fp8": torch.uint8}[name]


def _activation(name):
    import torch.nn.functional as F
    from megatron.core import activations
    table = {"silu": F.silu, "gelu": F.gelu, "relu": F.relu}
    if hasattr(activations, "squared_relu"):
        table["squared_relu"] = activations.squared_relu
    if name == "quick_gelu":  # the function object MLP / TEGroupedMLP compare against (mlp.py:298)
        from megatron.core.fusions.fused_bias_geglu import quick_gelu
        table["quick_gelu"] = quick_gelu
    return table[name]


def _convert(key, value):
    if key in DTYPE_KEYS and isinstance(value, str):
        return _dtype(value)
    if key == "activation_func" and isinstance(value, str):
        return _activation(value)
    if key == "window_size" and isinstance(value, list):  # Optional[Tuple[int, int]]
        return tuple(value)
    if key == "attention_backend" and isinstance(value, str):
        from megatron.core.transformer.enums import AttnBackend
        return AttnBackend[value]
    return value


def _fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def build_transformer_config(model):
    from megatron.core.transformer.transformer_config import (MLATransformerConfig,
                                                              TransformerConfig)
    cls = MLATransformerConfig if model.get("multi_latent_attention") else TransformerConfig
    names = _fields(cls)
    kwargs, gpt = {}, {}
    for k, v in model.items():
        if k in names:
            kwargs[k] = _convert(k, v)
            if k in GPT_MODEL_KEYS:
                gpt[k] = v
        elif k in GPT_MODEL_KEYS:
            gpt[k] = v
        else:
            raise KeyError(f"model.{k}: not a field of {cls.__name__} nor a GPT model argument")
    return cls(**kwargs), gpt


def build_ddp_config(ddp):
    from megatron.core.distributed import DistributedDataParallelConfig
    names = _fields(DistributedDataParallelConfig)
    for k in ddp:
        if k not in names:
            raise KeyError(f"ddp.{k}: not a field of DistributedDataParallelConfig")
    return DistributedDataParallelConfig(**{k: _convert(k, v) for k, v in ddp.items()})


def build_optimizer_config(opt):
    from megatron.core.optimizer import OptimizerConfig
    names = _fields(OptimizerConfig)
    kw = {}
    for k, v in opt.items():
        if k in OPTIMIZER_TOOL_KEYS:
            continue
        if k not in names:
            raise KeyError(f"optimizer.{k}: not a field of OptimizerConfig")
        kw[k] = _convert(k, v)
    return OptimizerConfig(**kw)
