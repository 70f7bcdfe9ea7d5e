"""Tensor maps from Python: the validator, describe, encode and the CPU model of TMA.

Everything here runs in the C++ library (tmakit._tmakit); this module only turns Python
values into the JSON spec lines of `tmakit check --jsonl` and back. No torch, no GPU needed
(except TensorMap.encode(), which asks the driver).
"""

from __future__ import annotations

import json
import math
import operator
import re
import sys
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from . import _tmakit

# --- specs ----------------------------------------------------------------------------------

# The bounds of a spec line (include/tmakit/host/spec_json.hpp): its bytes, and the nesting of
# arrays and objects in it, the spec object itself being the first level.
_MAX_LINE_BYTES = int(_tmakit.MAX_LINE_BYTES)
_MAX_JSON_DEPTH = int(_tmakit.MAX_JSON_DEPTH)
# Integers past a double's range (2**1024) are no number a JSON reader holds.
_MAX_INT_BITS = 1024

# The keys the library reads from a spec line (spec_json.hpp); any other key is ignored,
# whatever it holds. `simulate` also reads "coords".
_SPEC_KEYS = frozenset((
    "encode", "dataType", "rank", "globalAddress", "globalDim", "globalStrides", "boxDim",
    "elementStrides", "interleave", "swizzle", "l2Promotion", "oobFill", "pixelBoxLowerCorner",
    "pixelBoxUpperCorner", "channelsPerPixel", "pixelsPerColumn", "pixelBoxLowerCornerWidth",
    "pixelBoxUpperCornerWidth", "mode", "tileMode", "direction"))
_SIMULATE_KEYS = _SPEC_KEYS | {"coords"}


class _Budget:
    """What is left of a line's bytes while a value is converted: each part charges at most
    the bytes of its JSON text, before anything it holds is copied, so that a value past the
    bound is refused early and a spec within it never is (the line made is measured whole by
    the parser, as any line)."""

    __slots__ = ("left",)

    def __init__(self, left: int):
        self.left = left

    def charge(self, nbytes: int, path: str) -> None:
        self.left -= nbytes
        if self.left < 0:
            raise ValueError(f"{path}: too large: a spec line holds at most {_MAX_LINE_BYTES} "
                             f"bytes of JSON")


def _type_name(value: Any) -> str:
    name = getattr(type(value), "__qualname__", None)
    if not isinstance(name, str):
        name = "object"
    return name if len(name) <= 64 else name[:64] + "..."


