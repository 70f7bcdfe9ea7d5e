"""tmakit's kernels as PyTorch ops: gemm_fp8, transpose, stencil3x3, add, quantize_fp8.

Each op is registered with torch.library in the ``tmakit`` namespace as an op that writes its
last tensor argument (``torch.ops.tmakit.gemm_fp8_out``, ``transpose_out``,
``stencil3x3_out``, ``add_out`` and the in-place ``add_``; their schemas declare the written
tensor as mutated) with a fake implementation, so ``torch.compile(fullgraph=True)`` traces it;
the functions below check their arguments, allocate ``out`` when none is given, and call it.
The registered ops check what they write themselves too (out's shape, dtype and device, the
quantizer's x_fp8 and scale layouts, the GEMM's operand and scale types), for a
``torch.ops.tmakit.*`` call made by hand. Kernels run on torch's current stream and are
captured by CUDA graphs like any torch kernel.

Arrays of other frameworks (CuPy, JAX, ...) are taken through DLPack without a copy; results
are torch tensors (``cupy.from_dlpack(result)`` gives them back). transpose, stencil3x3 and
add take any shape, stride and start, and every dtype torch's own op takes (each docstring
says which path a layout or dtype takes); gemm_fp8 keeps TMA's 16-byte rules. Every argument
is checked before anything is written: wrong types raise TypeError, wrong devices, shapes,
overlaps (and for the GEMM strides and alignments) raise ValueError naming the argument and
the fix. The launchers check again (their ArgumentError arrives as ValueError).

NOTE: in eager mode the functions call the launcher directly rather than through the
dispatcher (see the registration below for what the dispatcher costs); under torch.compile,
a dispatch mode (FakeTensorMode, make_fx) or with tensor subclasses they go through
torch.ops.tmakit.*, so tracing sees the op.
"""

from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence

import torch

from . import _tmakit

__all__ = ["gemm_fp8", "transpose", "stencil3x3", "add", "quantize_fp8"]

# --- argument checks ------------------------------------------------------------------------

# NOTE: module constants: the registered ops' checks read them on every call (host time)
_FP8, _FLOAT32 = torch.float8_e4m3fn, torch.float32

# add: every type torch's `x + c` takes of up to 8 bytes but bool and complex. Integer types
# wrap modulo 2^bits, so the unsigned launcher types serve the signed tensors of their width.
_ADD_TYPES = {torch.int8: "UINT8", torch.uint8: "UINT8", torch.int16: "UINT16",
              torch.int32: "INT32", torch.int64: "INT64", torch.float16: "FLOAT16",
              torch.bfloat16: "BFLOAT16", torch.float32: "FLOAT32", torch.float64: "FLOAT64"}
# The ones torch's own CUDA add takes too (add's path for views the launchers cannot describe)
_TORCH_ADD_TYPES = frozenset(_ADD_TYPES)
for _name, _launcher_type in (("uint16", "UINT16"), ("uint32", "UINT32"), ("uint64", "UINT64")):
    if hasattr(torch, _name):  # NOTE: torch 2.3 and later
        _ADD_TYPES[getattr(torch, _name)] = _launcher_type
# The Python ints add takes per integer dtype (torch's rule for a scalar: a signed type its
# range, an unsigned n-bit type -(2^n - 1)..2^n - 1). NOTE: read here, not while tracing.
_INTEGER_RANGES = {}
for _dtype in _ADD_TYPES:
    if not _dtype.is_floating_point:
        _bits = 8 * _dtype.itemsize
        _INTEGER_RANGES[_dtype] = ((-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1) if _dtype.is_signed
                                   else (1 - (1 << _bits), (1 << _bits) - 1))
_STENCIL_TYPES = {torch.float32: "FLOAT32", torch.float64: "FLOAT64"}
# The 16-bit types the stencil takes as torch's conv2d does, computed in float32 (below).
_STENCIL_HALF_TYPES = (torch.float16, torch.bfloat16)
_GEMM_OUT_TYPES = {torch.bfloat16: _tmakit.DataType.bfloat16,
                   torch.float16: _tmakit.DataType.float16}
_ACCUMULATION = {"promoted": _tmakit.GemmAccumulation.promoted,
                 "fast": _tmakit.GemmAccumulation.fast}
# torch's layouts for the launcher (-1, -1: its default; any strides are passed as they are)
_TORCH_LAYOUT = (-1, -1, -1, -1)
# The transpose moves bits: any element type, by size.
_BITS_TYPES = {1: "UINT8", 2: "UINT16", 4: "UINT32", 8: "UINT64"}
# The 1-byte shell dtypes torch's copy does not take (uint1..7, int1..7): copied as bytes.
_COPY_AS_BITS = frozenset(getattr(torch, f"{kind}{bits}") for kind in ("uint", "int")
                          for bits in range(1, 8) if hasattr(torch, f"{kind}{bits}"))


def _tensor(t, name: str) -> torch.Tensor:
    """``t`` as a CUDA torch tensor: a torch tensor as it is, another framework's array
    (CuPy, JAX, ...) through DLPack, sharing its memory."""
    if not isinstance(t, torch.Tensor):
        if not hasattr(t, "__dlpack__"):
            raise TypeError(f"{name}: expected a torch.Tensor or an array with __dlpack__, got "
                            f"{type(t).__name__}")
        try:
            t = torch.from_dlpack(t)
        except Exception as error:  # (a foreign export's failure is a bad argument)
            raise TypeError(f"{name}: its DLPack export failed ({type(error).__name__}: "
                            f"{str(error).splitlines()[0] if str(error) else ''})") from None
    if t.layout is not _STRIDED or t.is_nested:  # (_strided inline: every call passes here)
        raise TypeError(f"{name}: a {_layout_name(t)} tensor; tmakit's ops take strided "
                        f"tensors (" + (f"{name}.unbind() gives its tensors" if t.is_nested
                                        else f"{name}.to_dense()") + ")")
    if not t.is_cuda:
        raise ValueError(f"{name}: is on {t.device}; tmakit's kernels run on CUDA tensors "
                         f"(move it with {name}.cuda())")
    return t


_STRIDED = torch.strided


def _strided(t: torch.Tensor) -> bool:
    """Whether ``t`` is a strided tensor (not sparse, nested or another layout)."""
    return t.layout is _STRIDED and not t.is_nested


def _layout_name(t: torch.Tensor) -> str:
    return "nested" if t.is_nested else str(t.layout).replace("torch.", "")


def _same_device(t: torch.Tensor, name: str, ref: torch.Tensor, ref_name: str) -> None:
    if t.get_device() != ref.get_device():
        raise ValueError(f"{name}: is on {t.device} but {ref_name} is on {ref.device}; "
                         f"put them on one GPU")


def _rows_view(t: torch.Tensor):
    """(rows, cols, row stride in elements) of a tensor read as rows of its last dimension,
    the leading dimensions merged into one (as in a reshape that needs no copy); None when
    the launchers cannot describe it (elements of a row not consecutive, leading dimensions
    that do not merge, rows that overlap). The row stride of a single row is 0."""
    if t.dim() == 0:
        return 1, 1, 0
    shape, stride = t.shape, t.stride()
    cols = shape[-1]
    if cols > 1 and stride[-1] != 1:
        return None
    rows, row_stride = 1, 0
    for d in range(t.dim() - 2, -1, -1):  # innermost leading dimension first
        if shape[d] == 1:
            continue
        if rows == 1:
            row_stride = stride[d]
        elif stride[d] != row_stride * rows:
            return None
        rows *= shape[d]
    if rows == 1:
        return 1, cols, 0
    if row_stride < cols:
        return None  # an expanded tensor (stride 0) or rows that overlap
    return rows, cols, row_stride


def _dense(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements fill one run of memory from data_ptr() (contiguous, or a
    permutation of a contiguous tensor), so that it is one row of numel() elements."""
    if t.is_contiguous():
        return True
    expected = 1
    for step, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz > 1):
        if step != expected:
            return False
        expected *= size
    return True


# NOTE: torch's test of a tensor's own elements sharing memory (ATen's has_internal_overlap:
# 0 no, 1 yes, 2 "too hard")
_internal_overlap = getattr(torch, "_debug_has_internal_overlap", None) or getattr(
    torch._C, "_debug_has_internal_overlap", None)


def _elements_overlap(t: torch.Tensor) -> bool:
    """Whether two elements of ``t`` (positive strides) share an address: exact for up to two
    dimensions of more than one element and for up to 2^22 elements, else only where the
    strides sorted show it (each at least the span of the ones below: no overlap)."""
    dims = sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz > 1)
    span = 0
    for step, size in dims:
        if step <= span:
            break
        span += step * (size - 1)
    else:
        return False
    if len(dims) == 2:
        # NOTE: i s0 + j s1 = i' s0 + j' s1 has a solution with (i, j) != (i', j') exactly when
        # s1 / g <= n0 - 1 and s0 / g <= n1 - 1, g = gcd(s0, s1)
        (s1, n1), (s0, n0) = dims
        g = math.gcd(s0, s1)
        return s1 // g <= n0 - 1 and s0 // g <= n1 - 1
    if t.numel() > 1 << 22:
        return False
    offsets = torch.zeros((), dtype=torch.int64)
    for step, size in dims:
        offsets = (offsets[..., None] + torch.arange(size, dtype=torch.int64) * step).reshape(-1)
    return offsets.unique().numel() != offsets.numel()


def _check_not_inference(out: torch.Tensor, name: str) -> None:
    """Refuses to write an inference tensor (made under torch.inference_mode) outside inference
    mode, as torch's own in-place and out= ops refuse it: it has no version counter to bump."""
    # NOTE: dynamo does not trace is_inference(): compiling, the registered op's kernel
    # function checks it when the graph runs (_launch_*)
    if not _is_compiling() and out.is_inference() and not torch.is_inference_mode_enabled():
        raise ValueError(f"{name}: an inference tensor (made under torch.inference_mode), which "
                         f"torch does not let be written outside inference mode; write it "
                         f"under torch.inference_mode(), or pass {name}.clone()")


# NOTE: the public wrapper where torch has it (it takes one tensor or several)
_increment_version = getattr(getattr(torch.autograd, "graph", None), "increment_version",
                             None) or torch._C._increment_version


def _written(out: torch.Tensor) -> None:
    """After a kernel wrote a tensor the caller gave (in place or out=): its version counter
    moves on, as torch's own in-place ops move it, so that autograd refuses a backward pass
    that saved its old values instead of computing a gradient from the new ones."""
    _increment_version(out)


def _check_writable(out: torch.Tensor, name: str = "out") -> None:
    """Refuses an output whose elements share memory (an expanded tensor, or strides that
    interleave: _elements_overlap, exact up to 2^22 elements or two dimensions of more than
    one; past that, like torch's own check, only what the strides show), or an inference
    tensor outside inference mode: torch's own ops refuse to write either."""
    _check_not_inference(out, name)
    # NOTE: a contiguous tensor's elements never share memory: that test first (the full one
    # costs about 2 us of host time a call)
    if out.numel() <= 1 or out.is_contiguous():
        return
    overlapping = any(st == 0 and sz > 1 for sz, st in zip(out.shape, out.stride()))
    # NOTE: torch's own test (strides that interleave too) is not traceable by dynamo: under
    # torch.compile the expanded dimensions are what is checked
    if not overlapping and not torch.compiler.is_compiling():
        verdict = 2 if _internal_overlap is None else _internal_overlap(out)
        # NOTE: 2 is torch's "too hard" (strides of no dense layout): tested here
        overlapping = verdict == 1 or (verdict == 2 and _elements_overlap(out))
    if overlapping:
        raise ValueError(f"{name}: some of its elements share memory (an expanded tensor?), so "
                         f"it cannot be written; pass a tensor of its own")


def _check_no_grad(t: torch.Tensor, name: str) -> None:
    """Refuses to write a tensor that requires grad while autograd records (torch refuses an
    in-place write to such a leaf, and an out= one): tmakit's ops record no gradient."""
    if t.requires_grad and torch.is_grad_enabled():
        raise ValueError(f"{name}: requires grad, and tmakit's ops record no gradient, so it "
                         f"cannot be written while autograd records; write it under "
                         f"torch.no_grad(), or pass {name}.detach()")


def _out_fits(out: torch.Tensor, x: torch.Tensor, shape) -> bool:
    """Whether a registered op's out (a tensor: the dispatcher checked that) passes
    _checked_out at a glance: of ``shape``, x's dtype and GPU, contiguous (no two elements
    share memory), writable (no grad, not an inference tensor); anything else goes on to
    _checked_out, which names what is wrong."""
    # NOTE: one expression: the registered ops' kernel functions pass here on every call, and
    # each attribute of a tensor costs about 0.1 us of host time
    return (out.shape == shape and out.dtype == x.dtype and out.get_device() == x.get_device()
            and out.is_contiguous() and not (out.requires_grad or out.is_inference()))


def _checked_out(out, x: torch.Tensor, shape) -> torch.Tensor:
    """A given ``out``: a CUDA tensor on x's GPU, of x's dtype and of ``shape``, whose elements
    do not share memory."""
    out = _tensor(out, "out")
    if out.requires_grad:  # (the test's first half inline: host time)
        _check_no_grad(out, "out")
    _same_device(out, "out", x, "x")
    if out.dtype != x.dtype:
        raise TypeError(f"out: dtype {out.dtype} differs from x.dtype {x.dtype}")
    if out.shape != shape:  # (a torch.Size is a tuple)
        raise ValueError(f"out: shape {tuple(out.shape)}, expected {tuple(shape)}")
    _check_writable(out)
    return out


def _span(t: torch.Tensor):
    """[first byte, one past the last) of a non-empty tensor's storage use."""
    start = t.data_ptr()
    if t.is_contiguous():
        return start, start + t.nbytes
    last = sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 0)
    return start, start + (last + 1) * t.element_size()


