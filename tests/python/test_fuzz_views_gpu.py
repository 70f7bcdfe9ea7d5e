"""A seeded fuzz of the ops on a Hopper GPU, beside the fixed cases of test_ops_gpu.py,
test_gemm_recipes_gpu.py and test_quantize.py: random extents near the kernels' tile edges,
every dtype an op takes, and views of every kind torch builds over one buffer (a start off
alignment, padded pitches, column and row steps, transposes, images out of order; for inputs
also broadcasts and overlapping windows), with and without ``out=``.

Oracles: transpose and add bit for bit against torch's own op on the same view; stencil3x3
within its rounding bound of an fp64 conv2d; quantize_fp8 bit for bit against the same x made
contiguous; gemm_fp8 within the bound include/tmakit/kernels/gemm.hpp states. Every byte of
an out's buffer outside the out view, and every byte of x's buffer, keeps its value; an out
that overlaps x is refused with ValueError and nothing is written. Random views also run
captured in CUDA graphs (the replay reads new values of x) and under torch.compile(fullgraph=
True) (equal to the eager call bit for bit). A failure names the case
(its seed and index) and the view. TMAKIT_FUZZ_SEED=<n> replays another sequence;
TMAKIT_FUZZ_CASES=<n> scales the cases per op (default 150 transposes and adds; fewer
stencils, quantisations and GEMMs)."""

import os
import random

import pytest

torch = pytest.importorskip("torch")
import tmakit  # noqa: E402

pytestmark = pytest.mark.gpu

SEED = int(os.environ.get("TMAKIT_FUZZ_SEED", "20261130"))
CASES = int(os.environ.get("TMAKIT_FUZZ_CASES", "150"))
EDGES = (0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257)
FP8 = torch.float8_e4m3fn


def extent(rng, most=600, edges=EDGES):
    """An extent: a tile edge (or one off it) more often than not, else any up to ``most``;
    now and then a large one (the row-class and persistent paths)."""
    roll = rng.random()
    if roll < 0.55:
        return rng.choice(edges)
    if roll < 0.95:
        return rng.randint(1, most)
    return rng.randint(1000, 2100)


# --- views over one flat buffer -------------------------------------------------------------

OUT_KINDS = ("dense", "offset", "pitch", "colstep", "rowstep", "transposed", "images")
IN_KINDS = OUT_KINDS + ("broadcast", "windows")


def strides_of(rng, shape, kind):
    """(strides, offset) in elements of a view of ``shape`` of the named kind."""
    nd = len(shape)
    order = list(range(nd - 1, -1, -1))  # innermost dimension first
    if kind == "transposed" and nd >= 2:
        order = [nd - 2, nd - 1] + list(range(nd - 3, -1, -1))
    elif kind == "images" and nd == 3:
        order = [2, 0, 1]  # (H, B, W) in memory: the images' rows interleave
    strides = [0] * nd
    step = rng.choice((2, 3)) if kind == "colstep" else 1
    for i, d in enumerate(order):
        strides[d] = step
        step *= max(shape[d], 1)
        if i == 0 and kind == "pitch":
            step += rng.randint(1, 40)
    if kind == "rowstep" and nd >= 2:
        strides[0] *= 2
    if kind == "broadcast":
        wide = [d for d in range(nd) if shape[d] > 1]
        if wide:
            strides[rng.choice(wide)] = 0
    if kind == "windows" and nd >= 2:  # each row starts inside the one before (x.unfold)
        strides[nd - 2] = rng.randint(1, max(1, shape[-1] - 1))
    offset = rng.randint(1, 7) if kind == "offset" else rng.choice((0, 0, rng.randint(1, 9)))
    return strides, offset


def make_view(rng, shape, dtype, kind):
    """(buffer, view): a flat CUDA buffer with a little slack and a view of it."""
    strides, offset = strides_of(rng, shape, kind)
    numel = 1
    for s in shape:
        numel *= s
    last = sum((s - 1) * st for s, st in zip(shape, strides)) if numel else 0
    buf = torch.empty(offset + last + 1 + rng.randint(0, 16), dtype=dtype, device="cuda")
    return buf, buf.as_strided(shape, strides, offset)


