"""Bad arguments to the torch ops, without a GPU: each is refused with TypeError / ValueError
naming the argument before anything is allocated or written (fake CUDA tensors stand in for
real ones where the check comes after the device's), and values the kernels would misread
(a lazily negated scale, a factor outside float32 whose product is inside it) are read as
their values."""

import ctypes
import decimal
import fractions
import math

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
import tmakit  # noqa: E402
from tmakit import ops  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

FP8 = torch.float8_e4m3fn
LAPLACE = [[0, 1, 0], [1, -4, 1], [0, 1, 0]]


@pytest.fixture(scope="module")
def fake():
    mode = FakeTensorMode()
    with mode:
        return dict(
            mode=mode,
            a=torch.empty(16, 128, device="cuda:0", dtype=FP8),
            b=torch.empty(32, 128, device="cuda:0", dtype=FP8),
            block_a=torch.empty(16, 1, device="cuda:0"),
            block_b=torch.empty(1, 1, device="cuda:0"),
            x=torch.empty(16, 32, device="cuda:0"),
            half=torch.empty(16, 32, device="cuda:0", dtype=torch.float16),
            images=torch.empty(2, 16, 32, device="cuda:0", dtype=torch.float64),
        )


def test_host_scales_are_checked_as_their_product_in_double(fake):
    a, b = fake["a"], fake["b"]
    # a factor outside float32 whose product is inside it: accepted (traced through the op)
    with fake["mode"]:
        assert tmakit.gemm_fp8(a, b, alpha=1e40, scale_a=1e-40).shape == (16, 32)
        assert tmakit.gemm_fp8(a, b, scale_a=0.0).shape == (16, 32)  # D = 0 was asked for
    cases = [
        (dict(scale_a=1e-46), ValueError, r"alpha \* scale_a \* scale_b = 1e-46 is below "
                                          r"float32's range \(it would be 0, and D with it\)"),
        (dict(scale_a=1e-23, scale_b=1e-23), ValueError, "= 1e-46 is below float32.s range"),
        (dict(alpha=1e20, scale_a=1e20), ValueError, "= 1e\\+40 is past float32's range"),
        (dict(scale_a=3.4028235677973366e38), ValueError, "is past float32's range"),
        (dict(alpha=math.nan), ValueError, "alpha: nan is not finite"),
        (dict(scale_b=math.inf), ValueError, "scale_b: inf is not finite"),
        (dict(scale_a=10**400), ValueError, "scale_a: an integer of 1329 bits is past "
                                            "float64's range"),
        (dict(alpha=-(10**400)), ValueError, "alpha: an integer of 1329 bits"),
        (dict(scale_a="2"), TypeError, "scale_a: expected a float or a float32 CUDA tensor, "
                                       "got str"),
        (dict(alpha="1"), TypeError, "alpha: expected a float, got str"),
        (dict(scale_b=decimal.Decimal("0.5")), TypeError, "scale_b: .* got Decimal"),
        (dict(accumulate=[]), ValueError, r"accumulate: \[\] is not 'promoted' or 'fast'"),
        (dict(out_dtype=[]), TypeError, r"out_dtype: \[\]; the GEMM writes"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            tmakit.gemm_fp8(a, b, **kwargs)
    # other real numbers are numbers
    with fake["mode"]:
        for value in (fractions.Fraction(1, 2), np.float32(0.5), True):
            assert tmakit.gemm_fp8(a, b, scale_a=value).shape == (16, 32)


def test_scalar_checks_do_not_depend_on_the_extents(fake):
    # an empty product writes nothing, but its arguments are as wrong as at any size
    with fake["mode"]:
        a0 = torch.empty(0, 128, device="cuda:0", dtype=FP8)
        blocks_a = torch.empty(0, 1, device="cuda:0")
    with pytest.raises(ValueError, match="alpha: nan is not finite"):
        tmakit.gemm_fp8(a0, fake["b"], alpha=math.nan)
    with pytest.raises(ValueError, match="accumulate: fast with 128-block scales"):
        tmakit.gemm_fp8(a0, fake["b"], scale_a=blocks_a, scale_b=fake["block_b"],
                        accumulate="fast")


def test_a_lazily_negated_scale_tensor_reaches_the_kernel_as_its_values(monkeypatch):
    launched = []

    def record(out, launcher, *args):
        # (the scale_a pointer's elements read while the call holds its memory)
        rows = 16 if args[-3] == ops._tmakit.GemmScaleRecipe.row else 1
        step = args[-2][0] if rows > 1 else 0
        launched.append((args, [ctypes.c_float.from_address(args[-5] + 4 * i * step).value
                                for i in range(rows)]))

    monkeypatch.setattr(ops, "_launch", record)
    a = torch.zeros(16, 128, dtype=FP8)
    b = torch.zeros(32, 128, dtype=FP8)
    out = torch.empty(16, 32, dtype=torch.bfloat16)
    scale = torch.tensor([2j], dtype=torch.complex64).conj().imag  # reads -2, holds +2
    rows = torch.full((16, 1), 3j, dtype=torch.complex64).conj().imag
    assert scale.is_neg() and scale.item() == -2.0
    ops._launch_gemm(a, b, 1.0, 1.0, 1.0, scale, None, "promoted", out)
    ops._launch_gemm(a, b, 1.0, 1.0, 1.0, rows, torch.ones(1, 32), "promoted", out)
    # (the launcher's arguments: ..., scale_a pointer, scale_b pointer, recipe, strides, mode)
    assert launched[0][1] == [-2.0]
    assert launched[1][1] == [-3.0] * 16
    assert launched[1][0][-3] == ops._tmakit.GemmScaleRecipe.row


def test_add_refuses_a_value_past_float32_on_every_layout(fake, fake_cuda_views):
    x = fake["x"]
    views = {"dense": x, "column step": x[:, ::2], "broadcast": x[:1].expand(16, 32),
             "transposed": x.t(), "bf16": fake["half"].to(torch.bfloat16)[:, 1:]}
    for name, view in views.items():
        for value in (1e39, -3.4028235677973366e38):
            with pytest.raises(ValueError, match="value: .* overflows float32, in which "):
                tmakit.add(view, value)
        assert tmakit.add(view, 3.4028234663852886e38).shape == view.shape  # FLT_MAX: finite
    with pytest.raises(ValueError, match="value: an integer of 1329 bits overflows float32"):
        tmakit.add(x, 10**400)
    with pytest.raises(ValueError, match="value: an integer of 1329 bits does not fit"):
        tmakit.add(x.to(torch.int32), 10**400)
    with fake["mode"]:
        wide = torch.empty(4, 4, device="cuda:0", dtype=torch.float64)
    assert tmakit.add(wide, 1e300).dtype == torch.float64  # float64 sums hold it
    with pytest.raises(ValueError, match="value: an integer of 1329 bits is past float64"):
        tmakit.add(wide, 10**400)


def test_writes_to_a_tensor_that_requires_grad_are_refused_while_autograd_records(fake):
    with fake["mode"]:
        leaf = torch.zeros(16, 32, device="cuda:0", requires_grad=True)
        out = torch.zeros(32, 16, device="cuda:0", requires_grad=True)
    with pytest.raises(ValueError, match=r"x: requires grad, and tmakit's ops record no "
                                         r"gradient.*torch.no_grad\(\), or pass x.detach\(\)"):
        tmakit.add(leaf, 1.0, out=leaf)
    with pytest.raises(ValueError, match="out: requires grad"):
        tmakit.transpose(fake["x"], out=out)
    with pytest.raises(ValueError, match="x: requires grad"):
        tmakit.add(leaf, 1j, out=leaf)  # (the promoted path)
    with torch.no_grad():
        assert tmakit.transpose(fake["x"], out=out) is out


def test_tensors_that_are_not_strided_are_refused_naming_the_argument():
    dense = torch.rand(4, 4)
    nested = torch.nested.nested_tensor([torch.rand(2, 3), torch.rand(3, 3)])
    cases = [
        (lambda: tmakit.add(dense.to_sparse(), 1.0), r"x: a sparse_coo tensor; tmakit's ops "
                                                     r"take strided tensors \(x.to_dense\(\)\)"),
        (lambda: tmakit.transpose(dense.to_sparse_csr()), "x: a sparse_csr tensor"),
        (lambda: tmakit.stencil3x3(nested, LAPLACE),
         r"x: a nested tensor; .*\(x.unbind\(\) gives its tensors\)"),
        (lambda: tmakit.quantize_fp8(dense.to_sparse()), "x: a sparse_coo tensor"),
        (lambda: tmakit.gemm_fp8(dense.to_sparse(), dense), "a: a sparse_coo"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()


def test_arrays_whose_dlpack_export_fails_are_refused_naming_the_argument():
    class Raising:
        def __dlpack__(self, **kwargs):
            raise RuntimeError("no export")

        def __dlpack_device__(self):
            return (1, 0)  # (the host: no CUDA initialisation before the export)

    class NoDevice:
        def __dlpack__(self, **kwargs):
            return None

    for array, why in ((Raising(), "RuntimeError: no export"), (NoDevice(), "AttributeError"),
                       (np.zeros((2, 2), "M8[s]"), "BufferError")):
        with pytest.raises(TypeError, match=f"x: its DLPack export failed \\({why}"):
            tmakit.transpose(array)


def test_stencil_taps_are_real_numbers_read_in_their_order(fake):
    x, half = fake["x"], fake["half"]
    type_errors = [
        ([["1", "0", "0"], [0, 1, 0], [0, 0, 1]], "weight: tap '1' is not a real number$"),
        (np.array([[1 + 2j, 0, 0], [0, 1, 0], [0, 0, 1]]),
         r"weight: tap np.complex128\(1\+2j\) is not a real number \(complex taps take a "
         r"complex x\)"),
        ([[decimal.Decimal(1), 0, 0], [0, 1, 0], [0, 0, 1]], "weight: tap Decimal"),
        ("123456789", "weight: expected a 3x3 tensor or nested list, got str"),
        ({1, 2, 3}, "got set"),
        (torch.eye(3).to_sparse(), "weight: a sparse_coo tensor"),
        (torch.empty(3, 3, device="meta"), "weight: a meta tensor"),
    ]
    for weight, message in type_errors:
        with pytest.raises(TypeError, match=message):
            tmakit.stencil3x3(x, weight)
    value_errors = [
        (["123", "456", "789"], "weight: expected 3 rows of 3 taps"),
        ([{7, 8, 9}, [0, 1, 0], [0, 0, 1]], "weight: expected 3 rows of 3 taps"),
        ([[math.nan, 0, 0], [0, 1, 0], [0, 0, 1]],
         r"weight\[0\]\[0\]: nan is not finite; the stencil takes finite taps"),
        ([[0, 0, 0], [0, 1, -math.inf], [0, 0, 1]], r"weight\[1\]\[2\]: -inf is not finite"),
        ([[0, 0, 0], [0, 1, 0], [0, 0, 10**400]],
         "weight: a tap: an integer of 1329 bits is past float64's range"),
        ([[0, 0, 0], [0, 1e39, 0], [0, 0, 1]],
         r"weight\[1\]\[1\]: 1e\+39 overflows torch.float32, x's dtype, to which the taps are "
         r"rounded"),
        (torch.ones(4, 4), r"weight: shape \(4, 4\), expected \(3, 3\) \(or \(1, 1, 3, 3\), or "
                           r"9 taps row-major\)"),
    ]
    for weight, message in value_errors:
        with pytest.raises(ValueError, match=message):
            tmakit.stencil3x3(x, weight)
    with pytest.raises(ValueError, match=r"weight\[2\]\[0\]: 100000 overflows torch.float16"):
        tmakit.stencil3x3(half, [[0, 0, 0], [0, 1, 0], [1e5, 0, 0]])
    # 65504 (float16's largest) is a tap a float16 image takes; large float64 taps are fine
    assert tmakit.stencil3x3(half, [[0, 0, 0], [0, 65504.0, 0], [0, 0, 0]]).shape == half.shape
    assert tmakit.stencil3x3(fake["images"], [[1e300] * 3] * 3).shape == (2, 16, 32)
    # empty x: the same checks
    with fake["mode"]:
        empty = torch.empty(0, 5, device="cuda:0")
    with pytest.raises(ValueError, match="nan is not finite"):
        tmakit.stencil3x3(empty, [[math.nan, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_the_taps_fast_path_agrees_with_the_general_reader():
    for weight in ([[0.5, 1.0, -2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]],
                   [[0, 1, 0], [1, -4, 1], [0, 1, 0]], [[True, 0.5, 1], [2, 3, 4], [5, 6, 7]],
                   np.arange(9.0).reshape(3, 3), torch.arange(9.0).reshape(3, 3),
                   ((1, 2, 3), (4, 5, 6), (7, 8, 9)), [[np.float32(1.5)] * 3] * 3):
        taps = ops._taps(weight)
        assert all(type(v) is float for v in taps), taps
        assert taps == [float(v) for v in np.asarray(weight, dtype=np.float64).reshape(9)]


def test_the_elements_overlap_test_is_exact_in_two_dimensions():
    rng = np.random.default_rng(5)
    base = torch.empty(4096)
    for _ in range(400):
        shape = tuple(int(v) for v in rng.integers(1, 9, size=int(rng.integers(1, 4))))
        strides = tuple(int(v) for v in rng.integers(1, 13, size=len(shape)))
        t = base.as_strided(shape, strides)
        offsets = {sum(i * s for i, s in zip(index, strides)) for index in np.ndindex(*shape)}
        assert ops._elements_overlap(t) == (len(offsets) != t.numel()), (shape, strides)


def test_an_out_whose_rows_overlap_is_refused():
    out = torch.empty(64).as_strided((4, 8), (5, 1))  # rows 5 apart, 8 long
    with pytest.raises(ValueError, match="out: some of its elements share memory"):
        ops._check_writable(out)
    ops._check_writable(torch.empty(64).as_strided((4, 8), (9, 1)))  # a gap: writable
    ops._check_writable(torch.empty(64).as_strided((3, 2), (3, 2)))  # interleaved, disjoint


def test_add_on_dtypes_torch_cannot_promote_is_a_type_error(fake):
    with fake["mode"]:
        for dtype in (getattr(torch, "uint3", None), getattr(torch, "int4", None), torch.bits8):
            if dtype is None:
                continue
            try:
                x = torch.empty(4, 4, device="cuda:0", dtype=dtype)
            except Exception:  # (a dtype fake tensors cannot hold: nothing to test)
                continue
            for value in (1, 1.0):
                with pytest.raises(TypeError, match=f"x: torch's own add does not take {dtype}"):
                    tmakit.add(x, value)


def test_transpose_copies_the_sub_byte_shell_dtypes_as_bytes():
    for name in ("uint1", "uint4", "int4", "int7"):
        dtype = getattr(torch, name, None)
        if dtype is None:
            continue
        raw = torch.arange(24, dtype=torch.uint8).reshape(4, 6)
        x = raw.view(dtype).t()  # (6, 4), rows not consecutive: torch's copy path
        out = torch.empty(4, 6, dtype=dtype)
        ops._launch_transpose(x, out)
        assert torch.equal(out.view(torch.uint8), raw)
