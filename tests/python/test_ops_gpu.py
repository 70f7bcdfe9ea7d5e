"""The torch ops on a Hopper GPU against their PyTorch counterparts, on odd shapes; streams,
CUDA graphs, torch.compile and bad input."""

import math

import pytest

torch = pytest.importorskip("torch")
import tmakit  # noqa: E402

pytestmark = pytest.mark.gpu

FP8 = torch.float8_e4m3fn
LAPLACE = [[-1.0, -1.0, -1.0], [-1.0, 8.0, -1.0], [-1.0, -1.0, -1.0]]


def padded(rows, cols, dtype):
    """A (rows, cols) view whose rows start a multiple of 16 bytes apart (TMA's row rule), for
    odd widths; aligned rows get 16 bytes of padding too, so the row stride is exercised."""
    esize = dtype.itemsize
    stride = -(-cols * esize // 16) * 16 // esize
    if stride == cols and rows > 1:
        stride += max(1, 16 // esize)
    return torch.empty(rows, stride, dtype=dtype, device="cuda")[:, :cols]


def random_fp8(rows, cols, pad=True):
    values = (torch.randn(rows, cols, device="cuda") * 2).to(FP8)
    if not pad:
        return values
    out = padded(rows, cols, torch.uint8).view(FP8)
    out.copy_(values)
    return out


# --- GEMM -----------------------------------------------------------------------------------

GEMM_SHAPES = [(1, 16, 16), (3, 40, 48), (16, 129, 64), (64, 200, 128), (100, 257, 272),
               (129, 77, 512), (300, 520, 1024), (1000, 1024, 2048), (2048, 4096, 512)]


def gemm_reference(a, b, scale):
    """The exact product (float64) and sum |a b| per element, both scaled."""
    af, bf = a.to(torch.float64), b.to(torch.float64)
    return (af @ bf.T) * scale, (af.abs() @ bf.abs().T) * abs(scale)


def assert_gemm_close(d, a, b, scale, accumulate="promoted"):
    """|D - exact| within one rounding of D's type plus the accumulation error the GEMM
    documents (include/tmakit/kernels/gemm.hpp): 2^-10 of sum |a b| promoted; for fast,
    2^-13 per 32 of K, at least 2^-11."""
    ref, magnitude = gemm_reference(a, b, scale)
    k = a.shape[1]
    accumulation = 2.0 ** -10 if accumulate == "promoted" else max(2.0 ** -11,
                                                                   2.0 ** -13 * k / 32)
    ulp = 2.0 ** -8 if d.dtype == torch.bfloat16 else 2.0 ** -11
    error = (d.to(torch.float64) - ref).abs()
    allowed = ulp * ref.abs() + accumulation * magnitude + 1e-30
    worst = (error - allowed).max().item()
    assert worst <= 0, f"an element is {worst:.3g} beyond the bound"


@pytest.mark.parametrize("m,n,k", GEMM_SHAPES)
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_gemm_matches_the_exact_product_within_rounding(m, n, k, out_dtype):
    torch.manual_seed(m * 7 + n * 3 + k)
    a, b = random_fp8(m, k, pad=m % 2 == 1), random_fp8(n, k, pad=n % 2 == 0)
    d = tmakit.gemm_fp8(a, b, scale_a=0.5, scale_b=0.25, alpha=3.0, out_dtype=out_dtype)
    assert d.shape == (m, n) and d.dtype == out_dtype
    assert_gemm_close(d, a, b, 0.5 * 0.25 * 3.0)


@pytest.mark.parametrize("m,n,k", [(16, 64, 64), (128, 256, 512), (1000, 1024, 2048)])
def test_gemm_agrees_with_torch_scaled_mm(m, n, k):
    torch.manual_seed(k)
    a, b = random_fp8(m, k, pad=False), random_fp8(n, k, pad=False)
    one = torch.ones((), device="cuda")
    ours = tmakit.gemm_fp8(a, b, scale_a=2.0, scale_b=0.5)
    theirs = torch._scaled_mm(a, b.t(), scale_a=one * 2.0, scale_b=one * 0.5,
                              out_dtype=torch.bfloat16)
    assert_gemm_close(ours, a, b, 1.0)
    assert_gemm_close(theirs, a, b, 1.0)  # the same bound holds for cuBLASLt's result


@pytest.mark.parametrize("m,n,k", [(8, 256, 4096), (256, 512, 4096), (2048, 2048, 1024)])
def test_gemm_fast_accumulation_within_its_bound(m, n, k):
    torch.manual_seed(n)
    a, b = random_fp8(m, k, pad=False), random_fp8(n, k, pad=False)
    d = tmakit.gemm_fp8(a, b, scale_a=0.5, accumulate="fast")
    assert_gemm_close(d, a, b, 0.5, accumulate="fast")


def test_gemm_device_scales_equal_host_scales_and_are_read_at_run_time():
    a, b = random_fp8(64, 512, pad=False), random_fp8(256, 512, pad=False)
    host = tmakit.gemm_fp8(a, b, scale_a=0.75, scale_b=0.125, alpha=2.0)
    sa = torch.tensor([0.75], device="cuda")
    sb = torch.tensor(0.125, device="cuda")
    assert torch.equal(tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, alpha=2.0), host)
    # Captured with the tensors: a replay reads the value they hold then.
    out = torch.empty_like(host)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, alpha=2.0, out=out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, alpha=2.0, out=out)
    sa.fill_(1.5)  # twice the scale: every element doubles exactly
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, host * 2)
    with pytest.raises(ValueError, match=r"scale_a: shape \(2,\); expected one float"):
        tmakit.gemm_fp8(a, b, scale_a=torch.ones(2, device="cuda"))
    with pytest.raises(ValueError, match="scale_b: is on cpu"):
        tmakit.gemm_fp8(a, b, scale_b=torch.ones(1))


def test_gemm_writes_only_its_out_view():
    a, b = random_fp8(33, 64), random_fp8(45, 64)
    base = torch.full((33, 64), 7.0, dtype=torch.bfloat16, device="cuda")
    out = base[:, 8:53]
    assert tmakit.gemm_fp8(a, b, out=out) is out
    assert_gemm_close(out, a, b, 1.0)
    assert (base[:, :8] == 7).all() and (base[:, 53:] == 7).all()


def test_gemm_with_k_zero_or_empty_extents():
    a, b = torch.empty(5, 0, dtype=FP8, device="cuda"), torch.empty(3, 0, dtype=FP8, device="cuda")
    assert (tmakit.gemm_fp8(a, b) == 0).all()
    assert tmakit.gemm_fp8(torch.empty(0, 16, dtype=FP8, device="cuda"),
                           random_fp8(4, 16)).shape == (0, 4)


# --- transpose ------------------------------------------------------------------------------


# --- layouts ---------------------------------------------------------------------------------

# Views of every kind the ops take: TMA rows (dense, padded), rows TMA cannot describe (a pitch
# off 16 bytes, a start off 16 bytes), and rows of elements that are not consecutive.
LAYOUTS = ["dense", "padded", "pitch+1", "offset", "transposed", "step"]


