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
    with pytest.raises(TypeError, match="scale_a: a tensor scale must hold one torch.float32"):
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


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex64, torch.int16])
@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 37), (37, 1), (37, 53), (129, 255),
                                       (1024, 333), (2048, 4096)])
def test_transpose_equals_torch(dtype, rows, cols):
    if dtype.is_complex:
        x = torch.randn(rows, cols, dtype=dtype, device="cuda")
    else:
        x = torch.randint(0, 100, (rows, cols), device="cuda").to(dtype)
    src = padded(rows, cols, dtype)
    src.copy_(x)
    out = tmakit.transpose(src)
    assert out.shape == (cols, rows)
    assert torch.equal(out, x.t().contiguous())


def test_transpose_into_a_given_out():
    x = torch.arange(64 * 48, dtype=torch.float32, device="cuda").reshape(64, 48)
    base = torch.full((48, 80), -1.0, device="cuda")
    out = base[:, 4:68]
    tmakit.transpose(x, out=out)
    assert torch.equal(out, x.t())
    assert (base[:, :4] == -1).all() and (base[:, 68:] == -1).all()


# --- stencil --------------------------------------------------------------------------------


def conv_reference(x, weight):
    images = x if x.dim() == 3 else x[None]
    w = torch.tensor(weight, dtype=torch.float64, device="cuda")[None, None]
    y = torch.nn.functional.conv2d(images.double()[:, None], w, padding=1)[:, 0]
    return y if x.dim() == 3 else y[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(1, 4), (3, 2), (17, 29), (64, 64), (2, 37, 41),
                                   (5, 130, 257), (1000, 1000)])
def test_stencil_matches_conv2d_within_rounding(dtype, shape):
    torch.manual_seed(sum(shape))
    *batch, rows, cols = shape
    weight = [[0.25, -1.0, 0.5], [2.0, -3.0, 1.0], [0.125, 0.75, -0.5]]
    if batch:
        x = torch.empty(batch[0], rows, -(-cols * dtype.itemsize // 16) * 16 // dtype.itemsize,
                        dtype=dtype, device="cuda")[..., :cols]
    else:
        x = padded(rows, cols, dtype)
    x.copy_(torch.randn(shape, dtype=dtype, device="cuda"))
    y = tmakit.stencil3x3(x, torch.tensor(weight))
    ref = conv_reference(x, weight)
    magnitude = conv_reference(x.abs(), [[abs(v) for v in r] for r in weight])
    eps = torch.finfo(dtype).eps
    assert ((y.double() - ref).abs() <= 4 * eps * magnitude + 1e-300).all()


def test_stencil_takes_a_cuda_weight_and_an_out():
    x = torch.randn(2, 32, 64, device="cuda")
    w = torch.tensor(LAPLACE, device="cuda")
    out = torch.empty_like(x)
    assert tmakit.stencil3x3(x, w, out=out) is out
    torch.testing.assert_close(out.double(), conv_reference(x, LAPLACE), rtol=1e-5, atol=1e-5)


# --- add ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,value", [(torch.int32, 7), (torch.float32, -1.25),
                                         (torch.bfloat16, 0.5), (torch.float16, 3.0)])
@pytest.mark.parametrize("shape", [(1,), (5,), (3, 4), (37, 52), (2, 3, 40), (513, 1000)])
def test_add_equals_torch(dtype, value, shape):
    if dtype == torch.int32:
        x = torch.randint(-2 ** 31, 2 ** 31 - 1, shape, dtype=dtype, device="cuda")
    else:
        x = torch.randn(shape, device="cuda").to(dtype)
    if len(shape) >= 2 and (shape[-1] * dtype.itemsize) % 16:
        stride = -(-shape[-1] * dtype.itemsize // 16) * 16 // dtype.itemsize
        src = torch.empty((*shape[:-1], stride), dtype=dtype, device="cuda")[..., :shape[-1]]
        src.copy_(x)
        x = src
    expected = x + value  # int32 wraps in both
    assert torch.equal(tmakit.add(x, value), expected)
    y = x.clone() if x.is_contiguous() else x
    assert tmakit.add(y, value, out=y) is y
    assert torch.equal(y, expected)


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


# --- bad input ------------------------------------------------------------------------------


def test_bad_views_are_refused_before_anything_is_written():
    x = torch.zeros(64, 64, device="cuda")
    out = torch.full((64, 64), 5.0, device="cuda")
    flat = torch.zeros(4096 + 4, device="cuda")
    with pytest.raises(ValueError, match=r"x: data at 0x[0-9a-f]+ is not 16-byte aligned"):
        tmakit.add(flat[1:4097].view(64, 64), 1.0, out=out)
    with pytest.raises(ValueError, match="x: rows are 244 bytes apart, not a multiple of 16"):
        tmakit.add(torch.zeros(64, 61, device="cuda"), 1.0)
    with pytest.raises(ValueError, match="out: overlaps x without being x"):
        tmakit.add(x[:, :32], 1.0, out=x[:, 16:48])
    with pytest.raises(ValueError, match="out: overlaps x; a transpose cannot run in place"):
        tmakit.transpose(out, out=out)
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
    with pytest.raises(ValueError, match="out: rows are 0 elements apart but 16 long"):
        tmakit.gemm_fp8(random_fp8(4, 32), random_fp8(16, 32), out=row.expand(4, 16))
    with pytest.raises(ValueError, match="x: images are 0 bytes apart but 16384 long"):
        tmakit.stencil3x3(x.expand(3, 64, 64), LAPLACE)
    assert (out == 5).all()  # nothing was written by any refused call
    assert (x == 0).all()


def test_int32_add_takes_only_integers_in_range():
    x = torch.zeros(4, 4, dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match="value"):
        tmakit.add(x, 0.5)
    with pytest.raises(ValueError, match="value"):
        tmakit.add(x, 2 ** 31)


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
