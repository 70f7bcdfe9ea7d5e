"""tmakit's kernels as PyTorch ops: gemm_fp8, transpose, stencil3x3, add.

Each op is registered with torch.library in the ``tmakit`` namespace as an op that writes its
last tensor argument (``torch.ops.tmakit.gemm_fp8_out``, ``transpose_out``,
``stencil3x3_out``, ``add_out`` and the in-place ``add_``; their schemas declare the written
tensor as mutated) with a fake implementation, so ``torch.compile(fullgraph=True)`` traces it;
the functions below check their arguments, allocate ``out`` when none is given, and call it.
Kernels run on torch's current stream and are captured by CUDA graphs like any torch kernel.

Arrays of other frameworks (CuPy, JAX, ...) are taken through DLPack without a copy; results
are torch tensors (``cupy.from_dlpack(result)`` gives them back). Every argument is checked
before anything is written: wrong types raise TypeError, wrong
devices, shapes, strides, alignments or overlaps raise ValueError naming the argument and
the fix. The launchers check again (their ArgumentError arrives as ValueError).

NOTE: in eager mode the functions call the launcher directly rather than through the
dispatcher, which would add several microseconds of host time per call; under torch.compile,
a dispatch mode (FakeTensorMode, make_fx) or with tensor subclasses they go through
torch.ops.tmakit.*, so tracing sees the op.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

from . import _tmakit

__all__ = ["gemm_fp8", "transpose", "stencil3x3", "add"]

# --- argument checks ------------------------------------------------------------------------

_ADD_TYPES = {torch.int32: "INT32", torch.float32: "FLOAT32", torch.bfloat16: "BFLOAT16",
              torch.float16: "FLOAT16"}
_STENCIL_TYPES = {torch.float32: "FLOAT32", torch.float64: "FLOAT64"}
_GEMM_OUT_TYPES = {torch.bfloat16: _tmakit.DataType.bfloat16,
                   torch.float16: _tmakit.DataType.float16}
_ACCUMULATION = {"promoted": _tmakit.GemmAccumulation.promoted,
                 "fast": _tmakit.GemmAccumulation.fast}
# The transpose moves bits: any element type, by size.
_BITS_TYPES = {1: "UINT8", 2: "UINT16", 4: "UINT32", 8: "UINT64"}


def _tensor(t, name: str) -> torch.Tensor:
    """``t`` as a CUDA torch tensor: a torch tensor as it is, another framework's array
    (CuPy, JAX, ...) through DLPack, sharing its memory."""
    if not isinstance(t, torch.Tensor):
        if not hasattr(t, "__dlpack__"):
            raise TypeError(f"{name}: expected a torch.Tensor or an array with __dlpack__, got "
                            f"{type(t).__name__}")
        t = torch.from_dlpack(t)
    if not t.is_cuda:
        raise ValueError(f"{name}: is on {t.device}; tmakit's kernels run on CUDA tensors "
                         f"(move it with {name}.cuda())")
    return t


def _same_device(t: torch.Tensor, name: str, ref: torch.Tensor, ref_name: str) -> None:
    if t.get_device() != ref.get_device():
        raise ValueError(f"{name}: is on {t.device} but {ref_name} is on {ref.device}; "
                         f"put them on one GPU")


def _rows_view(t: torch.Tensor, name: str):
    """(rows, cols, row stride in elements) of a tensor read as rows of its last dimension:
    the leading dimensions must merge into one (as in a reshape that needs no copy)."""
    if t.dim() == 0:
        return 1, 1, 1
    shape, stride = t.shape, t.stride()
    cols = shape[-1]
    if cols > 1 and stride[-1] != 1:
        raise ValueError(f"{name}: its last dimension has stride {stride[-1]}; the kernels "
                         f"read rows of consecutive elements (pass {name}.contiguous())")
    rows, row_stride = 1, 0
    for d in range(t.dim() - 2, -1, -1):  # innermost leading dimension first
        if shape[d] == 1:
            continue
        if rows == 1:
            row_stride = stride[d]
        elif stride[d] != row_stride * rows:
            raise ValueError(f"{name}: dimensions {tuple(shape)} with strides {tuple(stride)} "
                             f"do not form one run of rows (pass {name}.contiguous())")
        rows *= shape[d]
    if rows == 1:
        row_stride = cols
    return rows, cols, row_stride


def _check_rows(t: torch.Tensor, name: str, rows: int, cols: int, row_stride: int,
                address: Optional[int] = None) -> int:
    """The 16-byte rules of TMA (docs/rules.md T4, T6) for a view of rows; returns the row
    stride in bytes (0 for a single row, which needs none)."""
    esize = t.element_size()
    if address is None:
        address = t.data_ptr()
    if address % 16:
        raise ValueError(
            f"{name}: data at 0x{address:x} is not 16-byte aligned (a view such as x[1:] or "
            f"x[:, 1:] starts inside a 16-byte unit); TMA needs 16-byte aligned data (T4): "
            f"pass {name}.clone(), or slice at multiples of {16 // esize if esize < 16 else 1} "
            f"elements")
    if rows <= 1:
        return 0
    if row_stride < cols:
        raise ValueError(f"{name}: rows are {row_stride} elements apart but {cols} long, so "
                         f"they overlap (an expanded tensor?); pass {name}.contiguous()")
    stride_bytes = row_stride * esize
    if stride_bytes % 16:
        padded = -(-stride_bytes // 16) * 16 // esize
        raise ValueError(
            f"{name}: rows are {stride_bytes} bytes apart, not a multiple of 16 (T6); pad each "
            f"row to {padded} elements, e.g. torch.empty(rows, {padded})[:, :{cols}]")
    return stride_bytes


def _empty_rows(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """An output of ``shape`` whose rows (last dimension) start 16 bytes apart as TMA needs:
    contiguous when a row is a multiple of 16 bytes, else a view of a buffer with each row
    padded to the next multiple."""
    shape = tuple(shape)
    esize = dtype.itemsize
    cols = shape[-1] if shape else 1
    rows = 1
    for extent in shape[:-1]:
        rows *= extent
    if rows <= 1 or (cols * esize) % 16 == 0 or 16 % esize:
        return torch.empty(shape, dtype=dtype, device=device)
    padded = -(-cols * esize // 16) * 16 // esize
    return torch.empty((*shape[:-1], padded), dtype=dtype, device=device)[..., :cols]


def _span(t: torch.Tensor):
    """[first byte, one past the last) of a non-empty tensor's storage use."""
    start = t.data_ptr()
    last = sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 0)
    return start, start + (last + 1) * t.element_size()