def laid_out(values, layout):
    """A CUDA tensor equal to ``values`` (contiguous, at least 1-D) in the named layout."""
    shape = tuple(values.shape)
    *lead, cols = shape
    dtype, dev = values.dtype, values.device
    if layout == "dense":
        view = torch.empty(shape, dtype=dtype, device=dev)
    elif layout == "padded":  # rows a multiple of 16 bytes apart, plus 16 bytes
        pitch = -(-cols * dtype.itemsize // 16) * 16 // dtype.itemsize + max(1, 16 // dtype.itemsize)
        view = torch.empty((*lead, pitch), dtype=dtype, device=dev)[..., :cols]
    elif layout == "pitch+1":  # rows one element further apart
        view = torch.empty((*lead, cols + 1), dtype=dtype, device=dev)[..., :cols]
    elif layout == "offset":  # every row one element off the allocation's alignment
        view = torch.empty((*lead, cols + 3), dtype=dtype, device=dev)[..., 1:cols + 1]
    elif layout == "transposed":  # the elements of a row are not consecutive
        view = torch.empty(shape[::-1], dtype=dtype, device=dev).permute(
            *range(len(shape) - 1, -1, -1))
    elif layout == "step":  # every other element
        view = torch.empty((*lead, 2 * cols), dtype=dtype, device=dev)[..., ::2]
    else:
        raise AssertionError(layout)
    view.copy_(values)
    assert torch.equal(view, values)
    return view


def sample(shape, dtype, seed):
    """Values of every bit pattern class for ``dtype`` (integers across the whole range)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen, device="cuda").bool()
    if dtype.is_complex:
        return torch.randn(shape, generator=gen, dtype=dtype, device="cuda")
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float64) * 100).to(dtype)
    info = torch.iinfo(dtype)
    bits = torch.randint(-2 ** 63, 2 ** 63 - 1, shape, generator=gen, dtype=torch.int64,
                         device="cuda")
    if dtype == torch.int64:
        return bits
    return (bits % (int(info.max) - int(info.min) + 1) + int(info.min)).to(dtype)


# --- transpose ------------------------------------------------------------------------------

TRANSPOSE_TYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.bfloat16,
                   torch.float16, torch.int32, torch.float32, torch.int64, torch.float64,
                   torch.complex64, torch.complex128]
TRANSPOSE_SHAPES = [(0, 5), (5, 0), (1, 1), (1, 37), (37, 1), (37, 53), (129, 255), (333, 1024),
                    (997, 301), (2049, 2047)]


@pytest.mark.parametrize("dtype", TRANSPOSE_TYPES, ids=str)
@pytest.mark.parametrize("rows,cols", TRANSPOSE_SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_transpose_equals_torch_bit_for_bit(dtype, rows, cols, layout):
    values = sample((rows, cols), dtype, rows * 31 + cols)
    x = laid_out(values, layout)
    out = tmakit.transpose(x)
    assert out.shape == (cols, rows) and out.dtype == dtype and out.is_contiguous()
    assert torch.equal(out, values.t().contiguous())


@pytest.mark.parametrize("shape", [(), (0,), (1,), (37,), (4099,)])
@pytest.mark.parametrize("step", [1, 3])
def test_transpose_of_0_and_1_dimensions_is_a_copy_as_torchs(shape, step):
    base = sample(tuple(s * step for s in shape), torch.float32, 5)
    x = base[::step] if shape else base
    y = tmakit.transpose(x)
    assert y.shape == x.shape and y.is_contiguous()
    assert torch.equal(y, x.t().contiguous())
    assert y.numel() == 0 or y.data_ptr() != x.data_ptr()  # a copy, never x itself
    out = torch.empty(shape, device="cuda")
    assert tmakit.transpose(x, out=out) is out and torch.equal(out, x)
    with pytest.raises(ValueError, match=r"^out: shape"):
        tmakit.transpose(x, out=torch.empty((1, *shape), device="cuda"))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
@pytest.mark.parametrize("out_layout", LAYOUTS)
@pytest.mark.parametrize("rows,cols", [(67, 45), (700, 900)])
def test_transpose_into_an_out_of_any_layout_writes_only_it(dtype, out_layout, rows, cols):
    # (67 x 45 takes torch's copy kernel, 700 x 900 the library's at every dtype)
    values = sample((rows, cols), dtype, 7)
    base = sample((cols, rows + 35), dtype, 9)
    sentinel = base.clone()
    target = laid_out(torch.zeros(cols, rows, dtype=dtype, device="cuda"), out_layout)
    assert tmakit.transpose(laid_out(values, "pitch+1"), out=target) is target
    assert torch.equal(target, values.t())
    # a slice of a larger buffer: the columns around it keep their values
    tmakit.transpose(values, out=base[:, 5:rows + 5])
    assert torch.equal(base[:, 5:rows + 5], values.t())
    assert torch.equal(base[:, :5], sentinel[:, :5])
    assert torch.equal(base[:, rows + 5:], sentinel[:, rows + 5:])


def launched_kernels(monkeypatch):
    """The list the ops' launches append their launchers to (the launches still run)."""
    from tmakit import ops

    launched = []
    launch = ops._launch

    def spy(out, launcher, *args):
        launched.append(launcher)
        return launch(out, launcher, *args)

    monkeypatch.setattr(ops, "_launch", spy)
    return launched


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
@pytest.mark.parametrize("aligned", [False, True])
def test_transpose_on_both_sides_of_the_size_torchs_copy_takes(dtype, aligned, monkeypatch):
    """An x up to _TRANSPOSE_TORCH_COPY_BYTES takes torch's copy kernel, a larger one the
    library's kernels: both move every bit (random bytes, NaN payloads included)."""
    from tmakit import ops

    launched = launched_kernels(monkeypatch)
    esize = dtype.itemsize
    limit = ops._TRANSPOSE_TORCH_COPY_BYTES[esize][aligned]
    # aligned: rows of 256 elements and a row count a multiple of 16, so that x's and out's rows
    # are both 16-byte multiples apart; else rows of 257 elements
    cols = 256 if aligned else 257
    below = limit // (cols * esize)
    for rows, by_kernel in ((below, False), (below + (16 if aligned else 1), True)):
        assert (rows * cols * esize > limit) == by_kernel
        gen = torch.Generator(device="cuda").manual_seed(rows)
        x = torch.randint(0, 256, (rows, cols * esize), generator=gen, dtype=torch.uint8,
                          device="cuda").view(dtype)
        launched.clear()
        y = tmakit.transpose(x)
        torch.cuda.synchronize()
        assert launched == ([ops._tmakit.transpose] if by_kernel else []), (rows, cols)
        assert torch.equal(y.view(torch.uint8), x.t().contiguous().view(torch.uint8))


# --- stencil --------------------------------------------------------------------------------


def conv_reference(x, weight):
    images = x if x.dim() == 3 else x[None]
    w = torch.tensor(weight, dtype=torch.float64, device="cuda")[None, None]
    y = torch.nn.functional.conv2d(images.double()[:, None], w, padding=1)[:, 0]
    return y if x.dim() == 3 else y[0]


WEIGHT = [[0.25, -1.0, 0.5], [2.0, -3.0, 1.0], [0.125, 0.75, -0.5]]
STENCIL_SHAPES = [(0, 4), (4, 0), (1, 1), (1, 4), (3, 2), (17, 29), (64, 64), (513, 1025),
                  (2, 37, 41), (3, 257, 129), (0, 3, 3), (5, 130, 257), (2049, 2047)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("shape", STENCIL_SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_stencil_matches_conv2d_within_rounding(dtype, shape, layout):
    values = torch.randn(shape, dtype=dtype, device="cuda",
                         generator=torch.Generator(device="cuda").manual_seed(sum(shape)))
    x = laid_out(values, layout)
    y = tmakit.stencil3x3(x, torch.tensor(WEIGHT))
    assert y.shape == x.shape and y.dtype == dtype and y.is_contiguous()
    if values.numel() == 0:
        return
    ref = conv_reference(values, WEIGHT)
    magnitude = conv_reference(values.abs(), [[abs(v) for v in r] for r in WEIGHT])
    eps = torch.finfo(dtype).eps
    assert ((y.double() - ref).abs() <= 4 * eps * magnitude + 1e-300).all()
    # every path computes the same sum in the same order: bit-exact with the dense input's
    assert torch.equal(y, tmakit.stencil3x3(values, WEIGHT))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (17, 29), (513, 1025), (3, 257, 129)])
@pytest.mark.parametrize("layout", ["dense", "offset", "transposed"])
def test_stencil_on_16_bit_images_within_one_rounding(dtype, shape, layout):
    values = torch.randn(shape, device="cuda").to(dtype)
    x = laid_out(values, layout)
    y = tmakit.stencil3x3(x, WEIGHT)
    assert y.dtype == dtype and y.shape == x.shape
    # the taps as x's dtype holds them (as conv2d's weight in that dtype), summed exactly
    taps = torch.tensor(WEIGHT).to(dtype).double().tolist()
    ref = conv_reference(values, taps)
    magnitude = conv_reference(values.abs(), [[abs(v) for v in r] for r in taps])
    allowed = (torch.finfo(dtype).eps * ref.abs() + 4 * torch.finfo(torch.float32).eps * magnitude
               + 2.0 ** -24)
    assert ((y.double() - ref).abs() <= allowed).all()
    conv = torch.nn.functional.conv2d(
        (values if values.dim() == 3 else values[None])[:, None],
        torch.tensor(WEIGHT, device="cuda").to(dtype)[None, None], padding=1)[:, 0]
    # and near torch's own conv2d in that dtype (cuDNN's order and accumulation)
    torch.testing.assert_close(y, conv if values.dim() == 3 else conv[0], rtol=0.02, atol=0.05)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_stencil_paths_agree_bit_for_bit(dtype):
    # 64 x 64: TMA rows when dense; the same values at a pitch and a start off 16 bytes take
    # the plain kernel; both sum in tap order with fused multiply-adds
    values = torch.randn(3, 64, 64, dtype=dtype, device="cuda")
    tma = tmakit.stencil3x3(values, LAPLACE)
    for layout in ("pitch+1", "offset"):
        assert torch.equal(tmakit.stencil3x3(laid_out(values, layout), LAPLACE), tma)


COMPLEX_TAPS = [[0.0, 1j, 0.5], [1.0, -4.0 + 0.5j, 1.0], [0.25j, -1j, 0.25]]


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (3, 2), (17, 29), (513, 1025), (0, 3, 3),
                                   (3, 257, 129)])