def _overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    if x.numel() == 0 or y.numel() == 0:
        return False
    (a0, a1), (b0, b1) = _span(x), _span(y)
    return a0 < b1 and b0 < a1


def _lazy(t: torch.Tensor) -> bool:
    """Whether t is a lazily negated or conjugated view (``z.conj().imag``, ``z.conj()``): its
    memory holds other values than it reads as, so the kernels, which read and write memory,
    take its values through one of torch's own passes."""
    return t.is_neg() or t.is_conj()


# NOTE: torch.cuda.current_stream() builds a Stream object (microseconds); the raw handle of
# torch's current stream on a device index is what the launcher needs. Both private entry
# points have public fallbacks.
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)


def _launch(out: torch.Tensor, launcher, *args) -> None:
    """Calls the launcher with out's GPU current (tmakit's runtime launches on the current
    context, the one torch makes current for its device) and torch's current stream there."""
    index = out.get_device()
    if index == _current_device():
        launcher(*args, _stream(index))
        return
    with torch.cuda.device(index):
        launcher(*args, _stream(index))


_is_compiling = torch.compiler.is_compiling
_dispatch_modes = torch._C._len_torch_dispatch_stack


def _direct(*tensors: torch.Tensor) -> bool:
    """Whether an eager call may skip the dispatcher: plain tensors, no tracing, no mode."""
    if _is_compiling() or _dispatch_modes() > 0:
        return False
    # NOTE: a loop, not all() of a generator (host time: every eager call passes here)
    for t in tensors:
        if type(t) is not torch.Tensor:
            return False
    return True


# --- launches (real tensors; every data-dependent check happens here, before the kernel) ---


def _gemm_pitch(t: torch.Tensor, name: str) -> int:
    """The row pitch in bytes of a 2-D GEMM operand, as the launcher takes it (0: a single
    row). A row stride of 0 (an expanded tensor) is torch's, not a pitch: refused here, since
    the launcher reads 0 as "dense"; every other rule of the rows is the launcher's."""
    rows, cols = t.shape
    if rows > 1 and t.stride(0) == 0 and cols > 0:
        raise ValueError(f"{name}: rows are 0 elements apart but {cols} long, so they overlap "
                         f"(an expanded tensor?); pass a separate ({rows}, {cols}) "
                         f"{'out' if name == 'out' else 'tensor'}")
    return t.stride(0) * t.element_size() if rows > 1 else 0


def _gemm_args(a, b, scale_a, scale_b, alpha, scale_a_t, scale_b_t, accumulate, out):
    """The launcher's arguments after the addresses: the rules are checked there, once."""
    m, k = a.shape
    n, kb = b.shape
    return (_GEMM_OUT_TYPES[out.dtype], m, n, k, kb, out.shape[0], out.shape[1],
            _gemm_pitch(a, "a"), _gemm_pitch(b, "b"), _gemm_pitch(out, "out"), alpha, scale_a,
            scale_b)


def _scale_recipe(scale_a_t, scale_b_t, m: int, n: int, k: int):
    """(recipe, strides) of the scale tensors as torch._scaled_mm reads their shapes: none or
    one element each -> per tensor; (M, 1) and (1, N) -> row-wise; (M, ceil(K/128)) and
    (ceil(N/128), ceil(K/128)) -> 128-block. Strides (elements) as they are: any layout."""
    recipe = _tmakit.GemmScaleRecipe
    if (scale_a_t is None or scale_a_t.numel() == 1) and \
            (scale_b_t is None or scale_b_t.numel() == 1):
        return recipe.tensor, _TORCH_LAYOUT
    kb, nb = (k + 127) // 128, (n + 127) // 128
    shapes = {"row": ((m, 1), (1, n)), "block": ((m, kb), (nb, kb))}
    expected = (f"row-wise scale_a (M, 1) = ({m}, 1) with scale_b (1, N) = (1, {n}), or "
                f"128-block scale_a (M, ceil(K/128)) = ({m}, {kb}) with scale_b "
                f"(ceil(N/128), ceil(K/128)) = ({nb}, {kb})")
    for name, t in (("scale_a", scale_a_t), ("scale_b", scale_b_t)):
        if t is None:
            raise TypeError(f"{name}: a Python float beside a scale tensor of "
                            f"{tuple((scale_b_t if name == 'scale_a' else scale_a_t).shape)}; "
                            f"row-wise and 128-block scales are float32 CUDA tensors, both: "
                            f"{expected}")
        if t.dim() != 2:
            raise ValueError(f"{name}: shape {tuple(t.shape)}; expected one float, or {expected}")
    a_shape, b_shape = tuple(scale_a_t.shape), tuple(scale_b_t.shape)
    for kind in ("row", "block"):
        if (a_shape, b_shape) == shapes[kind]:
            strides = (scale_a_t.stride(0), scale_a_t.stride(1), scale_b_t.stride(0),
                       scale_b_t.stride(1))
            if kind == "row":  # (one element along the unit dimension: its stride is moot)
                strides = (scale_a_t.stride(0), 0, scale_b_t.stride(1), 0)
            return getattr(recipe, kind), strides
    wrong = "scale_a" if a_shape not in (shapes["row"][0], shapes["block"][0]) else "scale_b"
    raise ValueError(f"{wrong}: scale_a {a_shape} and scale_b {b_shape} are no recipe; "
                     f"expected {expected}")


def _gemm_empty(a, b, out) -> None:
    """The rules of an empty product's shapes (M, N or K of 0), which the launcher, taking M, N,
    K >= 1, never sees: as wrong as at any size."""
    m, k = a.shape
    n, kb = b.shape
    if k % 16:
        raise ValueError(f"a: K = {k} is not a multiple of 16 (TMA's 16-byte rows); pad K with "
                         f"zeros to {(k + 15) // 16 * 16}")
    if kb != k:
        raise ValueError(f"b: shape {tuple(b.shape)} has K = {kb} but a {tuple(a.shape)} "
                         f"has K = {k}; b is (N, K), as in a @ b.T")
    if tuple(out.shape) != (m, n):
        raise ValueError(f"out: shape {tuple(out.shape)}, expected (M, N) = ({m}, {n})")


def _launch_gemm(a, b, scale_a, scale_b, alpha, scale_a_t, scale_b_t, accumulate, out,
                 scale_recipe=None, fresh=False):
    """The op's CUDA kernel. ``scale_recipe``: (recipe, strides) as _scale_recipe gives them,
    when the eager call has them already (the registered op reads them again). ``fresh``: out
    was just allocated here (no version to move on)."""
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0 or k == 0:
        # NOTE: empty extents are torch's (the launcher takes M, N, K >= 1): an empty product
        # writes nothing, or zeros for K = 0, as a @ b.T does
        _gemm_empty(a, b, out)
        if k == 0:
            out.zero_()
        return
    if (scale_a_t is not None and scale_a_t.is_neg()) or (
            scale_b_t is not None and scale_b_t.is_neg()):
        # NOTE: a lazily negated view (z.conj().imag) holds the opposite of its values: the
        # kernel reads the values resolved (one small copy; its strides may change)
        scale_a_t = None if scale_a_t is None else scale_a_t.resolve_neg()
        scale_b_t = None if scale_b_t is None else scale_b_t.resolve_neg()
        scale_recipe = None
    args = _gemm_args(a, b, scale_a, scale_b, alpha, scale_a_t, scale_b_t, accumulate, out)
    recipe, strides = scale_recipe or _scale_recipe(scale_a_t, scale_b_t, m, n, k)
    for name, t in (("scale_a", scale_a_t), ("scale_b", scale_b_t)):
        if t is not None and _overlaps(out, t):
            raise ValueError(f"out: overlaps {name}, which the kernel reads while it writes "
                             f"out; pass a separate out")
    _launch(out, _tmakit.gemm_fp8, a.data_ptr(), b.data_ptr(), out.data_ptr(), *args,
            0 if scale_a_t is None else scale_a_t.data_ptr(),
            0 if scale_b_t is None else scale_b_t.data_ptr(), recipe, strides,
            _ACCUMULATION[accumulate])
    if not fresh:
        _written(out)