def view_mask(buf, view):
    mask = torch.zeros(buf.numel(), dtype=torch.bool, device="cuda")
    mask.as_strided(view.shape, view.stride(), view.storage_offset()).fill_(True)
    return mask


def bits(t):
    """The bits of ``t``'s elements, as integers of their size (NaNs compare by payload)."""
    t = t.contiguous()
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    if t.dtype.is_complex:
        return torch.view_as_real(t).view(torch.int32)
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def fill(buf, gen, specials=False):
    """Random values over the whole buffer: integers across their range, floats over several
    binades (with NaN, infinities and -0 when ``specials``)."""
    dtype = buf.dtype
    n = buf.numel()
    if dtype == torch.bool:
        buf.copy_(torch.randint(0, 2, (n,), generator=gen, device="cuda").bool())
    elif dtype.is_complex:
        buf.copy_(torch.randn(n, generator=gen, device="cuda", dtype=dtype))
    elif dtype.is_floating_point:
        v = torch.randn(n, generator=gen, device="cuda", dtype=torch.float64) * 100
        if specials and n:
            pick = torch.randint(0, n, (max(1, n // 50),), generator=gen, device="cuda")
            v[pick] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0],
                                   device="cuda", dtype=torch.float64).repeat(n)[:pick.numel()]
        buf.copy_(v.to(dtype))
    else:
        info = torch.iinfo(dtype)
        raw = torch.randint(-2 ** 63, 2 ** 63 - 1, (n,), generator=gen, dtype=torch.int64,
                            device="cuda")
        if dtype == torch.int64:
            buf.copy_(raw)
        else:
            buf.copy_((raw % (int(info.max) - int(info.min) + 1) + int(info.min)).to(dtype))
    return buf


def sentinel(buf, gen):
    fill(buf.view(torch.uint8) if buf.dtype != torch.bool else buf, gen)
    return bits(buf).clone()


class Case:
    """One fuzz case: its rng, a generator for the GPU's values, and its description."""

    def __init__(self, op, index):
        self.rng = random.Random(f"{SEED}:{op}:{index}")
        self.gen = torch.Generator(device="cuda").manual_seed(SEED * 1000 + index)
        self.words = [f"{op} case {index} (seed {SEED})"]

    def say(self, **what):
        self.words += [f"{k}={v}" for k, v in what.items()]

    def __str__(self):
        return " ".join(self.words)


def an_out(case, shape, dtype, x_buf, x):
    """None, a fresh view of some kind with a sentinel around it, or (when x has elements and
    its buffer holds as many as the out) a view over x's own buffer, which must be refused.
    Returns (out, out_buf, before, overlapping)."""
    roll = case.rng.random()
    numel = 1
    for s in shape:
        numel *= s
    if roll < 0.35:
        case.say(out=None)
        return None, None, None, False
    if roll < 0.45 and x.numel() and x.storage_offset() < numel <= x_buf.numel():
        # (x starts inside it: the two overlap)
        case.say(out="over x")
        return x_buf[:numel].view(shape), None, None, True
    kind = case.rng.choice(OUT_KINDS)
    case.say(out=kind)
    buf, out = make_view(case.rng, shape, dtype, kind)
    return out, buf, sentinel(buf, case.gen), False


def check_out(case, out, buf, before, expected):
    assert torch.equal(bits(out), bits(expected)), f"{case}: wrong values"
    if buf is not None:
        outside = ~view_mask(buf, out)
        assert torch.equal(bits(buf)[outside], before[outside]), \
            f"{case}: bytes outside the out view changed"


def refused(case, call, *buffers):
    before = [bits(b).clone() for b in buffers]
    try:
        call()
    except ValueError:
        pass
    else:
        pytest.fail(f"{case}: not refused")
    torch.cuda.synchronize()
    for b, was in zip(buffers, before):
        assert torch.equal(bits(b), was), f"{case}: a refused call wrote"


# --- transpose ------------------------------------------------------------------------------

TRANSPOSE_TYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.bfloat16,
                   torch.float16, torch.int32, torch.float32, torch.int64, torch.float64,
                   torch.complex64)


