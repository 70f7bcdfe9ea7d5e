"""The torch ops without a GPU: registration, tracing through their fake implementations,
and the argument checks that need no device memory."""

import re

import pytest

torch = pytest.importorskip("torch")
import tmakit  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

FP8 = torch.float8_e4m3fn
LAPLACE = [[0, 1, 0], [1, -4, 1], [0, 1, 0]]


def test_ops_are_registered_in_the_tmakit_namespace():
    import tmakit.ops  # noqa: F401  (tmakit imports it on first use of an op)

    for name in ("gemm_fp8_out", "transpose_out", "stencil3x3_out", "add_out", "add_"):
        schema = str(getattr(torch.ops.tmakit, name).default._schema)
        assert re.search(r"Tensor\(a\d*!\) (out|x)", schema), schema  # declared as written


def test_tracing_with_fake_cuda_tensors_records_the_ops():
    mode = FakeTensorMode()
    with mode:
        a = torch.empty(64, 128, device="cuda:0", dtype=FP8)
        b = torch.empty(40, 128, device="cuda:0", dtype=FP8)
        x = torch.empty(16, 32, device="cuda:0")
        images = torch.empty(3, 16, 32, device="cuda:0", dtype=torch.float64)

    def f(a, b, x, images):
        scale = torch.full((1,), 0.5, device="cuda:0")
        return (tmakit.gemm_fp8(a, b, scale_a=2.0, scale_b=scale, out_dtype=torch.float16,
                                accumulate="fast"), tmakit.transpose(x),
                tmakit.add(x, 1.0), tmakit.stencil3x3(images, LAPLACE))

    graph = make_fx(f, tracing_mode="fake")(a, b, x, images)
    code = graph.code
    for op in ("tmakit.gemm_fp8_out", "tmakit.transpose_out", "tmakit.add_out",
               "tmakit.stencil3x3_out"):
        assert op in code, code
    with mode:
        d, t, y, s = f(a, b, x, images)
    assert (d.shape, d.dtype) == ((64, 40), torch.float16)
    assert t.shape == (32, 16) and y.shape == x.shape and s.shape == images.shape


def test_in_place_add_traces_as_the_mutating_op():
    with FakeTensorMode():
        x = torch.empty(8, 64, device="cuda:0", dtype=torch.bfloat16)
    code = make_fx(lambda x: tmakit.add(x, 2.0, out=x), tracing_mode="fake")(x).code
    assert "tmakit.add_.default" in code, code


def test_cpu_tensors_are_refused_naming_the_argument():
    a = torch.zeros(16, 32, dtype=FP8)
    with pytest.raises(ValueError, match=r"a: is on cpu; .*a\.cuda\(\)"):
        tmakit.gemm_fp8(a, a)
    with pytest.raises(ValueError, match="x: is on cpu"):
        tmakit.transpose(torch.zeros(4, 4))
    with pytest.raises(TypeError, match="x: expected a torch.Tensor or an array with __dlpack__"):
        tmakit.add([1, 2], 1.0)
    np = pytest.importorskip("numpy")
    # Another framework's array comes in through DLPack: a host array is refused the same way.
    with pytest.raises(ValueError, match="x: is on cpu"):
        tmakit.transpose(np.zeros((4, 4), np.float32))


def test_shape_and_type_errors_come_before_any_device_work():
    with FakeTensorMode():
        a = torch.empty(64, 128, device="cuda:0", dtype=FP8)
        b = torch.empty(40, 96, device="cuda:0", dtype=FP8)
        h = torch.empty(64, 128, device="cuda:0", dtype=torch.float16)
        k100 = torch.empty(64, 100, device="cuda:0", dtype=FP8)
        x = torch.empty(16, 32, device="cuda:0")
        wrong = torch.empty(16, 16, device="cuda:0")
        i8 = torch.empty(16, 32, device="cuda:0", dtype=torch.int8)
    with pytest.raises(ValueError, match="b: 96 \\(K of B\\) differs from a.cols 128"):
        tmakit.gemm_fp8(a, b)
    with pytest.raises(TypeError, match="a: dtype torch.float16"):
        tmakit.gemm_fp8(h, a)
    with pytest.raises(ValueError, match="a: K = 100 is not a multiple of 16 .*; pad K with "
                                         "zeros to 112"):
        tmakit.gemm_fp8(k100, k100)
    with pytest.raises(TypeError, match="out_dtype: torch.float32"):
        tmakit.gemm_fp8(a, a, out_dtype=torch.float32)
    with pytest.raises(ValueError, match=r"out: shape \(16, 16\), expected \(32, 16\)"):
        tmakit.transpose(x, out=wrong)
    with pytest.raises(TypeError, match="add takes torch.int32"):
        tmakit.add(i8, 1)
    with pytest.raises(TypeError, match="the stencil takes torch.float32 or torch.float64"):
        tmakit.stencil3x3(i8, LAPLACE)
    with pytest.raises(ValueError, match="weight: expected 3 rows of 3 taps"):
        tmakit.stencil3x3(x, [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="x: strides"):
        tmakit.transpose(x.t())
    with pytest.raises(ValueError, match="scale_a: is on cpu, the operands on cuda:0"):
        tmakit.gemm_fp8(a, a, scale_a=torch.ones(1))
    with pytest.raises(ValueError, match="accumulate: 'exact' is not 'promoted' or 'fast'"):
        tmakit.gemm_fp8(a, a, accumulate="exact")