def _a(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _show(value: Any) -> str:
    """A short, safe rendering of a value for a message: never huge, never raising."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        number = int.__index__(value)
        if number.bit_length() > 64:
            return f"an integer of {number.bit_length()} bits"
        return str(number)
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, np.integer) and not isinstance(value, np.timedelta64):
        return _show(int(value))
    if isinstance(value, np.floating):  # a longdouble's item() is itself
        return _show(float(value))
    if isinstance(value, str):
        text = str.__str__(value)
        shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
        return shown.encode("ascii", "backslashreplace").decode("ascii")
    return _a(_type_name(value))


def _key_path(parent: str, key: str) -> str:
    # A top-level key reads as the library names it ("globalDim"); deeper ones as indexing.
    shown = key if key.isidentifier() and key.isascii() and len(key) <= 64 else _show(key)
    return shown if not parent else f"{parent}[{shown}]"


def _json_value(value: Any, path: str = "value") -> Any:
    """The JSON value `value` stands for, as plain Python data (None, bool, int, float, str,
    list, dict with str keys) that json.dumps writes and the library's parser reads back.

    Converted: bool, int, float and str (subclasses such as IntEnum too); NumPy scalars and
    arrays of bool, integer, floating and str dtype (object arrays element by element); lists,
    tuples and ranges; dicts with str keys; objects with __index__ (ints) or tolist() (a torch
    tensor, an array.array; each tolist() counts as one level of nesting). Raises TypeError for
    a type JSON has no value for (bytes and other buffers, sets, complex numbers, datetimes,
    other objects), ValueError for NaN or an infinity, nesting past 16 levels, a value that
    contains itself, more than a spec line's 1 MiB, an integer past a double's range, or a
    string UTF-8 cannot carry (a lone surrogate). Each message starts with `path` extended to
    the offending element ("globalDim[2]: ..."). Sizes are checked before anything is copied,
    so no argument makes this take more than about a line's worth of memory or time.
    """
    return _convert(value, path, 0, _Budget(_MAX_LINE_BYTES), set())


def _convert(value: Any, path: str, depth: int, budget: _Budget, active: set) -> Any:
    # NOTE: each value charges the bytes json.dumps writes for it (a decimal integer at least
    # its fewest digits), so that a spec under the bound is never refused by its estimate
    if value is None:
        budget.charge(4, path)
        return None
    if isinstance(value, bool):
        budget.charge(4 if value else 5, path)
        return bool(value)
    if isinstance(value, int):
        number = int.__index__(value)
        bits = number.bit_length()
        if bits > _MAX_INT_BITS:
            raise ValueError(f"{path}: an integer of {bits} bits is too large for any number "
                             f"(JSON readers hold numbers below 2**{_MAX_INT_BITS})")
        # (an int of b bits has at least floor((b - 1) log10 2) + 1 digits: 0.3 < log10 2)
        budget.charge(max(bits - 1, 0) * 3 // 10 + 1 + (number < 0), path)
        return number
    if isinstance(value, float):  # np.float64 too
        number = float.__float__(value)
        if not math.isfinite(number):
            raise ValueError(f"{path}: {number!r} is not a number JSON can hold (it has no "
                             f"NaN or infinities); give a finite number")
        budget.charge(len(float.__repr__(number)), path)
        return number
    if isinstance(value, str):
        return _convert_str(str.__str__(value), path, budget)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{path}: {_type_name(value)} is not a JSON value; give a list of ints "
                        f"(or a str for text)")
    if isinstance(value, (set, frozenset)):
        raise TypeError(f"{path}: {_a(_type_name(value))} has no order, so it is no JSON array; "
                        f"give a list")
    if isinstance(value, np.generic):
        return _convert_numpy_scalar(value, path, budget)
    if isinstance(value, (list, tuple, range, dict, np.ndarray)) or _has(value, "tolist"):
        if depth >= _MAX_JSON_DEPTH:
            raise ValueError(f"{path}: nested deeper than {_MAX_JSON_DEPTH} levels of lists "
                             f"and dicts (a spec line's bound)")
        if id(value) in active:
            raise ValueError(f"{path}: contains itself; a JSON value cannot")
        active.add(id(value))
        try:
            return _convert_container(value, path, depth, budget, active)
        finally:
            active.discard(id(value))
    if hasattr(type(value), "__index__"):
        try:
            number = operator.index(value)
        except Exception as error:  # a foreign __index__: its failure is a bad argument
            raise TypeError(f"{path}: {_a(_type_name(value))} whose __index__ raised "
                            f"{type(error).__name__} is not an int") from None
        return _convert(number, path, depth, budget, active)
    raise TypeError(f"{path}: {_a(_type_name(value))} is not a JSON value; give an int, a float, "
                    f"a str, a list or a dict")


def _lone_surrogate(text: str) -> Optional[int]:
    """Where the first lone surrogate of `text` is (no UTF-8 text holds one), else None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def _convert_str(text: str, path: str, budget: _Budget) -> str:
    # Its length bounds its JSON text from below: checked before that text is made.
    budget.charge(len(text) + 2, path)
    where = _lone_surrogate(text)
    if where is not None:
        raise ValueError(f"{path}: the string holds a lone surrogate "
                         f"U+{ord(text[where]):04X} at character {where}, "
                         f"which is not text UTF-8 can carry")
    budget.charge(len(json.dumps(text)) - len(text) - 2, path)  # escapes
    return text


def _convert_numpy_scalar(value: Any, path: str, budget: _Budget) -> Any:
    if isinstance(value, (np.datetime64, np.timedelta64)):  # timedelta64 is an np.integer
        raise TypeError(f"{path}: a NumPy {type(value).__name__} value is not a JSON value; "
                        f"give an int")
    if isinstance(value, np.bool_):
        budget.charge(7, path)
        return bool(value)
    if isinstance(value, np.integer):
        return _convert(int(value), path, 0, budget, set())
    if isinstance(value, np.floating):
        return _convert(float(value), path, 0, budget, set())
    if isinstance(value, np.str_):
        return _convert_str(str(value), path, budget)
    raise TypeError(f"{path}: a NumPy {type(value).__name__} value is not a JSON value; give "
                    f"an int, a float or a str")


def _convert_container(value: Any, path: str, depth: int, budget: _Budget,
                       active: set) -> Any:
    if isinstance(value, dict):
        budget.charge(2 + 2 * dict.__len__(value), path)
        out = {}
        for key, item in list(dict.items(value)):
            if not isinstance(key, str):
                raise TypeError(f"{path}: the key {_show(key)} is not a str; JSON object keys "
                                f"are strings")
            key = _convert_str(str.__str__(key), path, budget)
            budget.charge(2, path)
            out[key] = _convert(item, _key_path(path, key), depth + 1, budget, active)
        return out
    if isinstance(value, (list, tuple, range)):
        try:
            count = len(value) if isinstance(value, range) else \
                (list.__len__(value) if isinstance(value, list) else tuple.__len__(value))
        except OverflowError:
            count = _MAX_LINE_BYTES + 1
        budget.charge(2 + 2 * max(count - 1, 0), path)  # (brackets, ", " between items)
        items = value if isinstance(value, range) else \
            (list.copy(value) if isinstance(value, list) else tuple.__iter__(value))
        return [_convert(item, f"{path}[{i}]", depth + 1, budget, active)
                for i, item in enumerate(items)]
    if isinstance(value, np.ndarray):
        return _convert_array(value, path, depth, budget, active)
    # an object with tolist() (a torch tensor, an array.array): what it lists, one level on
    size = _size_of(value)
    if size is not None:
        budget.charge(2 * size, path)
    try:
        listed = value.tolist()
    except Exception as error:  # a foreign tolist(): its failure is a bad argument
        raise TypeError(f"{path}: {_a(_type_name(value))} whose tolist() raised "
                        f"{type(error).__name__} is not a JSON value") from None
    return _convert(listed, path, depth + 1, budget, active)


def _has(value: Any, attribute: str) -> bool:
    # hasattr, save that a foreign __getattr__'s failure means no
    try:
        return hasattr(value, attribute)
    except Exception:
        return False


def _size_of(value: Any) -> Optional[int]:
    # the element count of a torch tensor (numel()) or an array.array (len()), if it says
    try:
        numel = getattr(value, "numel", None)
        size = numel() if callable(numel) else len(value)
        return size if isinstance(size, int) else None
    except Exception:
        return None


def _convert_array(value: np.ndarray, path: str, depth: int, budget: _Budget,
                   active: set) -> Any:
    kind = value.dtype.kind
    if kind not in "biufUO":
        raise TypeError(f"{path}: a NumPy array of {value.dtype} is not a JSON value; give "
                        f"ints, floats or strs")
    if depth + value.ndim > _MAX_JSON_DEPTH:
        raise ValueError(f"{path}: a {value.ndim}-dimensional array nests deeper than "
                         f"{_MAX_JSON_DEPTH} levels of lists (a spec line's bound)")
    budget.charge(2 * int(value.size) + 2 * value.ndim, path)
    # NOTE: tolist() of an object array lists the objects themselves (not converted), so an
    # array that holds itself comes back here and is caught as a cycle.
    listed = value.tolist()
    if value.ndim == 0:
        return _convert(listed, path, depth, budget, active)
    budget.left += 2 * int(value.size) + 2 * value.ndim  # charged again, element by element
    return _convert(listed, path, depth, budget, active) if not isinstance(listed, list) \
        else [_convert(item, f"{path}[{i}]", depth + 1, budget, active)
              for i, item in enumerate(listed)]


class _UnreadableLine(ValueError):
    """A line the library cannot be given (not UTF-8 text, past the line bound): `check`
    answers it with an "error" verdict, the other functions raise it."""


def _line_bytes(text: str) -> int:
    # UTF-8 length without encoding the whole of a possibly huge string at once
    if text.isascii():
        return len(text)
    step = 1 << 16
    return sum(len(text[i:i + step].encode("utf-8", "surrogatepass"))
               for i in range(0, len(text), step))


def _checked_line(line: str) -> str:
    if "\n" in line.rstrip("\r\n"):
        raise ValueError("spec: one JSON line expected, got several lines; check each line "
                         "on its own")
    line = line.rstrip("\r\n")
    if len(line) > _MAX_LINE_BYTES or (not line.isascii() and _line_bytes(line) > _MAX_LINE_BYTES):
        raise _UnreadableLine(f"the line is {_line_bytes(line)} bytes, more than the "
                              f"{_MAX_LINE_BYTES} a spec line may have")
    where = _lone_surrogate(line)
    if where is not None:
        raise _UnreadableLine(f"character {where} of the line is a lone surrogate "
                              f"U+{ord(line[where]):04X}, which is not text UTF-8 "
                              f"can carry")
    return line


def _dict_line(spec: dict, keys: frozenset = _SPEC_KEYS) -> tuple:
    """(the JSON line of a spec dict, the other keys). The keys the library reads (`keys`)
    are converted by _json_value, any failure raised naming the key; every other key is left
    out of the line unread, whatever it holds, since the library would ignore it."""
    budget = _Budget(_MAX_LINE_BYTES - 2)
    converted, others = {}, {}
    for key, value in list(dict.items(spec)):
        name = str.__str__(key) if isinstance(key, str) else None
        if name is not None and name in keys:
            budget.charge(len(name) + 6, name)
            converted[name] = _convert(value, name, 1, budget, set())
        else:
            others[key] = value
    return json.dumps(converted, allow_nan=False), others


def _spec_line(spec: Any, keys: frozenset = _SPEC_KEYS) -> str:
    """One JSON line from a dict (the keys of `tmakit check`), a JSON line or a TensorMap."""
    return _spec_parts(spec, keys)[0]


def _spec_parts(spec: Any, keys: frozenset = _SPEC_KEYS, for_check: bool = False) -> tuple:
    try:
        return _spec_parts_of(spec, keys)
    except _UnreadableLine as error:
        if for_check:
            raise
        raise ValueError(str(error)) from None


def _spec_parts_of(spec: Any, keys: frozenset) -> tuple:
    if isinstance(spec, TensorMap):
        spec = getattr(spec, "json", None)
        if not isinstance(spec, str):
            raise TypeError(f"spec: a TensorMap whose json is a {_type_name(spec)}, not a str")
    if isinstance(spec, str):
        return _checked_line(str.__str__(spec)), {}
    if isinstance(spec, dict):
        return _dict_line(spec, keys)
    raise TypeError(f"spec: expected a dict of tmakit check's JSON keys, a JSON line (str) or "
                    f"a TensorMap, got {_type_name(spec)}")


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


def _arch(arch: Any) -> str:
    """``arch`` for the rules: None (the GPU's, else sm_90a) or a name such as "sm_100a"."""
    if arch is None:
        return ""
    if not isinstance(arch, str):
        raise TypeError(f"arch: expected a name such as 'sm_90a' or None, got "
                        f"{_type_name(arch)}")
    if not arch:
        # NOTE: as the CLI's --arch '': an empty name is a mistake, not "the default"
        raise ValueError("arch: the name is empty; give one such as 'sm_90a', or None")
    try:
        arch.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"arch: {arch!r} is not an architecture name such as 'sm_90a'") from None
    return arch


