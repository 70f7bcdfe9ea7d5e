"""Tensor maps from Python: the validator, describe, encode and the CPU model of TMA.

Everything here runs in the C++ library (tmakit._tmakit); this module only turns Python
values into the JSON spec lines of `tmakit check --jsonl` and back. No torch, no GPU needed
(except TensorMap.encode(), which asks the driver).
"""

from __future__ import annotations

import json
import operator
from typing import Any, Iterable, NamedTuple, Optional, Sequence

import numpy as np

from . import _tmakit

# --- specs ----------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    # NumPy and torch integers (anything with __index__) become plain ints; sequences lists.
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if hasattr(value, "tolist"):
        return _json_value(value.tolist())
    return operator.index(value)


def _spec_line(spec: Any) -> str:
    """One JSON line from a dict (the keys of `tmakit check`), a JSON line or a TensorMap."""
    if isinstance(spec, TensorMap):
        return spec.json
    if isinstance(spec, str):
        if "\n" in spec.rstrip("\r\n"):
            raise ValueError("spec: one JSON line expected, got several lines; check each line "
                             "on its own")
        return spec.rstrip("\r\n")
    if isinstance(spec, dict):
        obj = {}
        for key, value in spec.items():
            try:
                obj[str(key)] = _json_value(value)
            except TypeError:
                raise TypeError(f"spec[{key!r}]: a {type(value).__name__} is not a JSON value; "
                                "give an int, a string or a list of ints") from None
        return json.dumps(obj)
    raise TypeError(f"spec: expected a dict of tmakit check's JSON keys, a JSON line (str) or "
                    f"a TensorMap, got {type(spec).__name__}")


class CheckResult:
    """The verdict on one spec, as `tmakit check` gives it.

    ``ok`` (bool), ``verdict`` ("ok", "rejected" or "error": the spec could not be read),
    ``rule`` (the broken rule's id, e.g. "T7", or None), ``message`` (the text `tmakit check`
    prints after "rejected " or "error: ", with the fix; "" when ok) and ``fix`` (that fix as
    data, ``{"field": "boxDim", "index": 0, "value": 24}``, or None where no single field
    mends the rule). ``str(result)`` is the line `tmakit check` prints.
    """

    __slots__ = ("verdict", "rule", "message", "fix")

    def __init__(self, verdict: str, rule: Optional[str], message: str,
                 fix: Optional[dict] = None):
        self.verdict = verdict
        self.rule = rule
        self.message = message
        self.fix = fix

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.verdict == "ok":
            return "ok"
        if self.verdict == "rejected":
            return "rejected " + self.message
        return "error: " + self.message

    def __repr__(self) -> str:
        return f"CheckResult(ok={self.ok}, rule={self.rule!r}, message={self.message!r})"


def check(spec: Any, arch: Optional[str] = None) -> CheckResult:
    """Judge a tensor-map spec against every rule, exactly as `tmakit check --jsonl` does.

    ``arch``: the architecture whose rules apply ("sm_90a", "sm_100a", "sm_103a", "sm_120a");
    None: the GPU's when the driver reports one, else sm_90a (`tmakit check --arch`). An unknown
    name raises ValueError listing the known ones.

    ``spec``: a dict with the JSON keys of `tmakit check` (unknown keys ignored), one JSON
    line, or a TensorMap. A spec that cannot be read (malformed JSON, a missing key, a number
    out of range) gets ``verdict == "error"``; a dict value that is not JSON raises TypeError.
    """
    verdict, rule, message, fix = _tmakit.check_line(_spec_line(spec), arch or "")
    return CheckResult(verdict, rule or None, message, fix)


def fix(spec: Any, arch: Optional[str] = None) -> dict:
    """The nearest spec that passes every rule (`tmakit check --fix`): ``spec`` itself when it
    passes, else the fixes of its broken rules applied one after another. Returns a dict (the
    other keys kept); ValueError when the spec cannot be read or no fix mends it. ``arch`` as
    for check()."""
    passed, text = _tmakit.fix_line(_spec_line(spec), arch or "")
    if not passed:
        raise ValueError(text[len("error: "):] if text.startswith("error: ") else text)
    return json.loads(text)


class Rule(NamedTuple):
    id: str
    summary: str


def rules() -> list:
    """Every rule the validator applies, in order, as (id, summary) pairs (`tmakit rules`)."""
    return [Rule(i, s) for i, s in _tmakit.rules()]