def _overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    if x.numel() == 0 or y.numel() == 0:
        return False
    (a0, a1), (b0, b1) = _span(x), _span(y)
    return a0 < b1 and b0 < a1


# NOTE: torch.cuda.current_stream() builds a Stream object (microseconds); the raw handle is
# what the launcher needs. Both private entry points have public fallbacks.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def _stream(index: int) -> int:
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


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
    return all(type(t) is torch.Tensor for t in tensors)


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


def _launch_gemm(a, b, scale_a, scale_b, alpha, scale_a_t, scale_b_t, accumulate, out):
    m, k = a.shape
    n, kb = b.shape
    if m == 0 or n == 0 or k == 0:
        # NOTE: empty extents are torch's (the launcher takes M, N, K >= 1): an empty product
        # writes nothing, or zeros for K = 0, as a @ b.T does
        if kb != k:
            raise ValueError(f"b: shape {tuple(b.shape)} has K = {kb} but a {tuple(a.shape)} "
                             f"has K = {k}; b is (N, K), as in a @ b.T")
        if tuple(out.shape) != (m, n):
            raise ValueError(f"out: shape {tuple(out.shape)}, expected (M, N) = ({m}, {n})")
        if k == 0:
            out.zero_()
        return
    args = _gemm_args(a, b, scale_a, scale_b, alpha, scale_a_t, scale_b_t, accumulate, out)
    _launch(out, _tmakit.gemm_fp8, a.data_ptr(), b.data_ptr(), out.data_ptr(), *args,
            0 if scale_a_t is None else scale_a_t.data_ptr(),
            0 if scale_b_t is None else scale_b_t.data_ptr(), _ACCUMULATION[accumulate])