def check(spec: Any, arch: Optional[str] = None) -> CheckResult:
    """Judge a tensor-map spec against every rule, exactly as `tmakit check --jsonl` does.

    ``spec``: a dict with the JSON keys of `tmakit check` (unknown keys ignored, whatever they
    hold), one JSON line, or a TensorMap. A spec that cannot be read (malformed JSON, a
    missing key, a number out of range, a line that is not UTF-8 text) gets
    ``verdict == "error"``. A dict whose value under a key the library reads has no JSON form
    raises, naming the key: TypeError for the wrong type (bytes, a set, an object), ValueError
    for the wrong value (NaN, nesting past 16 levels, a value containing itself).

    ``arch``: the architecture whose rules apply ("sm_90a", "sm_100a", "sm_103a", "sm_120a");
    None: the GPU's when the driver reports one, else sm_90a (`tmakit check --arch`). An unknown
    name raises ValueError listing the known ones.
    """
    arch = _arch(arch)
    try:
        line = _spec_parts(spec, for_check=True)[0]
    except _UnreadableLine as error:
        if arch:
            _tmakit.rules(arch)  # (an unknown name raises whatever the spec, as --arch exits 2)
        return CheckResult("error", None, str(error))
    verdict, rule, message, fix = _tmakit.check_line(line, arch)
    return CheckResult(verdict, rule or None, message, fix)