def describe(spec: Any, arch: Optional[str] = None) -> str:
    """One line: "tiled FLOAT32 rank 2 @0x1000 dim [1024, 512] ...". ValueError if unreadable
    (its message lists the names ``arch`` knows, as for check())."""
    return _tmakit.describe_line(_spec_line(spec), arch or "")


# --- tensor maps over arrays ------------------------------------------------------------------

# The TMA data type that carries each element type: fp8 and 1-byte integers travel as UINT8,
# 2-byte integers as UINT16 (the hardware has no signed 8/16-bit types).
_TORCH_TYPES = {
    "torch.float32": "FLOAT32", "torch.float16": "FLOAT16", "torch.bfloat16": "BFLOAT16",
    "torch.float64": "FLOAT64", "torch.int32": "INT32", "torch.uint32": "UINT32",
    "torch.int64": "INT64", "torch.uint64": "UINT64", "torch.uint8": "UINT8",
    "torch.int8": "UINT8", "torch.bool": "UINT8", "torch.float8_e4m3fn": "UINT8",
    "torch.float8_e5m2": "UINT8", "torch.float8_e4m3fnuz": "UINT8",
    "torch.float8_e5m2fnuz": "UINT8", "torch.float8_e8m0fnu": "UINT8", "torch.int16": "UINT16",
    "torch.uint16": "UINT16",
}
# Array-interface type strings without byte order: kind letter and size.
_TYPESTR_TYPES = {
    "f4": "FLOAT32", "f2": "FLOAT16", "f8": "FLOAT64", "i4": "INT32", "u4": "UINT32",
    "i8": "INT64", "u8": "UINT64", "u1": "UINT8", "i1": "UINT8", "b1": "UINT8", "i2": "UINT16",
    "u2": "UINT16",
}


class _ArrayInfo(NamedTuple):
    address: int
    shape: tuple
    strides_bytes: tuple
    itemsize: int
    data_type: Optional[str]  # None: no TMA type for this element type
    type_name: str


def _array_info(array: Any, name: str) -> _ArrayInfo:
    """Address, shape and byte strides of a torch tensor or an object with the CUDA / NumPy
    array interface, without importing any framework."""
    if type(array).__module__.startswith("torch") and hasattr(array, "data_ptr"):
        itemsize = array.element_size()
        return _ArrayInfo(array.data_ptr(), tuple(array.shape),
                          tuple(s * itemsize for s in array.stride()), itemsize,
                          _TORCH_TYPES.get(str(array.dtype)), str(array.dtype))
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        interface = getattr(array, "__array_interface__", None)
    if interface is None:
        raise TypeError(f"{name}: expected a torch tensor or an array with "
                        f"__cuda_array_interface__ or __array_interface__, got "
                        f"{type(array).__name__}")
    typestr = interface["typestr"]
    itemsize = int(typestr[2:])
    shape = tuple(interface["shape"])
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], itemsize
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
    return _ArrayInfo(interface["data"][0], shape, tuple(strides), itemsize,
                      _TYPESTR_TYPES.get(typestr[1:]), typestr)


def _enum_name(value: Any, names: dict, argument: str) -> str:
    key = str(value).upper() if not isinstance(value, int) else value
    if key in names:
        return names[key]
    choices = ", ".join(repr(k) for k in names if isinstance(k, str))
    raise ValueError(f"{argument}: {value!r} is not one of {choices}")


_SWIZZLES = {"NONE": "NONE", "32B": "32B", "64B": "64B", "128B": "128B",
             0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
_INTERLEAVES = {"NONE": "NONE", "16B": "16B", "32B": "32B", 0: "NONE", 16: "16B", 32: "32B"}
_L2_PROMOTIONS = {"NONE": "NONE", "64B": "64B", "128B": "128B", "256B": "256B",
                  0: "NONE", 64: "64B", 128: "128B", 256: "256B"}
_OOB_FILLS = {"NONE": "NONE", "ZERO": "NONE", "NAN": "NAN_REQUEST_ZERO_FMA",
              "NAN_REQUEST_ZERO_FMA": "NAN_REQUEST_ZERO_FMA"}


def _tensor_order(values: Any, rank: int, argument: str) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{argument}: expected a sequence of {rank} ints (one per tensor "
                        f"dimension, outermost first), got {type(values).__name__}")
    out = [_json_value(v) for v in values]
    if len(out) != rank:
        raise ValueError(f"{argument}: {len(out)} entries for a tensor of {rank} dimensions; "
                         f"give one per dimension, outermost first")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in out):
        raise TypeError(f"{argument}: expected ints, got {values!r}")
    return out


