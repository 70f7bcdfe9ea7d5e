"""The torch ops without a GPU: registration, tracing through their fake implementations,
and the argument checks that need no device memory."""

import math
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


def test_scale_recipes_trace_and_are_checked_before_any_device_work(fake_cuda_views):
    # row-wise and 128-block scales as torch._scaled_mm takes them, traced through the fake
    # implementation; every wrong scale is refused naming the argument before out exists
    with FakeTensorMode():
        a = torch.empty(64, 272, device="cuda:0", dtype=FP8)
        b = torch.empty(300, 272, device="cuda:0", dtype=FP8)
        row_a = torch.empty(64, 1, device="cuda:0")
        row_b = torch.empty(1, 300, device="cuda:0")
        block_a = torch.empty(3, 64, device="cuda:0").t()  # (M, ceil(K/128)), M-major
        block_b = torch.empty(3, 3, device="cuda:0")       # (ceil(N/128), ceil(K/128))
        half = torch.empty(64, 1, device="cuda:0", dtype=torch.float16)

    def f(a, b, ra, rb, ba, bb):
        return (tmakit.gemm_fp8(a, b, scale_a=ra, scale_b=rb, accumulate="fast"),
                tmakit.gemm_fp8(a, b, scale_a=ba, scale_b=bb, out_dtype=torch.float16))

    code = make_fx(f, tracing_mode="fake")(a, b, row_a, row_b, block_a, block_b).code
    assert code.count("tmakit.gemm_fp8_out") == 2, code
    cases = [
        (dict(scale_a=row_a[:-1], scale_b=row_b), ValueError,
         r"scale_a: scale_a \(63, 1\) and scale_b \(1, 300\) are no recipe; expected row-wise "
         r"scale_a \(M, 1\) = \(64, 1\) with scale_b \(1, N\) = \(1, 300\), or 128-block "
         r"scale_a \(M, ceil\(K/128\)\) = \(64, 3\) with scale_b \(ceil\(N/128\), "
         r"ceil\(K/128\)\) = \(3, 3\)"),
        (dict(scale_a=row_a, scale_b=block_b), ValueError, "scale_b: .* are no recipe"),
        (dict(scale_a=half, scale_b=row_b), TypeError, "scale_a: dtype torch.float16"),
        (dict(scale_a=2.0, scale_b=row_b), TypeError, "scale_a: a Python float beside"),
        (dict(scale_a=row_a.view(-1), scale_b=row_b), ValueError, r"scale_a: shape \(64,\)"),
        (dict(scale_a=block_a, scale_b=block_b, accumulate="fast"), ValueError,
         "accumulate: fast with 128-block scales, which are applied at each promotion"),
        (dict(scale_a=row_a, scale_b=row_b, alpha=float("inf")), ValueError,
         "alpha: inf is not finite"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            tmakit.gemm_fp8(a, b, **kwargs)


def test_eager_gemm_hands_the_launcher_the_recipe_it_read_once(monkeypatch):
    # the eager path reads the recipe once and passes it on; the registered op reads it
    # itself: both give the launcher the same recipe and strides
    from tmakit import ops

    launched = []
    monkeypatch.setattr(ops, "_launch", lambda out, launcher, *args: launched.append(args))
    a = torch.zeros(64, 272, dtype=FP8)
    b = torch.zeros(300, 272, dtype=FP8)
    out = torch.empty(64, 300, dtype=torch.bfloat16)
    block_a, block_b = torch.ones(3, 64).t(), torch.ones(3, 3)
    recipe = ops._scale_recipe(block_a, block_b, 64, 300, 272)
    assert recipe == (ops._tmakit.GemmScaleRecipe.block, (1, 64, 3, 1))
    for given in (recipe, None):
        ops._launch_gemm(a, b, 1.0, 1.0, 1.0, block_a, block_b, "promoted", out,
                         scale_recipe=given)
    assert launched[0] == launched[1]
    assert launched[0][-3:] == (recipe[0], recipe[1], ops._ACCUMULATION["promoted"])


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


def test_shape_and_type_errors_come_before_any_device_work(fake_cuda_views):
    with FakeTensorMode():
        a = torch.empty(64, 128, device="cuda:0", dtype=FP8)
        b = torch.empty(40, 96, device="cuda:0", dtype=FP8)
        h = torch.empty(64, 128, device="cuda:0", dtype=torch.float16)
        k100 = torch.empty(64, 100, device="cuda:0", dtype=FP8)
        x = torch.empty(16, 32, device="cuda:0")
        wrong = torch.empty(16, 16, device="cuda:0")
        i8 = torch.empty(16, 32, device="cuda:0", dtype=torch.int8)
        flags = torch.empty(16, 32, device="cuda:0", dtype=torch.bool)
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
    # add's sums of other dtypes follow torch's type promotion: an out that cannot hold one
    with pytest.raises(TypeError, match="x: x \\+ value is torch.int64 by torch's type "
                                        "promotion, which x \\(torch.bool\\) cannot hold"):
        tmakit.add(flags, 1, out=flags)
    with pytest.raises(TypeError, match="out: dtype torch.int8, but x \\+ value is "
                                        "torch.float32 by torch's type promotion"):
        tmakit.add(i8, 1.5, out=i8.clone())
    with pytest.raises(TypeError, match="out: dtype torch.float32, but x \\+ value is "
                                        "torch.complex64"):
        tmakit.add(x, 1j, out=x.clone())
    with pytest.raises(ValueError, match="value: 9223372036854775808 does not fit torch.int64"):
        tmakit.add(flags, 2 ** 63)
    with pytest.raises(TypeError, match="value: expected a Python int, float or complex, got "
                                        "Tensor"):
        tmakit.add(x, torch.ones(()))
    with pytest.raises(TypeError, match="value: expected a Python int, float or complex, got "
                                        "str"):
        tmakit.add(flags, "1")
    with pytest.raises(ValueError, match=r"value: 300 does not fit torch.int8 .*\[-128, 127\]"):
        tmakit.add(i8, 300)
    with pytest.raises(TypeError, match="the stencil takes torch.float32, float64, float16, "
                                        "bfloat16, complex64, complex128 or complex32"):
        tmakit.stencil3x3(i8, LAPLACE)
    with pytest.raises(TypeError, match="weight: tap 1j is not a real number \\(complex taps "
                                        "take a complex x\\)"):
        tmakit.stencil3x3(x, [[0, 0, 0], [0, 1j, 0], [0, 0, 0]])
    with pytest.raises(TypeError, match="weight: tap 'a' is not a real number$"):
        tmakit.stencil3x3(x, [[0, 0, 0], [0, "a", 0], [0, 0, 0]])
    with pytest.raises(ValueError, match=r"weight: expected 3 rows of 3 taps, got \[1, 2, 3"):
        tmakit.stencil3x3(x, list(range(1, 10)))
    with pytest.raises(TypeError, match="weight: expected a 3x3 tensor or nested list, got "
                                        "object"):
        tmakit.stencil3x3(x, object())
    with pytest.raises(ValueError, match="weight: expected 3 rows of 3 taps"):
        tmakit.stencil3x3(x, [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="x: expected 2 dimensions"):
        tmakit.transpose(x[None])
    with pytest.raises(ValueError, match="scale_a: is on cpu, the operands on cuda:0"):
        tmakit.gemm_fp8(a, a, scale_a=torch.ones(1))
    with pytest.raises(ValueError, match="accumulate: 'exact' is not 'promoted' or 'fast'"):
        tmakit.gemm_fp8(a, a, accumulate="exact")


def test_any_layout_traces_through_the_ops(fake_cuda_views):
    mode = FakeTensorMode()
    with mode:
        x = torch.empty(997, 3001, device="cuda:0")
        images = torch.empty(3, 257, 129, device="cuda:0", dtype=torch.float64)
        ints = torch.empty(1025, 4099, device="cuda:0", dtype=torch.int32)
        longs = torch.empty(5, 7, device="cuda:0", dtype=torch.int64)

    def f(x, images, ints, longs):
        return (tmakit.transpose(x), tmakit.transpose(x.t()), tmakit.stencil3x3(images, LAPLACE),
                tmakit.add(ints, 7), tmakit.add(longs.t(), 2**62), tmakit.add(x[:, ::2], 0.5),
                tmakit.transpose(x[3, ::2]))

    graph = make_fx(f, tracing_mode="fake")(x, images, ints, longs)
    assert "tmakit.transpose_out" in graph.code and "tmakit.add_out" in graph.code
    with mode:  # (the tensors' own mode: torch refuses to mix two)
        t, tt, s, i, lt, h, row = f(x, images, ints, longs)
    assert row.shape == (1501,) and row.is_contiguous()  # 1-D: its own transpose, a copy
    assert t.shape == (3001, 997) and t.is_contiguous()
    assert tt.shape == (997, 3001) and s.shape == images.shape and s.is_contiguous()
    # add keeps a dense x's strides (as torch's x + c does) and makes the rest contiguous
    assert i.is_contiguous() and lt.stride() == longs.t().stride()
    assert h.shape == (997, 1501) and h.is_contiguous()


def test_add_of_other_dtypes_traces_as_torchs_promoted_add():
    # Sums no launcher type holds (bool and complex x, an integer x with a float value, a
    # complex value) are torch's add of torch's promoted dtype, traced as aten.add.
    mode = FakeTensorMode()
    with mode:
        flags = torch.empty(5, 7, device="cuda:0", dtype=torch.bool)
        ints = torch.empty(5, 7, device="cuda:0", dtype=torch.int32)
        z = torch.empty(5, 7, device="cuda:0", dtype=torch.complex64)
        x = torch.empty(5, 7, device="cuda:0")

    def f(flags, ints, z, x):
        return (tmakit.add(flags, True), tmakit.add(flags, 3), tmakit.add(ints, 0.5),
                tmakit.add(z.t(), 1.5), tmakit.add(x, 2 - 1j), tmakit.add(z, 1j, out=z))

    graph = make_fx(f, tracing_mode="fake")(flags, ints, z, x)
    assert "aten.add" in graph.code and "tmakit.add" not in graph.code, graph.code
    with mode:
        results = f(flags, ints, z, x)
    dtypes = [r.dtype for r in results]
    assert dtypes == [torch.bool, torch.int64, torch.float32, torch.complex64, torch.complex64,
                      torch.complex64]
    assert results[3].shape == (7, 5) and results[3].stride() == (1, 7)  # x's strides kept
    assert results[5] is z


def test_complex_stencil_traces_as_the_real_op_on_the_parts(fake_cuda_views):
    mode = FakeTensorMode()
    with mode:
        z = torch.empty(3, 17, 20, device="cuda:0", dtype=torch.complex64)

    def f(z):
        return (tmakit.stencil3x3(z, LAPLACE),
                tmakit.stencil3x3(z[0].t(), [[0, 1j, 0], [1, -4, 1], [0, -1j, 0]]))

    graph = make_fx(f, tracing_mode="fake")(z)
    assert graph.code.count("tmakit.stencil3x3_out") == 3, graph.code  # real taps once
    with mode:
        whole, one = f(z)
    assert (whole.shape, whole.dtype) == ((3, 17, 20), torch.complex64)
    assert (one.shape, one.dtype) == ((20, 17), torch.complex64)


def test_expanded_out_is_refused():
    with FakeTensorMode():
        x = torch.empty(4, 8, device="cuda:0")
        shared = torch.empty(1, 8, device="cuda:0").expand(4, 8)
    with pytest.raises(ValueError, match="out: some of its elements share memory"):
        tmakit.add(x, 1.0, out=shared)
    with pytest.raises(ValueError, match="out: some of its elements share memory"):
        tmakit.stencil3x3(x, LAPLACE, out=shared)


def test_layout_helpers_agree_with_their_definitions():
    # The eager calls' layout reads, on random 2-D views over one buffer (extents 0-6, strides
    # 0-9 with steps and transposes): _matrix_stride is _rows_view's row stride for two
    # dimensions, and _overlaps says whether the [first byte, last byte] spans meet, as
    # computed here from every element's address.
    import random

    from tmakit import ops

    rng = random.Random(20261130)
    buf = torch.zeros(256, dtype=torch.float32)
    esize = buf.element_size()

    def view():
        rows, cols = rng.randint(0, 6), rng.randint(0, 6)
        strides = (rng.choice([0, 1, 2, cols, cols + 1, 9]), rng.choice([0, 1, 2, 3, rows]))
        return buf.as_strided((rows, cols), strides, rng.randint(0, 40))

    def span(t):
        offsets = [i * t.stride(0) + j * t.stride(1) for i in range(t.shape[0])
                   for j in range(t.shape[1])]
        start = t.data_ptr()
        return start + min(offsets) * esize, start + (max(offsets) + 1) * esize

    for _ in range(3000):
        x, y = view(), view()
        general = ops._rows_view(x)
        assert ops._matrix_stride(x) == (None if general is None else general[2]), (
            x.shape, x.stride())
        expected = x.numel() > 0 and y.numel() > 0 and (
            span(x)[0] < span(y)[1] and span(y)[0] < span(x)[1])
        assert ops._overlaps(x, y) == expected, (x.shape, x.stride(), y.shape, y.stride())


def test_the_registered_ops_refuse_host_tensors_naming_the_device():
    import tmakit.ops  # noqa: F401  (registers the ops)

    x = torch.zeros(4, 8)
    calls = [lambda: torch.ops.tmakit.add_out(x, 1.0, torch.empty_like(x)),
             lambda: torch.ops.tmakit.add_(x, 1.0),
             lambda: torch.ops.tmakit.transpose_out(x, torch.empty(8, 4)),
             lambda: torch.ops.tmakit.stencil3x3_out(x, [0.0] * 9, torch.empty_like(x))]
    for call in calls:
        with pytest.raises(ValueError, match="a tensor argument is on cpu; tmakit's kernels run "
                                             r"on CUDA tensors \(move it with .cuda\(\)\)"):
            call()
    assert (x == 0).all()


def test_python_m_tmakit_says_where_the_entry_points_are():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "tmakit"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"tmakit {tmakit.__version__}: ")
    assert "python -m tmakit.bench --help" in run.stdout
    run = subprocess.run([sys.executable, "-m", "tmakit", "check", "spec.json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "runs no command (got 'check spec.json')" in run.stderr


def test_torchs_own_paths_read_an_x_that_requires_grad_as_values():
    """Where the ops hand x to torch's own add or copy (a small dense add, a small transpose,
    a promoted sum), they read its values: no error from torch's out= forms, which refuse an
    input that requires grad while autograd records, and no grad_fn on the result. (Called
    on CPU tensors below the public functions, which take CUDA tensors only.)"""
    from tmakit import ops

    x = torch.randn(2048, requires_grad=True)  # 8 KiB of float32: the add's torch band
    first, last = ops._ADD_TORCH_BYTES[4]
    assert first <= x.numel() * 4 <= last
    out = torch.empty_like(x)
    ops._launch_add(x, 1.5, out, fresh=True)
    assert not out.requires_grad and torch.equal(out, x.detach() + 1.5)
    activation = x * 2  # a non-leaf that requires grad
    out = torch.empty_like(activation)
    ops._launch_add(activation, -1.0, out, fresh=True)
    assert not out.requires_grad and torch.equal(out, activation.detach() - 1.0)
    m = torch.randn(8, 8, requires_grad=True)  # under the size the transpose copies with torch
    out = torch.empty(8, 8)
    ops._launch_transpose(m, out, fresh=True)
    assert out.grad_fn is None and not out.requires_grad and torch.equal(out, m.detach().t())
    sums = ops._add_promoted(m, 1j, None)
    assert not sums.requires_grad and torch.equal(sums, m.detach() + 1j)


def _refusal(call):
    """(type, message) of what ``call`` raises: every case below must raise."""
    with pytest.raises((TypeError, ValueError)) as caught:
        call()
    return type(caught.value), str(caught.value)


def test_each_registered_op_refuses_when_traced_what_its_kernel_refuses(fake_cuda_views):
    """A torch.ops.tmakit.* call made by hand, traced (the fake implementation: no memory) and
    called (the kernel function, which checks before it launches), is refused with the same
    error naming the same argument, before anything is written."""
    from tmakit import ops

    mode = FakeTensorMode()
    with mode:
        a, b = (torch.empty(64, 128, device="cuda:0", dtype=FP8),
                torch.empty(32, 128, device="cuda:0", dtype=FP8))
        d = torch.empty(64, 32, device="cuda:0", dtype=torch.bfloat16)
        wide = torch.empty(64, 64, device="cuda:0", dtype=torch.bfloat16)
        a_wide = torch.empty(64, 256, device="cuda:0", dtype=FP8)
        x = torch.empty(16, 32, device="cuda:0")
        xb = torch.empty(16, 32, device="cuda:0", dtype=torch.bfloat16)
        x_fp8 = torch.empty(16, 32, device="cuda:0", dtype=FP8)
        row_scale = torch.empty(16, 1, device="cuda:0")
        cases = {
            "gemm_fp8_out": [
                ((a, b, 1.0, 1.0, 1.0, None, None, "promoted", d.float()), "out: dtype"),
                ((a, b, 1.0, 1.0, 1.0, None, None, "exact", d), "accumulate: 'exact'"),
                ((a.half(), b, 1.0, 1.0, 1.0, None, None, "promoted", d), "a: dtype"),
                ((a[None], b, 1.0, 1.0, 1.0, None, None, "promoted", d), "a: expected 2"),
                ((a, b, 1.0, 1.0, 1.0, None, None, "promoted", wide[:, ::2]), "out: strides"),
                ((a_wide[:, ::2], b, 1.0, 1.0, 1.0, None, None, "promoted", d),
                 "a: rows must be K contiguous bytes"),
                ((a, b, 1.0, 1.0, 1.0, row_scale.double()[:1], None, "promoted", d),
                 "scale_a_tensor: dtype"),
                ((a[:0, :100], b[:, :100], 1.0, 1.0, 1.0, None, None, "promoted", d[:0]),
                 "a: K = 100 is not a multiple of 16"),
                ((a[:0], b, 1.0, 1.0, 1.0, None, None, "promoted", d[:7, :9]),
                 r"out: shape \(7, 9\), expected \(M, N\) = \(0, 32\)"),
            ],
            "quantize_fp8_out": [
                ((x.double(), "row", "a", x_fp8, row_scale), "x: dtype"),
                ((xb, "row", "a", x_fp8.half(), row_scale), "x_fp8: torch.float16"),
                ((xb, "row", "a", x_fp8, row_scale.t()), r"scale: torch.float32 \(1, 16\)"),
                ((xb[:0, :20], "row", "a", x_fp8[:0, :20], row_scale[:0]),
                 "x: K = 20 is not a positive multiple of 16"),
                ((xb, "rows", "a", x_fp8, row_scale), "recipe, operand: 'rows'"),
            ],
            "transpose_out": [
                ((x[None], x.t()), "x: expected 2 dimensions"),
                ((x, x), r"out: shape \(16, 32\), expected \(32, 16\)"),
            ],
            "stencil3x3_out": [
                ((x, [1.0] * 4, x.clone()), "taps: 4 values"),
                ((x.to(torch.int32), [1.0] * 9, x.clone()), "x: dtype torch.int32"),
            ],
            "add_out": [
                ((x, 1j, x.clone()), "value: 1j for torch.float32 x"),
                ((x, 1.0, x.double()), "out: dtype torch.float64 differs"),
            ],
            "add_": [
                ((x[:1].expand(16, 32), 1.0), "x: some of its elements share memory"),
            ],
        }
    kernels = {"gemm_fp8_out": ops._gemm_fp8_out_op, "quantize_fp8_out": ops._quantize_fp8_out_op,
               "transpose_out": ops._transpose_out_op, "stencil3x3_out": ops._stencil3x3_out_op,
               "add_out": ops._add_out_op, "add_": ops._add_op}
    for name, calls in cases.items():
        op = getattr(torch.ops.tmakit, name)
        for args, expected in calls:
            with mode:
                traced = _refusal(lambda: op(*args))
                called = _refusal(lambda: kernels[name](*args))
            assert traced == called, (name, expected)
            assert re.search(expected, traced[1]), (name, traced)


def test_the_traced_stencil_checks_its_taps():
    # (the kernel function leaves the taps to the launcher, which checks what it is given)
    with FakeTensorMode():
        x = torch.empty(16, 32, device="cuda:0", dtype=torch.float16)
        with pytest.raises(ValueError, match=r"weight\[1\]\[1\]: 70000 overflows torch.float16"):
            torch.ops.tmakit.stencil3x3_out(x, [0.0] * 4 + [7e4] + [0.0] * 4, x.clone())
        with pytest.raises(ValueError, match=r"weight\[0\]\[2\]: nan is not finite"):
            torch.ops.tmakit.stencil3x3_out(x, [0.0] * 2 + [math.nan] + [0.0] * 6, x.clone())


def test_the_registered_gemm_refuses_an_out_that_requires_grad():
    from tmakit import ops

    with FakeTensorMode():
        a, b = (torch.empty(64, 128, device="cuda:0", dtype=FP8),
                torch.empty(32, 128, device="cuda:0", dtype=FP8))
        out = torch.empty(64, 32, device="cuda:0", dtype=torch.bfloat16, requires_grad=True)
        with pytest.raises(ValueError, match="out: requires grad, and tmakit's ops record no "
                                             "gradient"):
            ops._gemm_fp8_out_op(a, b, 1.0, 1.0, 1.0, None, None, "promoted", out)


def test_complex32_taps_are_rounded_as_torch_rounds_them_to_float16():
    """The complex32 stencil rounds its taps in Python (what torch.compile traces) the way
    torch.tensor(taps, dtype=torch.float16) does: to float32, then to float16."""
    import random

    from tmakit import ops

    rng = random.Random(7)
    values = [0.0, -0.0, 1.0, -1.0, 65504.0, -65504.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
              -(2.0 ** -26), 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 10004.000401831858]
    values += [rng.uniform(-65500.0, 65500.0) for _ in range(20000)]
    values += [rng.uniform(-1.0, 1.0) * 2.0 ** rng.randint(-30, 15) for _ in range(20000)]
    for _ in range(20000):  # ties of float16, and a hair either side of them
        quantum = 2.0 ** (max(rng.randint(-24, 15), -14) - 10)
        tie = (rng.randint(1024, 2047) + 0.5) * quantum * rng.choice((-1.0, 1.0))
        values.append(tie * (1.0 + rng.choice((0.0, 2.0 ** -40, -(2.0 ** -40)))))
    values = [v for v in values if abs(v) < 65520.0]  # (the rest is refused before rounding)
    want = torch.tensor(values, dtype=torch.float16).double().tolist()
    for v, w in zip(values, want):
        got = ops._as_float16(v)
        assert got == w and math.copysign(1.0, got) == math.copysign(1.0, w), (v, got, w)


def test_an_int_added_to_a_float_x_is_rounded_once_at_any_size():
    from tmakit import ops

    x = torch.zeros(2)
    # 2^64 + 2^40 + 1 is above the float32 tie between 2^64 and 2^64 + 2^41; float() first
    # would drop the 1 (float64's step there is 2^12) and round the tie to even, to 2^64
    assert ops._add_value(x, 2 ** 64 + 2 ** 40 + 1) == 2.0 ** 64 + 2.0 ** 41
    assert ops._add_value(x, -(2 ** 100) - 1) == -(2.0 ** 100)
    assert ops._add_value(x.double(), 2 ** 64 + 2 ** 40 + 1) == float(2 ** 64 + 2 ** 40 + 1)
    for value in (2 ** 128, -(2 ** 128) + 2 ** 103, 10 ** 400):
        with pytest.raises(ValueError, match="overflows float32"):
            ops._add_value(x, value)
    with pytest.raises(ValueError, match="value: .* past float64's range"):
        ops._add_value(x.double(), 10 ** 400)


def test_the_registered_gemm_checks_what_its_common_case_does_not_show(monkeypatch):
    """The registered GEMM's kernel function (CPU tensors, the launch recorded): the common
    case at a glance goes to the launch; anything else through the checks that name it."""
    from tmakit import ops

    launched = []
    monkeypatch.setattr(ops, "_launch_gemm", lambda *args, **kw: launched.append(args))
    a, b = torch.empty(64, 128, dtype=FP8), torch.empty(32, 128, dtype=FP8)
    d = torch.empty(64, 32, dtype=torch.bfloat16)
    op = ops._gemm_fp8_out_op
    op(a, b, 1.0, 1.0, 1.0, None, None, "promoted", d)
    op(a, b, 1.0, 1.0, 1.0, None, None, "fast", torch.empty(64, 48, dtype=torch.float16)[:, :32])
    op(a, b, 1.0, 1.0, 1.0, torch.ones(64, 1), torch.ones(1, 32), "promoted", d)
    assert len(launched) == 3
    wide = torch.empty(64, 64, dtype=torch.bfloat16)
    refusals = [
        ((a, b, 1.0, 1.0, 1.0, None, None, "promoted", wide[:, ::2]),
         ValueError, r"out: strides \(64, 2\)"),
        ((torch.empty(64, 256, dtype=FP8)[:, ::2], b, 1.0, 1.0, 1.0, None, None, "promoted", d),
         ValueError, "a: rows must be K contiguous bytes"),
        ((a, b, 1.0, 1.0, 1.0, None, None, "promoted", d.clone().requires_grad_()),
         ValueError, "out: requires grad"),
        ((a, b, 1.0, 1.0, 1.0, None, None, "promoted", d[:1].expand(64, 32)),
         ValueError, "out: some of its elements share memory"),
        ((a, b, 1.0, 1.0, 1.0, torch.ones(64, 1, dtype=torch.float64), torch.ones(1, 32),
          "promoted", d), TypeError, "scale_a_tensor: dtype torch.float64"),
        ((a, b, 1.0, 1.0, 1.0, None, None, "exact", d), ValueError, "accumulate: 'exact'"),
        ((a.view(torch.uint8), b, 1.0, 1.0, 1.0, None, None, "promoted", d), TypeError,
         "a: dtype torch.uint8"),
    ]
    for args, error, message in refusals:
        with pytest.raises(error, match=message):
            op(*args)
    assert len(launched) == 3


def test_the_registered_quantizer_refuses_outputs_in_xs_memory(monkeypatch):
    """The registered quantizer's kernel function (CPU tensors, the launch recorded): where x
    is read through a copy (which would hide x from the launcher's own overlap checks), outputs
    in x's memory are refused, naming them, detached views too; outputs of their own go to the
    launch, and their versions move on."""
    from tmakit import ops

    launched = []
    monkeypatch.setattr(ops, "_launch", lambda *args: launched.append(args))
    x = torch.randn(64, 128, dtype=torch.bfloat16)
    as_fp8 = x.view(torch.uint8).view(FP8)
    q, scale = torch.empty(64, 112, dtype=FP8), torch.empty(64, 1)
    op = ops._quantize_fp8_out_op
    odd = x[:, 1:113]  # rows off 16 bytes: copied first
    with pytest.raises(ValueError, match="x_fp8: overlaps x, which the kernels read"):
        op(odd, "row", "a", as_fp8[:, 2:114], scale)
    with pytest.raises(ValueError, match="x_fp8: overlaps x, which the kernels read"):
        op(odd, "row", "a", as_fp8[:, 2:114].detach(), scale)
    with pytest.raises(ValueError, match="scale: overlaps x, which the kernels read"):
        op(odd, "row", "a", q, x.view(torch.float32).view(-1)[:64].view(64, 1).detach())
    with pytest.raises(ValueError, match="scale: requires grad"):
        op(odd, "row", "a", q, scale.clone().requires_grad_())
    assert not launched
    versions = q._version, scale._version
    op(odd, "row", "a", q, scale)
    op(odd.contiguous(), "row", "a", q, scale)
    assert len(launched) == 2 and (q._version, scale._version) == (versions[0] + 2,
                                                                    versions[1] + 2)