def test_transpose_of_random_views_equals_torch():
    for index in range(CASES):
        case = Case("transpose", index)
        rng = case.rng
        dtype = rng.choice(TRANSPOSE_TYPES)
        rows, cols = extent(rng), extent(rng)
        kind = rng.choice(IN_KINDS)
        case.say(dtype=dtype, shape=(rows, cols), x=kind)
        x_buf, x = make_view(rng, (rows, cols), dtype, kind)
        fill(x_buf, case.gen, specials=True)
        x_before = bits(x_buf).clone()
        expected = x.t().contiguous()
        out, buf, before, overlapping = an_out(case, (cols, rows), dtype, x_buf, x)
        if overlapping:
            refused(case, lambda: tmakit.transpose(x, out=out), x_buf)
            continue
        y = tmakit.transpose(x, out=out)
        torch.cuda.synchronize()
        assert out is None or y is out, f"{case}: out= not returned"
        assert y.shape == (cols, rows) and y.dtype == dtype, f"{case}: {y.shape} {y.dtype}"
        check_out(case, y, buf, before, expected)
        assert torch.equal(bits(x_buf), x_before), f"{case}: x's buffer changed"


# --- add ------------------------------------------------------------------------------------

ADD_TYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.float16,
             torch.bfloat16, torch.float32, torch.float64)
FLOAT_VALUES = (0.1, -1.25, 3.0, 1e-3, -12345.678, 0.0)


def add_value(rng, dtype):
    if dtype.is_floating_point:
        return rng.choice(FLOAT_VALUES)
    info = torch.iinfo(dtype)
    low = 0 if dtype == torch.uint8 else int(info.min)
    return rng.choice((0, 1, -1 if low < 0 else 2, int(info.max), rng.randint(low, int(info.max))))


def an_add_case(case, types, value_of):
    """An add case's input: a dtype of ``types``, a 1-D to 3-D shape (a batch of at most 4),
    a view of some kind filled with values, a value of ``value_of(rng, dtype)``. Returns
    (dtype, shape, kind, value, x_buf, x, the bits of x_buf before, torch's x + value)."""
    rng = case.rng
    dtype = rng.choice(types)
    nd = rng.choice((1, 2, 2, 3))
    shape = tuple(extent(rng, most=300 if nd > 1 else 5000) for _ in range(nd))
    if nd == 3:
        shape = (rng.randint(0, 4),) + shape[1:]
    kind = rng.choice(IN_KINDS)
    value = value_of(rng, dtype)
    case.say(dtype=dtype, shape=shape, x=kind, value=value)
    x_buf, x = make_view(rng, shape, dtype, kind)
    fill(x_buf, case.gen)
    return dtype, shape, kind, value, x_buf, x, bits(x_buf).clone(), x + value


def test_add_on_random_views_equals_torch():
    for index in range(CASES):
        case = Case("add", index)
        rng = case.rng
        dtype, shape, kind, value, x_buf, x, x_before, expected = an_add_case(case, ADD_TYPES,
                                                                              add_value)
        if rng.random() < 0.2 and kind != "windows":  # in place
            case.say(out="x")
            if x.numel() > 1 and any(st == 0 and sz > 1 for sz, st in zip(x.shape, x.stride())):
                refused(case, lambda: tmakit.add(x, value, out=x), x_buf)  # a broadcast
                continue
            assert tmakit.add(x, value, out=x) is x, f"{case}: out=x not returned"
            torch.cuda.synchronize()
            assert torch.equal(bits(x), bits(expected)), f"{case}: wrong values in place"
            outside = ~view_mask(x_buf, x)
            assert torch.equal(bits(x_buf)[outside], x_before[outside]), \
                f"{case}: bytes outside x changed"
            continue
        out, buf, before, overlapping = an_out(case, shape, dtype, x_buf, x)
        if overlapping and not (out.data_ptr() == x.data_ptr() and out.stride() == x.stride()):
            refused(case, lambda: tmakit.add(x, value, out=out), x_buf)
            continue
        if overlapping:  # x itself by another name: in place, as documented
            assert tmakit.add(x, value, out=out) is out, f"{case}: out= not returned"
            torch.cuda.synchronize()
            assert torch.equal(bits(out), bits(expected)), f"{case}: wrong values in place"
            continue
        y = tmakit.add(x, value, out=out)
        torch.cuda.synchronize()
        assert y.shape == shape and y.dtype == dtype, f"{case}: {y.shape} {y.dtype}"
        check_out(case, y, buf, before, expected)
        assert torch.equal(bits(x_buf), x_before), f"{case}: x's buffer changed"


