#!/usr/bin/env python3
"""Write tests/data/bridge/*.run_config.yaml by running Megatron-Bridge's own config code.

Runs the pinned sources' recipe functions, runtime_config_update() and ConfigContainer.to_yaml()
(the exact serializer a checkpoint save calls) under plain python3, with stand-ins for torch and the
other third-party packages (bridge_stubs.py). What the stand-ins cannot do is done here, each step
naming the Bridge/Megatron line it stands for:

  * HF configs: AutoBridge.from_hf_pretrained would download config.json; a FakeHFConfig carrying the
    published config.json values plus the attributes transformers' config class adds is used instead.
  * setup() (training/setup.py) runs on GPUs; its config mutations between runtime_config_update() and
    the first checkpoint save are applied here one by one (vocab size, tokenizer object, timers,
    DDP bucket size, model-config sync functions).

Usage: generate_fixtures.py BRIDGE_GIT_DIR MEGATRON_LM_GIT_DIR OUT_DIR [study ...]
  e.g. generate_fixtures.py /work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo \
           /work/.mirror/NVIDIA+Megatron-LM/repo tests/data/bridge
The pinned trees are exported with `git archive` into a temporary directory; nothing is installed.
"""
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
BRIDGE_REV = "600d069b824dd5ce50367a311a5a3244478faf22"
MCORE_REV = "24bad8e677d22625d86ef2a54c9506b6e4992c93"