def fix(spec: Any, arch: Optional[str] = None) -> dict:
    """The nearest spec that passes every rule (`tmakit check --fix`): ``spec`` itself when it
    passes, else the fixes of its broken rules applied one after another. Returns a dict (the
    other keys kept, unknown ones as given); ValueError when the spec cannot be read or no fix
    mends it. ``arch`` as for check()."""
    line, others = _spec_parts(spec)
    passed, text = _tmakit.fix_line(line, _arch(arch))
    if not passed:
        raise ValueError(text[len("error: "):] if text.startswith("error: ") else text)
    # NOTE: a line that passes comes back as given, and the library's parser, as `tmakit
    # check`, skips a leading byte-order mark that json.loads refuses.
    mended = json.loads(text[1:] if text.startswith("\ufeff") else text)
    if not others:
        return mended
    # a dict's other keys, left out of the line, back in their places
    out = {}
    for key in dict.keys(spec):
        name = str.__str__(key) if isinstance(key, str) else None
        if key in others:
            out[key] = others[key]
        elif name in mended:
            out[name] = mended.pop(name)
    out.update(mended)
    return out


class Rule(NamedTuple):
    id: str
    summary: str
    im2col_id: Optional[str] = None  # the id an im2col spec's verdict gives it ("I6" for T8)


