"""python -m tmakit.bench: tmakit's ops beside what a PyTorch user would call instead.

    python -m tmakit.bench [--filter TEXT] [--reps N] [--graph-calls N] [--json FILE]
                           [--svg FILE] [--small] [--gemm-shapes default,deepseek]
                           [--no-overhead | --host-time-only] [--stall-seconds S] [--list]

Pairs: gemm_fp8 / torch._scaled_mm, transpose / x.t().contiguous(), stencil3x3 /
conv2d (cuDNN), add / torch.add, quantize_fp8 / the same quantizer written in torch ops,
the memory-bound ops also against a device copy of the same bytes rounded up to a whole 4
KiB ("x memcpy"), on aligned shapes and on 8191 x 8193, whose rows TMA cannot describe (the
ops' plain kernels run). The GEMM in each scale recipe: per-tensor, row-wise
(``scale_a`` (M, 1), ``scale_b`` (1, N); both accumulation modes, torch's ``use_fast_accum``)
and 128-block (``scale_a`` (M, ceil(K/128)), ``scale_b`` (ceil(N/128), ceil(K/128)); promoted
only), each beside torch._scaled_mm given the same scales in the layout it takes; on the
shapes of ``--gemm-shapes`` ("default": 16 x 8192 x 8192, 128 x 8192 x 8192, 4096^3;
"deepseek": DeepSeek-V3's projections at M = 64, 128, 4096). As in `tmakit bench`, every result
is checked before anything is timed (the GEMM recipes' against a float64 product of the
dequantised operands; a case whose results differ is reported, not timed, and so is a call
that raises); each call runs after an L2 flush and is timed with CUDA events; the sides
alternate call by call so that all see the same clocks; the table gives medians. Then the
sustained protocol (``--graph-calls N``, 20 by default; 0 leaves it out): each side's call N
times in one CUDA graph, no flush between, the sides' graphs replayed in turn max(3, reps / 3)
times, the median replay over N ("graphs:" columns; in JSON ``*_graph_us``; the copy as N
copies launched back to back, since a graph's memcpy node runs slower than the copy itself).
Call by call the card starts each call cool; back to back it runs at the clocks its power
limit leaves, and the two protocols can rank two kernels differently (kernels/gemm/README.md,
"Row-wise against torch._scaled_mm at M = 4096: the tensor floor"); operands that fit the L2
stay there between graph calls. Where torch
refuses a recipe's scales the row says "torch refuses: <its message>" and times tmakit alone.
Last, the host time per call of each op (eager, and through the dispatcher as a compiled
graph calls it) against torch's eager call, on shapes small enough that the GPU never holds
the host back: 41 rounds, each a burst of 200 calls of every variant in turn; each
dispatcher form also as its difference from the eager call, round by round (median and
quartiles), which a drift of the host's speed between rounds does not move. Each case's
name goes to stderr as it starts; one that takes longer than ``--stall-seconds`` (300; 0: no
limit), a kernel that never finishes, ends the run with every thread's Python stack
(faulthandler) and status 1.

Exit status: 0 when every case was checked and timed (or listed); 1 without PyTorch, without
a CUDA GPU or on one that is not sm_90, when a case failed its check or raised (in graphs too:
its row keeps the call-by-call times and says why), or on a stall; 2 for bad usage
(an option's value, a --filter that selects no case, --list too, --list with --json or
--svg, which it would leave unwritten, options --host-time-only has no use for) or output
that cannot be written (--json / --svg checked before the run, a full disk or a closed pipe
on stdout).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

_NEEDS_TORCH = ("tmakit.bench needs PyTorch: pip install 'tmakit[torch]' (or a torch build for "
                "your CUDA)")
try:
    import torch
except ImportError as error:  # NOTE: torch is the package's optional extra
    if __name__ != "__main__":
        raise ImportError(_NEEDS_TORCH) from error
    # NOTE: run as a program, the options are read first (--help needs no torch); main()
    # then ends with the message
    torch = None

if torch is not None:
    from . import ops

    FP8 = torch.float8_e4m3fn


class Case(NamedTuple):
    name: str
    unit: str              # what `work` counts: "TFLOP/s" or "GB/s"
    work: float            # flops or bytes per call
    ours: Callable[[], object]
    theirs: Optional[Callable[[], object]]  # None: the counterpart refuses (see `note`)
    baseline: str          # the counterpart's name
    check: Callable[[], Optional[str]]  # None when the results agree, else why not
    memcpy: Optional[Callable[[], object]] = None  # a copy of the same bytes (memory-bound)
    note: str = ""         # e.g. "torch refuses: ...", the scale layout torch took


class Pending(NamedTuple):
    """A case by name, made only when it runs (its tensors exist while it runs)."""
    name: str
    make: Callable[[], Case]


class Result(NamedTuple):
    name: str
    baseline: str
    unit: str
    ours_us: float
    theirs_us: float
    ours_rate: float
    theirs_rate: float
    problem: Optional[str]
    memcpy_us: float = 0.0  # 0: not measured
    note: str = ""          # the case's note (theirs_us 0: the counterpart was not timed),
    #                         and "graphs not timed: <why>" where the graph protocol raised
    # the same calls in CUDA graphs (--graph-calls; 0: not measured), per call
    ours_graph_us: float = 0.0
    theirs_graph_us: float = 0.0
    memcpy_graph_us: float = 0.0


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> Optional[str]:
    got, want = got.double(), want.double()
    excess = (got - want).abs() - (atol + rtol * want.abs())
    worst = excess.max().item()
    return None if worst <= 0 else f"differs by {worst:.3g} beyond the tolerance"


def _gemm_case(m: int, n: int, k: int) -> Case:
    a = (torch.randn(m, k, device="cuda") * 2).to(FP8)
    b = (torch.randn(n, k, device="cuda") * 2).to(FP8)
    scale_a = torch.tensor(0.5, device="cuda")
    scale_b = torch.tensor(2.0, device="cuda")
    d = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    e = torch.empty_like(d)

    def ours():
        return ops.gemm_fp8(a, b, scale_a=0.5, scale_b=2.0, out=d)

    def theirs():
        return torch._scaled_mm(a, b.t(), scale_a=scale_a, scale_b=scale_b,
                                out_dtype=torch.bfloat16, out=e)

    def check():
        ours(), theirs()
        # NOTE: both sum fp8 products on the tensor cores, which keep about 14 bits below the
        # largest term before each promotion to fp32 (include/tmakit/kernels/gemm.hpp): each
        # is within 2^-10 of sum |a b| of the exact product, so they are within twice that
        # (plus a bf16 rounding each) of each other.
        magnitude = (a.float().abs() @ b.float().abs().T) * (0.5 * 2.0)
        excess = (d.double() - e.double()).abs() - (2 * 2.0 ** -10 * magnitude.double()
                                                    + 2.0 ** -7 * e.double().abs())
        worst = excess.max().item()
        return None if worst <= 0 else f"differs by {worst:.3g} beyond the tolerance"

    return Case(f"gemm_fp8 {m}x{n}x{k}", "TFLOP/s", 2.0 * m * n * k, ours, theirs,
                "torch._scaled_mm", check)


# The GEMM shapes (M, N, K) of --gemm-shapes.
GEMM_SHAPE_SETS: Dict[str, List[Tuple[int, int, int]]] = {
    "default": [(16, 8192, 8192), (128, 8192, 8192), (4096, 4096, 4096)],
    # DeepSeek-V3's projections (N x K) at a decode batch, a small prefill and a large one
    "deepseek": [(m, n, k) for m in (64, 128, 4096)
                 for n, k in ((2112, 7168), (24576, 1536), (32768, 512), (7168, 16384),
                              (4096, 7168), (7168, 2048))],
}


def _one_line(error: BaseException) -> str:
    """An exception as one line: its type and its message's lines joined (torch's scaling
    errors list every layout on lines of their own)."""
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return f"{type(error).__name__}: {text}"


def _refusal(error: BaseException) -> str:
    """torch's refusal of a layout, short: its first line and the line that gives what it got
    (the lines between list every layout it takes), as one line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    kept = lines[:1] + [line for line in lines[1:] if line.startswith("Got ")]
    return f"{type(error).__name__}: " + " ".join(kept)