class TensorMap:
    """The spec of a TMA descriptor over one tensor: ``spec`` (a dict with the JSON keys of
    `tmakit check`, dimension 0 innermost as the driver numbers them), ``json`` (that line),
    ``check()``, ``describe()`` and ``encode()`` (the 128-byte CUtensorMap; needs a GPU)."""

    __slots__ = ("spec", "json")

    def __init__(self, spec: dict):
        self.spec = spec
        self.json = json.dumps(spec)

    def check(self) -> CheckResult:
        return check(self.json)

    def describe(self) -> str:
        return describe(self.json)

    def encode(self) -> bytes:
        """Validate, then encode through the driver: ValueError naming the broken rule, or
        RuntimeError when there is no driver or it refuses."""
        return _tmakit.encode_line(self.json)

    def __repr__(self) -> str:
        return f"TensorMap({self.json})"


def _spec_for(info: _ArrayInfo, shape: Sequence[int], strides_bytes: Sequence[int], box: Any,
              *, name: str, swizzle: Any, interleave: Any, l2_promotion: Any, oob_fill: Any,
              element_strides: Any, data_type: Optional[str]) -> dict:
    rank = len(shape)
    if rank == 0:
        raise ValueError(f"{name}: a 0-dimensional tensor has no tensor map; reshape it to (1,)")
    dtype = data_type.upper() if data_type else info.data_type
    if dtype is None:
        raise TypeError(f"{name}: no TMA data type holds {info.type_name}; pass data_type= "
                        f"(e.g. 'UINT8' for raw bytes)")
    if any(s < 0 for s in strides_bytes):
        raise ValueError(f"{name}: negative strides {tuple(strides_bytes)} cannot be described "
                         f"by a tensor map; make it contiguous first")
    if shape[-1] > 1 and strides_bytes[-1] != info.itemsize:
        raise ValueError(
            f"{name}: its last dimension is {strides_bytes[-1] // max(info.itemsize, 1)} "
            f"elements apart, but a tensor map's dimension 0 (the last tensor dimension) is "
            f"dense; pass a view whose last dimension has stride 1 (e.g. .contiguous())")
    box_list = _tensor_order(box, rank, "box")
    spec = {
        "encode": "tiled",
        "dataType": dtype,
        "rank": rank,
        "globalAddress": info.address,
        "globalDim": [int(d) for d in reversed(shape)],
        "globalStrides": [int(s) for s in reversed(strides_bytes[:-1])],
        "boxDim": list(reversed(box_list)),
        "interleave": _enum_name(interleave, _INTERLEAVES, "interleave"),
        "swizzle": _enum_name(swizzle, _SWIZZLES, "swizzle"),
        "l2Promotion": _enum_name(l2_promotion, _L2_PROMOTIONS, "l2_promotion"),
        "oobFill": _enum_name(oob_fill, _OOB_FILLS, "oob_fill"),
    }
    if element_strides is not None:
        spec["elementStrides"] = list(reversed(_tensor_order(element_strides, rank,
                                                             "element_strides")))
    return spec


def tensor_map(tensor: Any, box: Sequence[int], *, swizzle: Any = "none",
               interleave: Any = "none", l2_promotion: Any = "none", oob_fill: Any = "none",
               element_strides: Optional[Sequence[int]] = None,
               data_type: Optional[str] = None) -> TensorMap:
    """The tensor map a TMA descriptor over ``tensor`` would have.

    ``tensor``: a torch tensor or an array with the CUDA or NumPy array interface; its data
    type, address, extents and byte strides make the spec. ``box`` and ``element_strides`` are
    in the tensor's order (outermost first, as ``tensor.shape``); the spec lists them the
    driver's way, innermost first. ``swizzle``: "none", "32B", "64B", "128B" (or 0/32/64/128);
    ``interleave``: "none", "16B", "32B"; ``l2_promotion``: "none", "64B", "128B", "256B";
    ``oob_fill``: "none" (zeros) or "nan". ``data_type`` overrides the TMA type ("TFLOAT32").
    """
    info = _array_info(tensor, "tensor")
    return TensorMap(_spec_for(info, info.shape, info.strides_bytes, box, name="tensor",
                               swizzle=swizzle, interleave=interleave,
                               l2_promotion=l2_promotion, oob_fill=oob_fill,
                               element_strides=element_strides, data_type=data_type))