@pytest.mark.parametrize("layout", ["dense", "offset", "transposed", "step"])
def test_complex_stencil_is_the_real_stencil_of_each_part(dtype, shape, layout):
    values = torch.randn(shape, dtype=dtype, device="cuda",
                         generator=torch.Generator(device="cuda").manual_seed(sum(shape)))
    x = laid_out(values, layout)
    y = tmakit.stencil3x3(x, WEIGHT)
    assert y.dtype == dtype and y.shape == x.shape
    # real taps: each part through the real kernel, bit for bit
    assert torch.equal(y.real, tmakit.stencil3x3(values.real.contiguous(), WEIGHT))
    assert torch.equal(y.imag, tmakit.stencil3x3(values.imag.contiguous(), WEIGHT))
    # complex taps: conv2d's complex product, within rounding
    z = tmakit.stencil3x3(x, COMPLEX_TAPS)
    assert z.dtype == dtype and z.shape == x.shape
    if values.numel():  # (conv2d refuses an image of no rows)
        images = values if values.dim() == 3 else values[None]
        w = torch.tensor(COMPLEX_TAPS, dtype=dtype, device="cuda")[None, None]
        conv = torch.nn.functional.conv2d(images[:, None], w, padding=1)[:, 0].reshape(shape)
        tolerance = 1e-4 if dtype == torch.complex64 else 1e-12
        torch.testing.assert_close(z, conv, rtol=tolerance, atol=tolerance)
    out = laid_out(torch.zeros_like(values), "pitch+1")
    assert tmakit.stencil3x3(x, COMPLEX_TAPS, out=out) is out and torch.equal(out, z)
    assert torch.equal(x, values)  # x untouched


def test_complex_stencil_checks_its_out_and_taps():
    z = torch.randn(8, 8, dtype=torch.complex64, device="cuda")
    wrong = torch.zeros(8, 8, device="cuda")
    with pytest.raises(TypeError, match="out: dtype torch.float32 differs from x.dtype"):
        tmakit.stencil3x3(z, WEIGHT, out=wrong)
    with pytest.raises(ValueError, match=r"out: shape \(8, 7\), expected \(8, 8\)"):
        tmakit.stencil3x3(z, WEIGHT, out=torch.zeros(8, 7, dtype=z.dtype, device="cuda"))
    with pytest.raises(TypeError, match="weight: tap None is not a number"):
        tmakit.stencil3x3(z, [[None, 0, 0], [0, 1, 0], [0, 0, 0]])
    assert (wrong == 0).all()
    half = z.to(torch.complex32)
    try:
        y = tmakit.stencil3x3(half, WEIGHT)
    except TypeError as error:  # where torch lacks a complex32 operation the op needs
        pytest.skip(f"complex32: {error}")
    assert y.dtype == torch.complex32
    torch.testing.assert_close(y.to(torch.complex64), tmakit.stencil3x3(z, WEIGHT), rtol=0.02,
                               atol=0.05)


@pytest.mark.parametrize("out_layout", LAYOUTS)
def test_stencil_takes_a_cuda_weight_and_an_out_of_any_layout(out_layout):
    x = torch.randn(2, 32, 63, device="cuda")
    w = torch.tensor(LAPLACE, device="cuda")
    out = laid_out(torch.zeros_like(x), out_layout)
    assert tmakit.stencil3x3(x, w, out=out) is out
    assert torch.equal(out, tmakit.stencil3x3(x, LAPLACE))
    torch.testing.assert_close(out.double(), conv_reference(x, LAPLACE), rtol=1e-5, atol=1e-5)


# --- add ------------------------------------------------------------------------------------

ADD_CASES = [(torch.int8, -7), (torch.uint8, 200), (torch.int16, 12345), (torch.int32, 7),
             (torch.int32, -2 ** 31), (torch.int64, 2 ** 53 + 1), (torch.float16, 3.0),
             (torch.bfloat16, 0.5), (torch.float16, -12345.678), (torch.bfloat16, 0.1),
             (torch.float32, -1.25), (torch.float32, 0.1),
             (torch.float64, 0.1), (torch.float64, 3)]
ADD_SHAPES = [(1,), (5,), (0,), (0, 7), (3, 4), (37, 52), (2, 3, 40), (1025, 4099)]


@pytest.mark.parametrize("dtype,value", ADD_CASES, ids=str)
@pytest.mark.parametrize("shape", ADD_SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_equals_torch_bit_for_bit(dtype, value, shape, layout):
    values = sample(shape, dtype, sum(shape) + 3)
    x = laid_out(values, layout)
    expected = values + value  # integer sums wrap in both
    assert expected.dtype == dtype
    y = tmakit.add(x, value)
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y, expected)
    assert torch.equal(x, values)  # x untouched
    assert tmakit.add(x, value, out=x) is x  # in place, on x's own strides
    assert torch.equal(x, expected)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.int32, torch.float32,
                                   torch.float64], ids=str)