def _matrix_stride(t: torch.Tensor):
    """The row stride in elements of a 2-D tensor the launchers can describe (rows of
    consecutive elements, not overlapping; 0 for a single row), or None: _rows_view's answer
    for two dimensions, read directly (host time)."""
    (rows, cols), (row_stride, col_stride) = t.shape, t.stride()
    if cols > 1 and col_stride != 1:
        return None
    if rows == 1:
        return 0
    return None if row_stride < cols else row_stride


# The bytes of x up to which transpose takes torch's copy kernel, by element size: (rows off 16
# bytes, rows the TMA kernel takes). NOTE: between the largest size at which torch's
# `out.copy_(x.t())` ran faster than the library's kernels at some aspect and the smallest at
# which they ran at least level at every aspect, in a sweep of views from 64 KiB to 4 MiB, rows
# 1/8 to 8 times as long as the columns (H200, CUDA graphs; kernels/transpose/README.md)
_TRANSPOSE_TORCH_COPY_BYTES = {1: (640 << 10, 256 << 10), 2: (1280 << 10, 768 << 10),
                               4: (896 << 10, 1280 << 10), 8: (1792 << 10, 2560 << 10)}


def _launch_transpose(x, out, fresh=False):
    """``fresh``: out was just allocated here, so it cannot overlap x."""
    rows, cols = x.shape
    if x.numel() == 0:
        return
    if not fresh and _overlaps(out, x):
        raise ValueError("out: overlaps x; a transpose cannot run in place: pass a separate out")
    x_row, out_row = _matrix_stride(x), _matrix_stride(out)
    esize = x.element_size()
    # NOTE: torch's strided copy of x.t() into out, one pass, where no launcher can describe
    # the views (elements of a row not consecutive: x.t() of a contiguous tensor, whose copy is
    # then a contiguous one, or a column slice with a step; 16-byte elements, complex128; a
    # lazily negated or conjugated view), and for a small x, where torch's copy kernel ran
    # faster than the library's kernels, whose setup (tiles staged in shared memory, TMA round
    # trips) outweighs so few bytes (kernels/transpose/README.md: the sizes measured)
    by_torch = x_row is None or out_row is None or esize not in _BITS_TYPES or _lazy(x) or (
        not fresh and _lazy(out))
    if not by_torch:
        x_at, out_at = x.data_ptr(), out.data_ptr()
        aligned = (x_at | out_at | x_row * esize | out_row * esize) % 16 == 0
        by_torch = rows * cols * esize <= _TRANSPOSE_TORCH_COPY_BYTES[esize][aligned]
    if by_torch:
        if x.dtype in _COPY_AS_BITS:
            # NOTE: torch's copy does not take the sub-byte shell dtypes: their bytes, as uint8
            x, out = x.view(torch.uint8), out.view(torch.uint8)
        # NOTE: the op records no gradient: out takes x's values, not a grad_fn from it
        out.copy_((x.detach() if x.requires_grad else x).t())
        return
    _launch(out, _tmakit.transpose, x_at, out_at, _BITS_TYPES[esize], rows, cols,
            x_row * esize, out_row * esize)
    if not fresh:
        _written(out)


def _images_view(t: torch.Tensor):
    """(row stride, image stride) in elements of a (H, W) or (B, H, W) tensor the stencil's
    launcher can describe (0 where there is one row or one image), or None."""
    # NOTE: shape and strides read once (host time: every eager call passes here twice)
    shape, stride = t.shape, t.stride()
    rows, cols = shape[-2], shape[-1]
    if cols > 1 and stride[-1] != 1:
        return None
    row = stride[-2] if rows > 1 else 0
    if rows > 1 and row < cols:
        return None
    if len(shape) == 3 and shape[0] > 1:
        image = stride[0]
        if image < rows * (row or cols) or image == 0:
            return None  # images that overlap or interleave (an expanded batch: stride 0)
        return row, image
    return row, 0


def _launch_stencil(x, taps, out, fresh=False):
    """``fresh``: out was just allocated here, so it cannot overlap x."""
    if x.numel() == 0:
        return
    if not fresh and _overlaps(out, x):
        raise ValueError("out: overlaps x; the stencil reads neighbours of what it writes: pass "
                         "a separate out")
    if x.dtype in _STENCIL_HALF_TYPES:
        # NOTE: 16-bit images: the taps rounded to x's dtype (as conv2d's weight would be),
        # then the float32 kernel on a float32 copy, its result rounded once into out
        taps = torch.tensor(taps, dtype=x.dtype).float().tolist()
        wide = torch.empty(out.shape, dtype=torch.float32, device=out.device)
        _launch_stencil(x.float(), taps, wide, fresh=True)
        out.copy_(wide)
        return
    batch, rows, cols = (1, *x.shape) if x.dim() == 2 else tuple(x.shape)
    x_view = _images_view(x)
    if x_view is None or x.is_neg():
        # NOTE: one contiguous copy of an input the launcher cannot describe, or of a lazily
        # negated view's values (z.conj().imag: copy_ writes the values a view reads as)
        x = torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x)
        x_view = _images_view(x)
    target = out
    out_view = _images_view(out)
    if out_view is None or (not fresh and out.is_neg()):
        # NOTE: into a dense temporary, then one strided copy into out
        target = torch.empty(out.shape, dtype=out.dtype, device=out.device)
        out_view = _images_view(target)
    esize = x.element_size()
    _launch(target, _tmakit.stencil3x3, x.data_ptr(), target.data_ptr(), _STENCIL_TYPES[x.dtype],
            batch, rows, cols, x_view[0] * esize, x_view[1] * esize, out_view[0] * esize,
            out_view[1] * esize, list(taps))
    if target is not out:
        out.copy_(target)
    elif not fresh:
        _written(out)


# The bytes of a dense x (first, last) for which add takes torch's own add, by element size.
# NOTE: the sizes at which torch's vectorised kernel ran faster than the library's dense form
# (CUDA graphs on H200; kernels/elementwise/README.md, "Small dense adds"): not the smallest,
# where the dense form's single block is ahead, nor at 8-byte elements
_ADD_TORCH_BYTES = {1: (4 << 10, 256 << 10), 2: (4 << 10, 4 << 20), 4: (4 << 10, 8 << 20),
                    8: (1, 0)}


def _launch_add(x, value, out=None, fresh=False):
    """``value``: a float for a floating x, an int (int64, exact) for an integer x. ``out``:
    None adds in place (the add_ op). ``fresh``: out was just allocated here, with x's strides
    where x is dense, so it cannot overlap x."""
    if out is None:
        out = x
    if x.numel() == 0:
        return
    same_strides = out is x or out.stride() == x.stride()
    in_place = out is x or (same_strides and out.data_ptr() == x.data_ptr())
    if not in_place and not fresh and _overlaps(out, x):
        raise ValueError("out: overlaps x without being x; pass out=x to add in place, or a "
                         "separate out")
    # NOTE: torch's own ops below read x for the op, which records no gradient: torch's out=
    # forms refuse an x that requires grad while autograd records (out never does: refused).
    # Only then: a detach on every call costs host time
    if x.requires_grad:
        x = x.detach()
    if (x.is_neg() or (not fresh and out.is_neg())) and x.dtype in _TORCH_ADD_TYPES:
        # NOTE: a lazily negated view (z.conj().imag; real x has no conjugate bit): torch's
        # add reads and writes its values (one pass)
        torch.add(x, value, out=out)
        return
    target = out
    if _dense(x) and same_strides:
        first, last = _ADD_TORCH_BYTES[x.element_size()]
        if x.dtype in _TORCH_ADD_TYPES and first <= x.numel() * x.element_size() <= last:
            # NOTE: a small dense x: torch's own add, the same sums bit for bit, ran faster
            # (_ADD_TORCH_BYTES)
            torch.add(x, value, out=out)
            return
        # NOTE: one row of numel() elements (a permuted dense tensor too): the whole grid on it
        rows, cols, x_row, out_row = 1, x.numel(), 0, 0
    else:
        x_view, out_view = _rows_view(x), _rows_view(out)
        if (x_view is None or out_view is None) and x.dtype in _TORCH_ADD_TYPES:
            # NOTE: a view the launchers cannot describe (elements of a row not consecutive,
            # leading dimensions that do not merge, a broadcast x): torch's strided add reads
            # and writes it in one pass, the same sums bit for bit, where a contiguous copy of
            # x or a temporary for out adds passes (kernels/elementwise/README.md, "Views the
            # launchers cannot describe")
            torch.add(x, value, out=out)
            return
        if x_view is None:
            # NOTE: one contiguous copy of an input the launcher cannot describe
            x = x.contiguous()
            x_view = _rows_view(x)
        if out_view is None:
            # NOTE: into a dense temporary, then one strided copy into out
            target = torch.empty(out.shape, dtype=out.dtype, device=out.device)
            out_view = _rows_view(target)
        rows, cols, x_row = x_view
        out_row = out_view[2]
    esize = x.element_size()
    if x.is_floating_point():
        _launch(target, _tmakit.add_constant, x.data_ptr(), target.data_ptr(), _ADD_TYPES[x.dtype],
                rows, cols, x_row * esize, out_row * esize, value)
    else:
        if not isinstance(value, int):
            raise TypeError(f"value: {value!r} for {x.dtype} x; an integer x takes an int")
        _launch(target, _tmakit.add_integer, x.data_ptr(), target.data_ptr(), _ADD_TYPES[x.dtype],
                rows, cols, x_row * esize, out_row * esize, value)
    if target is not out:
        out.copy_(target)
    elif not fresh:
        _written(out)


# --- torch.library registration -------------------------------------------------------------


# NOTE: registered with torch.library.Library (the schema, a CUDA kernel and a fake one), not
# torch.library.custom_op, whose Python wrappers around the kernel (autograd and in-place
# bookkeeping) made a call through torch.ops.tmakit.* cost about twice the eager call's host
# time; so registered, a call through the dispatcher (what a compiled graph makes) costs the
# eager call's host time and the dispatcher's own (1-2 us on an H200's host), which torch's
# own ops pay too: every op within a microsecond of its eager call but the in-place add,
# which pays what torch's own in-place add pays through the same dispatcher (README, python
# -m tmakit.bench's host-time tables). The ops have no autograd formula: the tensors they
# write carry no gradient (and writing one that requires grad is refused).
_LIB = torch.library.Library("tmakit", "DEF")


def _on_the_host(*args, **kwargs) -> None:
    # NOTE: the registered ops reached with host tensors say what the functions say
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor) and not value.is_cuda:
            raise ValueError(f"a tensor argument is on {value.device}; tmakit's kernels run on "
                             f"CUDA tensors (move it with .cuda())")
    raise ValueError("tmakit's kernels run on CUDA tensors")


def _register(schema: str, kernel, fake) -> None:
    name = schema.split("(", 1)[0]
    _LIB.define(schema)
    _LIB.impl(name, kernel, "CUDA")
    _LIB.impl(name, _on_the_host, "CPU")
    torch.library.register_fake("tmakit::" + name, fake, lib=_LIB)