def explain_triton(descriptor: Any, *, swizzle: Any = None, **options: Any) -> CheckResult:
    """Judge a Triton host-side ``TensorDescriptor`` (``base``, ``shape``, ``strides`` in
    elements, ``block_shape``, ``padding``) as the driver will, and say which rule it breaks.

    ``swizzle``: Triton's compiler picks the shared layout; by default this assumes the widest
    swizzle span (128, 64 or 32 bytes) that the block's row fills, as Triton's NVMMA layout
    does for a contiguous row. Pass the one your kernel uses to be exact. Other keywords go to
    tensor_map (l2_promotion, ...).
    """
    for attribute in ("base", "shape", "strides", "block_shape"):
        if not hasattr(descriptor, attribute):
            raise TypeError(f"descriptor: has no '{attribute}'; expected a "
                            f"triton.tools.tensor_descriptor.TensorDescriptor")
    info = _array_info(descriptor.base, "descriptor.base")
    shape = [int(_json_value(d)) for d in descriptor.shape]
    strides_bytes = [int(_json_value(s)) * info.itemsize for s in descriptor.strides]
    block = [int(_json_value(b)) for b in descriptor.block_shape]
    if swizzle is None:
        row_bytes = block[-1] * info.itemsize if block else 0
        swizzle = next((s for s in (128, 64, 32) if row_bytes >= s), 0)
    padding = getattr(descriptor, "padding", "zero")
    options.setdefault("oob_fill", "nan" if str(padding).lower() == "nan" else "none")
    spec = _spec_for(info, shape, strides_bytes, block, name="descriptor", swizzle=swizzle,
                     interleave=options.pop("interleave", "none"),
                     l2_promotion=options.pop("l2_promotion", "none"),
                     oob_fill=options.pop("oob_fill"),
                     element_strides=options.pop("element_strides", None),
                     data_type=options.pop("data_type", None))
    if options:
        raise TypeError(f"explain_triton: unexpected keyword {next(iter(options))!r}")
    return check(TensorMap(spec))


# --- the CPU model ------------------------------------------------------------------------


class Simulation:
    """What one tiled load writes to a shared-memory buffer aligned to 1024 bytes, from the
    CPU model: ``bytes`` (uint8, rows x row_bytes: box bytes / inner-row bytes rows of
    max(inner-row bytes, swizzle span) bytes) and ``written`` (bool, same shape: the bytes the
    copy writes). ``hex()`` is the line `tmakit simulate` prints."""

    __slots__ = ("bytes", "written")

    def __init__(self, data: np.ndarray, written: np.ndarray):
        self.bytes = data
        self.written = written.astype(bool)

    @property
    def row_bytes(self) -> int:
        return int(self.bytes.shape[1])

    def hex(self) -> str:
        flat, mask = self.bytes.reshape(-1), self.written.reshape(-1)
        return "".join(f"{b:02x}" if w else ".." for b, w in zip(flat.tolist(), mask.tolist()))

    def __repr__(self) -> str:
        return (f"Simulation({self.bytes.shape[0]} rows x {self.row_bytes} bytes, "
                f"{int(self.written.sum())} written)")


def simulate(spec: Any, global_bytes: Any, coords: Optional[Sequence[int]] = None) -> Simulation:
    """Simulate one tiled load of ``spec`` (dict, JSON line or TensorMap) from a global tensor
    whose byte 0 sits at the spec's globalAddress (``global_bytes``: bytes, bytearray or any
    uint8-viewable buffer / NumPy array). ``coords``: the box's start, dimension 0 (innermost)
    first as the driver numbers them; default the spec's "coords" key, else zeros. ValueError
    for an invalid spec or a load that reads past ``global_bytes``."""
    line = _spec_line(spec)
    if coords is None:
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = None  # the library names what is wrong with the line
        if isinstance(parsed, dict):
            coords = parsed.get("coords")
            if coords is None:
                coords = [0] * int(parsed.get("rank", len(parsed.get("globalDim") or [])))
        else:
            coords = []
    coords = [int(operator.index(c)) for c in coords]
    data = np.frombuffer(memoryview(global_bytes).cast("B"), dtype=np.uint8) \
        if not isinstance(global_bytes, np.ndarray) else global_bytes.reshape(-1).view(np.uint8)
    data = np.ascontiguousarray(data)
    out, written = _tmakit.simulate_load(line, data, coords)
    return Simulation(out, written)