def rules(arch: Optional[str] = None) -> list:
    """The rules the validator applies, in order, as (id, summary, im2col id) (`tmakit rules`,
    which prints "T8 / I6" where an im2col spec's verdict names the rule "I6").

    ``arch``: only the rules that can refuse a spec on that architecture ("sm_90a", "sm_100a",
    "sm_103a", "sm_120a"), with its summaries, in the order check() applies them (`tmakit rules
    --arch`). None: every rule of every architecture, as `tmakit rules` without --arch; unlike
    check(), not the GPU's. An unknown name raises ValueError listing the known ones.
    """
    return [Rule(i, s, m or None) for i, s, m in _tmakit.rules(_arch(arch))]


def describe(spec: Any, arch: Optional[str] = None) -> str:
    """One line: "tiled FLOAT32 rank 2 @0x1000 dim [1024, 512] ...". ValueError if unreadable
    (its message lists the names ``arch`` knows, as for check())."""
    return _tmakit.describe_line(_spec_line(spec), _arch(arch))


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


def _is_torch_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor (a subclass too), without importing torch: where
    torch was never imported, nothing is one."""
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None) if torch is not None else None
    return isinstance(tensor, type) and isinstance(value, tensor)


def _array_info(array: Any, name: str) -> _ArrayInfo:
    """Address, shape and byte strides of a torch tensor or an object with the CUDA / NumPy
    array interface, without importing any framework."""
    if _is_torch_tensor(array):
        if getattr(array, "is_meta", False) is True:
            raise ValueError(f"{name}: a meta tensor, which has no memory; a tensor map needs "
                             f"the data's address: pass a tensor on a device")
        try:
            itemsize = int(array.element_size())
            return _ArrayInfo(int(array.data_ptr()), tuple(int(d) for d in array.shape),
                              tuple(int(s) * itemsize for s in array.stride()), itemsize,
                              _TORCH_TYPES.get(str(array.dtype)), str(array.dtype))
        except Exception as error:  # not a tensor after all, or one without an address
            raise TypeError(f"{name}: {_a(_type_name(array))} whose address, shape or strides "
                            f"cannot be read ({type(error).__name__})") from None
    if isinstance(array, np.ndarray) and array.dtype.hasobject:
        raise TypeError(f"{name}: a NumPy array of {array.dtype} dtype holds Python objects, "
                        f"no data a tensor map can describe")
    interface, attribute = None, None
    for attribute in ("__cuda_array_interface__", "__array_interface__"):
        try:
            interface = getattr(array, attribute, None)
        except Exception as error:  # a foreign property: its failure is a bad argument
            raise TypeError(f"{name}.{attribute}: reading it raised "
                            f"{type(error).__name__}") from None
        if interface is not None:
            break
    if interface is None:
        raise TypeError(f"{name}: expected a torch tensor or an array with "
                        f"__cuda_array_interface__ or __array_interface__, got "
                        f"{_type_name(array)}")
    where = f"{name}.{attribute}"
    if not isinstance(interface, dict):
        raise TypeError(f"{where}: expected a dict, got {_type_name(interface)}")
    typestr = interface.get("typestr")
    match = re.fullmatch(r"[<>|=]([a-zA-Z])([0-9]{1,6})(\[[a-zA-Z0-9]{1,8}\])?",
                         typestr) if isinstance(typestr, str) else None
    if match is None or int(match.group(2)) < 1:
        raise ValueError(f"{where}['typestr']: {_show(typestr)} is not an array type string "
                         f"such as '<f4'")
    kind, itemsize = match.group(1), int(match.group(2))
    if kind == "O":
        raise TypeError(f"{name}: an array of Python objects holds no data a tensor map can "
                        f"describe")
    shape = _int_tuple(interface.get("shape"), f"{where}['shape']", minimum=0)
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], itemsize
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
    strides = _int_tuple(strides, f"{where}['strides']")
    if len(strides) != len(shape):
        raise ValueError(f"{where}: {len(strides)} strides for {len(shape)} dimensions")
    data = interface.get("data")
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and isinstance(data[0], int)
            and not isinstance(data[0], bool) and 0 <= data[0] < 1 << 64):
        raise ValueError(f"{where}['data']: expected (address, read-only flag) with an address "
                         f"in 0..2**64-1, got {_show(data)}")
    return _ArrayInfo(int(data[0]), shape, strides, itemsize,
                      _TYPESTR_TYPES.get(f"{kind}{itemsize}"), typestr)


def _int_tuple(values: Any, argument: str, minimum: Optional[int] = None) -> tuple:
    # A tensor's extents or strides: at most NumPy's 64 dimensions, each an int of 64 bits.
    if not isinstance(values, (tuple, list)):
        raise TypeError(f"{argument}: expected a tuple of ints, got {_type_name(values)}")
    if len(values) > 64:
        raise ValueError(f"{argument}: {len(values)} dimensions; arrays have at most 64")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{argument}[{i}]: expected an int, got {_show(v)}")
        v = int(v)
        if not -(1 << 63) <= v < 1 << 64 or (minimum is not None and v < minimum):
            raise ValueError(f"{argument}[{i}]: {_show(v)} is out of range")
        out.append(v)
    return tuple(out)


def _enum_name(value: Any, names: dict, argument: str) -> str:
    choices = ", ".join(repr(k) for k in names if isinstance(k, str))
    if isinstance(value, str):
        key = str.__str__(value).upper()
    elif not isinstance(value, (bool, np.bool_)) and hasattr(type(value), "__index__"):
        try:
            key = operator.index(value)  # 128, np.int64(128)
        except Exception:
            key = None
    else:
        raise TypeError(f"{argument}: expected a str ({choices}) or its byte count, got "
                        f"{_show(value)}")
    if key in names:
        return names[key]
    raise ValueError(f"{argument}: {_show(value)} is not one of {choices}")


_SWIZZLES = {"NONE": "NONE", "32B": "32B", "64B": "64B", "128B": "128B",
             0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
_INTERLEAVES = {"NONE": "NONE", "16B": "16B", "32B": "32B", 0: "NONE", 16: "16B", 32: "32B"}
_L2_PROMOTIONS = {"NONE": "NONE", "64B": "64B", "128B": "128B", "256B": "256B",
                  0: "NONE", 64: "64B", 128: "128B", 256: "256B"}
_OOB_FILLS = {"NONE": "NONE", "ZERO": "NONE", "NAN": "NAN_REQUEST_ZERO_FMA",
              "NAN_REQUEST_ZERO_FMA": "NAN_REQUEST_ZERO_FMA"}


def _tensor_order(values: Any, rank: int, argument: str) -> list:
    if isinstance(values, (str, bytes, bytearray, memoryview, set, frozenset, dict)) or \
            isinstance(values, (bool, int, float, np.generic)):
        raise TypeError(f"{argument}: expected a sequence of {rank} ints (one per tensor "
                        f"dimension, outermost first), got {_show(values)}")
    out = _json_value(values, argument)
    if not isinstance(out, list):
        raise TypeError(f"{argument}: expected a sequence of {rank} ints (one per tensor "
                        f"dimension, outermost first), got {_show(values)}")
    if len(out) != rank:
        raise ValueError(f"{argument}: {len(out)} entries for a tensor of {rank} dimensions; "
                         f"give one per dimension, outermost first")
    for i, v in enumerate(out):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{argument}[{i}]: expected an int, got {_show(v)}")
    return out


def _data_type_name(data_type: Any, info: _ArrayInfo) -> str:
    """The TMA data type of `data_type=`: a name ("TFLOAT32"), a NumPy dtype or a torch dtype,
    whose element size must be the tensor's."""
    if isinstance(data_type, str):
        name = str.__str__(data_type).strip().upper()
        if not name:
            raise ValueError("data_type: an empty string names no type; give a TMA type such "
                             "as 'TFLOAT32', a NumPy dtype or a torch dtype")
    elif type(data_type).__module__ == "torch" and str(data_type).startswith("torch."):
        name = _TORCH_TYPES.get(str(data_type))
        if name is None:
            raise TypeError(f"data_type: no TMA data type holds {data_type}")
    elif isinstance(data_type, np.dtype) or (isinstance(data_type, type) and
                                             issubclass(data_type, np.generic)):
        dtype = np.dtype(data_type)
        name = _TYPESTR_TYPES.get(f"{dtype.kind}{dtype.itemsize}")
        if name is None:
            raise TypeError(f"data_type: no TMA data type holds NumPy's {dtype}")
    else:
        raise TypeError(f"data_type: expected a TMA type name ('TFLOAT32'), a NumPy dtype or "
                        f"a torch dtype, got {_show(data_type)}")
    size = _tmakit.data_type_bytes(name) if name.isascii() and len(name) <= 64 else None
    if size is None:
        raise ValueError(f"data_type: {_show(data_type)} is not a TMA data type; give a name "
                         f"such as 'TFLOAT32' (tmakit check's dataType values), a NumPy dtype "
                         f"or a torch dtype")
    if size == 0:
        raise ValueError(f"data_type: {name} is one of Blackwell's packed types, whose "
                         f"dimensions count 4- or 6-bit values, not the tensor's elements; "
                         f"give its spec to tmakit.check (globalDim and boxDim in values)")
    if size != info.itemsize:
        raise ValueError(f"data_type: {name} has {size}-byte elements, the tensor's "
                         f"({info.type_name}) are {info.itemsize} bytes; give a type of the "
                         f"tensor's size, or a view of the tensor as one")
    return name


