"""Stand-ins for torch and other third-party packages so that Megatron-LM / Megatron-Bridge
config code can be imported and executed under a plain python3 (no torch).

Only what the config/serializer path needs is real: torch.dtype objects (str() == "torch.bfloat16"),
torch.nn.functional / torch.nn.init functions with the module paths and qualnames real torch gives them.
Everything else is an auto-generated stub: attribute access returns stubs, stub classes can be
subclassed, called (a call with a single callable argument returns it, so decorators pass through),
and stub instances are falsy.
"""
import abc
import typing
import importlib.abc
import importlib.machinery
import sys
import types

# Top-level packages that must look NOT installed (ImportError), like a container without them
# would behave, or because pretending they exist would send code down paths we cannot emulate.
ABSENT = {"fused_weight_gradient_mlp_cuda"}
# Top-level packages that are stubbed (importable, every attribute a stub).
STUBBED = {
    "torch", "transformers", "numpy", "einops", "omegaconf", "safetensors", "huggingface_hub",
    "accelerate", "tqdm", "datasets", "filelock", "requests", "psutil", "hydra", "peft",
    "megatron_energon", "webdataset", "nltk", "regex", "jinja2", "rich", "wrapt", "lightning",
    "pydantic", "fsspec", "boto3", "botocore", "aiohttp", "yaml_include", "torchvision", "torchaudio",
    "transformer_engine", "transformer_engine_torch", "triton", "dill", "cloudpickle", "msgpack", "h5py", "xxhash", "zstandard", "lz4", "blobfile", "nvidia",
}


VERSIONS = {"nvidia_resiliency_ext": "0.6.0", "transformer_engine": "2.12.0", "torch": "2.9.0", "triton": "3.5.0", "transformers": "4.57.1", "numpy": "2.1.0",
            "einops": "0.8.0", "omegaconf": "2.3.0", "safetensors": "0.5.0"}


class StubMeta(typing._ProtocolMeta):
    """Metaclass of stub classes: missing attributes become nested stub classes."""

    def __getattr__(cls, name):
        if (name.startswith("__") and name.endswith("__")) or name.startswith(("_abc", "_is_", "_stub")):
            raise AttributeError(name)
        sub = make_stub_class(name, cls.__module__, f"{cls.__qualname__}.{name}")
        type.__setattr__(cls, name, sub)
        return sub

    def __call__(cls, *args, **kwargs):
        if cls.__dict__.get("_stub_root", False) and len(args) == 1 and not kwargs and callable(args[0]) \
                and not isinstance(args[0], Stub):
            return args[0]  # decorator usage: @torch.jit.script, @torch.compile, ...
        return super().__call__(*args, **kwargs)

    def __getitem__(cls, item):
        return cls

    def register(cls, *args, **kwargs):  # e.g. transformers AutoConfig.register(name, cls, exist_ok=True)
        return args[-1] if args else None

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __bool__(cls):
        return True


class Stub(metaclass=StubMeta):
    _stub_root = True
    _is_protocol = False

    def __init_subclass__(cls, **kwargs):
        pass

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Stub()

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Stub):
            return args[0]
        return Stub()

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __float__(self):
        return 0.0

    def __lt__(self, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __getitem__(self, item):
        return Stub()

    def __add__(self, other):
        return self

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = __add__
    __or__ = __ror__ = __and__ = __rand__ = __add__

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def make_stub_class(name, module, qualname=None):
    cls = StubMeta(name, (Stub,), {"__module__": module, "__qualname__": qualname or name,
                                   "_stub_root": True})
    return cls


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        val = make_stub_class(name, self.__name__)
        setattr(self, name, val)
        return val


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        mod = StubModule(spec.name)
        mod.__path__ = []  # every stub is a package, so submodules import
        mod.__version__ = VERSIONS.get(spec.name, "0.0.0")
        return mod

    def exec_module(self, module):
        fill = SPECIAL.get(module.__name__)
        if fill:
            fill(module)


def _imported_from_megatron():
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith("<frozen") or "importlib" in fn or fn.endswith("stubs.py")):
            name = f.f_globals.get("__name__", "")
            return name.startswith("megatron") or isinstance(sys.modules.get(name), StubModule)
        f = f.f_back
    return False


REAL_MEGATRON = {"core", "training", "bridge", "inference", "post_training", "rl", "elastification"}


class StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top in ABSENT:
            return None
        parts = fullname.split(".")
        if top == "megatron" and len(parts) > 1 and parts[1] not in REAL_MEGATRON:
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)  # e.g. megatron.energon
        if top in STUBBED or (top != "megatron" and top not in sys.stdlib_module_names
                              and not top.startswith("_") and _imported_from_megatron()):
            # catch-all: any package that is not installed here becomes a stub
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)
        return None


class AbsentFinder(importlib.abc.MetaPathFinder):
    """Placed first: makes ABSENT packages raise ImportError even if installed."""

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named '{fullname}' (absent in this harness)", name=fullname)
        return None


# ---------------------------------------------------------------- real pieces of torch
class dtype:
    def __init__(self, name, is_floating_point, itemsize):
        self._name = name
        self.is_floating_point = is_floating_point
        self.itemsize = itemsize

    def __repr__(self):
        return f"torch.{self._name}"

    __str__ = __repr__

    def __reduce__(self):
        return (getattr, (sys.modules["torch"], self._name))


dtype.__module__ = "torch"

_DTYPES = {
    "float32": (True, 4, ["float"]), "float64": (True, 8, ["double"]), "float16": (True, 2, ["half"]),
    "bfloat16": (True, 2, []), "float8_e4m3fn": (True, 1, []), "float8_e5m2": (True, 1, []),
    "float8_e8m0fnu": (True, 1, []), "uint8": (False, 1, []), "int8": (False, 1, []),
    "int16": (False, 2, ["short"]), "int32": (False, 4, ["int"]), "int64": (False, 8, ["long"]),
    "bool": (False, 1, []), "complex64": (False, 8, []),
}


