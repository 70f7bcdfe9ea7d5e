"""Triton's host-side tensor descriptors, judged as Triton 3.6 really encodes them.

A ``triton.tools.tensor_descriptor.TensorDescriptor`` does not become a tensor map with its
block as the box. Triton checks the constructor's arguments, compiles the kernel (which picks
the block's shared layout: an NVMMA layout whose swizzle follows the block's inner row), and
at launch encodes a tensor map whose box is *derived* from the block and that layout: every
dimension clamped to 256 and, under a swizzle, the inner dimension clamped to the swizzle span
(the kernel then issues several copies per block). docs/triton.md lists each rule with the
Triton file it comes from.

``explain_triton`` walks the same path: Triton's own checks first (named as Triton's, with
the message Triton gives), then the tensor map Triton would encode, judged by the validator
as the driver will (sm_90a). Nothing here imports triton or torch.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from .tensor_maps import CheckResult, TensorMap, _array_info, _is_torch_tensor, check

TRITON_VERSION = "3.6"

# NOTE: the limits below are Triton 3.6's own (docs/triton.md cites where each is set).
TRITON_MAX_TENSOR_NUMEL = 1 << 20      # triton._utils.TRITON_MAX_TENSOR_NUMEL
BOX_DIM_MAX = 256                      # getTMABlockShape clamps every block dimension to this
SM90_MAX_SHARED_BYTES = 232448         # 227 KiB: what an sm_90 block may opt into
MBARRIER_BYTES = 8                     # the barrier a descriptor load allocates beside the block
INT32_MAX = (1 << 31) - 1              # the launcher passes extents to the kernel as int32

# Triton's element types (the names its JIT gives a torch dtype): bits per element and the TMA
# data type the compiler encodes (getTMAElementType: fp16/bf16/fp32/fp64 by name, every other
# type by size, 4- and 8-byte integers signed or not; i1 has none).
_TRITON_TYPES = {
    "fp16": (16, "FLOAT16"), "bf16": (16, "BFLOAT16"), "fp32": (32, "FLOAT32"),
    "fp64": (64, "FLOAT64"),
    "fp8e4nv": (8, "UINT8"), "fp8e5": (8, "UINT8"), "fp8e4b15": (8, "UINT8"),
    "fp8e4b8": (8, "UINT8"), "fp8e5b16": (8, "UINT8"),
    "i8": (8, "UINT8"), "u8": (8, "UINT8"), "i16": (16, "UINT16"), "u16": (16, "UINT16"),
    "i32": (32, "INT32"), "u32": (32, "UINT32"), "i64": (64, "INT64"), "u64": (64, "UINT64"),
    "u1": (1, None),
}
# The fp8 types Triton 3.6 compiles for sm_90 (the others are AMD's fnuz formats).
_SM90_FP8 = ("fp8e4nv", "fp8e5", "fp8e4b15")
_FLOATING = {"fp16", "bf16", "fp32", "fp64", "fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8",
             "fp8e5b16"}

# torch dtype names -> Triton's names (triton._utils.type_canonicalisation_dict, 3.6). A torch
# dtype missing here (float8_e8m0fnu, float4_e2m1fn_x2, complex) has no Triton type: the JIT
# raises KeyError when the kernel is launched.
_TORCH_NAMES = {
    "bool": "u1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
    "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16", "float16": "fp16",
    "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32", "float64": "fp64",
    "double": "fp64", "int8": "i8", "int16": "i16", "int32": "i32", "int": "i32",
    "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
}
# NumPy's names for the same types (for host arrays and dtype= given as a NumPy dtype).
_NUMPY_NAMES = {"float16": "fp16", "float32": "fp32", "float64": "fp64", "int8": "i8",
                "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
                "uint32": "u32", "int64": "i64", "uint64": "u64", "bool": "u1"}
# Sizes of the torch dtypes that have no Triton type, so the message can still say so.
_OTHER_TORCH_BYTES = {"float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1, "complex64": 8,
                      "complex128": 16, "complex32": 4}


class TritonCheckResult(CheckResult):
    """The verdict on a Triton descriptor: a CheckResult (``ok``, ``verdict``, ``rule``,
    ``message``, ``fix``) with what it was judged on.

    ``refused_by``: "triton" (one of Triton's own checks: the rule id starts with "TT" and the
    message quotes Triton), "driver" (the tensor map Triton encodes breaks a validator rule) or
    None when ok. ``block``: the block shape (outermost first); ``box``: the box Triton
    derives from it, outermost first as the block (None when Triton refuses before deriving
    it); ``swizzle_bytes``: the shared layout's swizzle span (0, 32, 64 or 128) the box was
    derived with; ``copies``: TMA copies per block (the block over the box); ``spec``: the
    tensor map Triton would encode (the keys of `tmakit check`), or None; ``triton_version``:
    the Triton release whose rules were applied; ``assumed``: what was assumed about the
    kernel (the shared layout), in words.
    """

    __slots__ = ("refused_by", "block", "box", "swizzle_bytes", "copies", "spec",
                 "triton_version", "assumed")

    def __init__(self, verdict: str, rule: Optional[str], message: str,
                 fix: Optional[dict] = None, *, refused_by: Optional[str] = None,
                 block: Optional[tuple] = None, box: Optional[tuple] = None,
                 swizzle_bytes: Optional[int] = None, spec: Optional[dict] = None,
                 assumed: str = ""):
        super().__init__(verdict, rule, message, fix)
        self.refused_by = refused_by
        self.block = block
        self.box = box
        self.swizzle_bytes = swizzle_bytes
        self.copies = None
        if block is not None and box is not None:
            copies = 1
            for b, x in zip(block, box):
                copies *= -(-b // x) if x else 0
            self.copies = copies
        self.spec = spec
        self.triton_version = TRITON_VERSION
        self.assumed = assumed

    def __repr__(self) -> str:
        return (f"TritonCheckResult(ok={self.ok}, rule={self.rule!r}, "
                f"refused_by={self.refused_by!r}, block={self.block}, box={self.box}, "
                f"swizzle_bytes={self.swizzle_bytes}, message={self.message!r})")


# --- the derivation, on plain numbers ---------------------------------------------------------


class Derivation(NamedTuple):
    box: tuple            # outermost first, as the block
    swizzle_bytes: int    # 0, 32, 64 or 128


def default_swizzle_bytes(block: Sequence[int], element_bits: int) -> int:
    """The swizzle span of the NVMMA shared layout Triton 3.6 gives a descriptor's block when
    no user of the load asks for another (OptimizeDescriptorEncoding's fallback, built by
    NVMMASharedEncodingAttr::get): the widest of 128, 64, 32 bytes that the block's inner row
    is at least as long as and a multiple of; none for a rank-1 block or when the outer
    dimensions together hold fewer than 8 rows."""
    inner_bytes = block[-1] * element_bits // 8
    span = next((s for s in (128, 64, 32) if inner_bytes >= s and inner_bytes % s == 0), 0)
    rows = 1
    for b in block[:-1]:
        rows *= b
    if len(block) < 2 or rows < 8:
        return 0
    return span


def derive_box(block: Sequence[int], element_bits: int,
               swizzle_bytes: Optional[int] = None) -> Derivation:
    """The TMA box Triton 3.6 encodes for ``block`` (outermost first, as TensorDescriptor's
    block_shape) of ``element_bits``-bit elements (8, 16, 32 or 64), as getTMABlockShape
    derives it: each dimension clamped to 256 and, under a swizzle, the inner dimension set to
    the swizzle span in elements. ``swizzle_bytes``: the shared layout's swizzle (None: the
    one Triton picks by default, default_swizzle_bytes). ValueError when the block's inner
    row is shorter than the stated swizzle (Triton's compiler stops there)."""
    block = tuple(block)
    if not block:
        raise ValueError("block: a descriptor has at least one dimension")
    if element_bits not in (8, 16, 32, 64):
        raise ValueError(f"element_bits: {element_bits} is not 8, 16, 32 or 64")
    swizzle = default_swizzle_bytes(block, element_bits) if swizzle_bytes is None \
        else int(swizzle_bytes)
    if swizzle not in (0, 32, 64, 128):
        raise ValueError(f"swizzle_bytes: {swizzle_bytes!r} is not 0, 32, 64 or 128")
    box = [min(b, BOX_DIM_MAX) for b in block]
    if swizzle:
        span_elements = swizzle * 8 // element_bits
        if box[-1] < span_elements:
            raise ValueError(
                f"block_shape[-1] = {block[-1]} elements of {element_bits // 8} bytes is "
                f"shorter than the {swizzle}B swizzle span ({span_elements} elements): "
                f"Triton's compiler stops with 'Block shape is too small for the swizzle byte "
                f"size in NVMMA Shared Layout'")
        box[-1] = span_elements
    return Derivation(tuple(box), swizzle)


# --- reading the arguments --------------------------------------------------------------------


# The most values a shape, strides or block_shape argument is read for (a descriptor has 1 to
# 5 dimensions; more are refused by Triton's rank rule, TT2, up to this many).
_MAX_NUMBERS = 64


def _bounded_list(values: Any, name: str) -> list:
    """The values of an iterable argument, at most _MAX_NUMBERS read: an endless iterable is
    refused, not followed."""
    if isinstance(values, (str, bytes, set, frozenset, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a sequence of ints (outermost first), got "
                        f"{type(values).__name__} {values!r}")
    try:
        values = list(itertools.islice(values, _MAX_NUMBERS + 1))
    except Exception as error:  # (a 0-d tensor, an iterator that raises)
        raise TypeError(f"{name}: expected a sequence of ints (outermost first), got "
                        f"{type(values).__name__} ({type(error).__name__}: {error})") from None
    if len(values) > _MAX_NUMBERS:
        raise ValueError(f"{name}: more than {_MAX_NUMBERS} values; a descriptor has 1 to 5 "
                         f"dimensions")
    return values


def _numbers(values: Any, name: str) -> list:
    """The numbers of a shape or strides argument, as given: ints stay ints, other numbers
    (float, NumPy scalars) stay what they are so that the launcher's int check can name them;
    anything that is not a sequence of numbers raises (never truncated, never indexed past)."""
    if values is None:
        raise ValueError(f"{name}: missing; give a sequence of ints, outermost first")
    out = []
    values = _bounded_list(values, name)
    for i, v in enumerate(values):
        if isinstance(v, bool) or isinstance(v, (str, bytes)) or v is None:
            raise TypeError(f"{name}[{i}]: expected an int, got {type(v).__name__} {v!r}")
        if isinstance(v, (int, float)):
            out.append(v)
            continue
        try:
            out.append(float(v) if not hasattr(v, "__index__") else _Scalar(operator.index(v), v))
        except (TypeError, ValueError):
            raise TypeError(f"{name}[{i}]: expected an int, got {type(v).__name__} "
                            f"{v!r}") from None
    return out


class _Scalar(int):
    """An integer that came as something other than a Python int (a NumPy or torch scalar):
    it computes as an int, and remembers what it was, since Triton's launcher takes only
    Python ints."""

    def __new__(cls, value: int, original: Any):
        obj = super().__new__(cls, value)
        obj.original = original
        return obj


def _not_python_int(values: list) -> Optional[int]:
    for i, v in enumerate(values):
        if isinstance(v, _Scalar) or not isinstance(v, int):
            return i
    return None


class _Base(NamedTuple):
    address: int
    triton_type: Optional[str]   # None: no Triton type
    type_name: str               # as the user named it (e.g. "torch.float16")
    itemsize: int
    floating: bool
    shape: Optional[tuple]       # the tensor's, when base is a tensor
    strides: Optional[tuple]     # in elements


def _type_of(dtype: Any) -> tuple:
    """(Triton type or None, display name, itemsize or 0, floating) of a dtype given as a torch
    dtype, a NumPy dtype or a string ("float16", "torch.float16", "fp16")."""
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        dtype = np.dtype(dtype)  # (a NumPy scalar type, np.float32, names its dtype)
    text = str(dtype)
    name = text.split(".")[-1]
    if name in _TRITON_TYPES:
        bits = _TRITON_TYPES[name][0]
        return name, text, max(bits // 8, 1), name in _FLOATING
    if text.startswith("torch.") or hasattr(dtype, "is_floating_point"):
        triton_type = _TORCH_NAMES.get(name)
        if triton_type is None:
            itemsize = getattr(dtype, "itemsize", _OTHER_TORCH_BYTES.get(name, 0))
            floating = getattr(dtype, "is_floating_point", name.startswith("float"))
            return None, text, itemsize, bool(floating)
        bits = _TRITON_TYPES[triton_type][0]
        return triton_type, text, max(bits // 8, 1), triton_type in _FLOATING
    triton_type = _NUMPY_NAMES.get(name) or _TORCH_NAMES.get(name)
    if triton_type is None:
        return None, text, getattr(dtype, "itemsize", 0), False
    bits = _TRITON_TYPES[triton_type][0]
    return triton_type, text, max(bits // 8, 1), triton_type in _FLOATING


def _has_attribute(value: Any, attribute: str) -> bool:
    """hasattr that reads a property's failure as "no" (hasattr lets all but AttributeError
    through)."""
    try:
        return hasattr(value, attribute)
    except Exception:
        return False


def _read_base(base: Any, dtype: Any) -> _Base:
    if base is None:
        raise ValueError("base: missing; give the tensor (or an integer address with dtype=)")
    if isinstance(base, bool):
        raise TypeError("base: expected a tensor or an integer address, got bool")
    if _is_torch_tensor(base):
        info = _array_info(base, "base")  # (TypeError for a tensor without strides or address)
        triton_type, name, itemsize, floating = _type_of(base.dtype)
        itemsize = info.itemsize
        if dtype is not None and _type_of(dtype)[0] != triton_type:
            raise ValueError(f"dtype: {dtype!r} differs from base's {name}; give dtype= only "
                             "with an integer base address")
        return _Base(info.address, triton_type, name, itemsize, floating, info.shape,
                     tuple(s // itemsize for s in info.strides_bytes))
    if isinstance(base, (int, np.integer)) or (
            hasattr(type(base), "__index__") and not _has_attribute(base, "shape")):
        address = operator.index(base)
        if dtype is None:
            raise ValueError("dtype: an integer base address needs dtype= (e.g. "
                             "torch.float16 or 'float16')")
        triton_type, name, itemsize, floating = _type_of(dtype)
        if not itemsize:
            raise ValueError(f"dtype: {dtype!r} is not a torch or NumPy dtype (e.g. "
                             f"torch.float16 or 'float16')")
        return _Base(address, triton_type, name, itemsize, floating, None, None)
    try:
        interface = getattr(base, "__cuda_array_interface__", None) \
            or getattr(base, "__array_interface__", None)
    except Exception:  # (a property that raises: _array_info names it)
        interface = True
    if interface is None:
        raise TypeError(f"base: expected a torch tensor, an array with __cuda_array_interface__ "
                        f"or __array_interface__, or an integer address with dtype=; got "
                        f"{type(base).__name__}")
    info = _array_info(base, "base")
    element = getattr(base, "dtype", None)
    if element is None:
        # NOTE: an interface's type string ("<f2") names a NumPy dtype (float16)
        try:
            element = np.dtype(info.type_name)
        except TypeError:
            element = info.type_name
    triton_type, name, itemsize, floating = _type_of(element)
    itemsize = info.itemsize
    if dtype is not None and _type_of(dtype)[0] != triton_type:
        raise ValueError(f"dtype: {dtype!r} differs from base's {name}; give dtype= only with "
                         "an integer base address")
    if any(s % itemsize for s in info.strides_bytes):
        raise ValueError(f"base: byte strides {info.strides_bytes} are not whole elements of "
                         f"{itemsize} bytes; a descriptor's strides count elements")
    return _Base(info.address, triton_type, name, itemsize, floating, info.shape,
                 tuple(s // itemsize for s in info.strides_bytes))


# --- the verdict ------------------------------------------------------------------------------


def _triton_refuses(rule: str, check_text: str, where: str, detail: str,
                    block: Optional[tuple] = None, fix: Optional[dict] = None,
                    assumed: str = "", **derived: Any) -> TritonCheckResult:
    """``derived``: box, swizzle_bytes and spec, where Triton refuses after deriving them."""
    message = (f"{rule}: Triton {TRITON_VERSION} refuses it ({where}: {check_text!r}): "
               f"{detail}")
    return TritonCheckResult("rejected", rule, message, fix, refused_by="triton",
                             block=block, assumed=assumed, **derived)


def _next_multiple(value: int, step: int) -> int:
    return -(-value // step) * step


def _judge(base: _Base, shape: list, strides: list, block: Any, padding: Any,
           swizzle: Any) -> TritonCheckResult:
    # The constructor's checks, in its order (tools/tensor_descriptor.py, __post_init__).
    where = "TensorDescriptor()"
    rank = len(shape)
    if len(strides) != rank:
        return _triton_refuses("TT1", "rank mismatch", where,
                               f"{len(strides)} strides for a shape of {rank} dimensions; give "
                               "one stride per dimension")
    block = _bounded_list(block, "block_shape")
    if len(block) != rank:
        return _triton_refuses("TT1", "rank mismatch", where,
                               f"block_shape has {len(block)} dimensions, shape {rank}; give "
                               "one block dimension per tensor dimension")
    if rank == 0:
        return _triton_refuses("TT2", "rank must not be zero", where,
                               "shape is empty; a descriptor has 1 to 5 dimensions")
    if rank > 5:
        return _triton_refuses("TT2", "rank cannot be more than 5", where,
                               f"{rank} dimensions; TMA has at most 5: merge or split "
                               "dimensions first")
    if base.address % 16:
        return _triton_refuses(
            "TT3", "base must be 16-byte aligned", where,
            f"base.data_ptr() = {base.address:#x} is {base.address % 16} bytes past a 16-byte "
            f"boundary; start the tensor on a 16-byte boundary (a fresh allocation, or a view "
            f"offset by a multiple of {max(16 // max(base.itemsize, 1), 1)} elements)")
    # validate_block_shape (triton/_utils.py): ints, powers of two, at most 2^20 elements.
    numel = 1
    for i, b in enumerate(block):
        if isinstance(b, bool):
            raise TypeError(f"block_shape[{i}]: expected an int, got bool {b!r}")
        if not isinstance(b, int):
            return _triton_refuses("TT4", f"Shape element {i} must have type "
                                   "`constexpr[int]`", "validate_block_shape",
                                   f"block_shape[{i}] = {b!r} is a {type(b).__name__}, not a "
                                   f"Python int; give int({b!r})" if _is_integral(b) else
                                   f"block_shape[{i}] = {b!r} is a {type(b).__name__}; give "
                                   f"a Python int")
        b = int(b)
        block[i] = b
        if b & (b - 1):
            lower = 1 << max(b.bit_length() - 1, 0) if b > 0 else 1
            return _triton_refuses("TT4", f"Shape element {i} must be a power of 2",
                                   "validate_block_shape",
                                   f"block_shape[{i}] = {b}; use {lower} or {lower * 2}",
                                   fix={"field": "block_shape", "index": i, "value": lower})
        numel *= b
    if numel > TRITON_MAX_TENSOR_NUMEL:
        return _triton_refuses(
            "TT4", f"numel ({numel}) exceeds triton maximum tensor numel "
            f"({TRITON_MAX_TENSOR_NUMEL})", "validate_block_shape",
            f"the block {tuple(block)} holds {numel} elements; a Triton block holds at most "
            f"2^20: halve a dimension", tuple(block))
    block = tuple(block)
    for i, stride in enumerate(strides[:-1]):
        if (stride * base.itemsize) % 16:
            good = _next_multiple(stride * base.itemsize, 16) // base.itemsize \
                if 16 % base.itemsize == 0 and isinstance(stride, int) else None
            hint = f"; pad that dimension's rows to {good} elements" if good else ""
            return _triton_refuses(
                "TT5", "strides must be 16-byte aligned", where,
                f"strides[{i}] = {stride} elements x {base.itemsize} bytes = "
                f"{stride * base.itemsize} bytes is not a multiple of 16{hint}", block,
                fix={"field": "strides", "index": i, "value": good} if good else None)
    for i, extent in enumerate(shape):
        if not extent > 0:  # (a NaN too)
            return _triton_refuses("TT6", "shape must be positive", where,
                                   f"shape[{i}] = {extent}; every extent is at least 1", block)
    if strides[-1] != 1:
        return _triton_refuses(
            "TT7", "Last dimension must be contiguous", where,
            f"strides[-1] = {strides[-1]}; TMA's inner dimension is dense: pass a view whose "
            f"last dimension has stride 1 (e.g. .contiguous())", block)
    if padding not in ("zero", "nan"):
        return _triton_refuses("TT8", "Illegal value for padding", where,
                               f"padding = {padding!r}; use 'zero' or 'nan'", block)
    if padding == "nan" and not base.floating:
        return _triton_refuses(
            "TT8", "Padding option `nan` is only supported for floating point tensors", where,
            f"padding='nan' over {base.type_name}; use padding='zero'", block)

    # The launch: the JIT's type, the compiler, the shared-memory check, then the encode.
    if base.triton_type is None:
        return _triton_refuses(
            "TT9", "no Triton type", "the JIT's type table (triton/_utils.py)",
            f"{base.type_name} has no Triton element type, so launching a kernel with this "
            f"descriptor raises KeyError; view the tensor as torch.uint8 (or the integer type "
            f"of its size) for a plain copy", block)
    if base.triton_type == "u1":
        return _triton_refuses(
            "TT9", "no TMA element type for 1-bit elements",
            "the compiler (getTensorDescMetadata)",
            f"{base.type_name} is i1 to Triton, which has no TMA element type: Triton "
            f"{TRITON_VERSION}'s compiler stops on an assertion (the process aborts); view the "
            f"tensor as torch.uint8", block)
    if base.triton_type not in _SM90_FP8 and base.triton_type.startswith("fp8"):
        return _triton_refuses(
            "TT9", f"type {base.triton_type} not supported in this architecture",
            "the compiler (sm_90)",
            f"{base.type_name} is {base.triton_type}, an fp8 format sm_90 does not compile; "
            f"use float8_e4m3fn or float8_e5m2", block)
    if 0 in block:
        return _triton_refuses(
            "TT13", "a block dimension of 0", "the compiler (the kernel's block type)",
            f"block_shape {block} has a dimension of 0: the constructor's power-of-two check "
            f"lets 0 through, but no kernel can load an empty block", block)
    bits = _TRITON_TYPES[base.triton_type][0]
    if swizzle is None:
        swizzle_bytes = None
        assumed = ("the shared layout Triton picks when no user of the load asks for another "
                   "(the loaded block goes to registers)")
    else:
        swizzle_bytes = _swizzle_bytes(swizzle)
        assumed = f"the kernel's shared layout for the block has a {swizzle_bytes}B swizzle"
    try:
        box, swizzle_bytes = derive_box(block, bits, swizzle_bytes)
    except ValueError as error:
        return _triton_refuses("TT11", "Block shape is too small for the swizzle byte size in "
                               "NVMMA Shared Layout", "the compiler (getTMABlockShape)",
                               str(error).split(": Triton")[0], block, assumed=assumed)

    # The launcher's checks: the kernel's shared memory (after compiling), then the encode.
    block_bytes = numel * bits // 8
    if block_bytes + MBARRIER_BYTES > SM90_MAX_SHARED_BYTES:
        return _triton_refuses(
            "TT10", "out of resource: shared memory", "the launcher (OutOfResources)",
            f"a descriptor load stages the whole block {block} in shared memory: "
            f"{block_bytes} bytes + an {MBARRIER_BYTES}-byte barrier exceed the "
            f"{SM90_MAX_SHARED_BYTES} bytes an sm_90 block may use; halve a dimension", block,
            assumed=assumed, box=box, swizzle_bytes=swizzle_bytes)

    # NOTE: the launcher reads shape and strides last, as it encodes, all but the last stride
    # (the inner dimension's, which the constructor wants 1)
    for name, values in (("shape", shape), ("strides", strides[:-1])):
        i = _not_python_int(values)
        if i is not None:
            original = getattr(values[i], "original", values[i])
            return _triton_refuses(
                "TT12", "shape must be an int", "the launcher (fill_tma_descriptor)",
                f"{name}[{i}] = {original!r} is of type {type(original).__name__}; the launcher "
                f"takes only Python ints (TypeError at launch): give int() values", block,
                assumed=assumed, box=box, swizzle_bytes=swizzle_bytes)
    shape = [int(v) for v in shape]
    strides = [int(v) for v in strides]
    spec = {
        "encode": "tiled",
        "dataType": _TRITON_TYPES[base.triton_type][1],
        "rank": rank,
        "globalAddress": base.address,
        "globalDim": list(reversed(shape)),
        # NOTE: the launcher forms each as a signed 64-bit product and hands the driver its
        # unsigned bits: a negative stride reaches the driver as 2^64 minus its bytes
        "globalStrides": [s * base.itemsize % (1 << 64) for s in reversed(strides[:-1])],
        "boxDim": list(reversed(box)),
        "elementStrides": [1] * rank,
        "interleave": "NONE",
        "swizzle": {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}[swizzle_bytes],
        # NOTE: Triton's launcher (driver.c, fillTMADescriptor) always asks for 128-byte L2
        # promotion.
        "l2Promotion": "128B",
        "oobFill": "NAN_REQUEST_ZERO_FMA" if padding == "nan" else "NONE",
    }
    # NOTE: Triton on sm_90 (TT9's fp8 list, TT10's shared memory): the map judged as sm_90a's
    # driver judges it, whatever GPU this process sees
    verdict = check(TensorMap(spec), arch="sm_90a")
    if verdict.ok:
        # NOTE: the launcher passes the kernel each extent as an int32 after encoding the
        # tensor map (make_launcher's argument format), so an extent the driver takes can
        # still be refused there.
        for i, extent in enumerate(shape):
            if extent > INT32_MAX:
                return _triton_refuses(
                    "TT14", "signed integer is greater than maximum",
                    "the launcher (the kernel's int32 shape arguments)",
                    f"shape[{i}] = {extent} exceeds 2^31 - 1: Triton passes the kernel each "
                    f"extent as an int32 (OverflowError at launch); split the dimension",
                    block, assumed=assumed, box=box, swizzle_bytes=swizzle_bytes, spec=spec)
    result = TritonCheckResult(verdict.verdict, verdict.rule, verdict.message, verdict.fix,
                               refused_by=None if verdict.ok else "driver", block=block,
                               box=box, swizzle_bytes=swizzle_bytes, spec=spec,
                               assumed=assumed)
    if not verdict.ok and verdict.verdict == "rejected":
        result.message = (f"{verdict.message} (the tensor map Triton {TRITON_VERSION} encodes "
                          f"for block {block}: box {box}, swizzle {swizzle_bytes or 'none'}"
                          f"{'B' if swizzle_bytes else ''}; the driver refuses it at launch)"
                          f"{_triton_terms(verdict.rule, bits, swizzle_bytes)}")
    return result


def _triton_terms(rule: Optional[str], bits: int, swizzle_bytes: int) -> str:
    """The fix in the descriptor's terms, for the driver rules a block or padding decides."""
    if rule == "T7":
        return (f"; in the descriptor: make block_shape[-1] at least {128 // bits} elements "
                f"(16 bytes)")
    if rule == "T13":
        return "; in the descriptor: padding='zero' (fp8 travels as UINT8, which has no NaN)"
    return ""


def _is_integral(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    try:
        operator.index(value)
        return True
    except TypeError:
        return False


def _swizzle_bytes(swizzle: Any) -> int:
    names = {"NONE": 0, "0": 0, "32B": 32, "64B": 64, "128B": 128}
    if isinstance(swizzle, (int, np.integer)) and not isinstance(swizzle, bool) and \
            int(swizzle) in (0, 32, 64, 128):
        return int(swizzle)
    if isinstance(swizzle, str) and swizzle.upper() in names:
        return names[swizzle.upper()]
    raise ValueError(f"swizzle: {swizzle!r} is not one of 'none', '32B', '64B', '128B' "
                     "(or 0, 32, 64, 128)")


def explain_triton(descriptor: Any = None, *, base: Any = None, shape: Any = None,
                   strides: Any = None, block_shape: Any = None, padding: Any = None,
                   dtype: Any = None, swizzle: Any = None) -> TritonCheckResult:
    """Judge a Triton host-side ``TensorDescriptor`` as Triton 3.6 handles it: Triton's own
    checks (the constructor, the JIT's types, the compiler, the shared-memory limit), then the
    tensor map Triton encodes at launch (the box derived from the block, the swizzle of the
    block's shared layout) judged by the validator as the driver will (sm_90a).

    Give a descriptor (anything with ``base``, ``shape``, ``strides``, ``block_shape`` and
    optionally ``padding``), or the constructor's arguments by keyword, so a descriptor that
    Triton refused to build can be asked about: ``base`` (a tensor, or an integer address
    with ``dtype=``), ``shape`` and ``strides`` in elements (default: the tensor's),
    ``block_shape``, ``padding`` ("zero" or "nan").

    ``swizzle``: the swizzle (0/"none", 32, 64, 128 bytes) of the shared layout the kernel
    gives the block. The box depends on it; by default this assumes the layout Triton picks
    when no user of the load asks for another (the loaded block goes to registers), which is
    also what a non-transposed tl.dot operand gets in the common case. ``result.assumed``
    says which.

    Returns a TritonCheckResult: ``ok``, ``rule`` ("TT1".. for Triton's own checks, the
    validator's ids for the driver's), ``message`` with the fix, ``refused_by`` ("triton" or
    "driver"), ``block``, ``box``, ``swizzle_bytes``, ``copies``, ``spec``,
    ``triton_version``. Arguments that are not a descriptor at all (a string shape, a
    missing shape or strides, more than 64 dimensions) raise TypeError / ValueError naming the
    argument; a float or a NumPy integer in a shape is what Triton's launcher refuses (TT12).
    """
    if descriptor is not None:
        given = [n for n, v in (("base", base), ("shape", shape), ("strides", strides),
                                ("block_shape", block_shape)) if v is not None]
        if given:
            raise TypeError(f"explain_triton: give a descriptor or its arguments, not both "
                            f"(got descriptor and {', '.join(given)})")
        for attribute in ("base", "shape", "strides", "block_shape"):
            try:
                present = hasattr(descriptor, attribute)
            except Exception as error:  # (a property that raises)
                raise TypeError(f"descriptor: reading its {attribute} raised "
                                f"{type(error).__name__}: {error}") from None
            if not present:
                raise TypeError(f"descriptor: has no '{attribute}'; expected a "
                                f"triton.tools.tensor_descriptor.TensorDescriptor")
        try:
            base, shape = descriptor.base, descriptor.shape
            strides, block_shape = descriptor.strides, descriptor.block_shape
            if padding is None:
                padding = getattr(descriptor, "padding", "zero")
        except Exception as error:  # (a property that raises: a descriptor that cannot be read)
            raise TypeError(f"descriptor: reading its base, shape, strides, block_shape or "
                            f"padding raised {type(error).__name__}: {error}") from None
    if padding is None:
        padding = "zero"
    info = _read_base(base, dtype)
    if shape is None:
        if info.shape is None:
            raise ValueError("shape: missing; an integer base address needs shape= and "
                             "strides=")
        shape = info.shape
    if strides is None:
        if info.strides is None or descriptor is not None:
            raise ValueError("strides: missing; give one stride per dimension, in elements")
        strides = info.strides
    shape_list = _numbers(shape, "shape")
    strides_list = _numbers(strides, "strides")
    for name, values in (("shape", shape_list), ("strides", strides_list)):
        for i, v in enumerate(values):
            # (a shape's extent below 1 is the constructor's refusal, TT6)
            if isinstance(v, int) and (v >= 1 << 64 if name == "shape" else
                                       not -(1 << 63) <= v < 1 << 63):
                # NOTE: Triton's launcher reads extents and strides as C longs (64 bits)
                raise ValueError(f"{name}[{i}]: {int(v)} is outside " + (
                    "0..2**64-1, which a tensor map's extents are (unsigned 64-bit)"
                    if name == "shape" else
                    "-2**63..2**63-1, which Triton's launcher reads strides as (signed 64-bit)"))
    if not strides_list and shape_list:
        raise ValueError(f"strides: empty for a shape of {len(shape_list)} dimensions; give "
                         "one stride per dimension, in elements")
    if block_shape is None:
        raise ValueError("block_shape: missing; give the block's extents, outermost first")
    return _judge(info, shape_list, strides_list, block_shape, padding, swizzle)