class TensorMap:
    """The spec of a TMA descriptor over one tensor: ``spec`` (a dict with the JSON keys of
    `tmakit check`, dimension 0 innermost as the driver numbers them), ``json`` (that line),
    ``check()``, ``describe()`` and ``encode()`` (the 128-byte CUtensorMap; needs a GPU).

    A TensorMap does not change: ``spec`` is a new dict at each reading, so editing it changes
    no map; check an edited spec with ``tmakit.check(spec)``, or make a map of it with
    ``TensorMap(spec)``."""

    __slots__ = ("_json",)

    def __init__(self, spec: dict):
        if not isinstance(spec, dict):
            raise TypeError(f"spec: expected a dict of tmakit check's JSON keys, got "
                            f"{_type_name(spec)}")
        self._json = _dict_line(spec)[0]

    @property
    def json(self) -> str:
        return self._json

    @property
    def spec(self) -> dict:
        return json.loads(self._json)

    def check(self) -> CheckResult:
        return check(self._json)

    def describe(self) -> str:
        return describe(self._json)

    def encode(self) -> bytes:
        """Validate, then encode through the driver: ValueError naming the broken rule, or
        RuntimeError when there is no driver or it refuses."""
        return _tmakit.encode_line(self._json)

    def __repr__(self) -> str:
        return f"TensorMap({self._json})"