def _func(module, name):
    def f(*args, **kwargs):
        raise RuntimeError(f"stand-in {module}.{name} called")

    f.__name__ = name
    f.__qualname__ = name
    f.__module__ = module
    return f


# torch.nn.functional members that are C builtins in real torch (their __module__ is torch._C._nn);
# a YAML dump of them therefore reads _target_: torch._C._nn.<name>.
_F_BUILTINS_C_NN = {"gelu", "softplus", "hardtanh", "elu", "leaky_relu", "log_sigmoid", "silu_"}


def _fill_torch(m):
    m.__version__ = "2.9.0"
    m.dtype = dtype
    for name, (fp, size, aliases) in _DTYPES.items():
        d = dtype(name, fp, size)
        setattr(m, name, d)
        for a in aliases:
            setattr(m, a, d)
    m.Tensor = make_stub_class("Tensor", "torch")
    m.Size = tuple
    m.device = make_stub_class("device", "torch")
    m.Generator = make_stub_class("Generator", "torch")
    m.Stream = make_stub_class("Stream", "torch")
    import torch.cuda  # noqa: F401  (real-valued device queries)
    m.cuda = sys.modules["torch.cuda"]


class _FunctionalModule(StubModule):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _F_BUILTINS_C_NN:
            f = _func("torch._C._nn", name)
            setattr(sys.modules["torch._C._nn"], name, f)
        else:
            f = _func(self.__name__, name)
        setattr(self, name, f)
        return f


class _FuncModule(StubModule):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        f = _func(self.__name__, name)
        setattr(self, name, f)
        return f


def _fill_functional(m):
    m.__class__ = _FunctionalModule
    import torch._C._nn  # noqa: F401  (registers the module so inspect.getmodule resolves it)


def _fill_init(m):
    m.__class__ = _FuncModule


def _fill_nn(m):
    m.Module = make_stub_class("Module", "torch.nn.modules.module")
    m.Parameter = make_stub_class("Parameter", "torch.nn.parameter")


def _fill_te_optimizers(m):
    class FusedAdam:  # signature checked by OptimizerConfig.__post_init__ (optimizer_config.py:450-462)
        def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8,
                     adam_w_mode=True, weight_decay=0.0, amsgrad=False, set_grad_none=True,
                     capturable=False, master_weights=False, master_weight_dtype=None,
                     exp_avg_dtype=None, exp_avg_sq_dtype=None, use_decoupled_grad=False,
                     store_param_remainders=False):
            pass

    FusedAdam.__module__ = "transformer_engine.pytorch.optimizers.fused_adam"
    m.FusedAdam = FusedAdam


class _Arr(list):
    """numpy.ndarray stand-in for the 1-D float64 arithmetic megatron.core.datasets.utils.normalize does."""

    def __truediv__(self, other):
        return _Arr(x / other for x in self)

    def tolist(self):
        return list(self)


class _IInfo:
    def __init__(self, bits, signed):
        self.max = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
        self.min = -(2 ** (bits - 1)) if signed else 0


def _fill_numpy(m):
    for name, bits, signed in (("uint8", 8, 0), ("uint16", 16, 0), ("uint32", 32, 0), ("uint64", 64, 0),
                               ("int8", 8, 1), ("int16", 16, 1), ("int32", 32, 1), ("int64", 64, 1)):
        setattr(m, name, make_stub_class(name, "numpy"))
        getattr(m, name)._iinfo = _IInfo(bits, signed)
    m.float64 = float
    m.float32 = make_stub_class("float32", "numpy")
    m.array = lambda x, dtype=None: _Arr(float(v) for v in x) if dtype is float else _Arr(x)
    m.sum = lambda a: sum(a)  # < 8 elements: numpy's pairwise sum is a plain left-to-right sum
    m.iinfo = lambda t: t._iinfo


def _fill_cuda(m):
    """An H100 SXM 80GB, as the seed studies ran on."""
    import types as _t
    props = _t.SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132,
                               total_memory=85520809984)
    m.is_available = lambda: True
    m.device_count = lambda: 8
    m.get_device_capability = lambda device=None: (9, 0)
    m.get_device_properties = lambda device=None: props
    m.get_device_name = lambda device=None: props.name
    m.current_device = lambda: 0


SPECIAL = {
    "torch.cuda": _fill_cuda,
    "numpy": _fill_numpy,
    "transformer_engine.pytorch.optimizers": _fill_te_optimizers,
    "torch": _fill_torch,
    "torch.nn": _fill_nn,
    "torch.nn.functional": _fill_functional,
    "torch.nn.init": _fill_init,
}


def install():
    sys.meta_path.insert(0, AbsentFinder())
    sys.meta_path.append(StubFinder())
    # packaging is needed for real version comparisons; pip vendors it.
    import pip._vendor.packaging as pkg
    import pip._vendor.packaging.version  # noqa: F401
    import pip._vendor.packaging.specifiers  # noqa: F401
    import pip._vendor.packaging.requirements  # noqa: F401
    sys.modules["packaging"] = pkg
    for sub in ("version", "specifiers", "requirements", "utils", "markers", "tags"):
        try:
            sys.modules[f"packaging.{sub}"] = importlib.import_module(f"pip._vendor.packaging.{sub}")
        except ImportError:
            pass
    import typing
    if not hasattr(typing, "override"):  # Python 3.12 API used by Megatron-LM sources
        typing.override = lambda f: f