# The registered ops' kernel functions: anyone may call them (the public functions check the
# arguments first and skip them where they launch directly; a torch.ops.tmakit.* call made
# by hand does not), and the launchers write x's extents and element size at out's address,
# so each checks what it writes before its launch, with the public functions' checks
# (_checked_out: out's device, dtype, shape, a tensor that may be written). Their fake
# functions (a traced call: no memory) make the same checks, so that a call that a kernel
# function would refuse fails when it is traced, naming the same argument; what needs
# addresses (an out overlapping x) is checked at the launch.


def _transpose_checked(x, out):
    """out, checked for the transpose of x (2-D)."""
    if x.dim() != 2:
        raise ValueError(f"x: expected 2 dimensions, got shape {tuple(x.shape)}")
    shape = (x.shape[1], x.shape[0])
    return out if _out_fits(out, x, shape) else _checked_out(out, x, shape)


def _transpose_out_op(x, out) -> None:
    _launch_transpose(x, _transpose_checked(x, out))


def _transpose_out_fake(x, out) -> None:
    _transpose_checked(x, out)


def _stencil_checked(x, taps, out):
    """out, checked for the stencil of x (a real (H, W) or (B, H, W) image) with 9 taps."""
    if x.dtype not in _STENCIL_TYPES and x.dtype not in _STENCIL_HALF_TYPES:
        raise TypeError(f"x: dtype {x.dtype}; the stencil's kernels take torch.float32, "
                        f"float64, float16 or bfloat16")
    if x.dim() not in (2, 3):
        raise ValueError(f"x: expected (H, W) or (B, H, W), got shape {tuple(x.shape)}")
    if len(taps) != 9:
        raise ValueError(f"taps: {len(taps)} values; the 3x3 weight is 9, in row-major order")
    shape = x.shape
    return out if _out_fits(out, x, shape) else _checked_out(out, x, shape)


def _stencil3x3_out_op(x, taps, out) -> None:
    _launch_stencil(x, taps, _stencil_checked(x, taps, out))


def _stencil3x3_out_fake(x, taps, out) -> None:
    _stencil_checked(x, taps, out)
    # (the launcher checks the taps it is given: traced, the public function's check)
    _check_taps(taps, x.dtype)


def _add_value(x: torch.Tensor, value):
    """The constant the launchers add to x (of a dtype they take): a float for floating x,
    the int64 of an int for an integer x (the public add and the registered ops alike)."""
    if x.dtype not in _ADD_TYPES:
        raise TypeError(f"x: dtype {x.dtype}; the add's kernels take "
                        f"{', '.join(str(t) for t in _ADD_TYPES)}")
    if x.is_floating_point():
        if type(value) is float and abs(value) < _FLOAT32_OVERFLOW:
            return value
        if isinstance(value, complex):
            raise TypeError(f"value: {value!r} for {x.dtype} x; the add's kernels add a real "
                            f"value (tmakit.add takes a complex one, into a complex result)")
        return _add_constant(value, x.dtype)
    if not isinstance(value, int):
        raise TypeError(f"value: {value!r} for {x.dtype} x; an integer x takes an int")
    return _integer_constant(int(value), x.dtype)


def _add_out_checked(x, value, out):
    """(the constant, out checked) for x + value into out."""
    value, shape = _add_value(x, value), x.shape
    return value, out if _out_fits(out, x, shape) else _checked_out(out, x, shape)


def _add_out_op(x, value, out) -> None:
    _launch_add(x, *_add_out_checked(x, value, out))


def _add_out_fake(x, value, out) -> None:
    _add_out_checked(x, value, out)


def _add_in_place_checked(x, value):
    """The constant for x += value, x checked as a tensor that may be written."""
    if not x.is_contiguous() or x.requires_grad or x.is_inference():  # (host time)
        _check_no_grad(x, "x")
        _check_writable(x, "x")
    return _add_value(x, value)


def _add_op(x, value) -> None:
    _launch_add(x, _add_in_place_checked(x, value))


def _add_fake(x, value) -> None:
    _add_in_place_checked(x, value)


def _gemm_operands(a, b, scale_a_tensor, scale_b_tensor, accumulate, out) -> None:
    """The registered op's checks (its fake's too) of what the launcher cannot see: it reads
    a and b as rows of bytes, out as rows of elements and the scale tensors as floats, from
    addresses and row pitches alone; so the types, ranks, unit strides along K and N and the
    GPU are checked here, the accumulation's name, and that out may be written. The shapes,
    row pitches and scale layouts the launcher checks itself."""
    device = a.get_device()
    for name, t in (("a", a), ("b", b)):
        if t.dtype != _FP8:
            raise TypeError(f"{name}: dtype {t.dtype}; the GEMM reads torch.float8_e4m3fn")
        if t.dim() != 2:
            raise ValueError(f"{name}: expected 2 dimensions, got shape {tuple(t.shape)}")
        if t.shape[1] > 1 and t.stride(1) != 1:
            raise ValueError(f"{name}: rows must be K contiguous bytes (stride 1 along K), got "
                             f"strides {t.stride()}; pass {name}.contiguous()")
    for name, t in (("scale_a_tensor", scale_a_tensor), ("scale_b_tensor", scale_b_tensor)):
        if t is not None and t.dtype != _FLOAT32:
            raise TypeError(f"{name}: dtype {t.dtype}; scale tensors are torch.float32")
    if out.dtype not in _GEMM_OUT_TYPES:
        raise TypeError(f"out: dtype {out.dtype}; the GEMM writes torch.bfloat16 or "
                        f"torch.float16")
    if out.dim() != 2:
        raise ValueError(f"out: expected 2 dimensions (M, N), got shape {tuple(out.shape)}")
    if out.shape[1] > 1 and out.stride(1) != 1:
        raise ValueError(f"out: strides {out.stride()}; the GEMM writes rows of N contiguous "
                         f"elements (stride 1 along N)")
    for name, t in (("b", b), ("scale_a_tensor", scale_a_tensor),
                    ("scale_b_tensor", scale_b_tensor), ("out", out)):
        if t is not None and t.get_device() != device:
            raise ValueError(f"{name}: on {t.device}, but a is on {a.device}")
    if type(accumulate) is not str or accumulate not in _ACCUMULATION:
        raise ValueError(f"accumulate: {accumulate!r} is not 'promoted' or 'fast'")
    _check_no_grad(out, "out")
    _check_writable(out)


def _gemm_fp8_fake(a, b, scale_a, scale_b, alpha, scale_a_tensor, scale_b_tensor, accumulate,
                   out):
    # a traced call: the op's checks, then the launcher's rules but those of the addresses,
    # before any memory exists
    _gemm_operands(a, b, scale_a_tensor, scale_b_tensor, accumulate, out)
    if a.numel() == 0 or b.numel() == 0:
        _gemm_empty(a, b, out)
        return
    recipe, strides = _scale_recipe(scale_a_tensor, scale_b_tensor, a.shape[0], b.shape[0],
                                    a.shape[1])
    _tmakit.gemm_fp8_check(
        *_gemm_args(a, b, scale_a, scale_b, alpha, scale_a_tensor, scale_b_tensor, accumulate,
                    out),
        scale_a_tensor is not None, scale_b_tensor is not None, recipe, strides,
        _ACCUMULATION[accumulate])


def _gemm_operands_fit(a, b, scale_a_tensor, scale_b_tensor, accumulate, out) -> bool:
    """The registered op's common case at a glance, in which _gemm_operands' checks hold:
    dense 2-D fp8 operands and a dense 2-D bf16 or fp16 out that may be written, on one GPU,
    no scale tensors. Anything else goes on to the checks, which name what is wrong."""
    # NOTE: one expression: every call of the op passes here, and each attribute of a tensor
    # costs about 0.1 us of host time
    device = a.get_device()
    return (a.dtype == _FP8 and b.dtype == _FP8 and out.dtype in _GEMM_OUT_TYPES
            and scale_a_tensor is None and scale_b_tensor is None
            and a.ndim == 2 and b.ndim == 2 and out.ndim == 2 and a.is_contiguous()
            and b.is_contiguous() and out.is_contiguous() and b.get_device() == device
            and out.get_device() == device and not (out.requires_grad or out.is_inference())
            and type(accumulate) is str and accumulate in _ACCUMULATION)


def _gemm_fp8_out_op(a, b, scale_a, scale_b, alpha, scale_a_tensor, scale_b_tensor, accumulate,
                     out) -> None:
    if not _gemm_operands_fit(a, b, scale_a_tensor, scale_b_tensor, accumulate, out):
        _gemm_operands(a, b, scale_a_tensor, scale_b_tensor, accumulate, out)
    _launch_gemm(a, b, scale_a, scale_b, alpha, scale_a_tensor, scale_b_tensor, accumulate, out)


_register("gemm_fp8_out(Tensor a, Tensor b, float scale_a, float scale_b, float alpha, "
          "Tensor? scale_a_tensor, Tensor? scale_b_tensor, str accumulate, Tensor(a!) out) -> ()",
          _gemm_fp8_out_op, _gemm_fp8_fake)
_register("transpose_out(Tensor x, Tensor(a!) out) -> ()", _transpose_out_op,
          _transpose_out_fake)
_register("stencil3x3_out(Tensor x, float[] taps, Tensor(a!) out) -> ()", _stencil3x3_out_op,
          _stencil3x3_out_fake)
# NOTE: add's constant travels as one Scalar: a float for floating-point x, an int (int64,
# exact) for integer x (one argument: each scalar argument costs the dispatcher host time)
_register("add_out(Tensor x, Scalar value, Tensor(a!) out) -> ()", _add_out_op, _add_out_fake)
_register("add_(Tensor(a!) x, Scalar value) -> ()", _add_op, _add_fake)


# --- the public functions -------------------------------------------------------------------


def _real(value, name: str, what: str) -> float:
    """A host number (int, float, bool, Fraction, a NumPy real scalar) as a Python float:
    TypeError for anything else (a string or a Decimal is not parsed), ValueError past
    float64's range."""
    if type(value) is float:
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected {what}, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name}: {_number(value)} is past float64's range") from None


def _number(value) -> str:
    """A number for a message: an int of more than 30 digits by its size."""
    if isinstance(value, int) and not -10**30 < value < 10**30:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)


# The least double that rounds to float32's infinity (2^128 - 2^103: FLT_MAX plus half an
# ulp, a tie rounded to even, up), the greatest that rounds to 0 (half the least subnormal, a
# tie rounded to even, down), and the least normal float32.
_FLOAT32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103
_FLOAT32_UNDERFLOW = 2.0 ** -150
_FLOAT32_NORMAL = 2.0 ** -126


def _scale(value, name: str, device):
    """(host float, device tensor or None) for a scale given as a float or as a float32 tensor
    on the GEMM's GPU (read by the kernel when it runs: no synchronisation)."""
    if isinstance(value, torch.Tensor):
        if value.dtype != torch.float32:
            raise TypeError(f"{name}: dtype {value.dtype}; scale tensors are torch.float32 "
                            f"(one element, or row-wise / 128-block arrays)")
        if value.device != device:
            raise ValueError(f"{name}: is on {value.device}, the operands on {device}; a tensor "
                             f"scale lives on the GEMM's GPU (or pass a Python float)")
        if not _strided(value):
            raise TypeError(f"{name}: a {_layout_name(value)} tensor; scale tensors are strided "
                            f"float32 tensors")
        return 1.0, value
    scale = _real(value, name, "a float or a float32 CUDA tensor")
    if not _finite(scale):
        raise ValueError(f"{name}: {scale} is not finite")
    return scale, None