def _spec_for(info: _ArrayInfo, shape: Sequence[int], strides_bytes: Sequence[int], box: Any,
              *, name: str, swizzle: Any, interleave: Any, l2_promotion: Any, oob_fill: Any,
              element_strides: Any, data_type: Optional[str]) -> dict:
    rank = len(shape)
    if rank == 0:
        raise ValueError(f"{name}: a 0-dimensional tensor has no tensor map; reshape it to (1,)")
    dtype = _data_type_name(data_type, info) if data_type is not None else info.data_type
    if dtype is None:
        views = {1: "UINT8", 2: "UINT16", 4: "UINT32", 8: "UINT64"}
        raise TypeError(f"{name}: no TMA data type holds {info.type_name}; " + (
            f"pass data_type= with a type of its {info.itemsize}-byte elements (e.g. "
            f"'{views[info.itemsize]}'), or a view as one" if info.itemsize in views else
            f"TMA's types have 1, 2, 4 or 8 bytes, its elements {info.itemsize}: pass a view "
            f"of its bytes as one (e.g. a complex128 tensor's .view(torch.float64), whose "
            f"last dimension is twice as long)"))
    # NOTE: a dimension of one element is never stepped, so its stride is any torch chose
    # (x.t() of an (n, 1) tensor: (1, 1), contiguous to torch): the map gets the stride of a
    # dense layout of the dimensions inside it, on whole 32 bytes (rule T6: 16, or 32 with
    # interleave 32B; P1's 32 for the padded types)
    strides_bytes = list(strides_bytes)
    for i in range(rank - 2, -1, -1):
        if shape[i] == 1:
            inner = max(shape[i + 1], 1) * abs(strides_bytes[i + 1]) if i + 1 < rank - 1 else (
                max(shape[-1], 1) * info.itemsize)
            strides_bytes[i] = -(-inner // 32) * 32
    if any(s < 0 for s in strides_bytes):
        raise ValueError(f"{name}: negative strides {tuple(strides_bytes)} cannot be described "
                         f"by a tensor map; make it contiguous first")
    if shape[-1] > 1 and strides_bytes[-1] != info.itemsize:
        raise ValueError(
            f"{name}: the elements of its last dimension are {strides_bytes[-1]} bytes apart, "
            f"not {info.itemsize} (its elements' size), but a tensor map's dimension 0 (the "
            f"last tensor dimension) is dense; pass a view whose last dimension has stride 1 "
            f"(e.g. .contiguous())")
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
               data_type: Any = None) -> TensorMap:
    """The tensor map a TMA descriptor over ``tensor`` would have.

    ``tensor``: a torch tensor or an array with the CUDA or NumPy array interface; its data
    type, address, extents and byte strides make the spec. ``box`` and ``element_strides`` are
    in the tensor's order (outermost first, as ``tensor.shape``); the spec lists them the
    driver's way, innermost first. ``swizzle``: "none", "32B", "64B", "128B" (or 0/32/64/128);
    ``interleave``: "none", "16B", "32B"; ``l2_promotion``: "none", "64B", "128B", "256B";
    ``oob_fill``: "none" (zeros) or "nan". ``data_type`` overrides the TMA type: a name
    ("TFLOAT32"), a NumPy dtype or a torch dtype, of the tensor's element size.
    """
    info = _array_info(tensor, "tensor")
    return TensorMap(_spec_for(info, info.shape, info.strides_bytes, box, name="tensor",
                               swizzle=swizzle, interleave=interleave,
                               l2_promotion=l2_promotion, oob_fill=oob_fill,
                               element_strides=element_strides, data_type=data_type))


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