def export(git_dir, rev, path, dest):
    os.makedirs(dest, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", git_dir, "archive", rev, path], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)


def main():
    bridge_git, mlm_git, out_dir = (os.path.abspath(p) for p in sys.argv[1:4])
    tmp = tempfile.mkdtemp(prefix="bridge-fixtures-")
    bridge_src, mlm_root = os.path.join(tmp, "bridge"), os.path.join(tmp, "mlm")
    export(bridge_git, BRIDGE_REV, "src", bridge_src)
    export(mlm_git, MCORE_REV, "megatron", mlm_root)
    sys.path[:0] = [os.path.join(bridge_src, "src"), mlm_root, HERE]
    import bridge_stubs

    bridge_stubs.install()
    warnings.simplefilter("ignore")
    import logging

    logging.disable(logging.CRITICAL)

    # Checkpoint/tensorboard paths in _pretrain_common/_sft_common are built from os.getcwd()
    # (recipes/common.py:46-50); use the NeMo container's Bridge checkout as the working directory.
    cwd_token = os.path.join(tmp, "opt", "Megatron-Bridge")
    os.makedirs(cwd_token)
    os.chdir(cwd_token)

    studies = [
        ("moonlight-16b-8xh100", build_moonlight, 8),
        ("nemotron-3-nano-16xh100", build_nemotron, 16),
        ("llama3-70b-fp8-32xh100", build_llama, 32),
    ]
    only = sys.argv[4:] or None
    for name, builder, world in studies:
        if only and name not in only:
            continue
        os.environ.update({"WORLD_SIZE": str(world), "RANK": "0", "LOCAL_RANK": "0"})
        cfg = builder()
        from megatron.bridge.training.config import runtime_config_update

        runtime_config_update(cfg)  # training/config.py:1990, called by pretrain() (pretrain.py:74)
        emulate_setup(cfg, world)
        path = os.path.join(out_dir, f"{name}.run_config.yaml")
        cfg.to_yaml(path)  # what save_checkpoint's finalize fn calls (training/checkpointing.py:1482)
        text = open(path).read().replace(cwd_token, "/opt/Megatron-Bridge")
        open(path, "w").write(text)
        print("wrote", path)
    os.chdir(out_dir)
    shutil.rmtree(tmp)


# ----------------------------------------------------------------------------- HF configs
class FakeHFConfig:
    """Attribute bag standing in for a transformers PretrainedConfig: missing names raise."""

    def __init__(self, name_or_path, attrs, attribute_map=None):
        self.__dict__.update(attrs)
        self.__dict__["name_or_path"] = name_or_path
        self.__dict__["_attribute_map"] = attribute_map or {}

    def __getattr__(self, name):
        amap = self.__dict__.get("_attribute_map", {})
        if name in amap:
            return self.__dict__[amap[name]]
        raise AttributeError(name)

    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


def _pretrained_base(torch, **over):
    """Attributes transformers.PretrainedConfig.__init__ sets that Bridge's CONFIG_MAPPING can read."""
    base = {"tie_word_embeddings": True, "torch_dtype": None, "architectures": None,
            "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}
    base.update(over)
    return base


def moonlight_hf_config():
    """moonshotai/Moonlight-16B-A3B config.json (published values) as transformers' DeepseekV3Config
    exposes them: the class adds head_dim = qk_rope_head_dim, qk_head_dim = nope + rope, rope_interleave,
    and maps num_local_experts -> n_routed_experts (attribute_map)."""
    import torch

    attrs = _pretrained_base(
        torch, tie_word_embeddings=False, torch_dtype=torch.bfloat16,
        architectures=["DeepseekV3ForCausalLM"], bos_token_id=163584, eos_token_id=163586)
    attrs.update({
        "model_type": "deepseek_v3", "vocab_size": 163840, "max_position_embeddings": 8192,
        "hidden_size": 2048, "intermediate_size": 11264, "moe_intermediate_size": 1408,
        "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
        "n_shared_experts": 2, "n_routed_experts": 64, "routed_scaling_factor": 2.446,
        "kv_lora_rank": 512, "q_lora_rank": None, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "qk_nope_head_dim": 128, "qk_head_dim": 192, "head_dim": 64, "n_group": 1, "topk_group": 1,
        "num_experts_per_tok": 6, "first_k_dense_replace": 1, "norm_topk_prob": True,
        "rope_interleave": True, "hidden_act": "silu", "initializer_range": 0.02,
        "rms_norm_eps": 1e-05, "pretraining_tp": 1, "use_cache": True, "rope_theta": 50000.0,
        "rope_scaling": None, "attention_bias": False, "attention_dropout": 0.0,
        # config.json keys DeepseekV3Config does not declare (kept as attributes by PretrainedConfig):
        "aux_loss_alpha": 0.001, "ep_size": 1, "moe_layer_freq": 1, "scoring_func": "sigmoid",
        "seq_aux": True, "topk_method": "noaux_tc", "num_nextn_predict_layers": 0,
        "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                     "AutoModel": "modeling_deepseek.DeepseekV3Model",
                     "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
    })
    return FakeHFConfig("moonshotai/Moonlight-16B-A3B", attrs, {"num_local_experts": "n_routed_experts"})


def llama3_70b_hf_config():
    """meta-llama/Meta-Llama-3-70B config.json as transformers' LlamaConfig exposes it (the class adds
    mlp_bias=False and head_dim = hidden_size // num_attention_heads)."""
    import torch

    attrs = _pretrained_base(
        torch, tie_word_embeddings=False, torch_dtype=torch.bfloat16,
        architectures=["LlamaForCausalLM"], bos_token_id=128000, eos_token_id=128001)
    attrs.update({
        "model_type": "llama", "vocab_size": 128256, "max_position_embeddings": 8192,
        "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
        "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_act": "silu",
        "initializer_range": 0.02, "rms_norm_eps": 1e-05, "pretraining_tp": 1, "use_cache": True,
        "rope_theta": 500000.0, "rope_scaling": None, "attention_bias": False,
        "attention_dropout": 0.0, "mlp_bias": False, "head_dim": 128,
    })
    return FakeHFConfig("meta-llama/Meta-Llama-3-70B", attrs)


HF_CONFIGS = {
    "moonshotai/Moonlight-16B-A3B": moonlight_hf_config,
    "meta-llama/Meta-Llama-3-70B": llama3_70b_hf_config,
}


def patch_autobridge():
    """AutoBridge.from_hf_pretrained (models/conversion/auto_bridge.py:529) minus the download:
    the bridge is built on the config (AutoBridge.__init__, :338) and the revision that the wrapper's
    init_kwargs would carry is set as in :365-366."""
    from megatron.bridge.models.conversion import auto_bridge as ab
    from megatron.bridge.models.conversion import model_bridge as mb
    from megatron.bridge.models.deepseek.deepseek_v3_bridge import DeepSeekV3Bridge
    from megatron.bridge.models.llama.llama_bridge import LlamaBridge

    bridge_for = {"DeepseekV3ForCausalLM": DeepSeekV3Bridge, "LlamaForCausalLM": LlamaBridge}

    def from_hf_pretrained(cls, path, **kwargs):
        hf = HF_CONFIGS[str(path)]()
        b = object.__new__(cls)
        b.hf_pretrained = hf
        b.export_weight_dtype = "bf16"
        b.hf_model_id = None
        rev = kwargs.get("revision")
        b.hf_model_revision = rev if isinstance(rev, str) else None
        b.trust_remote_code = False
        b._fake_bridge_cls = bridge_for[hf.architectures[0]]
        return b

    def _model_bridge(self):
        # get_model_bridge dispatch (model_bridge.py:2395-2401): a fresh bridge with hf_config set
        bridge = self._fake_bridge_cls()
        bridge.hf_pretrained = self.hf_pretrained
        bridge.hf_config = self.hf_pretrained
        bridge.export_weight_dtype = self.export_weight_dtype
        return bridge

    class _Shim:
        def __init__(self, config):
            self.config = config
            self.model_name_or_path = config.name_or_path

    ab.AutoBridge.from_hf_pretrained = classmethod(from_hf_pretrained)
    ab.AutoBridge._model_bridge = property(_model_bridge)
    ab.AutoBridge._provider_bridge_input = property(lambda self: _Shim(self.hf_pretrained))
    ab.PretrainedConfig = FakeHFConfig  # isinstance(self.hf_pretrained, PretrainedConfig) checks
    del mb


# ----------------------------------------------------------------------------- studies
def build_moonlight():
    patch_autobridge()
    import megatron.bridge.recipes.moonlight.h100.moonlight_16b as r

    cfg = r.moonlight_16b_pretrain_8gpu_h100_bf16_config()
    # configs/runs/moonlight-16b-8xh100.json: GBS 4, the recompute_modules [] control row
    cfg.train.global_batch_size = 4
    cfg.model.recompute_modules = []
    return cfg


def build_nemotron():
    import megatron.bridge.recipes.nemotronh.h100.nemotron_3_nano as r

    cfg = r.nemotron_3_nano_pretrain_8gpu_h100_bf16_config()
    # configs/runs/nemotron-3-nano-16xh100.json: 16 GPUs (WORLD_SIZE), seq 8192 (recipe's), GBS 16,
    # recompute moe+layernorm (recipe's), cross_entropy_fusion_impl "te" (the recipe says "native")
    cfg.train.global_batch_size = 16
    cfg.model.cross_entropy_fusion_impl = "te"
    return cfg


def build_llama():
    patch_autobridge()
    import megatron.bridge.perf_recipes.llama.h100.llama3 as r
    from megatron.bridge.training.mixed_precision import bf16_with_fp8_current_scaling_mixed

    cfg = r.llama3_70b_sft_32gpu_h100_bf16_config()
    # configs/runs/llama3-70b-fp8-32xh100.json: Bridge's FP8 current-scaling preset as it is (first and
    # last layers BF16, FP8 params), BF16 grad reduce as the perf recipe sets it (perf_recipes/_common.py:122),
    # TE CUDA graphs on the MLP as the fp8cs perf recipe sets them (perf_recipes/llama/h100/llama3.py:363-364)
    # with the TE RNG tracker _benchmark_common enables for active graphs (perf_recipes/_common.py:85-86),
    # selective recompute of core_attn.
    cfg.mixed_precision = bf16_with_fp8_current_scaling_mixed()
    cfg.mixed_precision.grad_reduce_in_fp32 = False
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["mlp"]
    cfg.rng.te_rng_tracker = cfg.model.use_te_rng_tracker = True
    cfg.model.recompute_granularity = "selective"
    cfg.model.recompute_modules = ["core_attn"]
    return cfg


# ----------------------------------------------------------------------------- setup() emulation
def emulate_setup(cfg, world):
    """Config mutations training/setup.py makes before the first checkpoint save."""
    from megatron.bridge.training import setup as st
    from megatron.core.distributed.distributed_data_parallel import DistributedDataParallel
    from megatron.core.distributed.finalize_model_grads import finalize_model_grads
    from megatron.core.optimizer.distrib_optimizer import DistributedOptimizer
    from megatron.core.process_groups_config import ProcessGroupCollection
    from megatron.core.timers import Timers
    from megatron.core.tokenizers.megatron_tokenizer import _get_tokenizer_model_class
    from megatron.bridge.models.gpt.gpt_builder import GPTModelConfig as GMC
    from megatron.bridge.models.hybrid.hybrid_builder import HybridModelConfig as HMC

    # setup.py:321-327 tokenizer and vocab size
    tok = cfg.tokenizer
    if tok.tokenizer_type == "NullTokenizer":
        tok_vocab = tok.vocab_size
        tok_cls = _get_tokenizer_model_class("null-text", {"library": "null-text"})
    else:
        tok_vocab = {"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": 131072,
                     "meta-llama/Meta-Llama-3-70B": 128256}[tok.tokenizer_model]
        tok_cls = _get_tokenizer_model_class("huggingface", {"library": "huggingface"})
    cfg.model.vocab_size, cfg.model.should_pad_vocab = st._validate_and_set_vocab_size(
        model_vocab_size=cfg.model.vocab_size, tokenizer_vocab_size=tok_vocab,
        use_tokenizer_vocab_size=getattr(cfg.tokenizer, "use_tokenizer_vocab_size", False))
    tokenizer = object.__new__(tok_cls)
    if hasattr(cfg.dataset, "tokenizer"):  # setup.py:329-330
        cfg.dataset.tokenizer = tokenizer
    if hasattr(cfg.dataset, "token_dtype_code") and cfg.dataset.token_dtype_code is None:  # :335-340
        cfg.dataset.token_dtype_code = 4 if tok_vocab > 65535 + 1 else 8

    # model_provider.py:646 get_model(): use_cpu_initialization reset (provider path only)
    is_builder = isinstance(cfg.model, (GMC, HMC))
    if not is_builder:
        cfg.model.use_cpu_initialization = False
        # gpt_provider.py:229-230 GPTModelProvider.provide(): RoPE fusion off when incompatible
        # (HybridModelProvider.provide, hybrid/hybrid_provider.py:276, has no such step)
        from megatron.bridge.models.gpt_provider import GPTModelProvider
        from megatron.bridge.utils import fusions
        if isinstance(cfg.model, GPTModelProvider) and not fusions.validate_rope_fusion_compatibility(cfg.model):
            cfg.model.apply_rope_fusion = False

    # megatron/training/models/dist_utils.py:314-319 and distributed_data_parallel.py:68-72 bucket size
    tp, pp, cp = (cfg.model.tensor_model_parallel_size, cfg.model.pipeline_model_parallel_size,
                  cfg.model.context_parallel_size)
    dp_cp = world // (tp * pp)
    if cfg.ddp.bucket_size is None:
        cfg.ddp.bucket_size = max(40000000, 1000000 * dp_cp)
    if not cfg.ddp.overlap_grad_reduce:
        cfg.ddp.bucket_size = None

    # setup.py:409-410 timers (GlobalState.timers, state.py:355-358)
    timers = Timers(cfg.logger.timing_log_level, cfg.logger.timing_log_option)
    cfg.model.timers = timers
    cfg.optimizer.timers = timers

    # setup.py:465-472 -> :609-637 _update_model_config_funcs
    vp = cfg.model.virtual_pipeline_model_parallel_size
    chunks = [object.__new__(DistributedDataParallel) for _ in range(vp if (pp > 1 and vp) else 1)]
    model_config = cfg.model.transformer if is_builder else cfg.model
    if cfg.ddp.overlap_grad_reduce:
        model_config.no_sync_func = [c.no_sync for c in chunks]
        if len(chunks) == 1:
            model_config.no_sync_func = model_config.no_sync_func[0]
        if cfg.dist.align_grad_reduce:
            model_config.grad_sync_func = [c.start_grad_sync for c in chunks]
            if len(chunks) == 1:
                model_config.grad_sync_func = model_config.grad_sync_func[0]
    if cfg.ddp.overlap_param_gather and cfg.ddp.align_param_gather:
        model_config.param_sync_func = [c.start_param_sync for c in chunks]
        if len(chunks) == 1:
            model_config.param_sync_func = model_config.param_sync_func[0]
    pg_collection = object.__new__(ProcessGroupCollection)
    model_config.finalize_model_grads_func = functools.partial(finalize_model_grads, pg_collection=pg_collection)
    model_config.grad_scale_func = object.__new__(DistributedOptimizer).scale_loss


if __name__ == "__main__":
    main()