def _finite(value: float) -> bool:
    """Whether ``value`` is neither NaN nor infinite. NOTE: arithmetic, not math.isfinite,
    which dynamo does not fold (a compiled call checks its constants as an eager one does)."""
    return value - value == 0.0


def _host_scales(alpha: float, scale_a: float, scale_b: float) -> tuple:
    """(alpha, scale_a, scale_b) as the launcher takes them (floats, multiplied in double and
    rounded once), after the check of their product formed in double here: where a value
    alone lies outside float32's normal range, the product travels as alpha (so that a factor
    float32 cannot hold, whose product it can, is not lost)."""
    if not _finite(alpha):
        raise ValueError(f"alpha: {alpha} is not finite")
    product = alpha * scale_a * scale_b
    if not _finite(product) or abs(product) >= _FLOAT32_OVERFLOW:
        raise ValueError(f"alpha, scale_a, scale_b: alpha * scale_a * scale_b = {product:.9g} is "
                         f"past float32's range, the type the kernel scales in")
    if product != 0.0 and abs(product) <= _FLOAT32_UNDERFLOW:
        raise ValueError(f"alpha, scale_a, scale_b: alpha * scale_a * scale_b = {product:.9g} is "
                         f"below float32's range (it would be 0, and D with it)")
    # (inline: host time)
    low, high = _FLOAT32_NORMAL, _FLOAT32_OVERFLOW
    if (alpha == 0.0 or low <= abs(alpha) < high) and (
            scale_a == 0.0 or low <= abs(scale_a) < high) and (
            scale_b == 0.0 or low <= abs(scale_b) < high):
        return alpha, scale_a, scale_b
    return product, 1.0, 1.0


def gemm_fp8(a: torch.Tensor, b: torch.Tensor, *, scale_a=1.0, scale_b=1.0,
             alpha: float = 1.0, out_dtype: Optional[torch.dtype] = None,
             out: Optional[torch.Tensor] = None, accumulate: str = "promoted") -> torch.Tensor:
    """D = alpha * scale_a * scale_b * (a @ b.T) on the FP8 GEMM of kernels/gemm.

    ``a`` (M, K) and ``b`` (N, K): torch.float8_e4m3fn on one GPU, rows of K contiguous bytes
    (the layout ``torch._scaled_mm(a, b.t(), ...)`` takes), K a multiple of 16, data and row
    strides 16-byte aligned. D rounded once to ``out_dtype`` (torch.bfloat16 by default, or
    torch.float16; taken from ``out`` when given). ``out``: (M, N), unit column stride, any
    row stride, 16-byte aligned data, not overlapping a or b. Speed: row strides of a and b
    that are multiples of 32 bytes (K = 4112, an odd multiple of 16, measured 1.6-1.9x the
    time of K = 4096).

    ``scale_a`` / ``scale_b``: Python floats, or one-element float32 tensors on the GPU that
    the kernel reads when it runs (after the work before it on the stream: a dynamic-scaling
    amax needs no host synchronisation, and a CUDA graph replay reads the current value).
    alpha * scale_a * scale_b, for host values, formed in double, must round to a finite float
    that is 0 only when the product is (0 gives D = 0; a product below float's range is
    refused, not flushed to 0); a single value may lie outside float's range where the
    product does not (alpha=1e40, scale_a=1e-40).

    Row-wise and 128-block scales (the recipe follows from the float32 CUDA tensors' shapes,
    as in ``torch._scaled_mm``; kernels/gemm/README.md, "Scale recipes"):
    - row-wise: ``scale_a`` (M, 1) and ``scale_b`` (1, N): D[m, n] = acc * ((alpha *
      scale_a[m]) * scale_b[n]);
    - 128-block: ``scale_a`` (M, ceil(K/128)), one per 1 x 128 of a along K, and ``scale_b``
      (ceil(N/128), ceil(K/128)), one per 128 x 128 block of b: each 128-deep partial sum is
      multiplied by its two scales as it is added into fp32 (``accumulate="promoted"`` only).
    Any strides are taken (torch's layouts, DeepGEMM's M-major TMA-aligned scale_a, broadcast
    views); an M-major 128-block ``scale_a`` (strides (1, s), s a multiple of 4 and >= M, 16-byte
    aligned: torch's layout where M is a multiple of 4) is loaded by TMA and runs fastest, any
    other is copied by the kernel's scale warp; with it, a ``scale_b`` whose rows are K-major
    and a multiple of 4 floats apart (torch's contiguous layout where K is a multiple of 512)
    is loaded by TMA too. The values are read on the device when the
    kernel runs, like a one-element tensor
    scale, and are not checked (a non-finite scale gives non-finite elements of D). The scale
    tensors must not overlap ``out``. Both are tensors, or neither is.
    ``accumulate``: "promoted" (default; the tensor cores' partial sums added into fp32 every
    128 or 256 of K: element errors within 2^-10 of sum |a b|) or "fast" (the tensor cores
    accumulate across all of K, as torch._scaled_mm's use_fast_accum=True; the error grows
    with K). See kernels/gemm/README.md.

    CUDA graphs: shapes that split K sum partial tiles through a workspace the library keeps
    per stream and grows on demand, which a capture cannot do (nothing is allocated during
    one): captured on a stream whose workspace is too small, such a call runs without the
    split (within the same error bound, not bit for bit the split call's sums; slower where
    the split paid, e.g. 128 x 2112 x 7168). To capture
    the split, make the same call once on the capture stream before capturing
    (``torch.cuda.graph(g, stream=s)`` after a call under ``torch.cuda.stream(s)``).
    A graph keeps its capture stream's workspace wherever it is replayed: replays of graphs
    captured on one stream (torch.cuda.graph's default capture stream is one for all of them)
    and that stream's own split-K calls take turns; run them concurrently only from graphs
    captured on different streams.
    """
    a = _tensor(a, "a")
    b = _tensor(b, "b")
    _same_device(b, "b", a, "a")
    for name, t in (("a", a), ("b", b)):
        if t.dtype != torch.float8_e4m3fn:
            raise TypeError(f"{name}: dtype {t.dtype}; the GEMM takes torch.float8_e4m3fn "
                            f"(convert with {name}.to(torch.float8_e4m3fn))")
        if t.dim() != 2:
            raise ValueError(f"{name}: expected 2 dimensions ({'M' if name == 'a' else 'N'}, K), "
                             f"got shape {tuple(t.shape)}")
        if t.shape[1] > 1 and t.stride(1) != 1:
            raise ValueError(f"{name}: rows must be K contiguous bytes (stride 1 along K), got "
                             f"strides {t.stride()}; pass {name}.contiguous()"
                             + (" (for b, the (N, K) matrix itself, not b.t())"
                                if name == "b" else ""))
    m, n = a.shape[0], b.shape[0]
    s_a, t_a = _scale(scale_a, "scale_a", a.device)
    s_b, t_b = _scale(scale_b, "scale_b", a.device)
    # (the recipe the scale tensors' shapes give, checked before anything is allocated)
    recipe, strides = _scale_recipe(t_a, t_b, m, n, a.shape[1])
    s_alpha, s_a, s_b = _host_scales(_real(alpha, "alpha", "a float"), s_a, s_b)
    if type(accumulate) is not str or accumulate not in _ACCUMULATION:
        raise ValueError(f"accumulate: {accumulate!r} is not 'promoted' or 'fast'")
    if accumulate == "fast" and recipe == _tmakit.GemmScaleRecipe.block:
        raise ValueError("accumulate: fast with 128-block scales, which are applied at each "
                         "promotion (every 128 of K); use accumulate=\"promoted\"")
    fresh = out is None
    if fresh:
        dtype = torch.bfloat16 if out_dtype is None else out_dtype
        if not isinstance(dtype, torch.dtype) or dtype not in _GEMM_OUT_TYPES:
            raise TypeError(f"out_dtype: {dtype}; the GEMM writes torch.bfloat16 or "
                            f"torch.float16")
        if m and n and a.shape[1] and b.shape[1] and not _is_compiling():
            # NOTE: the launcher's checks (all but the addresses) before out is allocated (a
            # compiled graph runs them in the op's fake implementation, at trace time)
            _tmakit.gemm_fp8_check(_GEMM_OUT_TYPES[dtype], m, n, a.shape[1], b.shape[1], m, n,
                                   _gemm_pitch(a, "a"), _gemm_pitch(b, "b"),
                                   n * 2 if m > 1 else 0, s_alpha, s_a, s_b, t_a is not None,
                                   t_b is not None, recipe, strides, _ACCUMULATION[accumulate])
        out = torch.empty((m, n), dtype=dtype, device=a.device)
    else:
        out = _tensor(out, "out")
        _check_no_grad(out, "out")
        _check_writable(out)
        _same_device(out, "out", a, "a")
        if out.dtype not in _GEMM_OUT_TYPES:
            raise TypeError(f"out: dtype {out.dtype}; the GEMM writes torch.bfloat16 or "
                            f"torch.float16")
        if out_dtype is not None and (not isinstance(out_dtype, torch.dtype)
                                      or out_dtype != out.dtype):
            raise TypeError(f"out_dtype: {out_dtype} differs from out.dtype {out.dtype}")
        if out.dim() != 2:
            raise ValueError(f"out: expected 2 dimensions (M, N), got shape {tuple(out.shape)}")
        if out.shape[1] > 1 and out.stride(1) != 1:
            raise ValueError(f"out: strides {out.stride()}; the GEMM writes rows of N "
                             f"contiguous elements (stride 1 along N)")
    if _direct(a, b, out):
        _launch_gemm(a, b, s_a, s_b, s_alpha, t_a, t_b, accumulate, out,
                     scale_recipe=(recipe, strides), fresh=fresh)
    else:
        torch.ops.tmakit.gemm_fp8_out(a, b, s_a, s_b, s_alpha, t_a, t_b, accumulate, out)
    return out