@pytest.mark.parametrize("in_place", [False, True])
def test_add_on_both_sides_of_the_size_torchs_add_takes(dtype, in_place, monkeypatch):
    """A dense x within _ADD_TORCH_BYTES takes torch's own add, a smaller or larger one the
    library's kernel: the same sums either way, starts on and off 16 bytes."""
    from tmakit import ops

    launched = launched_kernels(monkeypatch)
    esize = dtype.itemsize
    first, last = ops._ADD_TORCH_BYTES[esize]
    value = 3 if not dtype.is_floating_point else 0.1
    cases = [(1, True), (first // esize - 1, True), (last // esize + 1, True)]
    if first <= last:
        cases += [(first // esize, False), (last // esize, False)]
    for numel, by_kernel in [case for case in cases if case[0] >= 1]:
        for start in (0, 1):
            values = sample((numel + start,), dtype, numel)[start:]
            x = values.clone() if start == 0 else values
            expected = x + value
            launched.clear()
            y = tmakit.add(x, value, out=x) if in_place else tmakit.add(x, value)
            torch.cuda.synchronize()
            kernel = (ops._tmakit.add_constant if dtype.is_floating_point
                      else ops._tmakit.add_integer)
            assert launched == ([kernel] if by_kernel else []), (numel, start)
            assert torch.equal(y, expected), (numel, start)


def test_add_keeps_a_dense_inputs_strides_and_scalars_work():
    x = torch.arange(12, dtype=torch.int64, device="cuda").reshape(3, 4).t()
    y = tmakit.add(x, 1)
    assert y.stride() == x.stride() and torch.equal(y, x + 1)
    s = torch.tensor(2.5, device="cuda")
    assert torch.equal(tmakit.add(s, 1.0), s + 1.0)


def test_add_uint8_takes_negative_values_as_torch_does():
    x = torch.arange(256, dtype=torch.uint8, device="cuda")
    try:
        expected = x + (-3)
    except RuntimeError:
        pytest.skip("this torch refuses uint8 + -3")
    assert torch.equal(tmakit.add(x, -3), expected)


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_add_on_unsigned_types_torch_has(name):
    dtype = getattr(torch, name, None)
    if dtype is None:
        pytest.skip(f"torch has no {name}")
    x = torch.arange(1000, device="cuda").to(dtype)
    try:
        expected = x + 5
    except (RuntimeError, NotImplementedError):
        pytest.skip(f"torch's add does not take {name} here")
    assert torch.equal(tmakit.add(x[1:], 5), expected[1:])


# (x's dtype, value) whose sum no launcher type holds: torch's promoted sum, by its own add
ADD_PROMOTED_CASES = [(torch.bool, True), (torch.bool, False), (torch.bool, 3),
                      (torch.bool, -2 ** 63), (torch.bool, 0.5), (torch.int32, 2.5),
                      (torch.uint8, -0.5), (torch.int64, 1e10), (torch.int16, 1 - 2j),
                      (torch.float32, 1j), (torch.bfloat16, 0.5 + 0.25j), (torch.float64, 2j),
                      (torch.complex64, 1.5), (torch.complex64, 3), (torch.complex64, 2 ** 63),
                      (torch.complex128, -1 + 1j)]


@pytest.mark.parametrize("dtype,value", ADD_PROMOTED_CASES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_of_other_dtypes_is_torchs_promoted_sum(dtype, value, layout):
    values = sample((37, 52), dtype, 11)
    x = laid_out(values, layout)
    expected = values + value
    y = tmakit.add(x, value)
    assert y.dtype == expected.dtype and torch.equal(y, expected)
    out = torch.zeros_like(expected).t().contiguous().t()  # any strides
    assert tmakit.add(x, value, out=out) is out and torch.equal(out, expected)
    assert torch.equal(x, values)  # x untouched
    if expected.dtype == dtype:
        assert tmakit.add(x, value, out=x) is x and torch.equal(x, expected)
    else:
        with pytest.raises(TypeError, match=f"x: x \\+ value is {expected.dtype} by torch's"):
            tmakit.add(x, value, out=x)
        assert torch.equal(x, values)  # nothing written
        wrong = torch.zeros_like(values)
        with pytest.raises(TypeError, match=f"out: dtype {dtype}, but x \\+ value is"):
            tmakit.add(x, value, out=wrong)
        assert (wrong == 0).all()


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64", "complex32"])
def test_add_promotes_the_types_torchs_add_barely_takes(name):
    dtype = getattr(torch, name, None)
    if dtype is None:
        pytest.skip(f"torch has no {name}")
    source = torch.arange(1000, device="cuda")
    x = (source.to(torch.complex64) if dtype.is_complex else source).to(dtype)[1:]
    value = 0.5 + 1j if dtype.is_complex else 0.5
    try:
        expected = x + value
    except (RuntimeError, NotImplementedError):
        if not dtype.is_complex:  # torch's own promotion: the converted x plus the value
            expected = x.to(torch.result_type(x, value)) + value
        else:
            with pytest.raises(TypeError, match=f"x: torch's own add does not take {dtype}"):
                tmakit.add(x, value)
            return
    y = tmakit.add(x, value)
    assert y.dtype == expected.dtype  # (bit for bit: torch.equal does not take complex32)
    assert torch.equal(y.view(torch.uint8), expected.contiguous().view(torch.uint8))


# --- lazily conjugated and negated views -----------------------------------------------------


def test_lazily_conjugated_and_negated_views_are_taken_as_their_values():
    # z.conj() (contiguous, conjugate bit) and torch._neg_view (negative bit) read as other
    # values than their memory holds; z.conj().imag is both a negated view and a column step
    z = torch.randn(37, 64, dtype=torch.complex64, device="cuda")
    conj = z.conj()
    assert conj.is_conj() and conj.is_contiguous()
    assert torch.equal(tmakit.transpose(conj), conj.t().resolve_conj())
    w = torch.zeros(64, 37, dtype=torch.complex64, device="cuda")
    tmakit.transpose(z, out=w.conj())
    assert torch.equal(w, z.t().conj())
    assert torch.equal(tmakit.add(conj, 1.5), conj.resolve_conj() + 1.5)
    assert torch.equal(tmakit.stencil3x3(conj, WEIGHT), tmakit.stencil3x3(conj.resolve_conj(),
                                                                          WEIGHT))
    values = torch.randn(37, 64, device="cuda")
    for neg in (torch._neg_view(values), z.conj().imag):
        assert neg.is_neg()
        real = neg.clone()
        assert not real.is_neg() and torch.equal(real + 0, neg + 0)
        assert torch.equal(tmakit.transpose(neg), real.t())
        assert torch.equal(tmakit.add(neg, 1.5), real + 1.5)
        assert torch.equal(tmakit.stencil3x3(neg, WEIGHT), tmakit.stencil3x3(real, WEIGHT))
        q, scale = tmakit.quantize_fp8(neg, "row")
        q_real, scale_real = tmakit.quantize_fp8(real, "row")
        assert torch.equal(q.view(torch.uint8), q_real.view(torch.uint8))
        assert torch.equal(scale, scale_real)
    # outs with a negative bit: written as the values they read back
    plain = torch.zeros(37, 64, device="cuda")
    out = torch._neg_view(plain)
    tmakit.add(values, 1.5, out=out)
    assert torch.equal(out + 0, values + 1.5) and torch.equal(plain, -(values + 1.5))
    tmakit.stencil3x3(values, WEIGHT, out=out)
    assert torch.equal(out + 0, tmakit.stencil3x3(values, WEIGHT))
    t = torch.zeros(64, 37, device="cuda")
    tmakit.transpose(values, out=torch._neg_view(t))
    assert torch.equal(t, -values.t())
    inplace = torch._neg_view(values.clone())
    assert tmakit.add(inplace, 2.0, out=inplace) is inplace
    assert torch.equal(inplace + 0, torch._neg_view(values) + 2.0)


# --- streams, graphs, torch.compile ---------------------------------------------------------


def test_ops_run_on_the_current_stream_without_waiting():
    x = torch.zeros(4096, 4096, device="cuda")
    y = torch.zeros_like(x)
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # keeps `side` busy
        x.fill_(3.0)                    # ordered before the add only on `side`
        tmakit.add(x, 1.0, out=y)
        busy = not side.query()         # the call returned while `side` still sleeps
    side.synchronize()
    assert busy
    assert (y == 4).all()  # run on another stream, the add would have read the zeros


def test_ops_on_four_concurrent_streams():
    # each stream runs the three ops on its own odd-shaped, strided data at once; every
    # result equals torch's on the same stream
    streams = [torch.cuda.Stream() for _ in range(4)]
    cases = []
    for i, stream in enumerate(streams):
        rows, cols = 997 + 2 * i, 3001 - 4 * i
        x = laid_out(sample((rows, cols), torch.float32, i), LAYOUTS[i + 2])
        ints = laid_out(sample((1025, 4099 - i), torch.int32, 9 + i), "pitch+1")
        images = laid_out(torch.randn(3, 257, 129 + i, dtype=torch.float64, device="cuda"),
                          "offset")
        cases.append((stream, x, ints, images))
    torch.cuda.synchronize()
    results = []
    for stream, x, ints, images in cases:
        with torch.cuda.stream(stream):
            for _ in range(3):
                t = tmakit.transpose(x)
                a = tmakit.add(ints, -5)
                s = tmakit.stencil3x3(images, WEIGHT)
            results.append((t, a, s))
    torch.cuda.synchronize()
    for (stream, x, ints, images), (t, a, s) in zip(cases, results):
        assert torch.equal(t, x.t().contiguous())
        assert torch.equal(a, ints + (-5))
        assert torch.equal(s, tmakit.stencil3x3(images.contiguous(), WEIGHT))


def test_odd_views_capture_into_cuda_graphs():
    # the plain kernels, the contiguous copy and the temporary all run in a captured graph
    x = laid_out(torch.randn(513, 1025, device="cuda"), "offset")
    xt = laid_out(torch.randn(301, 997, dtype=torch.float64, device="cuda"), "transposed")
    ints = laid_out(sample((1025, 4099), torch.int64, 1), "pitch+1")
    t = torch.empty(1025, 513, device="cuda")
    tt = torch.empty(997, 301, dtype=torch.float64, device="cuda")
    s = laid_out(torch.zeros(513, 1025, device="cuda"), "step")
    a = torch.empty(1025, 4099, dtype=torch.int64, device="cuda")
    side = torch.cuda.Stream()

    def step():
        tmakit.transpose(x, out=t)
        tmakit.transpose(xt, out=tt)
        tmakit.stencil3x3(x, LAPLACE, out=s)
        tmakit.add(ints, 2 ** 40 + 3, out=a)
        tmakit.add(ints, 1, out=ints)

    with torch.cuda.stream(side):
        step()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        step()
    for seed in range(2):
        x.copy_(torch.randn(513, 1025, device="cuda"))
        xt.copy_(torch.randn(301, 997, dtype=torch.float64, device="cuda"))
        ints.copy_(sample((1025, 4099), torch.int64, 5 + seed))
        before = ints.clone()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(t, x.t()) and torch.equal(tt, xt.t())
        assert torch.equal(s, tmakit.stencil3x3(x.contiguous(), LAPLACE))
        assert torch.equal(a, before + (2 ** 40 + 3)) and torch.equal(ints, before + 1)


def test_gemm_split_captures_by_torchs_own_recipe():
    """torch.cuda.graph's recipe as its docs give it: the warm-up on a side stream, the capture
    on torch's own capture stream, whose split-K workspace is then empty unless an earlier
    test's calls on that pooled stream grew it. A shape the plan splits K for is captured
    without the split (nothing is allocated during a capture; the C++ test
    Gemm.PlannedSplitCapturedWithoutWorkspaceRunsUnsplit makes sure of the empty workspace)
    and is right on every replay; row-wise and fast accumulation alike."""
    a, b = random_fp8(128, 7168, pad=False), random_fp8(2112, 7168, pad=False)
    sa = torch.rand(128, 1, device="cuda") + 0.5
    sb = torch.rand(1, 2112, device="cuda") + 0.5
    d = torch.empty(128, 2112, dtype=torch.bfloat16, device="cuda")
    e = torch.empty_like(d)

    def step():
        tmakit.gemm_fp8(a, b, scale_a=0.5, out=d)
        tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, accumulate="fast", out=e)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for _ in range(2):
        a.copy_(random_fp8(128, 7168, pad=False))
        d.fill_(float("nan")), e.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_gemm_close(d, a, b, 0.5)
        want = (a.double() * sa.double()) @ (b.double() * sb.t().double()).T
        magnitude = a.double().abs() @ b.double().abs().T * (sa.double() @ sb.double())
        bound = 2.0 ** -8 * want.abs() + max(2.0 ** -11, 2.0 ** -13 * 7168 / 32) * magnitude
        assert ((e.double() - want).abs() <= bound).all()


def test_ops_capture_into_cuda_graphs():
    a, b = random_fp8(64, 256, pad=False), random_fp8(128, 256, pad=False)
    x = torch.randn(96, 160, device="cuda")
    d = torch.empty(64, 128, dtype=torch.bfloat16, device="cuda")
    t = torch.empty(160, 96, device="cuda")
    s = torch.empty_like(x)
    side = torch.cuda.Stream()

    def step():
        tmakit.gemm_fp8(a, b, scale_a=0.5, out=d)
        tmakit.transpose(x, out=t)
        tmakit.stencil3x3(x, LAPLACE, out=s)
        tmakit.add(x, 1.0, out=x)

    with torch.cuda.stream(side):  # warm-up on the capture stream (GEMM workspace, maps)
        step()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        step()
    for _ in range(2):
        a.copy_(random_fp8(64, 256, pad=False))
        x.copy_(torch.randn_like(x))
        before = x.clone()
        graph.replay()
        torch.cuda.synchronize()
        assert_gemm_close(d, a, b, 0.5)
        assert torch.equal(t, before.t())
        torch.testing.assert_close(s.double(), conv_reference(before, LAPLACE), rtol=1e-5,
                                   atol=1e-5)
        assert torch.equal(x, before + 1)


def test_torch_compile_fullgraph_traces_the_ops():
    torch._dynamo.reset()

    def f(a, b, x, images):
        d = tmakit.gemm_fp8(a, b, scale_a=2.0, scale_b=0.5)
        t = tmakit.transpose(x)
        s = tmakit.stencil3x3(images, LAPLACE)
        y = tmakit.add(x, 1.0)
        return d.float().sum(dim=1), t * 2, s, y

    compiled = torch.compile(f, fullgraph=True)
    a, b = random_fp8(48, 128, pad=False), random_fp8(96, 128, pad=False)
    x = torch.randn(64, 32, device="cuda")
    images = torch.randn(2, 40, 64, device="cuda", dtype=torch.float64)
    got, want = compiled(a, b, x, images), f(a, b, x, images)
    # The row sums may be reduced in another order by the compiled graph; the rest is exact.
    torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-3)
    for g, w in zip(got[1:], want[1:]):
        assert torch.equal(g, w)


def test_torch_compile_reduce_overhead_graphs_the_ops():
    """torch.compile's CUDA graphs (mode="reduce-overhead": warm-up calls, then a capture on
    its own stream) of every op, the GEMM at a shape whose plan splits K (captured split or
    unsplit, as that stream's workspace stands) and the quantizer's tensor recipe (a grid-wide
    amax): right on every call, the inputs changed in place between them."""
    torch._dynamo.reset()

    def f(a, b, x, h):
        return (tmakit.gemm_fp8(a, b, scale_a=0.5), tmakit.transpose(x),
                tmakit.stencil3x3(x, LAPLACE), tmakit.add(x, 1.0),
                tmakit.quantize_fp8(h, "tensor"))

    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    a, b = random_fp8(128, 7168, pad=False), random_fp8(2112, 7168, pad=False)
    x = torch.randn(96, 160, device="cuda")
    h = torch.randn(64, 512, device="cuda").to(torch.bfloat16)
    for _ in range(4):
        a.copy_(random_fp8(128, 7168, pad=False))
        x.copy_(torch.randn_like(x))
        h.copy_(torch.randn_like(h))
        got = [t.clone() for t in torch.utils._pytree.tree_leaves(compiled(a, b, x, h))]
        want = torch.utils._pytree.tree_leaves(f(a, b, x, h))
        torch.cuda.synchronize()
        assert_gemm_close(got[0], a, b, 0.5)
        for g, w in zip(got[1:], want[1:]):
            assert torch.equal(g.view(torch.uint8) if g.dtype == FP8 else g,
                               w.view(torch.uint8) if w.dtype == FP8 else w)


def test_torch_compile_fullgraph_on_odd_strided_views():
    torch._dynamo.reset()

    def f(x, images, ints, longs):
        return (tmakit.transpose(x), tmakit.transpose(x.t()), tmakit.stencil3x3(images, LAPLACE),
                tmakit.add(ints, 7), tmakit.add(longs.t(), 2 ** 62), tmakit.add(x[:, ::2], 0.5),
                tmakit.add(x[1:], 1.0) * 2, tmakit.add(ints, 0.5), tmakit.add(x.t(), 1j),
                tmakit.add(ints > 0, True),
                tmakit.add(ints, 0.5, out=torch.empty(4099, 1025, device="cuda").t()),
                tmakit.stencil3x3(torch.complex(x[:63, :65], x[63:126, :65]), LAPLACE))

    compiled = torch.compile(f, fullgraph=True)
    x = torch.randn(997, 3001, device="cuda")
    images = laid_out(torch.randn(3, 257, 129, dtype=torch.float64, device="cuda"), "pitch+1")
    ints = torch.randint(-100, 100, (1025, 4099), dtype=torch.int32, device="cuda")
    longs = sample((5, 7), torch.int64, 3)
    got, want = compiled(x, images, ints, longs), f(x, images, ints, longs)
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    assert torch.equal(want[3], ints + 7) and torch.equal(want[4], longs.t() + 2 ** 62)


# --- bad input ------------------------------------------------------------------------------


def test_bad_views_are_refused_before_anything_is_written():
    x = torch.zeros(64, 64, device="cuda")
    out = torch.full((64, 64), 5.0, device="cuda")
    with pytest.raises(ValueError, match="out: overlaps x without being x"):
        tmakit.add(x[:, :32], 1.0, out=x[:, 16:48])
    z = torch.zeros(64, 64, dtype=torch.complex64, device="cuda")
    with pytest.raises(ValueError, match="out: overlaps x without being x"):
        tmakit.add(z[:, :32], 1j, out=z[:, 16:48])  # (torch's promoted add: checked the same)
    assert (z == 0).all()
    with pytest.raises(ValueError, match="out: overlaps x; a transpose cannot run in place"):
        tmakit.transpose(out, out=out)
    with pytest.raises(ValueError, match="out: overlaps x; the stencil reads neighbours"):
        tmakit.stencil3x3(out[:, 1:], LAPLACE, out=out[:, :63])
    with pytest.raises(ValueError, match="out: overlaps x; a transpose"):
        odd = torch.zeros(63, 63, device="cuda")
        tmakit.transpose(odd, out=odd.t())  # the plain path's overlap is refused too
    with pytest.raises(ValueError, match="out: some of its elements share memory"):
        tmakit.add(x, 1.0, out=out[:1].expand(64, 64))
    with pytest.raises(ValueError, match=r"out: shape \(64, 63\), expected \(64, 64\)"):
        tmakit.add(x, 1.0, out=out[:, :63])
    with pytest.raises(ValueError, match=r"out: shape"):
        tmakit.stencil3x3(x, LAPLACE, out=out[:63])
    with pytest.raises(TypeError, match="out: dtype torch.float64 differs from x.dtype"):
        tmakit.add(x, 1.0, out=torch.zeros(64, 64, dtype=torch.float64, device="cuda"))
    with pytest.raises(TypeError, match="out: dtype torch.float32, but x \\+ value is "
                                        "torch.complex64"):
        tmakit.add(torch.zeros(4, 4, dtype=torch.complex64, device="cuda"), 1.0, out=out)
    with pytest.raises(TypeError, match="x: dtype torch.int32; the stencil takes"):
        tmakit.stencil3x3(x.int(), LAPLACE, out=out.int())
    with pytest.raises(ValueError, match="x: is on cpu"):
        tmakit.add(torch.zeros(64, 64), 1.0, out=out)
    with pytest.raises(ValueError, match="out: is on cpu"):
        tmakit.transpose(x, out=torch.zeros(64, 64))
    with pytest.raises(ValueError, match="a: 0x[0-9a-f]+ is not 16-byte aligned"):
        a = torch.zeros(16, 80, dtype=torch.uint8, device="cuda").view(FP8)
        tmakit.gemm_fp8(a[:, 8:72], a[:, :64])
    with pytest.raises(ValueError, match="out: overlaps a or b"):
        buf = torch.zeros(64, 64, dtype=torch.bfloat16, device="cuda")
        fp8 = buf.view(torch.uint8).view(FP8)[:, :64]  # the same bytes as fp8
        tmakit.gemm_fp8(fp8, fp8, out=buf[:, :64])
    with pytest.raises(ValueError, match="scale"):
        tmakit.gemm_fp8(random_fp8(16, 32), random_fp8(16, 32), scale_a=math.inf)
    row = torch.zeros(1, 16, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match="out: some of its elements share memory"):
        tmakit.gemm_fp8(random_fp8(4, 32), random_fp8(16, 32), out=row.expand(4, 16))
    # an expanded batch as input is read like any other view (made contiguous first)
    assert torch.equal(tmakit.stencil3x3(x.expand(3, 64, 64), LAPLACE), torch.zeros(3, 64, 64,
                                                                                     device="cuda"))
    assert (out == 5).all()  # nothing was written by any refused call
    assert (x == 0).all()


def test_integer_add_takes_only_integers_in_range():
    for dtype, bad in ((torch.int32, 2 ** 31), (torch.int8, -129), (torch.uint8, 256),
                       (torch.int64, 2 ** 63)):
        x = torch.zeros(4, 4, dtype=dtype, device="cuda")
        with pytest.raises(TypeError, match="x: x \\+ value is torch.float32 by torch's type "
                                            "promotion"):
            tmakit.add(x, 0.5, out=x)
        with pytest.raises(ValueError, match=f"value: {bad} does not fit {dtype}"):
            tmakit.add(x, bad, out=x)
        assert (x == 0).all()


# --- tensor maps over CUDA tensors ----------------------------------------------------------


def test_tensor_maps_of_cuda_tensors_encode_through_the_driver():
    x = torch.zeros(256, 128, device="cuda")
    good = tmakit.tensor_map(x, box=(64, 32), swizzle="128B")
    assert good.spec["globalAddress"] == x.data_ptr() and good.check().ok
    encoded = good.encode()
    assert isinstance(encoded, bytes) and len(encoded) == 128 and any(encoded)
    wide = tmakit.tensor_map(x, box=(64, 64), swizzle="128B")
    with pytest.raises(ValueError, match="T9: boxDim\\[0\\]\\*4 = 256 bytes exceeds"):
        wide.encode()
    assert tmakit.tensor_map(x[:, 1:], box=(64, 32)).check().rule == "T4"


def test_triton_tensor_descriptors_are_explained():
    descriptor = pytest.importorskip("triton.tools.tensor_descriptor")
    x = torch.zeros(256, 256, dtype=torch.float16, device="cuda")
    ok = descriptor.TensorDescriptor.from_tensor(x, [64, 64])
    assert tmakit.explain_triton(ok).ok
    try:
        narrow = descriptor.TensorDescriptor(x, list(x.shape), list(x.stride()), [64, 4])
    except (AssertionError, ValueError):
        return  # this Triton refuses an 8-byte box row itself
    assert tmakit.explain_triton(narrow).rule == "T7"


def test_other_frameworks_arrays_come_in_through_dlpack():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(64 * 32, dtype=cupy.float32).reshape(64, 32)
    out = cupy.zeros((32, 64), dtype=cupy.float32)
    result = tmakit.transpose(x, out=out)
    torch.cuda.synchronize()
    assert bool((out == x.T).all())  # written in place, in CuPy's memory
    assert result.data_ptr() == out.data.ptr
    tmakit.add(x, 1.0, out=x)
    torch.cuda.synchronize()
    assert float(x[0, 0]) == 1.0


# --- values the kernels would misread ---------------------------------------------------------


def test_gemm_host_scales_outside_float32_whose_product_is_inside_it():
    torch.manual_seed(3)
    a, b = random_fp8(64, 256, pad=False), random_fp8(128, 256, pad=False)
    half = tmakit.gemm_fp8(a, b, scale_a=0.5)
    assert torch.equal(tmakit.gemm_fp8(a, b, alpha=2.0 ** 130, scale_a=2.0 ** -131), half)
    assert torch.equal(tmakit.gemm_fp8(a, b, scale_a=2.0 ** -140, scale_b=2.0 ** 139), half)
    out = torch.full((64, 128), 7.0, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match="below float32's range"):
        tmakit.gemm_fp8(a, b, scale_a=1e-46, out=out)
    assert bool((out == 7).all())  # nothing written


def test_gemm_reads_a_negated_scale_view_as_its_values():
    torch.manual_seed(4)
    a, b = random_fp8(64, 256, pad=False), random_fp8(128, 256, pad=False)
    neg = torch.tensor([2j], dtype=torch.complex64, device="cuda").conj().imag
    assert neg.is_neg()
    assert torch.equal(tmakit.gemm_fp8(a, b, scale_a=neg),
                       tmakit.gemm_fp8(a, b, scale_a=torch.tensor([-2.0], device="cuda")))
    rows = (torch.rand(64, 1, device="cuda") + 0.5).to(torch.complex64) * 1j
    cols = torch.rand(1, 128, device="cuda") + 0.5
    negated_rows = rows.conj().imag
    assert negated_rows.is_neg()
    assert torch.equal(tmakit.gemm_fp8(a, b, scale_a=negated_rows, scale_b=cols),
                       tmakit.gemm_fp8(a, b, scale_a=negated_rows.resolve_neg().clone(),
                                       scale_b=cols))


@pytest.mark.parametrize("name", ["uint1", "uint4", "int2", "int7"])
def test_transpose_moves_the_bits_of_the_sub_byte_shell_dtypes(name):
    dtype = getattr(torch, name, None)
    if dtype is None:
        pytest.skip(f"this torch has no torch.{name}")
    raw = torch.randint(0, 256, (37, 53), dtype=torch.uint8, device="cuda")
    for view in (raw, raw[:, 1:], raw.t(), raw[::2]):
        out = tmakit.transpose(view.view(dtype))
        assert out.dtype == dtype
        assert torch.equal(out.view(torch.uint8), view.t())


def test_quantized_tensors_are_refused_naming_x():
    try:
        q = torch.quantize_per_tensor(torch.rand(8, 8, device="cuda"), 0.1, 0, torch.qint8)
    except (RuntimeError, NotImplementedError):
        pytest.skip("this torch has no quantized CUDA tensors")
    with pytest.raises(TypeError, match=r"x: a quantized tensor \(torch.qint8\)"):
        tmakit.transpose(q)



def _writes():
    """Every way an op writes a tensor the caller gave: (name, target's shape and dtype,
    label of the target in messages, call(target)). The transposed x is over the size up to
    which the op takes torch's copy, so that its kernel writes."""
    x = torch.randn(64, 128, device="cuda")
    wide = torch.randn(1024, 512, device="cuda")
    a, b = random_fp8(64, 128, pad=False), random_fp8(128, 128, pad=False)
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        ("add in place", (64, 128), f32, "x", lambda t: tmakit.add(t, 1.0, out=t)),
        ("add out=", (64, 128), f32, "out", lambda t: tmakit.add(x, 1.0, out=t)),
        ("add_ op", (64, 128), f32, "x", lambda t: torch.ops.tmakit.add_(t, 1.0)),
        ("add_out op", (64, 128), f32, "out", lambda t: torch.ops.tmakit.add_out(x, 1.0, t)),
        ("transpose out=", (512, 1024), f32, "out", lambda t: tmakit.transpose(wide, out=t)),
        ("transpose_out op", (512, 1024), f32, "out",
         lambda t: torch.ops.tmakit.transpose_out(wide, t)),
        ("stencil out=", (64, 128), f32, "out", lambda t: tmakit.stencil3x3(x, LAPLACE, out=t)),
        ("stencil out= of a 16-bit image", (64, 128), f16, "out",
         lambda t: tmakit.stencil3x3(x.half(), LAPLACE, out=t)),
        ("gemm out=", (64, 128), bf16, "out", lambda t: tmakit.gemm_fp8(a, b, out=t)),
    ]


@pytest.mark.parametrize("which", range(9))
def test_a_written_tensor_saved_for_backward_fails_the_backward_pass(which):
    """torch's own in-place and out= writes move a tensor's version counter on, so that a
    backward pass that saved its old values is refused rather than computed from the new
    ones; the ops' writes do the same, eager and through the registered ops."""
    name, shape, dtype, _, write = _writes()[which]
    target = torch.zeros(shape, device="cuda", dtype=dtype)
    w = torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
    loss = (w * target).sum()  # saves target for w's gradient
    version = target._version
    write(target)
    assert target._version > version, name
    assert bool((target != 0).any()), f"{name}: nothing written"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("numel", [1000, 2048, 1 << 22])  # below, in and past the add's band
def test_an_x_that_requires_grad_is_read_as_values_on_every_path(numel):
    """The ops record no gradient: an x that requires grad (a leaf or an activation) gives
    results that do not, whether the library's kernels or torch's own add / copy run."""
    leaf = torch.randn(numel, device="cuda", requires_grad=True)
    for x in (leaf, leaf * 2):
        y = tmakit.add(x, 0.5)
        assert not y.requires_grad and torch.equal(y, x.detach() + 0.5)
        out = torch.empty_like(y)
        assert tmakit.add(x, 0.5, out=out) is out and torch.equal(out, y)
        z = tmakit.add(x, 1j)  # torch's promoted add
        assert not z.requires_grad and torch.equal(z, x.detach() + 1j)
        m = x[: (numel // 8) * 8].view(-1, 8)
        t = tmakit.transpose(m)
        assert not t.requires_grad and torch.equal(t, m.detach().t())


def test_inference_tensors_are_written_only_in_inference_mode():
    """Outside torch.inference_mode an inference tensor is refused as torch refuses it, named,
    nothing written; inside it the write goes through."""
    for name, shape, dtype, label, write in _writes():
        with torch.inference_mode():
            target = torch.zeros(shape, device="cuda", dtype=dtype)
        if name.endswith(" op"):
            # NOTE: the registered ops, called directly, may be refused by torch's dispatcher
            # before the kernel function (its words) or by it (the op's)
            with pytest.raises((ValueError, RuntimeError), match="inference tensor"):
                write(target)
        else:
            with pytest.raises(ValueError, match=f"{label}: an inference tensor"):
                write(target)
        torch.cuda.synchronize()
        assert bool((target == 0).all()), f"{name}: written before the refusal"
        with torch.inference_mode():
            write(target)
        torch.cuda.synchronize()
        assert bool((target != 0).any()), f"{name}: not written in inference mode"


def test_the_registered_ops_check_what_they_write():
    """A torch.ops.tmakit.* call made by hand (the public functions check first) with an out of
    another shape or dtype, or an x the kernels do not take, is refused naming it, nothing
    written: the launchers would write x's extents at out's address."""
    x = torch.ones(1024, 1024, device="cuda")
    cases = [
        (lambda o: torch.ops.tmakit.add_out(x, 1.0, o), torch.empty(16, device="cuda"),
         ValueError, r"out: shape \(16,\), expected \(1024, 1024\)"),
        (lambda o: torch.ops.tmakit.add_out(x, 1.0, o),
         torch.empty(1024, 1024, device="cuda", dtype=torch.float16), TypeError,
         "out: dtype torch.float16 differs from x.dtype torch.float32"),
        (lambda o: torch.ops.tmakit.transpose_out(x, o), torch.empty(1, 1, device="cuda"),
         ValueError, r"out: shape \(1, 1\), expected \(1024, 1024\)"),
        (lambda o: torch.ops.tmakit.transpose_out(x[:, :512], o),
         torch.empty(1024, 512, device="cuda"), ValueError,
         r"out: shape \(1024, 512\), expected \(512, 1024\)"),
        (lambda o: torch.ops.tmakit.transpose_out(x.view(1024, 32, 32), o),
         torch.empty(1024, 1024, device="cuda"), ValueError, "x: expected 2 dimensions"),
        (lambda o: torch.ops.tmakit.stencil3x3_out(x, [1.0] * 9, o),
         torch.empty(1024, 1023, device="cuda"), ValueError, "out: shape"),
        (lambda o: torch.ops.tmakit.stencil3x3_out(x, [1.0] * 9, o),
         torch.empty(1024, 1024, device="cuda", dtype=torch.float64), TypeError, "out: dtype"),
        (lambda o: torch.ops.tmakit.stencil3x3_out(x, [1.0] * 8, o),
         torch.empty(1024, 1024, device="cuda"), ValueError, "taps: 8 values"),
        (lambda o: torch.ops.tmakit.stencil3x3_out(x.to(torch.int32), [1.0] * 9, o),
         torch.empty(1024, 1024, device="cuda", dtype=torch.int32), TypeError, "x: dtype"),
        (lambda o: torch.ops.tmakit.add_(o, 1.5), torch.zeros(8, device="cuda",
                                                              dtype=torch.int32),
         TypeError, "an integer x takes an int"),
        (lambda o: torch.ops.tmakit.add_(o, 1.0),
         torch.zeros(8, device="cuda", dtype=torch.complex64), TypeError,
         "x: dtype torch.complex64"),
    ]
    a8, b8 = random_fp8(64, 128, pad=False), random_fp8(96, 128, pad=False)
    gemm = torch.ops.tmakit.gemm_fp8_out
    cases += [
        (lambda o: gemm(a8.view(torch.uint8), b8, 1.0, 1.0, 1.0, None, None, "promoted", o),
         torch.empty(64, 96, device="cuda", dtype=torch.bfloat16), TypeError, "a: dtype"),
        (lambda o: gemm(a8, b8, 1.0, 1.0, 1.0, None, None, "promoted", o),
         torch.empty(64, 96, device="cuda"), TypeError, "out: dtype torch.float32"),
        (lambda o: gemm(a8, b8, 1.0, 1.0, 1.0, torch.ones(64, 1, device="cuda").double(),
                        torch.ones(1, 96, device="cuda"), "promoted", o),
         torch.empty(64, 96, device="cuda", dtype=torch.bfloat16), TypeError,
         "scale_a_tensor: dtype"),
        (lambda o: gemm(a8, b8, 1.0, 1.0, 1.0, None, None, "fastest", o),
         torch.empty(64, 96, device="cuda", dtype=torch.bfloat16), ValueError, "accumulate"),
    ]
    wide = torch.zeros(64, 256, device="cuda", dtype=torch.bfloat16)
    cases += [
        # (a column step: the launcher, given row pitches alone, would write the wrong bytes)
        (lambda o: gemm(a8, b8, 1.0, 1.0, 1.0, None, None, "promoted", o[:, :192:2]), wide,
         ValueError, r"out: strides \(256, 2\)"),
    ]
    if torch.cuda.device_count() > 1:
        cases.append((lambda o: torch.ops.tmakit.add_out(x, 1.0, o),
                      torch.empty(1024, 1024, device="cuda:1"), ValueError, "out: is on cuda:1"))
    for call, out, error, message in cases:
        out.fill_(0)
        with pytest.raises(error, match=message):
            call(out)
        torch.cuda.synchronize()
        assert bool((out == 0).all()), message


def test_the_registered_quantizer_refuses_outputs_that_overlap_x():
    """A quantize_fp8_out call made by hand whose x_fp8 or scale lies in x's memory (or scale
    in x_fp8's) is refused naming it, nothing written: the kernels read x while they write."""
    x = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16)
    kept = x.clone()
    as_fp8 = x.view(torch.uint8).view(FP8)  # (64, 256): x's bytes
    q = torch.zeros(64, 128, device="cuda", dtype=FP8)
    scale = torch.zeros(64, 1, device="cuda")
    op = torch.ops.tmakit.quantize_fp8_out
    # (the launcher's own checks: x read in place)
    with pytest.raises(ValueError, match="x_fp8.data: overlaps x; the quantizer writes x_fp8"):
        op(x, "row", "a", as_fp8[:, :128], scale)
    # (a scale of the row recipe's (64, 1) layout, made of x's or x_fp8's first 256 bytes)
    with pytest.raises(ValueError, match="scale: its 64 x 1 floats overlap x or x_fp8"):
        op(x, "row", "a", q, x.view(torch.float32).view(-1)[:64].view(64, 1))
    with pytest.raises(ValueError, match="scale: its 64 x 1 floats overlap x or x_fp8"):
        op(x, "row", "a", q, q.view(torch.float32).view(-1)[:64].view(64, 1))
    # (an x the kernels read through a copy: the op's own check, before the copy hides x)
    with pytest.raises(ValueError, match="x_fp8: overlaps x, which the kernels read"):
        op(x[:, 1:113], "row", "a", as_fp8[:, 2:114], scale)
    torch.cuda.synchronize()
    assert torch.equal(x, kept) and not q.view(torch.uint8).any() and not scale.any()
    op(x, "row", "a", q, scale)  # the same call with outputs of their own
    want_q, want_scale = tmakit.quantize_fp8(x, "row")
    assert torch.equal(q.view(torch.uint8), want_q.view(torch.uint8))
    assert torch.equal(scale, want_scale)


def test_complex32_stencil_with_complex_taps_compiles_fullgraph():
    torch._dynamo.reset()
    taps = [[0, 1j, 0], [1, -4 + 0.1j, 1], [0, -1j, 0.3]]
    z = torch.complex(torch.randn(2, 33, 65, device="cuda"),
                      torch.randn(2, 33, 65, device="cuda")).to(torch.complex32)
    eager = tmakit.stencil3x3(z, taps)
    compiled = torch.compile(lambda t: tmakit.stencil3x3(t, taps), fullgraph=True)(z)
    assert compiled.dtype == torch.complex32
    assert torch.equal(torch.view_as_real(compiled), torch.view_as_real(eager))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_add_of_an_int_past_2_53_rounds_it_once_as_torch(dtype):
    """torch converts an int value to float32 once for these dtypes' sums; converting it to a
    double first would round twice (2^54 + 2^30 + 1 to 2^54 instead of 2^54 + 2^31)."""
    x = torch.zeros(4, 8, device="cuda", dtype=dtype)
    for value in (2 ** 54 + 2 ** 30 + 1, -(2 ** 54 + 2 ** 30 + 1), 2 ** 62 + 2 ** 38 + 1,
                  2 ** 24 + 1, 2 ** 53 + 1):
        assert torch.equal(tmakit.add(x, value), x + value), value
    value = 2 ** 54 + 2 ** 30 + 1
    compiled = torch.compile(lambda t: tmakit.add(t, value), fullgraph=True)
    assert torch.equal(compiled(x), x + value)