def _accumulation_bound(fast: bool, k: int) -> float:
    """The fp8 accumulation's allowance, a fraction of sum |a b| (each product weighed by its
    scales), as include/tmakit/kernels/gemm.hpp states it and `tmakit bench` checks it:
    2^-10 promoted; fast, 2^-13 per 32 of K, at least 2^-11."""
    return max(2.0 ** -11, 2.0 ** -13 * -(-k // 32)) if fast else 2.0 ** -10


def _dequantised(x: torch.Tensor, scale: torch.Tensor, recipe: str, rows_per_scale: int
                 ) -> torch.Tensor:
    """x (R, K) in float64 times its scales: row-wise one per row (scale R values); 128-block
    one per rows_per_scale rows and 128 of K (scale (ceil(R / rows_per_scale), ceil(K/128)),
    the last block what K leaves)."""
    r, k = x.shape
    if recipe == "row":
        return x.double() * scale.double().reshape(r, 1)
    full = scale.double().repeat_interleave(rows_per_scale, 0)[:r]
    return x.double() * full.repeat_interleave(128, 1)[:, :k]


def _block_layouts(sa: torch.Tensor, sb: torch.Tensor):
    """The scale layouts tried on torch._scaled_mm(a, b.t(), ...) for 128-block scales, in
    order: (name, scale_a, scale_b as torch is given it). sa: (M, ceil(K/128)) values; sb:
    (ceil(N/128), ceil(K/128)) values. torch's (aten ScaledBlas.cpp, is_blockwise_1x128_scaling
    and is_blockwise_128x128_scaling, the latter applied to b and scale_b transposed): scale_a
    M-major (strides (1, M)), scale_b the transpose of a row-major (ceil(N/128), ceil(K/128)).
    The others are the row-major forms earlier releases were tried with."""
    a_m_major = sa.t().contiguous().t()
    return [
        ("scale_a M-major, scale_b (ceil(N/128), ceil(K/128)) row-major passed as .t()",
         a_m_major, sb.contiguous().t()),
        ("scale_a M-major, scale_b (ceil(K/128), ceil(N/128)) row-major",
         a_m_major, sb.t().contiguous()),
        ("scale_a row-major, scale_b (ceil(N/128), ceil(K/128)) row-major passed as .t()",
         sa.contiguous(), sb.contiguous().t()),
    ]


def _gemm_recipe_case(m: int, n: int, k: int, recipe: str, fast: bool) -> Case:
    """tmakit.gemm_fp8 with row-wise or 128-block scales beside torch._scaled_mm given the same
    scales (random in [0.5, 2)), both checked against a float64 product of the dequantised
    operands within the accumulation's allowance plus a bf16 rounding."""
    a = (torch.randn(m, k, device="cuda") * 2).to(FP8)
    b = (torch.randn(n, k, device="cuda") * 2).to(FP8)
    d = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    e = torch.empty_like(d)
    accumulate = "fast" if fast else "promoted"

    def scales(*shape):
        return torch.rand(*shape, device="cuda") * 1.5 + 0.5

    note = ""
    if recipe == "row":
        ours_a, ours_b = scales(m, 1), scales(1, n)
        theirs_a, theirs_b = ours_a, ours_b
        baseline = "torch._scaled_mm row-wise"
    else:
        kb, nb = -(-k // 128), -(-n // 128)
        layouts = _block_layouts(scales(m, kb), scales(nb, kb))
        baseline = "torch._scaled_mm block-wise"
        taken = None
        refusal = None
        for name, sa, sb in layouts:
            try:
                torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                 out=e)
                torch.cuda.synchronize()
                taken = (name, sa, sb)
                break
            except Exception as error:  # noqa: BLE001 - torch's refusal is the row's note
                refusal = refusal or _refusal(error)
        name, theirs_a, theirs_b = taken if taken is not None else layouts[0]
        # tmakit takes any strides: the very tensors torch took, scale_b as (ceil(N/128), ...)
        ours_a, ours_b = theirs_a, theirs_b.t()
        note = f"torch took {name}" if taken is not None else f"torch refuses: {refusal}"
        if taken is None:
            theirs_a = None

    def ours():
        return ops.gemm_fp8(a, b, scale_a=ours_a, scale_b=ours_b, accumulate=accumulate, out=d)

    def theirs():
        return torch._scaled_mm(a, b.t(), scale_a=theirs_a, scale_b=theirs_b,
                                out_dtype=torch.bfloat16, use_fast_accum=fast, out=e)

    def check():
        ad = _dequantised(a, ours_a, recipe, 1)
        bd = _dequantised(b, ours_b.t() if recipe == "row" else ours_b, recipe, 128)
        want = ad @ bd.T
        allowed = (_accumulation_bound(fast, k) * (ad.abs() @ bd.abs().T)
                   + 2.0 ** -8 * want.abs())
        del ad, bd
        sides = [("tmakit.gemm_fp8", ours, d)]
        if theirs_a is not None:
            sides.append(("torch._scaled_mm", theirs, e))
        for who, call, got in sides:
            try:
                call()
            except Exception as error:  # noqa: BLE001 - a call that raises is the row's problem
                return f"{who} raised {_one_line(error)}"
            worst = ((got.double() - want).abs() - allowed).max().item()
            if worst > 0:
                return (f"{who} differs from the float64 product by {worst:.3g} beyond the "
                        f"allowance")
        return None

    mode = " fast" if fast else ""
    return Case(f"gemm_fp8 {recipe}{mode} {m}x{n}x{k}", "TFLOP/s", 2.0 * m * n * k, ours,
                theirs if theirs_a is not None else None,
                baseline + (" (use_fast_accum)" if fast else ""), check, note=note)


def _ceiling_bytes(nbytes: int) -> int:
    """The bytes a memcpy ceiling copies for nbytes: rounded up to a whole 4 KiB, as
    ``tmakit bench`` does (a device copy of a count off 4 KiB runs slower than the memory
    allows; docs/bench.md, "The memcpy copies whole 4 KiB")."""
    return (nbytes + 4095) // 4096 * 4096


def _ceiling_copy(nbytes: int) -> Callable[[], object]:
    """A device copy of nbytes rounded up to a whole 4 KiB between buffers of its own: what
    the memory gives an op that moves nbytes each way."""
    n = _ceiling_bytes(nbytes)
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty(n, dtype=torch.uint8, device="cuda")
    return lambda: dst.copy_(src)


def _copy(x: torch.Tensor) -> Callable[[], object]:
    """The ceiling of an op reading x's bytes and writing as many: _ceiling_copy."""
    return _ceiling_copy(x.numel() * x.element_size())


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _values(rows: int, cols: int, dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(rows, cols, device="cuda").to(dtype)
    return torch.randint(0, 100, (rows, cols), device="cuda").to(dtype)


def _transpose_case(rows: int, cols: int, dtype: torch.dtype) -> Case:
    x = _values(rows, cols, dtype)
    out = torch.empty(cols, rows, dtype=dtype, device="cuda")
    ref = torch.empty_like(out)
    name = _dtype_name(dtype)

    def theirs():
        return ref.copy_(x.t())

    def check():
        ops.transpose(x, out=out), theirs()
        return None if torch.equal(out, ref) else "results differ"

    return Case(f"transpose {name} {rows}x{cols}", "GB/s", 2.0 * x.numel() * x.element_size(),
                lambda: ops.transpose(x, out=out), theirs, "x.t().contiguous()", check,
                _copy(x))


def _stencil_case(rows: int, cols: int, dtype: torch.dtype) -> Case:
    weight = [[-1.0, -1.0, -1.0], [-1.0, 8.0, -1.0], [-1.0, -1.0, -1.0]]
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    w = torch.tensor(weight, device="cuda", dtype=dtype)[None, None]
    x4 = x[None, None]
    name = _dtype_name(dtype)

    def theirs():
        return torch.nn.functional.conv2d(x4, w, padding=1)

    def check():
        ops.stencil3x3(x, weight, out=out)
        # NOTE: the reference in float64, not cuDNN's float32 (which may use TF32).
        want = torch.nn.functional.conv2d(x4.double(), w.double(), padding=1)[0, 0]
        tol = 1e-5 if dtype == torch.float32 else 1e-12
        return _close(out, want, rtol=tol, atol=tol * 16)

    return Case(f"stencil3x3 {name} {rows}x{cols}", "GB/s", 2.0 * x.numel() * x.element_size(),
                lambda: ops.stencil3x3(x, weight, out=out), theirs, "conv2d (cuDNN)", check,
                _copy(x))


def _add_case(rows: int, cols: int, dtype: torch.dtype) -> Case:
    x = _values(rows, cols, dtype)
    out = torch.empty_like(x)
    ref = torch.empty_like(x)
    name = _dtype_name(dtype)
    value = 1.5 if dtype.is_floating_point else 3

    def check():
        ops.add(x, value, out=out), torch.add(x, value, out=ref)
        return None if torch.equal(out, ref) else "results differ"

    return Case(f"add {name} {rows}x{cols}", "GB/s", 2.0 * x.numel() * x.element_size(),
                lambda: ops.add(x, value, out=out), lambda: torch.add(x, value, out=ref),
                "torch.add", check, _copy(x))


def _torch_quantize(x: torch.Tensor, recipe: str, operand: str):
    """The quantizer as torch ops, the same arithmetic (per group amax, scale = amax / 448,
    1 for amax 0, at least 2^-126; x * (1 / scale) cut to +-448, cast to e4m3): what a
    PyTorch user writes instead. (x_fp8, scale), the scale in quantize_fp8's shape."""
    rows, k = x.shape
    kb = (k + 127) // 128
    xf = x.float()
    if recipe == "tensor":
        amax = xf.abs().amax().reshape(1, 1)
    elif recipe == "row":
        amax = xf.abs().amax(dim=1, keepdim=True)
    else:
        group_rows = 1 if operand == "a" else 128
        padded = torch.nn.functional.pad(xf, (0, kb * 128 - k, 0, (-rows) % group_rows))
        amax = padded.abs().reshape(-1, group_rows, kb, 128).amax(dim=(1, 3))
    # NOTE: divided by a tensor: torch divides a CUDA tensor by a Python scalar as a product
    # with the scalar's reciprocal, which is not amax / 448 rounded once
    scale = amax / torch.full_like(amax, 448.0)
    scale = torch.where(scale < 2.0 ** -126, torch.full_like(scale, 2.0 ** -126), scale)
    scale = torch.where(amax == 0, torch.ones_like(scale), scale)
    inverse = 1.0 / scale
    if recipe == "block":
        group_rows = 1 if operand == "a" else 128
        inverse = inverse.repeat_interleave(group_rows, 0).repeat_interleave(128, 1)[:rows, :k]
    x_fp8 = (xf * inverse).clamp(-448.0, 448.0).to(FP8)
    if recipe == "tensor":
        scale = scale.reshape(())
    elif recipe == "row" and operand == "b":
        scale = scale.reshape(1, rows)
    return x_fp8, scale


def _quantize_case(rows: int, k: int, recipe: str, operand: str) -> Case:
    x = torch.randn(rows, k, device="cuda").to(torch.bfloat16)
    got = {}
    # x read once, x_fp8 and the scales written once
    scales = ops._quantize_scale(x, recipe, operand).numel()
    work = x.numel() * (2 + 1) + 4 * scales
    memcpy = _ceiling_copy(work // 2)

    def ours():
        got["ours"] = ops.quantize_fp8(x, recipe, operand=operand)
        return got["ours"]

    def theirs():
        got["theirs"] = _torch_quantize(x, recipe, operand)
        return got["theirs"]

    def check():
        (q, s), (tq, ts) = ours(), theirs()
        if not torch.equal(q.view(torch.uint8), tq.view(torch.uint8)):
            return "x_fp8 differs"
        return None if torch.equal(s.contiguous(), ts.contiguous()) else "scales differ"

    name = f"quantize_fp8 {recipe}/{operand} {rows}x{k}"
    return Case(name, "GB/s", float(work), ours, theirs, "torch ops", check, memcpy)


def cases(small: bool, gemm_shapes: Tuple[str, ...] = ("default",)) -> List[Pending]:
    """Every case by name, in run order: the GEMM shapes of the named sets (each shape once),
    each per-tensor, row-wise in both modes and 128-block; then the memory-bound ops."""
    side = 4096 if small else 16384
    odd = (2047, 2049) if small else (8191, 8193)
    shapes: List[Tuple[int, int, int]] = []
    for name in gemm_shapes:
        shapes += [s for s in GEMM_SHAPE_SETS[name] if s not in shapes]
    out: List[Pending] = []

    def add(name: str, make: Callable[[], Case]) -> None:
        out.append(Pending(name, make))

    for m, n, k in shapes:
        add(f"gemm_fp8 {m}x{n}x{k}", lambda m=m, n=n, k=k: _gemm_case(m, n, k))
        for recipe, fast in (("row", False), ("row", True), ("block", False)):
            add(f"gemm_fp8 {recipe}{' fast' if fast else ''} {m}x{n}x{k}",
                lambda m=m, n=n, k=k, r=recipe, f=fast: _gemm_recipe_case(m, n, k, r, f))
    for dtype in (torch.float32, torch.bfloat16):
        add(f"transpose {_dtype_name(dtype)} {side}x{side}",
            lambda t=dtype: _transpose_case(side, side, t))
    for dtype in (torch.float32, torch.float64):
        add(f"stencil3x3 {_dtype_name(dtype)} {side}x{side}",
            lambda t=dtype: _stencil_case(side, side, t))
    add(f"add float32 {side}x{side}", lambda: _add_case(side, side, torch.float32))
    # rows TMA cannot describe: 8193 elements are never a multiple of 16 bytes
    for dtype in (torch.float32, torch.bfloat16, torch.uint8, torch.float64):
        add(f"transpose {_dtype_name(dtype)} {odd[0]}x{odd[1]}",
            lambda t=dtype: _transpose_case(odd[0], odd[1], t))
    for dtype in (torch.int32, torch.float32, torch.float64):
        add(f"add {_dtype_name(dtype)} {odd[0]}x{odd[1]}",
            lambda t=dtype: _add_case(odd[0], odd[1], t))
    for dtype in (torch.float32, torch.float64):
        add(f"stencil3x3 {_dtype_name(dtype)} {odd[0]}x{odd[1]}",
            lambda t=dtype: _stencil_case(odd[0], odd[1], t))
    # the FP8 quantizer on bf16, each recipe (x read once, x_fp8 and scales written once);
    # at 1024 x 7168 the tensor recipe's tiles fit the SMs at once (one pass over x)
    for rows, k in ((4096 if small else 8192, 4096 if small else 8192), (1024, 7168), (16, 7168)):
        for recipe, operand in (("row", "a"), ("block", "a"), ("block", "b"), ("tensor", "a")):
            add(f"quantize_fp8 {recipe}/{operand} {rows}x{k}",
                lambda r=rows, c=k, q=recipe, o=operand: _quantize_case(r, c, q, o))
    return out


def _medians_us(calls: List[Callable[[], object]], rounds: int,
                before: Optional[Callable[[], object]] = None) -> List[float]:
    """Median microseconds of each of `calls`, run in turn `rounds` times and each timed alone
    with CUDA events (after `before()` where given), so that all see the same clocks."""
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in calls] for _ in range(rounds)]
    for rep in events:
        for call, (start, end) in zip(calls, rep):
            if before is not None:
                before()
            start.record()
            call()
            end.record()
    torch.cuda.synchronize()
    return [statistics.median(rep[i][0].elapsed_time(rep[i][1]) for rep in events) * 1e3
            for i in range(len(calls))]


def _by_side(case: Case, medians: List[float]) -> tuple:
    """(ours, theirs or 0 where the counterpart refuses, the copy or 0) from the medians of
    the sides the case has, in that order."""
    given = iter(medians)
    ours = next(given)
    theirs = next(given) if case.theirs is not None else 0.0
    copy = next(given) if case.memcpy is not None else 0.0
    return ours, theirs, copy


def _time(case: Case, reps: int, flush: torch.Tensor) -> tuple:
    """Median microseconds of each side (ours, theirs or 0 when the counterpart refuses, the
    copy or 0), alternating call by call, each after an L2 flush."""
    sides = [case.ours] + ([case.theirs] if case.theirs is not None else [])
    sides += [case.memcpy] if case.memcpy is not None else []
    for _ in range(3):  # warm-up: first launches, cuDNN / cuBLAS plans, GEMM workspaces
        for call in sides:
            call()
    return _by_side(case, _medians_us(sides, reps, before=flush.zero_))


def _time_graphs(case: Case, calls: int, replays: int) -> tuple:
    """The sustained protocol: each side's call `calls` times in one CUDA graph, the graphs
    replayed in turn `replays` times; median microseconds a call of each side (ours, theirs
    or 0, the copy or 0). Back to back and with no L2 flush between calls, the card runs at
    the clocks its power limit leaves, as a model's loop of these calls does. The copy runs
    as `calls` copies launched back to back on the stream, not in a graph, in the same turns."""
    # NOTE: a device-to-device copy captured as a graph's memcpy node ran 1.3-1.5x slower than
    # the same copy launched on the stream at 0.5-2 GB (H200, 2026-12-01): as a ceiling it
    # would flatter every op
    sides = [case.ours] + ([case.theirs] if case.theirs is not None else [])
    # NOTE: first calls (plans, workspaces, cuDNN's choice) on a side stream, and the capture
    # on that stream: a split-K GEMM keeps its split only where its stream's workspace is
    # grown before the capture
    side_stream = torch.cuda.Stream()
    side_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side_stream):
        for _ in range(3):
            for call in sides:
                call()
    torch.cuda.current_stream().wait_stream(side_stream)
    torch.cuda.synchronize()
    graphs = []
    for call in sides:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side_stream):
            for _ in range(calls):
                call()
        graphs.append(graph)
    for graph in graphs:
        graph.replay()
    timed: List[Callable[[], object]] = [graph.replay for graph in graphs]
    if case.memcpy is not None:
        copy = case.memcpy
        timed.append(lambda: [copy() for _ in range(calls)])
    medians = _medians_us(timed, replays)
    del graphs, timed
    return _by_side(case, [m / calls for m in medians])