def simulate(spec: Any, global_bytes: Any, coords: Optional[Sequence[int]] = None,
             arch: Optional[str] = None) -> Simulation:
    """Simulate one tiled load of ``spec`` (dict, JSON line or TensorMap) from a global tensor
    whose byte 0 sits at the spec's globalAddress (``global_bytes``: bytes, bytearray or any
    uint8-viewable buffer / NumPy array). ``coords``: the box's start, dimension 0 (innermost)
    first as the driver numbers them; default the spec's "coords" key, else zeros. ValueError
    for an invalid spec, a load that reads past ``global_bytes``, or one the hardware kills
    instead of answering (a dimension-0 coordinate off 16 bytes, docs/hardware.md O1). The spec is validated
    before its rank or sizes are used for anything, as a load (`tmakit simulate`): a
    "direction" of store or reduce, or a gather4/scatter4 map, is refused with ValueError.
    ``arch`` as for check()."""
    line = _spec_line(spec, _SIMULATE_KEYS)
    data = _byte_array(global_bytes, "global_bytes")
    if coords is not None:
        coords = _coords(coords)
    out, written = _tmakit.simulate_load(line, data, coords, _arch(arch))
    return Simulation(out, written)


def _coords(values: Any) -> list:
    # ints of 64 bits here; the library names any past 32 bits once the spec is valid
    listed = _json_value(values, "coords")
    if not isinstance(listed, list):
        raise TypeError(f"coords: expected a sequence of ints (one per dimension, dimension 0 "
                        f"first), got {_show(values)}")
    for d, v in enumerate(listed):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"coords[{d}]: expected an int, got {_show(v)}")
        if not -(1 << 31) <= v < 1 << 31:
            raise ValueError(f"coords[{d}]: {_show(v)} is not a signed 32-bit integer")
    return listed


# The largest non-contiguous buffer simulate copies to read it as one run of bytes.
_MAX_COPY_BYTES = 1 << 30


def _byte_array(data: Any, argument: str) -> np.ndarray:
    """The bytes of a buffer or NumPy array as a contiguous uint8 array (a view where the data
    is contiguous already, else a copy of at most 1 GiB)."""
    def copyable(nbytes: int) -> None:
        if nbytes > _MAX_COPY_BYTES:
            raise ValueError(f"{argument}: not contiguous, and its {nbytes} bytes are more than "
                             f"the {_MAX_COPY_BYTES} copied to read it; give a contiguous "
                             f"buffer (e.g. np.ascontiguousarray of the part the load reads)")

    if isinstance(data, np.ndarray):
        if data.dtype.hasobject:
            raise TypeError(f"{argument}: a NumPy array of {data.dtype} dtype holds Python "
                            f"objects, not bytes")
        if not data.flags.c_contiguous:
            copyable(int(data.nbytes))
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if isinstance(data, str):
        raise TypeError(f"{argument}: a str is text, not bytes; give bytes (e.g. "
                        f"text.encode()), a bytearray or a NumPy array")
    try:
        view = memoryview(data)
        if view.c_contiguous:
            return np.frombuffer(view, dtype=np.uint8) if view.nbytes else \
                np.zeros(0, dtype=np.uint8)
        copyable(view.nbytes)
        return np.frombuffer(view.tobytes(), dtype=np.uint8)
    except ValueError as error:
        if str(error).startswith(argument):
            raise
        raise TypeError(f"{argument}: expected bytes, a bytearray, a NumPy array or another "
                        f"buffer, got {_type_name(data)}") from None
    except (TypeError, BufferError, NotImplementedError):
        raise TypeError(f"{argument}: expected bytes, a bytearray, a NumPy array or another "
                        f"buffer, got {_type_name(data)}") from None
