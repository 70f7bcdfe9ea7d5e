"""tmakit.quantize_fp8: the op's registration, tracing and bad input without a GPU; on a GPU,
bit for bit against a torch reference that computes the same (every recipe, operand and
dtype on odd shapes, non-finite groups), the scales' layouts, CUDA graphs, torch.compile and
a round trip through tmakit.gemm_fp8."""

import math
import re

import pytest

torch = pytest.importorskip("torch")
import tmakit  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

FP8 = torch.float8_e4m3fn
FLT_MIN = 2.0 ** -126
DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _scale_layout(rows, k, recipe, operand):
    """(shape, strides) of the scale tensor the GEMM takes."""
    kb = (k + 127) // 128
    if recipe == "tensor":
        return (), ()
    if recipe == "row":
        return ((rows, 1), (1, 1)) if operand == "a" else ((1, rows), (rows, 1))
    if operand == "a":
        return (rows, kb), (1, rows)
    return ((rows + 127) // 128, kb), (kb, 1)


# --- without a GPU --------------------------------------------------------------------------


def test_the_op_is_registered_and_declares_what_it_writes():
    import tmakit.ops  # noqa: F401

    schema = str(torch.ops.tmakit.quantize_fp8_out.default._schema)
    assert re.search(r"Tensor\(a!\) x_fp8", schema) and re.search(r"Tensor\(b!\) scale", schema)


@pytest.mark.parametrize("recipe", ["tensor", "row", "block"])
@pytest.mark.parametrize("operand", ["a", "b"])
def test_tracing_records_the_op_with_the_gemms_scale_layouts(recipe, operand):
    with FakeTensorMode():
        x = torch.empty(129, 144, device="cuda:0", dtype=torch.bfloat16)
    graph = make_fx(lambda x: tmakit.quantize_fp8(x, recipe, operand=operand),
                    tracing_mode="fake")(x)
    assert "tmakit.quantize_fp8_out" in graph.code, graph.code
    with FakeTensorMode():
        x = torch.empty(129, 144, device="cuda:0", dtype=torch.bfloat16)
        q, s = tmakit.quantize_fp8(x, recipe, operand=operand)
    assert (q.shape, q.dtype) == ((129, 144), FP8)
    shape, strides = _scale_layout(129, 144, recipe, operand)
    assert (tuple(s.shape), s.dtype) == (shape, torch.float32)
    if s.numel() > 1:
        assert s.stride() == strides


def test_bad_input_is_refused_naming_the_argument(fake_cuda_views):
    with pytest.raises(ValueError, match=r"x: is on cpu; .*x\.cuda\(\)"):
        tmakit.quantize_fp8(torch.zeros(4, 16))
    with FakeTensorMode():
        good = torch.empty(8, 32, device="cuda:0", dtype=torch.bfloat16)
        with pytest.raises(TypeError, match=r"^x: dtype torch.float64; quantize_fp8 reads"):
            tmakit.quantize_fp8(torch.empty(8, 32, device="cuda:0", dtype=torch.float64))
        with pytest.raises(TypeError, match=r"^x: dtype torch.int32"):
            tmakit.quantize_fp8(torch.empty(8, 32, device="cuda:0", dtype=torch.int32))
        with pytest.raises(ValueError, match=r"^x: expected 2 dimensions \(rows, K\), got shape "
                                             r"\(2, 8, 32\)"):
            tmakit.quantize_fp8(torch.empty(2, 8, 32, device="cuda:0"))
        with pytest.raises(ValueError, match=r"^x: K = 40 is not a positive multiple of 16 .*pad "
                                             r"K to 48 .*pad\(x, \(0, 8\)\)"):
            tmakit.quantize_fp8(torch.empty(8, 40, device="cuda:0"))
        with pytest.raises(ValueError, match=r"^x: K = 0 is not a positive multiple of 16"):
            tmakit.quantize_fp8(torch.empty(8, 0, device="cuda:0"))
        # rows the kernels cannot read in place are taken (copied contiguous at the launch):
        # a transpose, a broadcast, a pitch off 16 bytes, a column step
        for x in (torch.empty(32, 16, device="cuda:0").t(),
                  torch.empty(1, 32, device="cuda:0").expand(8, 32),
                  torch.empty(8, 36, device="cuda:0").as_strided((8, 16), (18, 1)),
                  torch.empty(8, 64, device="cuda:0")[:, ::2]):
            for recipe in ("tensor", "row", "block"):
                q, s = tmakit.quantize_fp8(x, recipe)
                assert q.shape == x.shape and q.dtype == FP8
                assert s.shape == {"tensor": (), "row": (x.shape[0], 1),
                                   "block": (x.shape[0], (x.shape[1] + 127) // 128)}[recipe]
        with pytest.raises(ValueError, match=r"^recipe: 'col' is not 'tensor', 'row' or 'block'"):
            tmakit.quantize_fp8(good, "col")
        with pytest.raises(ValueError, match=r"^operand: 'c' is not 'a' or 'b'"):
            tmakit.quantize_fp8(good, operand="c")
        with pytest.raises(ValueError, match=r"^x.cols: K = 40976 is too long for the row recipe "
                                             r"\(rule Q5\).*K <= 40960 for FLOAT32"):
            tmakit.quantize_fp8(torch.empty(2, 40976, device="cuda:0"), "row")
        # ... which the block recipe takes
        q, s = tmakit.quantize_fp8(torch.empty(2, 40976, device="cuda:0"), "block")
        assert s.shape == (2, 321)


# --- on a GPU ---------------------------------------------------------------------------------


def _reference(x, recipe, operand):
    """(x_fp8 bytes, scale) computed on the CPU in float32 as the kernels do: per group
    amax = max |x|, scale = amax / 448 (1 for amax 0, at least 2^-126), x * (1 / scale) cut to
    +-448 and rounded to nearest even e4m3; NaN bytes made 0x7F. The scale in the GEMM's
    shape (contiguous)."""
    x = x.detach().cpu().float()
    rows, k = x.shape
    kb = (k + 127) // 128
    if recipe == "tensor":
        groups = x.reshape(1, 1, 1, rows * k)
    elif recipe == "row":
        groups = x.reshape(rows, 1, 1, k)
    else:
        group_rows = 1 if operand == "a" else 128
        padded_rows = (rows + group_rows - 1) // group_rows * group_rows
        padded = torch.zeros(padded_rows, kb * 128)
        padded[:rows, :k] = x
        # (row groups, group rows, k-blocks, 128) -> (row groups, k-blocks, group rows * 128)
        groups = padded.reshape(padded_rows // group_rows, group_rows, kb, 128)
        groups = groups.permute(0, 2, 1, 3).reshape(padded_rows // group_rows, kb, 1, -1)
    amax = groups.abs().amax(dim=(2, 3))  # NaN propagates
    scale = amax / torch.full_like(amax, 448.0)  # NOTE: a quotient rounded once
    scale = torch.where(scale < FLT_MIN, torch.full_like(scale, FLT_MIN), scale)
    scale = torch.where(amax == 0, torch.ones_like(scale), scale)
    inverse = 1.0 / scale
    # each element's group's inverse
    if recipe == "tensor":
        inv = inverse.reshape(1, 1).expand(rows, k)
    elif recipe == "row":
        inv = inverse.reshape(rows, 1).expand(rows, k)
    else:
        group_rows = 1 if operand == "a" else 128
        inv = inverse.repeat_interleave(group_rows, 0).repeat_interleave(128, 1)[:rows, :k]
    product = (x * inv).clamp(-448.0, 448.0)  # NOTE: torch's cast does not saturate
    bits = product.to(FP8).view(torch.uint8)
    bits = torch.where((bits & 0x7F) == 0x7F, torch.full_like(bits, 0x7F), bits)
    if recipe == "tensor":
        scale = scale.reshape(())
    elif recipe == "row":
        scale = scale.reshape(rows, 1) if operand == "a" else scale.reshape(1, rows)
    return bits, scale


def _same_bits(got, want):
    got, want = got.cpu(), want.cpu()
    both_nan = torch.isnan(got) & torch.isnan(want)
    return bool(((got.view(torch.int32) == want.view(torch.int32)) | both_nan).all())


def _data(rows, k, dtype, seed):
    """Values over many binades, a magnitude of their own per row and per 128 columns, some
    zeros, within fp16's range."""
    g = torch.Generator().manual_seed(seed)
    v = torch.rand(rows, k, generator=g) * 2 - 1
    v = v * torch.exp2(torch.randint(-6, 7, (rows, k), generator=g).float())
    group = ((torch.arange(rows)[:, None] * 7 + torch.arange(k)[None, :] // 128 * 3) % 13) - 6
    v = v * torch.exp2(group.float())
    v[torch.rand(rows, k, generator=g) < 0.06] = 0.0
    return v.to(dtype).cuda()


def _check(x, recipe, operand):
    q, s = tmakit.quantize_fp8(x, recipe, operand=operand)
    torch.cuda.synchronize()
    want_bits, want_scale = _reference(x, recipe, operand)
    shape, strides = _scale_layout(x.shape[0], x.shape[1], recipe, operand)
    assert tuple(s.shape) == shape and (s.numel() <= 1 or s.stride() == strides)
    assert q.dtype == FP8 and q.shape == x.shape and q.is_contiguous()
    got_bits = q.view(torch.uint8).cpu()
    wrong = (got_bits != want_bits).nonzero()
    assert wrong.shape[0] == 0, f"{wrong.shape[0]} bytes differ, first at {wrong[:5].tolist()}"
    assert _same_bits(s.contiguous(), want_scale.contiguous())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [1, 7, 129])
@pytest.mark.parametrize("k", [16, 144, 7168])
@pytest.mark.parametrize("recipe,operand", [("tensor", "a"), ("row", "a"), ("row", "b"),
                                            ("block", "a"), ("block", "b")])
def test_quantize_matches_the_reference_bit_for_bit(dtype, rows, k, recipe, operand):
    _check(_data(rows, k, dtype, rows * 131 + k), recipe, operand)


@pytest.mark.gpu
@pytest.mark.parametrize("recipe,operand", [("tensor", "a"), ("row", "a"), ("block", "a"),
                                            ("block", "b")])
def test_quantize_on_padded_rows_and_the_bench_shapes(recipe, operand):
    x = _data(300, 4096 + 64, torch.bfloat16, 5)[:, :4096]  # rows 8320 bytes apart
    _check(x, recipe, operand)
    _check(_data(16, 7168, torch.bfloat16, 6), recipe, operand)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("recipe,operand", [("tensor", "a"), ("row", "a"), ("block", "a"),
                                            ("block", "b")])
def test_non_finite_groups(dtype, recipe, operand):
    x = _data(5, 272, dtype, 9)
    x[0, 3] = math.nan
    x[1, 200] = -math.inf
    x[2, 140] = math.inf
    x[3] = 0.0
    x[4] = 0.0
    x[4, 9] = torch.finfo(dtype).smallest_normal / 4  # a subnormal amax
    _check(x, recipe, operand)


@pytest.mark.gpu
def test_empty_rows_give_empty_outputs_and_a_tensor_scale_of_one():
    x = torch.empty(0, 256, device="cuda", dtype=torch.bfloat16)
    q, s = tmakit.quantize_fp8(x, "tensor")
    assert q.shape == (0, 256) and s.item() == 1.0
    q, s = tmakit.quantize_fp8(x, "block", operand="a")
    assert s.shape == (0, 2)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["offset", "pitch+1", "transposed", "step", "broadcast"])
@pytest.mark.parametrize("recipe,operand", [("tensor", "a"), ("row", "a"), ("row", "b"),
                                            ("block", "a"), ("block", "b")])
def test_any_layout_of_x_gives_the_contiguous_result(layout, recipe, operand):
    values = _data(131, 272, torch.bfloat16, 11)
    if layout == "broadcast":
        values = values[:1].expand(131, 272)
        x = values
    else:
        rows, k = values.shape
        if layout == "offset":  # every row one element off 16 bytes
            x = torch.empty(rows * k + 1, device="cuda", dtype=values.dtype)[1:].view(rows, k)
        elif layout == "pitch+1":  # rows 546 bytes apart
            x = torch.empty(rows, k + 1, device="cuda", dtype=values.dtype)[:, :k]
        elif layout == "transposed":
            x = torch.empty(k, rows, device="cuda", dtype=values.dtype).t()
        else:  # every other element
            x = torch.empty(rows, 2 * k, device="cuda", dtype=values.dtype)[:, ::2]
        x.copy_(values)
    before = x.clone()
    q, s = tmakit.quantize_fp8(x, recipe, operand=operand)
    want_q, want_s = tmakit.quantize_fp8(values.contiguous(), recipe, operand=operand)
    assert torch.equal(q.view(torch.uint8), want_q.view(torch.uint8))
    assert s.shape == want_s.shape and s.stride() == want_s.stride()
    assert _same_bits(s.contiguous(), want_s.contiguous())
    assert torch.equal(x, before)  # x is read, never written
    _check(x, recipe, operand)


@pytest.mark.gpu
@pytest.mark.parametrize("recipe", ["tensor", "row", "block"])
def test_quantize_captures_into_a_cuda_graph_and_reads_the_current_x(recipe):
    x = _data(64, 512, torch.bfloat16, 1)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        tmakit.quantize_fp8(x, recipe)  # warm up off the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        q, scale = tmakit.quantize_fp8(x, recipe)
    for seed in (2, 3):
        x.copy_(_data(64, 512, torch.bfloat16, seed))
        graph.replay()
        torch.cuda.synchronize()
        want_bits, want_scale = _reference(x, recipe, "a")
        assert torch.equal(q.view(torch.uint8).cpu(), want_bits)
        assert _same_bits(scale.contiguous(), want_scale.contiguous())


@pytest.mark.gpu
def test_torch_compile_fullgraph_traces_the_quantizer():
    def f(x, w):
        qx, sx = tmakit.quantize_fp8(x, "row", operand="a")
        qw, sw = tmakit.quantize_fp8(w, "block", operand="b")
        return qx, sx, qw, sw

    x, w = _data(33, 256, torch.bfloat16, 1), _data(200, 256, torch.float32, 2)
    compiled = torch.compile(f, fullgraph=True)
    for got, want in zip(compiled(x, w), f(x, w)):
        assert got.shape == want.shape and got.stride() == want.stride()
        assert torch.equal(got.view(torch.uint8) if got.dtype == FP8 else got.view(torch.int32),
                           want.view(torch.uint8) if want.dtype == FP8 else want.view(torch.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("recipe", ["tensor", "row", "block"])
def test_round_trip_through_the_gemm(recipe):
    """quantize_fp8 of x (M, K) and w (N, K), then gemm_fp8 with the scales as returned: D
    against the dequantised product in float64, within 2^-7 of sum |a b|. Skipped where the
    GEMM does not take the recipe's scale tensors."""
    m, n, k = 129, 200, 1040
    x, w = _data(m, k, torch.bfloat16, 3), _data(n, k, torch.bfloat16, 4)
    qx, sx = tmakit.quantize_fp8(x, recipe, operand="a")
    qw, sw = tmakit.quantize_fp8(w, recipe, operand="b")
    try:
        d = tmakit.gemm_fp8(qx, qw, scale_a=sx, scale_b=sw)
    except (TypeError, ValueError) as e:
        pytest.skip(f"gemm_fp8 does not take {recipe} scales yet: {e}")
    torch.cuda.synchronize()
    a = qx.double()
    b = qw.double()
    if recipe == "tensor":
        a, b = a * sx.double(), b * sw.double()
    elif recipe == "row":
        a, b = a * sx.double(), b * sw.double().reshape(n, 1)
    else:
        a = a * sx.double().repeat_interleave(128, 1)[:, :k]
        b = b * sw.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
    want = a @ b.t()
    bound = (a.abs() @ b.abs().t()) * 2.0 ** -7
    assert bool(((d.double() - want).abs() <= bound).all())


@pytest.mark.gpu
def test_the_registered_op_checks_what_it_writes():
    """torch.ops.tmakit.quantize_fp8_out called by hand (tmakit.quantize_fp8 allocates its
    outputs): an x_fp8 or scale of another shape, layout or dtype is refused naming it,
    nothing written; the layouts tmakit.quantize_fp8 makes are taken."""
    x = _data(300, 512, torch.bfloat16, 7)
    op = torch.ops.tmakit.quantize_fp8_out

    def outputs(recipe, operand):
        shape, strides = _scale_layout(300, 512, recipe, operand)
        scale = torch.empty_strided(shape, strides, device="cuda").fill_(-1.0)
        return torch.zeros(300, 512, device="cuda", dtype=torch.uint8).view(FP8), scale

    bad = [
        ("row", "a", lambda q, s: (q[:100], s), "x_fp8"),
        ("row", "a", lambda q, s: (q.view(torch.uint8), s), "x_fp8"),
        ("row", "a", lambda q, s: (q.view(torch.uint8).t().contiguous().t().view(FP8), s),
         "x_fp8"),
        ("row", "a", lambda q, s: (q, s[:10]), "scale"),
        ("row", "b", lambda q, s: (q, s.t()), "scale"),
        ("block", "a", lambda q, s: (q, s.contiguous()), "scale"),
        ("block", "b", lambda q, s: (q, s.double()), "scale"),
        ("tensor", "a", lambda q, s: (q, s.reshape(1)), "scale"),
    ]
    for recipe, operand, spoil, name in bad:
        q, s = spoil(*outputs(recipe, operand))
        before_q, before_s = q.view(torch.uint8).clone(), s.clone()
        with pytest.raises((ValueError, TypeError), match=f"^{name}: "):
            op(x, recipe, operand, q, s)
        torch.cuda.synchronize()
        assert torch.equal(q.view(torch.uint8), before_q) and torch.equal(s, before_s), name
    for recipe, operand in (("tensor", "a"), ("row", "a"), ("row", "b"), ("block", "a"),
                            ("block", "b")):
        q, s = outputs(recipe, operand)
        op(x, recipe, operand, q, s)
        want_q, want_s = tmakit.quantize_fp8(x, recipe, operand=operand)
        assert torch.equal(q.view(torch.uint8), want_q.view(torch.uint8))
        assert torch.equal(s, want_s)