def transpose(x: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """out = x.T materialised, for a 2-D CUDA tensor of any dtype (the bits are moved), any
    shape (empty too), any strides and start. ``out``: (x.shape[1],
    x.shape[0]), same dtype, any strides, not overlapping x; allocated dense when not given.
    A 0-D or 1-D x is its own transpose, as for torch's ``x.t()``: a copy of x's shape.

    Paths: rows whose starts and pitches are 16-byte aligned (x's and out's) run through the
    TMA kernel; 1- and 2-byte elements (at least 16 rows) otherwise through TMA loads of each
    residue class of rows (the row-class kernel: where x's pitch is off 16 bytes, or its start
    or out is; for 2-byte elements with a pitch of whole 16 bytes only on large tensors, where
    it measured faster); other rows of consecutive elements through the library's plain
    tiled kernel (kernels/transpose/README.md, "Paths" and "Row classes"); when the elements
    of x's or out's rows are not consecutive (x = y.t(), a column step), torch's strided copy
    ``out.copy_(x.t())`` does the one pass (a contiguous copy for x = y.t() of a contiguous
    y), as it does for 16-byte elements (complex128), which no launcher type holds, and for a
    small x (up to 256 KiB to 2.5 MiB by element size and alignment), where torch's copy kernel
    measured faster than the library's.
    Quantized tensors (torch.qint8, ...) are refused: transpose ``x.int_repr()``."""
    x = _tensor(x, "x")
    if x.is_quantized:
        raise TypeError(f"x: a quantized tensor ({x.dtype}), whose scales the kernels do not "
                        f"carry; transpose x.int_repr() and quantize the result")
    if x.dim() > 2:
        raise ValueError(f"x: expected 2 dimensions (or 0 or 1), got shape {tuple(x.shape)}")
    if x.dim() < 2:
        # NOTE: torch's x.t() returns a 0-D or 1-D tensor as it is, so its transpose is a copy:
        # the 2-D path's, one row into one column (the same elements in the same order)
        n = x.numel()
        if out is not None:
            out = _tensor(out, "out")
            if tuple(out.shape) != tuple(x.shape):
                raise ValueError(f"out: shape {tuple(out.shape)}, expected {tuple(x.shape)}")
            transpose(x.view(1, n), out=out.view(n, 1))
            return out
        return transpose(x.view(1, n)).view(x.shape)
    rows, cols = x.shape
    fresh = out is None
    if fresh:
        out = x.new_empty((cols, rows))  # (x's dtype and device; host time)
    else:
        out = _checked_out(out, x, (cols, rows))
    if _direct(x, out):
        _launch_transpose(x, out, fresh)
    else:
        torch.ops.tmakit.transpose_out(x, out)
    return out


# Containers whose order is not the taps' (or which hold characters, not numbers)
_NOT_TAP_ROWS = (str, bytes, set, frozenset, dict)


def _tap_values(weight) -> list:
    """The 9 taps of a 3x3 weight (tensor, nested list, array), row-major, as given."""
    if isinstance(weight, torch.Tensor):
        if not _strided(weight) or weight.is_meta:
            raise TypeError(f"weight: a {'meta' if weight.is_meta else _layout_name(weight)} "
                            f"tensor; pass the taps as a strided tensor or a nested list")
        if tuple(weight.shape) not in ((3, 3), (1, 1, 3, 3), (9,)):
            raise ValueError(f"weight: shape {tuple(weight.shape)}, expected (3, 3) (or (1, 1, "
                             f"3, 3), or 9 taps row-major)")
        if weight.is_cuda and torch.cuda.is_current_stream_capturing():
            raise ValueError("weight: a CUDA tensor cannot be read while a CUDA graph is "
                             "captured; pass the taps as a CPU tensor or a list")
        return weight.detach().reshape(9).tolist()
    if isinstance(weight, _NOT_TAP_ROWS):
        raise TypeError(f"weight: expected a 3x3 tensor or nested list, got "
                        f"{type(weight).__name__}")
    try:
        weight_rows = list(weight)
    except TypeError:
        raise TypeError(f"weight: expected a 3x3 tensor or nested list, got "
                        f"{type(weight).__name__}") from None
    if any(isinstance(r, _NOT_TAP_ROWS) for r in weight_rows):
        raise ValueError(f"weight: expected 3 rows of 3 taps, got {weight!r}")
    try:
        rows = [list(r) for r in weight_rows]
    except TypeError:
        raise ValueError(f"weight: expected 3 rows of 3 taps, got {weight!r}") from None
    if len(rows) != 3 or any(len(r) != 3 for r in rows):
        raise ValueError(f"weight: expected 3 rows of 3 taps, got {weight!r}")
    return [v for r in rows for v in r]


def _real_tap(value) -> float:
    try:
        return _real(value, "weight: a tap", "a real number")
    except TypeError:
        why = (" (complex taps take a complex x)"
               if isinstance(value, numbers.Complex) and not isinstance(value, (str, bytes))
               else "")
        raise TypeError(f"weight: tap {value!r} is not a real number{why}") from None


def _taps(weight) -> list:
    """The 9 taps as Python floats, row-major; TypeError / ValueError naming ``weight`` for
    anything but 3 rows of 3 real numbers."""
    if type(weight) is list and len(weight) == 3:
        # NOTE: the common nested list of 3 rows of 3 floats, read in one pass (host time)
        a, b, c = weight
        if type(a) is list and type(b) is list and type(c) is list and len(a) == 3 and (
                len(b) == 3 and len(c) == 3):
            taps = [*a, *b, *c]
            for v in taps:
                if type(v) is not float:
                    break
            else:
                return taps
    return [_real_tap(v) for v in _tap_values(weight)]


# The least magnitude that rounds to infinity in each type the stencil computes in below
# float64 (the greatest finite value plus half an ulp: a tie, rounded to even, up).
_TAP_OVERFLOW = {torch.float32: _FLOAT32_OVERFLOW, torch.float16: 65520.0,
                 torch.bfloat16: 2.0 ** 128 - 2.0 ** 119, torch.float64: math.inf}


def _check_taps(taps: list, dtype: torch.dtype) -> None:
    """Finite taps that ``dtype`` (which they are rounded to) holds; ValueError naming the tap
    otherwise (conv2d would give inf or NaN elements)."""
    bound = _TAP_OVERFLOW[dtype]
    if sum(map(abs, taps)) < bound:  # (NaN compares false: the loop below names it)
        return
    for i, v in enumerate(taps):
        where = f"weight[{i // 3}][{i % 3}]"
        if not _finite(v):
            raise ValueError(f"{where}: {v} is not finite; the stencil takes finite taps")
        if abs(v) >= bound:
            raise ValueError(f"{where}: {v:.9g} overflows {dtype}, x's dtype, to which the taps "
                             f"are rounded")


# The stencil on complex x: the real kernel on each part's planes
_STENCIL_COMPLEX_TYPES = (torch.complex32, torch.complex64, torch.complex128)
_FLOAT_OF_COMPLEX = {torch.complex32: torch.float16, torch.complex64: torch.float32,
                     torch.complex128: torch.float64}


def _rounded(value: float, bits: int, least_exponent: int) -> float:
    """A finite float rounded once to nearest, ties to even, to ``bits`` significant bits and
    the subnormal quantum 2^(least_exponent - bits) (frexp's exponents); the sign of a zero
    kept. Pure Python, which torch.compile traces (a tensor's tolist() it does not)."""
    if value == 0:
        return value
    quantum = 2.0 ** (max(math.frexp(value)[1], least_exponent) - bits)
    return math.copysign(round(value / quantum) * quantum, value)


def _as_float16(value: float) -> float:
    """A float within float16's range as torch.tensor([value], dtype=torch.float16) holds it:
    rounded to float32, then to float16 (torch's conversion of a Python float)."""
    return _rounded(_rounded(value, 24, -125), 11, -13)


def _stencil_complex(x: torch.Tensor, weight, out: Optional[torch.Tensor]) -> torch.Tensor:
    """stencil3x3 of a complex x, as conv2d's complex product: the real and imaginary planes
    of x as one batch for the real kernel, once with the taps' real parts and, where a tap has
    an imaginary part, once with those; real = S(re; w.re) - S(im; w.im), imag = S(im; w.re)
    + S(re; w.im)."""
    values = _tap_values(weight)
    for v in values:
        if isinstance(v, (str, bytes)) or not isinstance(v, numbers.Complex):
            raise TypeError(f"weight: tap {v!r} is not a number")
    # NOTE: each tap's parts as floats (not complex(v), which torch.compile before torch 2.6
    # does not trace)
    try:
        real = [float(v.real) for v in values]
        imag = [float(v.imag) for v in values]
    except OverflowError:
        raise ValueError("weight: a tap is past float64's range") from None
    parts = _FLOAT_OF_COMPLEX[x.dtype]
    _check_taps(real, parts)
    _check_taps(imag, parts)
    if out is not None:
        out = _checked_out(out, x, x.shape)
    if x.dtype == torch.complex32:
        # NOTE: as the 16-bit real images: the taps rounded to x's dtype, x widened (complex64),
        # the result rounded once
        wide = _stencil_complex_parts(x.to(torch.complex64), [_as_float16(v) for v in real],
                                      [_as_float16(v) for v in imag])
        return wide.to(torch.complex32) if out is None else out.copy_(wide)
    result = _stencil_complex_parts(x, real, imag)
    return result if out is None else out.copy_(result)


def _stencil_complex_parts(x: torch.Tensor, real: list, imag: list) -> torch.Tensor:
    """The complex stencil of x (complex64 or complex128) with taps of these real and
    imaginary parts, into a new tensor."""
    images = x if x.dim() == 3 else x[None]
    b, h, w = images.shape
    # NOTE: (2 b, h, w): x's real planes, then its imaginary ones (one pass over x; copy_
    # writes the values a conjugated view reads as); the sums are made before out is
    # written, so that an out overlapping x reads nothing written
    planes = torch.empty((2 * b, h, w), dtype=_FLOAT_OF_COMPLEX[x.dtype], device=x.device)
    planes[:b].copy_(images.real)
    planes[b:].copy_(images.imag)
    by_real = stencil3x3(planes, [real[r:r + 3] for r in (0, 3, 6)])
    if any(imag):
        by_imag = stencil3x3(planes, [imag[r:r + 3] for r in (0, 3, 6)])
        result = torch.complex(by_real[:b] - by_imag[b:], by_real[b:] + by_imag[:b])
    else:
        result = torch.complex(by_real[:b], by_real[b:])
    return result.view(x.shape)


def stencil3x3(x: torch.Tensor, weight, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """3x3 cross-correlation with zero padding (``conv2d(x[:, None], weight[None, None],
    padding=1)``): ``x`` (H, W) or (B, H, W) float32 or float64 (or 16-bit, below) on a GPU,
    any shape (empty too), strides and start; ``weight`` 3x3 (tensor, nested list or array of
    real numbers; taps rounded to x's dtype, summed in row-major order with fused
    multiply-adds; a NaN or infinite tap, or one past x's dtype's range, is refused with
    ValueError). The taps are host numbers: a CUDA tensor weight is read to the host (a
    synchronisation), and under ``torch.compile(fullgraph=True)`` the weight must be numbers
    (a nested list), since a graph cannot read a tensor's values on the host. ``out``: same
    shape and dtype, any strides, not overlapping x; allocated dense when not given.

    Paths: rows and images whose starts and pitches are 16-byte aligned run through the TMA
    kernel, or, on H200-class memory, the library's plain kernel with 16-byte loads and
    stores (the plan's pick there; element by element where the rows end in a part 16-byte
    span of an image under 128 MiB of float32 or 48 MiB of float64); other views of rows of
    consecutive elements through the plain kernel element by element
    (kernels/stencil3x3/README.md). An x whose
    rows are not consecutive elements (or whose images interleave) is first made contiguous
    (one copy); such an out is written through a dense temporary and one strided copy.
    float16 and bfloat16 (which conv2d takes too): taps rounded to x's dtype, x widened to a
    float32 copy, the float32 kernel, its result rounded once to x's dtype (three passes over
    memory: not the fast path). complex64, complex128 and complex32 (conv2d's complex
    product; the taps may be complex): the real and imaginary planes of x (one copy) as one
    batch for the kernel of the parts' dtype, once with the taps' real parts and, where a tap
    has an imaginary part, once with those, the results combined into out."""
    x = _tensor(x, "x")
    if x.dtype not in _STENCIL_TYPES and x.dtype not in _STENCIL_HALF_TYPES and (
            x.dtype not in _STENCIL_COMPLEX_TYPES):
        raise TypeError(f"x: dtype {x.dtype}; the stencil takes torch.float32, float64, float16, "
                        f"bfloat16, complex64, complex128 or complex32")
    if x.dim() not in (2, 3):
        raise ValueError(f"x: expected (H, W) or (B, H, W), got shape {tuple(x.shape)}")
    if x.is_complex():
        return _stencil_complex(x, weight, out)
    taps = _taps(weight)
    _check_taps(taps, x.dtype)
    fresh = out is None
    if fresh:
        out = x.new_empty(x.shape)
    else:
        out = _checked_out(out, x, x.shape)
    if _direct(x, out):
        _launch_stencil(x, taps, out, fresh)
    else:
        torch.ops.tmakit.stencil3x3_out(x, taps, out)
    return out


def _integer_constant(value: int, dtype: torch.dtype) -> int:
    """``value`` as the int64 the launcher adds to an integer tensor (the sum wraps modulo
    2^bits), after torch's own range rule for a Python int added to a tensor of ``dtype``: a
    signed type takes its range, an unsigned n-bit type -(2^n - 1)..2^n - 1."""
    low, high = _INTEGER_RANGES[dtype]
    if not low <= value <= high:
        raise ValueError(f"value: {_number(value)} does not fit {dtype} (torch refuses it "
                         f"too); pass a value in [{low}, {high}]")
    wrapped = value % (1 << 64)  # the same sum modulo 2^bits, as an int64
    return wrapped - (1 << 64) if wrapped >= 1 << 63 else wrapped


def _int_as_float32(value: int) -> float:
    """An int below 2^128 rounded once to float32 (to nearest, ties to even), as torch
    converts an int64 scalar for a float32 or 16-bit tensor's sum; a Python float holds it
    exactly. NOTE: float(value) first would round twice past 2^53 (2^54 + 2^30 + 1: to
    2^54 + 2^30, then a tie to 2^54 where one rounding gives 2^54 + 2^31)."""
    magnitude = abs(value)
    shift = magnitude.bit_length() - 24
    if shift <= 0:
        return float(value)
    kept, rest = divmod(magnitude, 1 << shift)
    half = 1 << (shift - 1)
    if rest > half or (rest == half and kept & 1):
        kept += 1
    rounded = float(kept << shift)
    return -rounded if value < 0 else rounded


def _add_constant(value, dtype: torch.dtype) -> float:
    """``value`` as the float a floating x adds: torch's sum of a finite value past float32's
    range with a float32 or 16-bit tensor (formed in float32) is inf, which is refused, on
    every path alike."""
    if dtype is not torch.float64 and isinstance(value, numbers.Integral) and not isinstance(
            value, bool):
        value = int(value)
        if abs(value) >= 1 << 128:  # (past float32's range, and perhaps float64's)
            raise ValueError(f"value: {_number(value)} overflows float32, in which {dtype} sums "
                             f"are formed (the sum would be inf); pass a value within float32's "
                             f"range")
        value = _int_as_float32(value)
    value = _real(value, "value", "a real number")
    if dtype is not torch.float64 and _FLOAT32_OVERFLOW <= abs(value) < math.inf:
        raise ValueError(f"value: {value:.9g} overflows float32, in which {dtype} sums are "
                         f"formed (the sum would be inf); pass a value within float32's range")
    return value


def add(x: torch.Tensor, value, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """out = x + value, as torch's ``x + value`` for a Python int, float or complex ``value``,
    any shape (empty too), strides and start. Types: float32, float64, bfloat16 and float16
    (value as float32 below float64; bf16/fp16 sums in float32, rounded once: torch's own
    arithmetic, bit for bit), int8, int16,
    int32, int64, uint8 (and uint16, uint32, uint64 where torch has them): integer sums wrap
    modulo 2^bits, value an int in the dtype's range (an unsigned dtype also takes down to
    -max). ``out=x`` adds in place; otherwise ``out`` has x's shape and dtype, any strides,
    and does not overlap x; allocated with x's strides when x is dense (contiguous or a
    permutation of contiguous), else contiguous.

    Paths: a dense x with an out of the same strides is one row for the kernels, which the
    library's plain vectorised kernel spreads over the whole GPU, or, from 4 KiB to 256 KiB of
    1-byte, 4 MiB of 2-byte or 8 MiB of 4-byte elements, torch's own add, whose kernel ran
    faster there (kernels/elementwise/README.md, "Small dense adds"); otherwise rows of the
    last dimension. Rows whose starts and pitches are 16-byte aligned, of int32, float32, bfloat16
    or float16, run through the TMA kernel; the rest through the plain kernel
    (kernels/elementwise/README.md). Where x or out is not rows of consecutive elements (a
    column step, leading dimensions that do not merge, a broadcast x), torch's own strided
    add does the one pass (the same sums); for uint16, uint32 and uint64, which torch's add
    does not take, such an x is first made contiguous (one copy) and such an out written
    through a dense temporary and one strided copy.
    The other sums torch's ``x + value`` makes, by torch's type promotion and its own add
    (one pass; out of the promoted dtype): bool and complex x (no launcher type holds them),
    an integer or bool x with a float value (a result of torch's default float dtype), any x
    with a complex ``value``; for uint16/32/64 x, which torch's add does not take, x is first
    converted to the result's dtype (one more pass).
    Differs from torch: tensor values are refused with TypeError; a finite value past
    float32's range added to a float32 or 16-bit x (torch's sum is then infinite) with
    ValueError; an int past int64's range added to a floating x is taken (rounded once to
    float32, or to float64 for a float64 x), where torch refuses it."""
    in_place = out is x
    x = _tensor(x, "x")
    if in_place:
        out = x
    value_type = type(value)
    if value_type is not float and value_type is not int:  # (a bool, a subclass, a non-number)
        if isinstance(value, torch.Tensor) or not isinstance(value, (int, float, complex)):
            raise TypeError(f"value: expected a Python int, float or complex, got "
                            f"{value_type.__name__}")
        value_type = (int if isinstance(value, int) else float if isinstance(value, float)
                      else complex)
    floating = x.is_floating_point()
    if value_type is complex or (value_type is float and not floating) or (
            x.dtype not in _ADD_TYPES):
        return _add_promoted(x, value, out)
    value = _add_value(x, value)  # (a float within float32 as it is)
    fresh = out is None
    if fresh:
        # (empty_like keeps x's strides: torch.preserve_format, its default)
        out = torch.empty_like(x) if _dense(x) else x.new_empty(x.shape)
    elif out is not x:
        out = _checked_out(out, x, x.shape)
    else:
        _check_no_grad(out, "x")
        _check_writable(out, "x")
    if _direct(x, out):
        _launch_add(x, value, out, fresh)
    elif out is x:
        torch.ops.tmakit.add_(x, value)
    else:
        torch.ops.tmakit.add_out(x, value, out)
    return out


def _torch_add_refuses(x: torch.Tensor, value, why: str = "") -> TypeError:
    return TypeError(f"x: torch's own add does not take {x.dtype} + {type(value).__name__}"
                     + (f" ({why.splitlines()[0]})" if why else ""))


def _add_promoted(x: torch.Tensor, value, out: Optional[torch.Tensor]) -> torch.Tensor:
    """add where no launcher type holds x or the sum (bool and complex x, an integer x with a
    float value, a complex value): torch's type promotion names the result's dtype and its
    own add makes the sums, after the same checks as the launchers' path."""
    if x.dtype == torch.bool and isinstance(value, int) and not isinstance(value, bool):
        _integer_constant(int(value), torch.int64)  # (the sum's dtype: a range torch checks too)
    compiling = _is_compiling()
    # NOTE: dynamo does not trace torch.result_type (a dtype is not a graph value); compiling,
    # the dtype of an empty sum, which its graph drops, is read instead (the same rule)
    try:
        result = (x.new_empty(0) + value).dtype if compiling else torch.result_type(x, value)
    except (RuntimeError, NotImplementedError) as error:
        # NOTE: dtypes torch's type promotion does not take (quantized, bits, sub-byte ones)
        raise _torch_add_refuses(x, value, str(error)) from None
    if out is x:
        _check_no_grad(x, "x")
        if result != x.dtype:
            raise TypeError(f"x: x + value is {result} by torch's type promotion, which x "
                            f"({x.dtype}) cannot hold, so it cannot be added in place; pass an "
                            f"out of {result}, or none")
        _check_writable(out, "x")
    elif out is not None:
        out = _tensor(out, "out")
        _check_no_grad(out, "out")
        _same_device(out, "out", x, "x")
        if out.dtype != result:
            raise TypeError(f"out: dtype {out.dtype}, but x + value is {result} by torch's type "
                            f"promotion; pass an out of {result}")
        if out.shape != x.shape:
            raise ValueError(f"out: shape {tuple(out.shape)}, expected {tuple(x.shape)}")
        _check_writable(out)
        # NOTE: addresses exist on real tensors only (compiled, below, the sums are made
        # before out is written, so that an overlap reads no written element)
        if _direct(x, out) and _overlaps(out, x) and not (
                out.data_ptr() == x.data_ptr() and out.stride() == x.stride()
                and out.element_size() == x.element_size()):
            raise ValueError("out: overlaps x without being x; pass out=x to add in place, or "
                             "a separate out")
    # NOTE: the op records no gradient: torch's add reads x's values only (its out= form
    # refuses an x that requires grad while autograd records; without out, the sums would)
    if x.requires_grad:
        x = x.detach()
    if x.dtype not in _TORCH_ADD_TYPES and x.dtype != torch.bool and not x.is_complex():
        if x.dtype not in _ADD_TYPES:
            raise _torch_add_refuses(x, value)
        x = x.to(result)  # NOTE: uint16/32/64, which torch's add does not take
    if compiling:
        # NOTE: dynamo refuses torch.add's out= where out is not contiguous: the sums, then a
        # copy into out, which the compiled graph fuses into one pass
        sums = torch.add(x, value)
        return sums if out is None else out.copy_(sums)
    if out is None:
        out = (torch.empty_like(x, dtype=result) if _dense(x)
               else x.new_empty(x.shape, dtype=result))
    if x.numel() == 0:
        return out
    try:
        torch.add(x, value, out=out)
    except (RuntimeError, NotImplementedError) as error:
        # NOTE: torch refuses before its kernel runs: nothing is written
        raise _torch_add_refuses(x, value, str(error)) from None
    return out


# --- the FP8 quantizer ----------------------------------------------------------------------

_QUANTIZE_TYPES = {torch.bfloat16: "BFLOAT16", torch.float16: "FLOAT16",
                   torch.float32: "FLOAT32"}
_QUANTIZE_RECIPES = ("tensor", "row", "block")


def _quantize_scale(x: torch.Tensor, recipe: str, operand: str) -> torch.Tensor:
    """The scale tensor of a recipe, in the shape and layout the GEMM takes for the operand:
    tensor (), row (rows, 1) for a and (1, rows) for b, block (rows, ceil(K / 128)) M-major
    (strides (1, rows)) for a and (ceil(rows / 128), ceil(K / 128)) row-major for b. The
    launcher's default scale strides are these layouts."""
    shape, strides = _quantize_scale_layout(x.shape[0], x.shape[1], recipe, operand)
    return torch.empty_strided(shape, strides, dtype=torch.float32, device=x.device)


def _quantize_scale_layout(rows: int, k: int, recipe: str, operand: str):
    """(shape, strides) of _quantize_scale's tensor."""
    k_blocks = (k + 127) // 128
    if recipe == "tensor":
        return (), ()
    if recipe == "row":
        return ((rows, 1), (1, 1)) if operand == "a" else ((1, rows), (rows, 1))
    if operand == "a":
        return (rows, k_blocks), (1, rows)
    return ((rows + 127) // 128, k_blocks), (k_blocks, 1)


def _quantize_rows(x: torch.Tensor) -> bool:
    """Whether the quantizer's kernels can read x's rows where they are: K consecutive
    elements, rows a multiple of 16 bytes apart and not overlapping (the start's alignment is
    a real tensor's, checked at the launch)."""
    row_stride = _matrix_stride(x)
    return row_stride is not None and row_stride * x.element_size() % 16 == 0


def _quantize_args(x, recipe, operand, x_fp8, readable=None):
    """The launcher's arguments after the addresses and before the stream; x's pitch is its
    contiguous copy's where the kernels cannot read x in place (_launch_quantize).
    ``readable``: _quantize_rows(x), where the caller has it."""
    rows, k = x.shape
    if readable is None:
        readable = _quantize_rows(x)
    x_pitch = _gemm_pitch(x, "x") if readable else (k * x.element_size() if rows > 1 else 0)
    return (_QUANTIZE_TYPES[x.dtype], rows, k, x_pitch, _gemm_pitch(x_fp8, "x_fp8"), recipe,
            operand)


def _launch_quantize(x, recipe, operand, x_fp8, scale, fresh=False):
    """``fresh``: x_fp8 and scale were just allocated here, so they overlap nothing. The
    launcher refuses outputs that overlap the x it is given or each other; where x is first
    copied (below), the copy would hide x from it, so they are compared with x here."""
    if x.shape[0] == 0:
        # NOTE: no rows: nothing to cast; a tensor scale of nothing is 1 (amax 0)
        if recipe == "tensor":
            scale.fill_(1.0)
        return
    if not _quantize_rows(x) or x.data_ptr() % 16 or x.is_neg():
        # NOTE: rows TMA cannot describe (elements not consecutive, a pitch off 16 bytes,
        # overlapping or broadcast rows, a start off 16 bytes), or a lazily negated view
        # (z.conj().imag), whose values the copy takes: one contiguous copy, whose
        # fresh allocation starts on 256 bytes and whose pitch, K * 2 or 4 bytes with K a
        # multiple of 16, is whole 16 bytes
        if not fresh:
            for name, t in (("x_fp8", x_fp8), ("scale", scale)):
                if _overlaps(t, x):
                    raise ValueError(f"{name}: overlaps x, which the kernels read while they "
                                     f"write {name}; pass a separate {name}")
        x = torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x)
    _launch(x_fp8, _tmakit.quantize_fp8, x.data_ptr(), x_fp8.data_ptr(), scale.data_ptr(),
            *_quantize_args(x, recipe, operand, x_fp8, readable=True))
    if not fresh:
        _written(x_fp8)
        _written(scale)


def _check_quantize_k(k: int) -> None:
    if k == 0 or k % 16:
        raise ValueError(f"x: K = {k} is not a positive multiple of 16 (the FP8 GEMM's K); pad K "
                         f"to {max(16, (k + 15) // 16 * 16)} with zeros "
                         f"(torch.nn.functional.pad(x, (0, {max(16, (k + 15) // 16 * 16) - k})))")


def _quantize_checked(x, recipe, operand, x_fp8, scale) -> None:
    """The registered quantizer's own checks of what it writes, as the other registered ops
    make theirs: x_fp8 x's shape in rows of K consecutive bytes, scale the recipe's layout
    (_quantize_scale_layout), both on x's GPU and writable."""
    # NOTE: x's shape and device read once (host time: every call of the op passes here)
    dims = x.shape
    if x.dtype not in _QUANTIZE_TYPES:
        raise TypeError(f"x: dtype {x.dtype}; quantize_fp8 reads torch.bfloat16, float16 or "
                        f"float32")
    if len(dims) != 2:
        raise ValueError(f"x: expected 2 dimensions (rows, K), got shape {tuple(dims)}")
    if recipe not in _QUANTIZE_RECIPES or operand not in ("a", "b"):
        raise ValueError(f"recipe, operand: {recipe!r}, {operand!r}; expected 'tensor', 'row' "
                         f"or 'block', and 'a' or 'b'")
    rows, k = dims
    _check_quantize_k(k)
    device = x.get_device()
    if x_fp8.dtype != _FP8 or x_fp8.shape != dims or x_fp8.get_device() != device or (
            k > 1 and x_fp8.stride(1) != 1):
        raise ValueError(f"x_fp8: {x_fp8.dtype} {tuple(x_fp8.shape)} strides {x_fp8.stride()} "
                         f"on {x_fp8.device}; expected torch.float8_e4m3fn {tuple(dims)} "
                         f"in rows of K consecutive elements on {x.device}")
    shape, strides = _quantize_scale_layout(rows, k, recipe, operand)
    # (the strides of dimensions of one element, or of an empty scale, are never followed;
    # all of them compared at once first: host time)
    if scale.dtype != _FLOAT32 or scale.shape != shape or scale.get_device() != device or (
            scale.stride() != strides and scale.numel() and any(
                size > 1 and got != want
                for size, got, want in zip(shape, scale.stride(), strides))):
        raise ValueError(f"scale: {scale.dtype} {tuple(scale.shape)} strides {scale.stride()} on "
                         f"{scale.device}; the {recipe} recipe for operand {operand} writes "
                         f"torch.float32 {shape} strides {strides} on {x.device}")
    if x_fp8.requires_grad or scale.requires_grad or x_fp8.is_inference() or (
            scale.is_inference()):  # (the common case at a glance: host time)
        for name, t in (("x_fp8", x_fp8), ("scale", scale)):
            _check_no_grad(t, name)
            _check_not_inference(t, name)


def _quantize_fp8_fake(x, recipe, operand, x_fp8, scale):
    _quantize_checked(x, recipe, operand, x_fp8, scale)
    if x.shape[0]:
        _tmakit.quantize_fp8_check(*_quantize_args(x, recipe, operand, x_fp8))


def _quantize_fp8_out_op(x, recipe, operand, x_fp8, scale) -> None:
    _quantize_checked(x, recipe, operand, x_fp8, scale)
    _launch_quantize(x, recipe, operand, x_fp8, scale)


_register("quantize_fp8_out(Tensor x, str recipe, str operand, Tensor(a!) x_fp8, "
          "Tensor(b!) scale) -> ()", _quantize_fp8_out_op, _quantize_fp8_fake)


def quantize_fp8(x: torch.Tensor, recipe: str = "row", *, operand: str = "a"):
    """(x_fp8, scale): x quantised to torch.float8_e4m3fn with the dequantisation scales
    (x ~= x_fp8 * scale, as torch._scaled_mm's scale_a / scale_b) in the layout
    ``tmakit.gemm_fp8`` (and torch._scaled_mm) takes for ``operand``, on the kernels of
    kernels/quantize.

    ``x``: (rows, K) torch.bfloat16, float16 or float32 on a GPU, any strides and start, K a
    multiple of 16 (the GEMM's K). Rows of K consecutive elements a multiple of 16 bytes apart
    from a 16-byte aligned start are read where they are (one pass); any other x (x.t() of a
    contiguous tensor, a column step, a slice off 16 bytes, a broadcast) is first copied
    contiguous (one more pass over x). ``recipe``:
      "tensor": one scale for all of x, a 0-dim float32 tensor (x read once where it fits
        the GPU's SMs at once, about 17 MB on an H100 / H200; larger x is read twice: an
        amax pass, then the cast);
      "row": one per row: (rows, 1) for operand "a" (scale_a), (1, rows) for "b" (scale_b);
        K at most 68096 (16-bit x) or 40960 (float32);
      "block": operand "a", one per 1 x 128 of a row: (rows, ceil(K / 128)), strides
        (1, rows) (torch's M-major layout); operand "b", one per 128 x 128 block:
        (ceil(rows / 128), ceil(K / 128)), row-major.
    Row and block scales are taken in the same pass over x that casts it.

    Per group: amax = max |x| (float32), scale = amax / 448 (1 where amax is 0, at least
    2^-126), x_fp8 = e4m3(x * (1 / scale)), rounded to nearest even and saturated to +-448.
    A NaN in a group gives scale NaN and NaN bytes for all of it; an infinity (without NaN)
    scale inf, NaN for the infinities and +-0 for the rest. kernels/quantize/README.md states
    the rounding in full. Outputs are new tensors; the kernels run on torch's current stream.
    """
    x = _tensor(x, "x")
    if x.dtype not in _QUANTIZE_TYPES:
        raise TypeError(f"x: dtype {x.dtype}; quantize_fp8 reads torch.bfloat16, float16 or "
                        f"float32")
    if x.dim() != 2:
        raise ValueError(f"x: expected 2 dimensions (rows, K), got shape {tuple(x.shape)}")
    if recipe not in _QUANTIZE_RECIPES:
        raise ValueError(f"recipe: {recipe!r} is not 'tensor', 'row' or 'block'")
    if operand not in ("a", "b"):
        raise ValueError(f"operand: {operand!r} is not 'a' or 'b'")
    rows, k = x.shape
    _check_quantize_k(k)
    x_fp8 = torch.empty((rows, k), dtype=torch.float8_e4m3fn, device=x.device)
    scale = _quantize_scale(x, recipe, operand)
    if rows and not _is_compiling():
        # NOTE: the launcher's checks (all but the addresses) before the kernels are queued
        _tmakit.quantize_fp8_check(*_quantize_args(x, recipe, operand, x_fp8))
    if _direct(x):
        _launch_quantize(x, recipe, operand, x_fp8, scale, fresh=True)
    else:
        torch.ops.tmakit.quantize_fp8_out(x, recipe, operand, x_fp8, scale)
    return x_fp8, scale