def _launch_transpose(x, out):
    rows, cols = x.shape
    if x.numel() == 0:
        return
    x_stride = _check_rows(x, "x", rows, cols, x.stride(0))
    out_stride = _check_rows(out, "out", cols, rows, out.stride(0))
    if _overlaps(out, x):
        raise ValueError("out: overlaps x; a transpose cannot run in place: pass a separate out")
    _launch(out, _tmakit.transpose, x.data_ptr(), out.data_ptr(), _BITS_TYPES[x.element_size()],
            rows, cols, x_stride, out_stride)


def _launch_stencil(x, taps, out):
    if x.numel() == 0:
        return
    batch, rows, cols = (1, *x.shape) if x.dim() == 2 else tuple(x.shape)
    x_stride = _check_rows(x, "x", rows, cols, x.stride(-2))
    out_stride = _check_rows(out, "out", rows, cols, out.stride(-2))
    esize = x.element_size()
    x_image = x.stride(0) * esize if x.dim() == 3 and batch > 1 else 0
    out_image = out.stride(0) * esize if out.dim() == 3 and batch > 1 else 0
    for name, image, row_bytes in (("x", x_image, x_stride), ("out", out_image, out_stride)):
        image_bytes = rows * (row_bytes or cols * esize)
        # NOTE: the launcher reads an image stride of 0 as "dense", so an expanded batch
        # (stride 0) must be refused here, with any other overlap of images.
        if batch > 1 and image < image_bytes:
            raise ValueError(f"{name}: images are {image} bytes apart but {image_bytes} long, so "
                             f"they overlap (an expanded batch?); pass {name}.contiguous()")
        if image % 16:
            raise ValueError(f"{name}: images are {image} bytes apart, not a multiple of 16 "
                             f"(T6); pass {name}.contiguous() with rows padded to 16 bytes")
    if _overlaps(out, x):
        raise ValueError("out: overlaps x; the stencil reads neighbours of what it writes: pass "
                         "a separate out")
    _launch(out, _tmakit.stencil3x3, x.data_ptr(), out.data_ptr(), _STENCIL_TYPES[x.dtype],
            batch, rows, cols, x_stride, x_image, out_stride, out_image, list(taps))


def _launch_add(x, value, out):
    if x.numel() == 0:
        return
    rows, cols, x_row = _rows_view(x, "x")
    _, _, out_row = _rows_view(out, "out")
    x_stride = _check_rows(x, "x", rows, cols, x_row)
    out_stride = _check_rows(out, "out", rows, cols, out_row)
    in_place = x.data_ptr() == out.data_ptr() and x_stride == out_stride
    if not in_place and _overlaps(out, x):
        raise ValueError("out: overlaps x without being x; pass out=x to add in place, or a "
                         "separate out")
    _launch(out, _tmakit.add_constant, x.data_ptr(), out.data_ptr(), _ADD_TYPES[x.dtype], rows,
            cols, x_stride, out_stride, float(value))


# --- torch.library registration -------------------------------------------------------------


@torch.library.custom_op("tmakit::gemm_fp8_out", mutates_args=("out",), device_types="cuda")
def _gemm_fp8_out(a: torch.Tensor, b: torch.Tensor, scale_a: float, scale_b: float,
                  alpha: float, scale_a_tensor: Optional[torch.Tensor],
                  scale_b_tensor: Optional[torch.Tensor], accumulate: str,
                  out: torch.Tensor) -> None:
    _launch_gemm(a, b, scale_a, scale_b, alpha, scale_a_tensor, scale_b_tensor, accumulate, out)