def _host_us_per_call(variants: dict, calls: int, rounds: int) -> dict:
    """Host microseconds per call of each variant, one value per round: each round a burst of
    ``calls`` calls of every variant in turn, the order reversed every other round (so that a
    drift of the host's speed falls on the two sides of a pair alike), after 50 calls each to
    warm up."""
    for call in variants.values():
        for _ in range(50):
            call()
    times = {name: [] for name in variants}
    order = list(variants.items())
    for round_ in range(rounds):
        for name, call in (order if round_ % 2 == 0 else order[::-1]):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                call()
            times[name].append((time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return times


class HostTime(NamedTuple):
    """A variant's host time per call (the median round), and where it has a baseline (the
    eager call it is the dispatcher's form of) the rounds' differences from it: median and
    quartiles, each round's two bursts adjacent in time."""
    name: str
    us: float
    against: Optional[str] = None
    minus_us: float = 0.0
    minus_q1_us: float = 0.0
    minus_q3_us: float = 0.0


def _host_times(variants: dict, pairs: Dict[str, str], calls: int = 200,
                rounds: int = 41) -> List[HostTime]:
    times = _host_us_per_call(variants, calls, rounds)
    rows = []
    for name, values in times.items():
        against = pairs.get(name)
        if against is None:
            rows.append(HostTime(name, statistics.median(values)))
            continue
        differences = [ours - base for ours, base in zip(values, times[against])]
        q1, q2, q3 = statistics.quantiles(differences, n=4)
        rows.append(HostTime(name, statistics.median(values), against, q2, q1, q3))
    return rows


def host_overhead() -> List[HostTime]:
    """Host time per call on a tiny GEMM (16 x 64 x 128): the GPU finishes each call before
    the host has issued the next, so the wall time of a burst is host time."""
    a = torch.randn(16, 128, device="cuda").to(FP8)
    b = torch.randn(64, 128, device="cuda").to(FP8)
    one = torch.ones((), device="cuda")
    d = torch.empty(16, 64, dtype=torch.bfloat16, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    # (a, b, d; D's type; M, N, K of a and of b; D's rows and columns; the row pitches in
    # bytes; alpha, scale_a, scale_b; no device scales; per-tensor scales, strides as torch's;
    # the accumulation; the stream)
    raw = (a.data_ptr(), b.data_ptr(), d.data_ptr(), ops._tmakit.DataType.bfloat16, 16, 64, 128,
           128, 16, 64, 128, 128, 128, 1.0, 1.0, 1.0, 0, 0, ops._tmakit.GemmScaleRecipe.tensor,
           (-1, -1, -1, -1), ops._tmakit.GemmAccumulation.promoted, stream)
    gemm_out = torch.ops.tmakit.gemm_fp8_out
    variants = {
        "tmakit.gemm_fp8": lambda: ops.gemm_fp8(a, b, out=d),
        "torch.ops.tmakit.gemm_fp8_out": lambda: gemm_out(a, b, 1.0, 1.0, 1.0, None, None,
                                                          "promoted", d),
        "torch.ops.tmakit.gemm_fp8_out.default": lambda: gemm_out.default(a, b, 1.0, 1.0, 1.0, None,
                                                                    None, "promoted", d),
        "tmakit.gemm_fp8 (allocating out)": lambda: ops.gemm_fp8(a, b),
        "the C++ launcher alone": lambda: ops._tmakit.gemm_fp8(*raw),
        "torch._scaled_mm": lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                                     out_dtype=torch.bfloat16),
    }
    pairs = {"torch.ops.tmakit.gemm_fp8_out": "tmakit.gemm_fp8",
             "torch.ops.tmakit.gemm_fp8_out.default": "tmakit.gemm_fp8"}
    return _host_times(variants, pairs)


def host_overhead_memory_bound() -> List[HostTime]:
    """Host time per call of transpose, stencil3x3, add and quantize_fp8 on tiny tensors:
    eager, through torch.ops.tmakit.* and its .default overload (what a torch.compile'd graph
    calls), and torch's own eager op."""
    x = torch.randn(16, 32, device="cuda")
    t = torch.empty(32, 16, device="cuda")
    s = torch.empty_like(x)
    y = torch.empty_like(x)
    z = torch.zeros_like(x)
    taps = [0.0, 1.0, 0.0, 1.0, -4.0, 1.0, 0.0, 1.0, 0.0]
    w = torch.tensor(taps, device="cuda").reshape(1, 1, 3, 3)
    x4 = x[None, None]
    xb = x.bfloat16()
    o = torch.ops.tmakit
    variants = {
        "tmakit.transpose": lambda: ops.transpose(x, out=t),
        "torch.ops.tmakit.transpose_out": lambda: o.transpose_out(x, t),
        "torch.ops.tmakit.transpose_out.default": lambda: o.transpose_out.default(x, t),
        "t.copy_(x.t())": lambda: t.copy_(x.t()),
        "tmakit.stencil3x3": lambda: ops.stencil3x3(x, [taps[:3], taps[3:6], taps[6:]], out=s),
        "torch.ops.tmakit.stencil3x3_out": lambda: o.stencil3x3_out(x, taps, s),
        "torch.ops.tmakit.stencil3x3_out.default": lambda: o.stencil3x3_out.default(x, taps, s),
        "conv2d": lambda: torch.nn.functional.conv2d(x4, w, padding=1),
        "tmakit.add": lambda: ops.add(x, 1.5, out=y),
        "torch.ops.tmakit.add_out": lambda: o.add_out(x, 1.5, y),
        "torch.ops.tmakit.add_out.default": lambda: o.add_out.default(x, 1.5, y),
        "torch.add": lambda: torch.add(x, 1.5, out=y),
        # NOTE: torch's own ops through the dispatcher, what any op called so costs
        "torch.ops.aten.add.out": lambda: torch.ops.aten.add.out(x, 1.5, out=y),
        "tmakit.add (in place)": lambda: ops.add(z, 0.0, out=z),
        "torch.ops.tmakit.add_": lambda: o.add_(z, 0.0),
        "torch.ops.tmakit.add_.default": lambda: o.add_.default(z, 0.0),
        "z.add_(0.0)": lambda: z.add_(0.0),
        "torch.ops.aten.add_.Scalar": lambda: torch.ops.aten.add_.Scalar(z, 0.0),
        "tmakit.quantize_fp8 (row)": lambda: ops.quantize_fp8(xb, "row"),
        # NOTE: a graph allocates the outputs, then calls the op: the same work as the eager
        # call, which allocates them too
        "outputs + torch.ops.tmakit.quantize_fp8_out": lambda: o.quantize_fp8_out(
            xb, "row", "a", torch.empty((16, 32), dtype=FP8, device="cuda"),
            torch.empty((16, 1), dtype=torch.float32, device="cuda")),
    }
    pairs = {"torch.ops.tmakit.transpose_out": "tmakit.transpose",
             "torch.ops.tmakit.transpose_out.default": "tmakit.transpose",
             "torch.ops.tmakit.stencil3x3_out": "tmakit.stencil3x3",
             "torch.ops.tmakit.stencil3x3_out.default": "tmakit.stencil3x3",
             "torch.ops.tmakit.add_out": "tmakit.add",
             "torch.ops.tmakit.add_out.default": "tmakit.add",
             "torch.ops.tmakit.add_": "tmakit.add (in place)",
             "torch.ops.tmakit.add_.default": "tmakit.add (in place)",
             "torch.ops.aten.add.out": "torch.add", "torch.ops.aten.add_.Scalar": "z.add_(0.0)",
             "outputs + torch.ops.tmakit.quantize_fp8_out": "tmakit.quantize_fp8 (row)"}
    return _host_times(variants, pairs)


def _print_host_times(title: str, rows: List[HostTime]) -> None:
    print(f"\n# host time per call, {title} (median of 41 rounds of 200 calls; through the "
          f"dispatcher also minus the eager call: the rounds' differences, median [quartiles])")
    for r in rows:
        line = f"{r.name:44} {r.us:6.2f} us"
        if r.against is not None:
            line += (f"  {r.minus_us:+6.2f} [{r.minus_q1_us:+.2f}, {r.minus_q3_us:+.2f}] vs "
                     f"{r.against}")
        print(line)


def _svg(results: List[Result], path: str) -> None:
    """A bar per case: the counterpart's time over tmakit's (above 1: tmakit is faster)."""
    timed = [r for r in results if r.problem is None and r.theirs_us > 0]
    width, row, left = 760, 26, 260
    height = 60 + row * len(timed)
    top = max([r.theirs_us / r.ours_us for r in timed] + [1.0]) * 1.1
    scale = (width - left - 60) / top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<text x="{left}" y="20">counterpart time / tmakit time (above 1: tmakit faster)'
             f'</text>']
    x1 = left + scale
    parts.append(f'<line x1="{x1:.1f}" y1="30" x2="{x1:.1f}" y2="{height - 10}" '
                 f'stroke="#888" stroke-dasharray="4 3"/>')
    for i, r in enumerate(timed):
        y = 34 + i * row
        ratio = r.theirs_us / r.ours_us
        parts.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{r.name} vs '
                     f'{r.baseline}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{ratio * scale:.1f}" height="{row - 8}" '
                     f'fill="{"#3a7" if ratio >= 1 else "#c64"}"/>')
        parts.append(f'<text x="{left + ratio * scale + 4:.1f}" y="{y + 14}">{ratio:.2f}'
                     f'</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def _stack_dump_file():
    """Where the stall watch writes the stacks: stderr, or the process's own stderr where
    sys.stderr is a stream without a file descriptor (a capturing test runner, a notebook)."""
    # NOTE: faulthandler writes from a C thread to a file descriptor, so it needs a real one
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__


def _unwritable(path: str) -> str:
    """Why a file cannot be written at ``path`` ("" when it can)."""
    if os.path.isdir(path):
        return "is a folder"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"its folder {folder} does not exist"
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return "cannot be written"
    return ""


def main(argv: Optional[List[str]] = None) -> int:
    # NOTE: no abbreviations: `tmakit bench`'s --gemm-shape would read as --gemm-shapes
    # NOTE: --help printed here, not by argparse, which drops a failed write (a full disk, a
    # closed pipe) and exits 0
    parser = argparse.ArgumentParser(prog="python -m tmakit.bench", description=__doc__.split(
        "\n\n")[0], allow_abbrev=False, add_help=False)
    parser.add_argument("-h", "--help", action="store_true",
                        help="show this help message and exit")
    parser.add_argument("--filter", default="",
                        help="run only the cases whose name contains this (the host-time "
                             "tables still run: --no-overhead skips them)")
    parser.add_argument("--reps", type=int, default=30,
                        help="timed calls per side, 1..100000 (default 30)")
    parser.add_argument("--graph-calls", type=int, default=20,
                        help="the sustained protocol: calls per CUDA graph, 0..1000, each "
                             "side's graph replayed in turn max(3, reps / 3) times (default "
                             "20; 0: call by call only)")
    parser.add_argument("--small", action="store_true",
                        help="smaller memory-bound cases: 4096^2, the odd shape 2047 x 2049, "
                             "the quantizer at 4096 x 4096")
    parser.add_argument("--json", help="write the results as JSON to this file")
    parser.add_argument("--svg", help="write a bar chart of the ratios to this file")
    part = parser.add_mutually_exclusive_group()
    part.add_argument("--no-overhead", action="store_true", help="skip the host-time part")
    part.add_argument("--host-time-only", action="store_true",
                      help="only the host-time part (no case)")
    parser.add_argument("--list", action="store_true",
                        help="print the cases' names (after --filter, --small, --gemm-shapes) "
                             "and exit; needs no GPU")
    parser.add_argument("--stall-seconds", type=int, default=300,
                        help="end the run, printing where each thread is, when one case takes "
                             "longer than this (a kernel that never finishes); 0: wait forever "
                             "(default 300)")
    parser.add_argument("--gemm-shapes", default="default",
                        help="the GEMM shape sets, comma-separated: "
                             + "; ".join(f"{name}: " + ", ".join(f"{m}x{n}x{k}" for m, n, k in v)
                                         for name, v in GEMM_SHAPE_SETS.items())
                             + " (default: default)")
    args = parser.parse_args(argv)
    if args.help:
        print(parser.format_help(), end="")
        return 0
    if not 1 <= args.reps <= 100000:
        parser.error(f"--reps: {args.reps} is outside 1..100000")
    if not 0 <= args.graph_calls <= 1000:
        parser.error(f"--graph-calls: {args.graph_calls} is outside 0..1000")
    if not 0 <= args.stall_seconds <= 86400:
        parser.error(f"--stall-seconds: {args.stall_seconds} is outside 0..86400")
    shape_sets = tuple(name.strip() for name in args.gemm_shapes.split(","))
    for name in shape_sets:
        if name not in GEMM_SHAPE_SETS:
            parser.error(f"--gemm-shapes: {name!r} is not a shape set; the sets are "
                         + ", ".join(GEMM_SHAPE_SETS))
    for option, path in (("--json", args.json), ("--svg", args.svg)):
        # NOTE: checked before the run, which the results of would otherwise be lost
        if path is not None:
            why = "is empty" if not path else _unwritable(path)
            if why:
                parser.error(f"{option} {path!r}: {why}")
    if args.json and args.svg and os.path.abspath(args.json) == os.path.abspath(args.svg):
        parser.error(f"--json and --svg name one file, {args.json!r}: the chart would replace "
                     f"the results")
    if args.list and (args.json is not None or args.svg is not None):
        given = " and ".join(option for option, path in (("--json", args.json),
                                                          ("--svg", args.svg)) if path is not None)
        parser.error(f"--list prints the cases' names and runs none, so {given} would write "
                     f"nothing; leave {'them' if ' and ' in given else 'it'} out")
    if args.host_time_only:
        # (options of the cases, which this part has none of)
        given = [option for option, used in (
            ("--list", args.list), ("--filter", args.filter), ("--small", args.small),
            ("--svg", args.svg is not None), ("--gemm-shapes", args.gemm_shapes != "default"),
            ("--graph-calls", args.graph_calls != 20))
            if used]
        if given:
            parser.error(f"--host-time-only runs no case, so {', '.join(given)} would do "
                         f"nothing; leave them out")
    # NOTE: the usage checks above need no torch: a bad option is exit status 2 either way
    if torch is None:
        print(_NEEDS_TORCH, file=sys.stderr)
        return 1
    selected = [] if args.host_time_only else [
        pending for pending in cases(args.small, shape_sets) if args.filter in pending.name]
    if not selected and not args.host_time_only:
        parser.error(f"--filter {args.filter!r} matches no case; --list shows them"
                     + (" (--small names the odd shape 2047x2049)" if args.small else "")
                     + " (the filter is a plain substring of the name)")
    if args.list:
        for pending in selected:
            print(pending.name)
        return 0
    if not torch.cuda.is_available():
        print("tmakit.bench: no CUDA GPU; the benchmark needs a Hopper GPU (sm_90a)",
              file=sys.stderr)
        return 1
    if torch.cuda.get_device_capability() != (9, 0):
        print(f"tmakit.bench: {torch.cuda.get_device_name()} is not sm_90 (H100/H200)",
              file=sys.stderr)
        return 1

    device = torch.cuda.get_device_name()
    print(f"# {device}, torch {torch.__version__}, {args.reps} timed calls per side, medians"
          + (f"; graphs of {args.graph_calls} calls, {max(3, args.reps // 3)} replays a side"
             if args.graph_calls else ""))
    flush = torch.empty(256 * 2 ** 20, dtype=torch.uint8, device="cuda")  # past any L2
    results: List[Result] = []
    graph_failures = 0
    for pending in selected:
        # NOTE: a case that raises (a recipe the GEMM does not take yet, a counterpart that
        # fails) is reported on its row; the run goes on
        case: Optional[Case] = None
        # NOTE: a kernel that never finishes leaves the run in a synchronize forever, and CUDA
        # says nothing: past the limit the watch prints every thread's stack (the case's name
        # is the line before) and ends the process
        print(f"{pending.name} ...", file=sys.stderr, flush=True)
        if args.stall_seconds:
            faulthandler.dump_traceback_later(args.stall_seconds, exit=True,
                                              file=_stack_dump_file())
        try:
            case = pending.make()
            problem = case.check()
        except Exception as error:  # noqa: BLE001
            problem = f"raised {_one_line(error)}"
        graph_us, graph_problem = (0.0, 0.0, 0.0), ""
        if problem is None:
            try:
                ours, theirs, memcpy = _time(case, args.reps, flush)
            except Exception as error:  # noqa: BLE001
                problem = f"raised while timing: {_one_line(error)}"
        if problem is None and args.graph_calls:
            # NOTE: a side that cannot be captured leaves the row's call-by-call times; the
            # row says so and the run's status is 1
            try:
                graph_us = _time_graphs(case, args.graph_calls, max(3, args.reps // 3))
            except Exception as error:  # noqa: BLE001
                graph_problem = f"graphs not timed: {_one_line(error)}"
                graph_failures += 1
                print(f"{pending.name}: {graph_problem}", file=sys.stderr)
        if problem is not None:
            baseline = case.baseline if case is not None else ""
            results.append(Result(pending.name, baseline, "", 0, 0, 0, 0, problem,
                                  note=case.note if case is not None else ""))
            print(f"{pending.name}: NOT TIMED: {problem}", file=sys.stderr)
            faulthandler.cancel_dump_traceback_later()
            continue
        faulthandler.cancel_dump_traceback_later()
        scale = 1e-12 if case.unit == "TFLOP/s" else 1e-9
        results.append(Result(case.name, case.baseline, case.unit, ours, theirs,
                              case.work / (ours * 1e-6) * scale,
                              case.work / (theirs * 1e-6) * scale if theirs else 0.0, None,
                              memcpy, "; ".join(n for n in (case.note, graph_problem) if n),
                              *graph_us))
        del case

    header = (f"{'case':34} {'counterpart':42} {'tmakit us':>10} {'theirs us':>10} "
              f"{'tmakit':>9} {'theirs':>9} {'unit':8} {'speedup':>7} {'x memcpy':>8}"
              + (f" {'graphs:':>8} {'tmakit us':>10} {'speedup':>7} {'x memcpy':>8}"
                 if args.graph_calls else ""))
    if selected:
        print(header)
        print("-" * len(header))
    for r in results:
        if r.problem:
            print(f"{r.name:34} {r.baseline:42} {'FAILED: ' + r.problem}")
            continue
        # (blank graph columns where the graphs were not timed: the note says why)
        graphs = f" {'':8} {'-':>10} {'-':>7} {'':8}" if args.graph_calls else ""
        if r.ours_graph_us:
            graphs = (f" {'':8} {r.ours_graph_us:10.1f} "
                      + (f"{r.theirs_graph_us / r.ours_graph_us:7.2f}" if r.theirs_graph_us
                         else f"{'-':>7}")
                      + (f" {r.memcpy_graph_us / r.ours_graph_us:8.3f}" if r.memcpy_graph_us
                         else f" {'':8}"))
        if not r.theirs_us:  # the counterpart refused: tmakit's time alone, and why
            print(f"{r.name:34} {r.baseline:42} {r.ours_us:10.1f} {'-':>10} "
                  f"{r.ours_rate:9.1f} {'-':>9} {r.unit:8} {'-':>7} {'':8}{graphs} {r.note}")
            continue
        vs_copy = f"{r.memcpy_us / r.ours_us:8.3f}" if r.memcpy_us else f"{'':8}"
        print(f"{r.name:34} {r.baseline:42} {r.ours_us:10.1f} {r.theirs_us:10.1f} "
              f"{r.ours_rate:9.1f} {r.theirs_rate:9.1f} {r.unit:8} "
              f"{r.theirs_us / r.ours_us:7.2f} {vs_copy}{graphs}"
              + (f" {r.note}" if r.note else ""))

    overhead: List[HostTime] = []
    if not args.no_overhead:
        gemm = host_overhead()
        _print_host_times("16x64x128 GEMM", gemm)
        memory_bound = host_overhead_memory_bound()
        _print_host_times("16x32 float32 (bf16 for the quantizer)", memory_bound)
        overhead = gemm + memory_bound

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "torch": torch.__version__,
                       "results": [r._asdict() for r in results],
                       "host_us_per_call": [h._asdict() for h in overhead]}, f, indent=2)
    if args.svg:
        _svg(results, args.svg)
    return 1 if graph_failures or any(r.problem for r in results) else 0


if __name__ == "__main__":
    from ._entry import run

    sys.exit(run(main, "tmakit.bench"))
