"""tmakit: checked, simulated and benchmarked TMA for NVIDIA Hopper, from Python.

Tensor maps (no GPU, no torch needed)::

    tmakit.check({"dataType": "FLOAT32", "globalAddress": 4096, "globalDim": [1024, 512],
                  "globalStrides": [4096], "boxDim": [25, 32]})  # .ok False, .rule "T7", .fix
    tmakit.tensor_map(x, box=(64, 32), swizzle="128B").check()
    tmakit.explain_triton(desc)                 # a Triton TensorDescriptor, as Triton 3.6 encodes it
    tmakit.simulate(spec, global_bytes)         # what the load writes to shared memory

Kernels as PyTorch ops on CUDA tensors (torch imported on first use)::

    tmakit.gemm_fp8(a, b, scale_a=0.5, scale_b=2.0)   # a (M, K), b (N, K) float8_e4m3fn
    tmakit.transpose(x); tmakit.stencil3x3(x, w); tmakit.add(x, 1.0, out=x)
    x_fp8, scale = tmakit.quantize_fp8(x, "row")      # scales in the GEMM's layout
"""

import importlib.util

from ._tmakit import driver_available
from .tensor_maps import (
    CheckResult,
    Simulation,
    TensorMap,
    check,
    describe,
    fix,
    rules,
    simulate,
    tensor_map,
)
from .triton_descriptors import TritonCheckResult, explain_triton

__version__ = "0.1.0"

__all__ = [
    "CheckResult",
    "Simulation",
    "TensorMap",
    "TritonCheckResult",
    "add",
    "check",
    "describe",
    "driver_available",
    "explain_triton",
    "fix",
    "gemm_fp8",
    "rules",
    "simulate",
    "stencil3x3",
    "quantize_fp8",
    "tensor_map",
    "transpose",
]

_OPS = ("gemm_fp8", "transpose", "stencil3x3", "add", "quantize_fp8")


# NOTE: `from tmakit import *` takes the ops only where torch is installed (it imports them)
if importlib.util.find_spec("torch") is None:
    __all__ = [name for name in __all__ if name not in _OPS]


def __getattr__(name):
    # NOTE: the ops need torch; importing it here only when one is asked for keeps
    # `import tmakit` (and the validator) working where torch is not installed.
    if name in _OPS:
        try:
            from . import ops
        except ModuleNotFoundError as error:
            if error.name != "torch":
                raise
            raise ImportError(f"tmakit.{name} needs PyTorch: pip install 'tmakit[torch]' (or "
                              f"a torch build for your CUDA)") from error
        return getattr(ops, name)
    raise AttributeError(f"module 'tmakit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_OPS))