@_gemm_fp8_out.register_fake
def _(a, b, scale_a, scale_b, alpha, scale_a_tensor, scale_b_tensor, accumulate, out):
    # a traced call: the launcher's rules but those of the addresses, before any memory exists
    if a.numel() and b.numel():
        _tmakit.gemm_fp8_check(
            *_gemm_args(a, b, scale_a, scale_b, alpha, scale_a_tensor, scale_b_tensor,
                        accumulate, out),
            scale_a_tensor is not None, scale_b_tensor is not None, _ACCUMULATION[accumulate])
    return None


@torch.library.custom_op("tmakit::transpose_out", mutates_args=("out",), device_types="cuda")
def _transpose_out(x: torch.Tensor, out: torch.Tensor) -> None:
    _launch_transpose(x, out)


@_transpose_out.register_fake
def _(x, out):
    return None


@torch.library.custom_op("tmakit::stencil3x3_out", mutates_args=("out",), device_types="cuda")
def _stencil3x3_out(x: torch.Tensor, taps: Sequence[float], out: torch.Tensor) -> None:
    _launch_stencil(x, taps, out)


@_stencil3x3_out.register_fake
def _(x, taps, out):
    return None


@torch.library.custom_op("tmakit::add_out", mutates_args=("out",), device_types="cuda")
def _add_out(x: torch.Tensor, value: float, out: torch.Tensor) -> None:
    _launch_add(x, value, out)


@_add_out.register_fake
def _(x, value, out):
    return None


@torch.library.custom_op("tmakit::add_", mutates_args=("x",), device_types="cuda")
def _add_inplace(x: torch.Tensor, value: float) -> None:
    _launch_add(x, value, x)


@_add_inplace.register_fake
def _(x, value):
    return None


# --- the public functions -------------------------------------------------------------------


def _scale(value, name: str, device):
    """(host float, device tensor or None) for a scale given as a float or as a one-element
    float32 tensor on the GEMM's GPU (read by the kernel when it runs: no synchronisation)."""
    if isinstance(value, torch.Tensor):
        if value.dtype != torch.float32 or value.numel() != 1:
            raise TypeError(f"{name}: a tensor scale must hold one torch.float32 element, got "
                            f"{value.dtype} of shape {tuple(value.shape)}")
        if value.device != device:
            raise ValueError(f"{name}: is on {value.device}, the operands on {device}; a tensor "
                             f"scale lives on the GEMM's GPU (or pass a Python float)")
        return 1.0, value
    try:
        return float(value), None
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a float or a one-element float32 CUDA tensor, got "
                        f"{type(value).__name__}") from None


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
    refused, not flushed to 0).
    ``accumulate``: "promoted" (default; the tensor cores' partial sums added into fp32 every
    128 or 256 of K: element errors within 2^-10 of sum |a b|) or "fast" (the tensor cores
    accumulate across all of K, as torch._scaled_mm's use_fast_accum=True; the error grows
    with K). See kernels/gemm/README.md.

    CUDA graphs: shapes that split K sum partial tiles through a workspace the library keeps
    per stream and grows on demand, which a capture cannot do: make the same call once on the
    capture stream before capturing (``torch.cuda.graph(g, stream=s)`` after a call under
    ``torch.cuda.stream(s)``); otherwise the captured call raises ValueError naming "stream".
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
    try:
        s_alpha = float(alpha)
    except (TypeError, ValueError):
        raise TypeError(f"alpha: expected a float, got {type(alpha).__name__}") from None
    if accumulate not in _ACCUMULATION:
        raise ValueError(f"accumulate: {accumulate!r} is not 'promoted' or 'fast'")
    if out is None:
        dtype = torch.bfloat16 if out_dtype is None else out_dtype
        if dtype not in _GEMM_OUT_TYPES:
            raise TypeError(f"out_dtype: {dtype}; the GEMM writes torch.bfloat16 or "
                            f"torch.float16")
        if m and n and a.shape[1] and b.shape[1]:
            # NOTE: the launcher's checks (all but the addresses) before out is allocated
            _tmakit.gemm_fp8_check(_GEMM_OUT_TYPES[dtype], m, n, a.shape[1], b.shape[1], m, n,
                                   _gemm_pitch(a, "a"), _gemm_pitch(b, "b"),
                                   n * 2 if m > 1 else 0, s_alpha, s_a, s_b, t_a is not None,
                                   t_b is not None, _ACCUMULATION[accumulate])
        out = torch.empty((m, n), dtype=dtype, device=a.device)
    else:
        out = _tensor(out, "out")
        _same_device(out, "out", a, "a")
        if out.dtype not in _GEMM_OUT_TYPES:
            raise TypeError(f"out: dtype {out.dtype}; the GEMM writes torch.bfloat16 or "
                            f"torch.float16")
        if out_dtype is not None and out_dtype != out.dtype:
            raise TypeError(f"out_dtype: {out_dtype} differs from out.dtype {out.dtype}")
        if out.dim() != 2:
            raise ValueError(f"out: expected 2 dimensions (M, N), got shape {tuple(out.shape)}")
        if out.shape[1] > 1 and out.stride(1) != 1:
            raise ValueError(f"out: strides {out.stride()}; the GEMM writes rows of N "
                             f"contiguous elements (stride 1 along N)")
    if _direct(a, b, out):
        _launch_gemm(a, b, s_a, s_b, s_alpha, t_a, t_b, accumulate, out)
    else:
        torch.ops.tmakit.gemm_fp8_out(a, b, s_a, s_b, s_alpha, t_a, t_b, accumulate, out)
    return out