# The sums torch's type promotion makes of another dtype (bool and complex x, an integer x
# with a float value, a complex value): torch's own add, through the op's checks
PROMOTED_TYPES = (torch.bool, torch.complex64, torch.complex128, torch.int8, torch.uint8,
                  torch.int32, torch.int64, torch.float32, torch.bfloat16)


def promoted_value(rng, dtype):
    if dtype == torch.bool or dtype.is_complex:
        return rng.choice((True, False, 3, -2, 0.5, 1 - 2j))
    if dtype.is_floating_point:
        return rng.choice((1j, -0.5 + 2j))
    return rng.choice((0.5, -1e10, 1j))


def test_promoted_add_on_random_views_equals_torch():
    for index in range(max(1, CASES // 2)):
        case = Case("add promoted", index)
        dtype, shape, _, value, x_buf, x, x_before, expected = an_add_case(
            case, PROMOTED_TYPES, promoted_value)
        out, buf, before, overlapping = an_out(case, shape, expected.dtype, x_buf, x)
        if overlapping:  # a view of x's buffer, of x's dtype
            if expected.dtype != dtype:
                with pytest.raises(TypeError, match="out: dtype"):
                    tmakit.add(x, value, out=out)
                assert torch.equal(bits(x_buf), x_before), f"{case}: a refused call wrote"
            elif out.data_ptr() == x.data_ptr() and out.stride() == x.stride():
                # x itself by another name: in place, as for the launchers' dtypes
                assert tmakit.add(x, value, out=out) is out, f"{case}: out= not returned"
                torch.cuda.synchronize()
                assert torch.equal(bits(out), bits(expected)), f"{case}: wrong values in place"
            else:
                refused(case, lambda: tmakit.add(x, value, out=out), x_buf)
            continue
        y = tmakit.add(x, value, out=out)
        torch.cuda.synchronize()
        assert y.shape == shape and y.dtype == expected.dtype, f"{case}: {y.shape} {y.dtype}"
        check_out(case, y, buf, before, expected)
        assert torch.equal(bits(x_buf), x_before), f"{case}: x's buffer changed"


# --- stencil3x3 -----------------------------------------------------------------------------

TAPS = (0.25, -1.0, 0.5, 2.0, -3.0, 1.0, 0.125, 0.75, -0.5, 0.1, 1.0 / 3.0)


def conv_reference(x, taps):
    images = x if x.dim() == 3 else x[None]
    w = torch.tensor(taps, dtype=torch.float64, device="cuda").reshape(1, 1, 3, 3)
    y = torch.nn.functional.conv2d(images.double()[:, None], w, padding=1)[:, 0]
    return y if x.dim() == 3 else y[0]


def test_stencil_on_random_views_within_its_rounding():
    for index in range(max(1, CASES * 2 // 3)):
        case = Case("stencil3x3", index)
        rng = case.rng
        dtype = rng.choice((torch.float32, torch.float64, torch.float32, torch.float64,
                            torch.float16, torch.bfloat16))
        shape = (extent(rng, 400), extent(rng, 400))
        if rng.random() < 0.4:
            shape = (rng.randint(0, 4),) + shape
        kind = rng.choice(IN_KINDS)
        weight = [[rng.choice(TAPS) for _ in range(3)] for _ in range(3)]
        case.say(dtype=dtype, shape=shape, x=kind, weight=weight)
        x_buf, x = make_view(rng, shape, dtype, kind)
        fill(x_buf, case.gen)
        x_before = bits(x_buf).clone()
        out, buf, before, overlapping = an_out(case, shape, dtype, x_buf, x)
        if overlapping:
            refused(case, lambda: tmakit.stencil3x3(x, weight, out=out), x_buf)
            continue
        y = tmakit.stencil3x3(x, weight, out=out)
        torch.cuda.synchronize()
        assert out is None or y is out, f"{case}: out= not returned"
        assert y.shape == shape and y.dtype == dtype, f"{case}: {y.shape} {y.dtype}"
        assert torch.equal(bits(x_buf), x_before), f"{case}: x's buffer changed"
        if buf is not None:
            outside = ~view_mask(buf, y)
            assert torch.equal(bits(buf)[outside], before[outside]), \
                f"{case}: bytes outside the out view changed"
        if x.numel() == 0:
            continue
        # the taps as x's dtype holds them; the bound of test_ops_gpu.py's stencil tests
        taps = torch.tensor(weight, dtype=torch.float64).to(dtype).double().reshape(9).tolist()
        ref = conv_reference(x, taps)
        magnitude = conv_reference(x.abs(), [abs(t) for t in taps])
        if dtype in (torch.float32, torch.float64):
            allowed = 4 * torch.finfo(dtype).eps * magnitude + 1e-300
        else:
            allowed = (torch.finfo(dtype).eps * ref.abs() +
                       4 * torch.finfo(torch.float32).eps * magnitude + 2.0 ** -24)
        worst = ((y.double() - ref).abs() - allowed).max().item()
        assert worst <= 0, f"{case}: an element is {worst:.3g} beyond the bound"


# --- quantize_fp8 ---------------------------------------------------------------------------

def test_quantize_of_random_views_equals_the_contiguous_result():
    for index in range(max(1, CASES // 3)):
        case = Case("quantize_fp8", index)
        rng = case.rng
        dtype = rng.choice((torch.bfloat16, torch.float16, torch.float32))
        rows = extent(rng, 400)
        k = 16 * rng.choice((1, 8, 9, rng.randint(1, 200)))
        recipe = rng.choice(("tensor", "row", "block"))
        operand = rng.choice(("a", "b"))
        kind = rng.choice(IN_KINDS)
        case.say(dtype=dtype, shape=(rows, k), x=kind, recipe=recipe, operand=operand)
        x_buf, x = make_view(rng, (rows, k), dtype, kind)
        x_buf.copy_((torch.randn(x_buf.numel(), generator=case.gen, device="cuda") *
                     torch.exp2(torch.randint(-8, 9, (x_buf.numel(),), generator=case.gen,
                                              device="cuda").float())).to(dtype))
        x_before = bits(x_buf).clone()
        q, s = tmakit.quantize_fp8(x, recipe, operand=operand)
        want_q, want_s = tmakit.quantize_fp8(x.contiguous().clone(), recipe, operand=operand)
        torch.cuda.synchronize()
        assert q.shape == (rows, k) and q.dtype == FP8, f"{case}: {q.shape} {q.dtype}"
        assert torch.equal(q.view(torch.uint8), want_q.view(torch.uint8)), f"{case}: bytes differ"
        assert s.shape == want_s.shape and s.stride() == want_s.stride(), f"{case}: scale layout"
        assert torch.equal(bits(s), bits(want_s)), f"{case}: scales differ"
        assert torch.equal(bits(x_buf), x_before), f"{case}: x's buffer changed"


# --- gemm_fp8 -------------------------------------------------------------------------------

def gemm_operand(case, rows, k):
    """An fp8 (rows, K) operand of a layout the GEMM reads (rows 16-byte aligned, any pitch of
    whole 16 bytes, a start on 16 bytes)."""
    pitch = k + 16 * case.rng.choice((0, 0, 1, 2, 5))
    offset = 16 * case.rng.choice((0, 0, 1, 3))
    buf = torch.empty(offset + rows * pitch, dtype=torch.uint8, device="cuda")
    view = buf.as_strided((rows, k), (pitch, 1), offset).view(FP8)
    view.copy_((torch.randn(rows, k, generator=case.gen, device="cuda") * 2).to(FP8))
    return view


def scale_tensor(case, shape):
    """float32 scales in [1/4, 4) of ``shape``, contiguous, transposed or strided."""
    kind = case.rng.choice(("contiguous", "transposed", "strided"))
    values = torch.rand(shape, generator=case.gen, device="cuda") * 3.75 + 0.25
    if kind == "transposed":
        t = torch.empty(shape[::-1], device="cuda").t()
    elif kind == "strided":
        t = torch.empty(shape[0], 2 * shape[1] + 1, device="cuda")[:, 1::2]
    else:
        t = torch.empty(shape, device="cuda")
    t.copy_(values)
    return t, kind


def test_gemm_on_random_shapes_and_scale_layouts_within_its_bound():
    from test_gemm_recipes_gpu import assert_close  # the recipes' fp64 reference and bound

    for index in range(max(1, CASES // 4)):
        case = Case("gemm_fp8", index)
        rng = case.rng
        m, n = extent(rng, 700), extent(rng, 700)
        m, n = max(m, 1), max(n, 1)
        k = 16 * rng.choice((1, 8, 9, rng.randint(1, 160)))
        recipe = rng.choice(("tensor", "row", "block"))
        accumulate = rng.choice(("promoted", "fast"))
        out_dtype = rng.choice((torch.bfloat16, torch.float16))
        alpha = rng.choice((1.0, 0.75, 2.0))
        case.say(shape=(m, n, k), recipe=recipe, accumulate=accumulate, out_dtype=out_dtype,
                 alpha=alpha)
        a, b = gemm_operand(case, m, k), gemm_operand(case, n, k)
        kb, nb = (k + 127) // 128, (n + 127) // 128
        if recipe == "tensor":
            sa, sb = torch.ones(m, 1, device="cuda") * 0.5, torch.ones(1, n, device="cuda") * 1.5
            scale_a, scale_b = 0.5, torch.tensor([1.5], device="cuda")
        else:
            (sa, ka), (sb, kb_) = (scale_tensor(case, (m, 1) if recipe == "row" else (m, kb)),
                                   scale_tensor(case, (1, n) if recipe == "row" else (nb, kb)))
            case.say(scale_a=ka, scale_b=kb_)
            scale_a, scale_b = sa, sb
        out = None
        buf = before = None
        if rng.random() < 0.5:
            pitch = n + rng.choice((0, 1, 8, 37))
            offset = 8 * rng.choice((0, 1, 2))  # 16-byte aligned data
            buf = torch.empty(offset + m * pitch + 8, dtype=out_dtype, device="cuda")
            out = buf.as_strided((m, n), (pitch, 1), offset)
            before = sentinel(buf, case.gen)
            case.say(out_pitch=pitch, out_offset=offset)
        call = lambda: tmakit.gemm_fp8(a, b, scale_a=scale_a, scale_b=scale_b, alpha=alpha,  # noqa: E731
                                       out=out, out_dtype=out_dtype, accumulate=accumulate)
        # (torch's reading of the shapes: block scales of one k-block and one block of b's
        # rows have the row-wise or per-tensor shapes, and mean the same)
        read_as_block = recipe == "block" and not (
            (sa.numel() == 1 and sb.numel() == 1) or
            (tuple(sa.shape) == (m, 1) and tuple(sb.shape) == (1, n)))
        if read_as_block and accumulate == "fast":
            try:
                call()
            except ValueError as e:
                assert "promot" in str(e) or "accum" in str(e), f"{case}: {e}"
            else:
                pytest.fail(f"{case}: fast accumulation with 128-block scales not refused")
            continue
        d = call()
        torch.cuda.synchronize()
        assert d.shape == (m, n) and d.dtype == out_dtype, f"{case}: {d.shape} {d.dtype}"
        assert out is None or d is out, f"{case}: out= not returned"
        assert_close(d, a, b, sa, sb, alpha, accumulate, recipe, case)
        if buf is not None:
            outside = ~view_mask(buf, out)
            assert torch.equal(bits(buf)[outside], before[outside]), \
                f"{case}: bytes outside the out view changed"


# --- CUDA graphs and torch.compile on random views ------------------------------------------

def an_op(case):
    """(name, x's dtype and shape, fn(x) -> tuple of outputs) of a random op."""
    rng = case.rng
    name = rng.choice(("transpose", "add", "stencil3x3", "quantize_fp8"))
    if name == "transpose":
        dtype = rng.choice(TRANSPOSE_TYPES[:-1])
        return name, dtype, (extent(rng, 300), extent(rng, 300)), lambda x: (tmakit.transpose(x),)
    if name == "add":
        dtype = rng.choice(ADD_TYPES)
        value = add_value(rng, dtype)
        return name, dtype, (extent(rng, 300), extent(rng, 300)), lambda x: (tmakit.add(x, value),)
    if name == "stencil3x3":
        dtype = rng.choice((torch.float32, torch.float64, torch.bfloat16))
        weight = [[rng.choice(TAPS) for _ in range(3)] for _ in range(3)]
        shape = (rng.randint(1, 3), extent(rng, 200), extent(rng, 200))
        return name, dtype, shape, lambda x: (tmakit.stencil3x3(x, weight),)
    dtype = rng.choice((torch.bfloat16, torch.float16, torch.float32))
    recipe, operand = rng.choice(("tensor", "row", "block")), rng.choice(("a", "b"))
    shape = (extent(rng, 300), 16 * rng.randint(1, 40))
    return name, dtype, shape, lambda x: tmakit.quantize_fp8(x, recipe, operand=operand)


def refill(buf, case):
    if buf.dtype in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
        buf.copy_((torch.randn(buf.numel(), generator=case.gen, device="cuda",
                               dtype=torch.float64) * 50).to(buf.dtype))
    else:
        fill(buf, case.gen)


def an_op_on_a_view(kind_of_case, index):
    """(case, fn, x's buffer, x): a random op (an_op) on a random view of random values."""
    case = Case(kind_of_case, index)
    name, dtype, shape, fn = an_op(case)
    kind = case.rng.choice(IN_KINDS)
    case.say(op=name, dtype=dtype, shape=shape, x=kind)
    x_buf, x = make_view(case.rng, shape, dtype, kind)
    refill(x_buf, case)
    return case, fn, x_buf, x


def same_outputs(case, got, want, what):
    for g, w in zip(got, want):
        assert g.shape == w.shape and torch.equal(bits(g), bits(w)), f"{case}: {what} differs"


@pytest.mark.filterwarnings("ignore:The CUDA Graph is empty")  # (an empty view: no work)
def test_random_views_replay_in_cuda_graphs_with_new_values():
    for index in range(max(1, CASES // 10)):
        case, fn, x_buf, x = an_op_on_a_view("graph", index)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn(x)  # off the capture first (and any workspace the call needs)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            captured = fn(x)
        refill(x_buf, case)  # new values in the same memory: the replay must read them
        graph.replay()
        torch.cuda.synchronize()
        same_outputs(case, captured, fn(x), "the replay")


def test_random_views_compile_fullgraph_as_eager():
    torch._dynamo.reset()
    for index in range(max(1, CASES // 30)):
        case, fn, _, x = an_op_on_a_view("compile", index)
        compiled = torch.compile(fn, fullgraph=True, dynamic=False)
        same_outputs(case, compiled(x), fn(x), "the compiled call")


def test_ops_compile_with_dynamic_shapes():
    """torch.compile(dynamic=True): the ops' fake implementations see symbolic sizes; three
    shapes through one compiled function each, every result equal to the eager call."""
    torch._dynamo.reset()
    gen = torch.Generator(device="cuda").manual_seed(SEED)

    def values(*shape, dtype=torch.float32):
        return (torch.randn(*shape, generator=gen, device="cuda") * 4).to(dtype)

    def quantize(x):
        return tmakit.quantize_fp8(x, "block", operand="b")

    def gemm(a, b, sa, sb):
        return tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, accumulate="fast")

    ops = {
        "transpose": (lambda x: tmakit.transpose(x), lambda m: (values(m, 2 * m + 1),)),
        "add": (lambda x: tmakit.add(x, 0.1), lambda m: (values(3, m, 40).to(torch.bfloat16),)),
        "stencil3x3": (lambda x: tmakit.stencil3x3(x, [[0.0, 1.0, 0.0], [1.0, -4.0, 1.0],
                                                       [0.0, 1.0, 0.0]]),
                       lambda m: (values(2, m, m + 3, dtype=torch.float64),)),
        "quantize_fp8": (quantize, lambda m: (values(m, 272, dtype=torch.bfloat16),)),
        "gemm_fp8": (gemm, lambda m: (values(m, 256).to(FP8), values(384, 256).to(FP8),
                                      torch.rand(m, 1, generator=gen, device="cuda") + 0.5,
                                      torch.rand(1, 384, generator=gen, device="cuda") + 0.5)),
    }
    for name, (fn, inputs) in ops.items():
        compiled = torch.compile(fn, fullgraph=True, dynamic=True)
        for m in (37, 64, 129):
            args = inputs(m)
            got, want = compiled(*args), fn(*args)
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            same_outputs(f"{name} at {m} (dynamic=True)", got, want, "the compiled call")