def transpose(x: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """out = x.T for a 2-D CUDA tensor of 1-, 2-, 4- or 8-byte elements (the bits are moved,
    any dtype of those sizes). Rows of x and out: contiguous elements, 16-byte aligned data
    and row strides. ``out`` (x.shape[1], x.shape[0]), same dtype, not overlapping x; when
    none is given and a row of x.T is not a multiple of 16 bytes, the result is a view of a
    buffer whose rows are padded to one (``out.stride(0) > out.shape[1]``)."""
    x = _tensor(x, "x")
    if x.dim() != 2:
        raise ValueError(f"x: expected 2 dimensions, got shape {tuple(x.shape)}")
    if x.element_size() not in _BITS_TYPES:
        raise TypeError(f"x: dtype {x.dtype} has {x.element_size()}-byte elements; the "
                        f"transpose moves 1-, 2-, 4- or 8-byte elements")
    if x.shape[1] > 1 and x.stride(1) != 1:
        raise ValueError(f"x: strides {x.stride()}; rows must be contiguous (stride 1 along "
                         f"the last dimension); pass x.contiguous()")
    rows, cols = x.shape
    if out is None:
        out = _empty_rows((cols, rows), x.dtype, x.device)
    else:
        out = _tensor(out, "out")
        _same_device(out, "out", x, "x")
        if out.dtype != x.dtype:
            raise TypeError(f"out: dtype {out.dtype} differs from x.dtype {x.dtype}")
        if tuple(out.shape) != (cols, rows):
            raise ValueError(f"out: shape {tuple(out.shape)}, expected ({cols}, {rows})")
        if rows > 1 and out.stride(1) != 1:
            raise ValueError(f"out: strides {out.stride()}; rows must be contiguous")
    if _direct(x, out):
        _launch_transpose(x, out)
    else:
        torch.ops.tmakit.transpose_out(x, out)
    return out


def _taps(weight) -> list:
    if isinstance(weight, torch.Tensor):
        if tuple(weight.shape) not in ((3, 3), (1, 1, 3, 3), (9,)):
            raise ValueError(f"weight: shape {tuple(weight.shape)}, expected (3, 3)")
        if weight.is_cuda and torch.cuda.is_current_stream_capturing():
            raise ValueError("weight: a CUDA tensor cannot be read while a CUDA graph is "
                             "captured; pass the taps as a CPU tensor or a list")
        return [float(v) for v in weight.detach().reshape(9).tolist()]
    try:
        rows = [list(r) for r in weight]
    except TypeError:
        raise TypeError(f"weight: expected a 3x3 tensor or nested list, got "
                        f"{type(weight).__name__}") from None
    if len(rows) != 3 or any(len(r) != 3 for r in rows):
        raise ValueError(f"weight: expected 3 rows of 3 taps, got {weight!r}")
    return [float(v) for r in rows for v in r]


def stencil3x3(x: torch.Tensor, weight, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """3x3 cross-correlation with zero padding (``conv2d(x[:, None], weight[None, None],
    padding=1)``): ``x`` (H, W) or (B, H, W) float32 or float64 on a GPU, rows contiguous with
    16-byte aligned data, row and image strides; ``weight`` 3x3 (tensor or nested list; taps
    rounded to x's dtype, summed in row-major order with fused multiply-adds). ``out``: same
    shape and dtype, not overlapping x."""
    x = _tensor(x, "x")
    if x.dtype not in _STENCIL_TYPES:
        raise TypeError(f"x: dtype {x.dtype}; the stencil takes torch.float32 or torch.float64")
    if x.dim() not in (2, 3):
        raise ValueError(f"x: expected (H, W) or (B, H, W), got shape {tuple(x.shape)}")
    if x.shape[-1] > 1 and x.stride(-1) != 1:
        raise ValueError(f"x: strides {x.stride()}; rows must be contiguous; pass x.contiguous()")
    taps = _taps(weight)
    if out is None:
        out = _empty_rows(x.shape, x.dtype, x.device)
    else:
        out = _tensor(out, "out")
        _same_device(out, "out", x, "x")
        if out.dtype != x.dtype:
            raise TypeError(f"out: dtype {out.dtype} differs from x.dtype {x.dtype}")
        if out.shape != x.shape:
            raise ValueError(f"out: shape {tuple(out.shape)}, expected {tuple(x.shape)}")
        if out.shape[-1] > 1 and out.stride(-1) != 1:
            raise ValueError(f"out: strides {out.stride()}; rows must be contiguous")
    if _direct(x, out):
        _launch_stencil(x, taps, out)
    else:
        torch.ops.tmakit.stencil3x3_out(x, taps, out)
    return out


def add(x: torch.Tensor, value: float, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """out = x + value for int32 (wrapping; value an integer in range), float32, bfloat16 and
    float16 (value rounded to x's dtype first, the sum in float32, rounded once). ``out=x``
    adds in place; otherwise ``out`` has x's shape and dtype and does not overlap it. Rows (the
    last dimension) contiguous, 16-byte aligned data and row strides."""
    in_place = out is x
    x = _tensor(x, "x")
    if in_place:
        out = x
    if x.dtype not in _ADD_TYPES:
        raise TypeError(f"x: dtype {x.dtype}; add takes torch.int32, float32, bfloat16 or "
                        f"float16")
    if isinstance(value, torch.Tensor) or not isinstance(value, (int, float)):
        raise TypeError(f"value: expected a Python int or float, got {type(value).__name__}")
    if out is None:
        out = _empty_rows(x.shape, x.dtype, x.device)
    elif out is not x:
        out = _tensor(out, "out")
        _same_device(out, "out", x, "x")
        if out.dtype != x.dtype:
            raise TypeError(f"out: dtype {out.dtype} differs from x.dtype {x.dtype}")
        if out.shape != x.shape:
            raise ValueError(f"out: shape {tuple(out.shape)}, expected {tuple(x.shape)}")
    if _direct(x, out):
        _launch_add(x, value, out)
    elif out is x:
        torch.ops.tmakit.add_(x, float(value))
    else:
        torch.ops.tmakit.add_out(x, float(value), out)
    return out
