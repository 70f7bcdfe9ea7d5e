"""explain_triton without Triton: the box Triton 3.6 derives from a block (plain numbers), and
descriptors given by the constructor's arguments (an integer address and a dtype), judged by
Triton's own checks first and then by the validator on the tensor map Triton would encode.
tests/python/test_triton.py checks the same derivation against Triton's compiler."""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

import tmakit
from tmakit.triton_descriptors import default_swizzle_bytes, derive_box


def args(block_shape, dtype="float16", shape=(256, 256), strides=None, base=4096, **kw):
    if strides is None:
        strides, step = [], 1
        for extent in reversed(shape):
            strides.insert(0, step)
            step = step * extent if isinstance(extent, int) else step * 256
    as_list = (lambda v: list(v) if isinstance(v, tuple) else v)
    return dict(base=base, dtype=dtype, shape=as_list(shape), strides=as_list(strides),
                block_shape=as_list(block_shape), **kw)


# --- the derivation on plain numbers ----------------------------------------------------------


def test_swizzle_follows_the_inner_row_and_needs_eight_rows():
    assert default_swizzle_bytes((64, 64), 16) == 128       # 128-byte rows
    assert default_swizzle_bytes((64, 256), 16) == 128      # 512-byte rows: still 128
    assert default_swizzle_bytes((64, 32), 16) == 64
    assert default_swizzle_bytes((64, 16), 16) == 32
    assert default_swizzle_bytes((64, 8), 16) == 0          # 16-byte rows: no span fits
    assert default_swizzle_bytes((4, 64), 16) == 0          # 4 rows: fewer than 8
    assert default_swizzle_bytes((2, 2, 2, 64), 16) == 128  # outer dimensions multiply: 8 rows
    assert default_swizzle_bytes((512,), 8) == 0            # rank 1: never swizzled
    assert default_swizzle_bytes((16, 64), 8) == 64         # fp8: 64-byte rows


def test_box_clamps_each_dimension_and_the_inner_one_to_the_span():
    assert derive_box((64, 256), 16) == ((64, 64), 128)     # 4 copies of 128-byte rows
    assert derive_box((16, 64), 32) == ((16, 32), 128)
    assert derive_box((16, 64), 64) == ((16, 16), 128)
    assert derive_box((4, 512), 32) == ((4, 256), 0)        # unswizzled: 256 elements at most
    assert derive_box((512, 8), 16) == ((256, 8), 0)
    assert derive_box((1024,), 16) == ((256,), 0)
    assert derive_box((1, 1, 1, 8, 64), 32) == ((1, 1, 1, 8, 32), 128)
    assert derive_box((64, 64), 16, swizzle_bytes=32) == ((64, 16), 32)  # a stated layout
    assert derive_box((64, 64), 16, swizzle_bytes=0) == ((64, 64), 0)
    with pytest.raises(ValueError, match="shorter than the 128B swizzle span"):
        derive_box((64, 16), 16, swizzle_bytes=128)
    with pytest.raises(ValueError, match="element_bits: 4"):
        derive_box((64, 16), 4)


# --- Triton's own checks ----------------------------------------------------------------------


@pytest.mark.parametrize("kw, rule, text", [
    (args((64, 64), strides=[256]), "TT1", "rank mismatch"),
    (args((64,)), "TT1", "rank mismatch"),
    (args((1,) * 6, shape=(1,) * 6), "TT2", "rank cannot be more than 5"),
    (args((64, 64), base=4096 + 8), "TT3", "base must be 16-byte aligned"),
    (args((64, 48)), "TT4", "Shape element 1 must be a power of 2"),
    (args((2048, 1024)), "TT4", "numel (2097152) exceeds triton maximum tensor numel"),
    (args((64, 64), strides=[100, 1]), "TT5", "strides must be 16-byte aligned"),
    (args((64, 64), shape=(0, 256), strides=[256, 1]), "TT6", "shape must be positive"),
    (args((64, 64), shape=(-1, 256), strides=[256, 1]), "TT6", "shape must be positive"),
    (args((64, 64), shape=(float("nan"), 256), strides=[256, 1]), "TT6",
     "shape must be positive"),
    (args((64, 64), strides=[256, 2]), "TT7", "Last dimension must be contiguous"),
    (args((64, 64), padding="inf"), "TT8", "Illegal value for padding"),
    (args((64, 64), dtype="int32", padding="nan"), "TT8", "only supported for floating point"),
    (args((64, 64), dtype="torch.float8_e8m0fnu"), "TT9", "no Triton type"),
    (args((64, 64), dtype="bool"), "TT9", "no TMA element type for 1-bit elements"),
    (args((64, 64), dtype="torch.float8_e4m3fnuz"), "TT9", "not supported in this arch"),
    (args((256, 256), dtype="float32"), "TT10", "out of resource: shared memory"),
    (args((64, 16), swizzle=128), "TT11", "Block shape is too small for the swizzle"),
    (args((64, 64), shape=(256, 256.0)), "TT12", "shape must be an int"),
    (args((64, 64), strides=[np.int64(256), 1]), "TT12", "shape must be an int"),
    (args((8, 64), shape=(2 ** 31, 64)), "TT14", "signed integer is greater than maximum"),
])
def test_triton_refusals_name_tritons_check(kw, rule, text):
    result = tmakit.explain_triton(**kw)
    assert not result.ok and result.rule == rule and result.refused_by == "triton"
    assert text in result.message and f"Triton {result.triton_version} refuses it" in \
        result.message
    # the box is derived before the launcher's checks (TT10, TT12), and the tensor map encoded
    # before the kernel's int32 extents (TT14)
    derived = rule in ("TT10", "TT12", "TT14")
    assert (result.box is not None, result.swizzle_bytes is not None) == (derived, derived)
    assert (result.copies is not None) == derived
    assert bool(result.assumed) == (derived or rule == "TT11")  # (TT11: the layout assumed)
    assert (result.spec is not None) == (rule == "TT14")


def test_the_message_gives_tritons_text_and_the_fix():
    strides = tmakit.explain_triton(**args((64, 64), strides=[100, 1]))
    assert strides.message == (
        "TT5: Triton 3.6 refuses it (TensorDescriptor(): 'strides must be 16-byte aligned'): "
        "strides[0] = 100 elements x 2 bytes = 200 bytes is not a multiple of 16; pad that "
        "dimension's rows to 104 elements")
    assert strides.fix == {"field": "strides", "index": 0, "value": 104}
    power = tmakit.explain_triton(**args((64, 48)))
    assert "block_shape[1] = 48; use 32 or 64" in power.message
    assert power.fix == {"field": "block_shape", "index": 1, "value": 32}


def test_the_first_broken_check_in_tritons_order_is_named():
    # Misaligned base and strides: the constructor asserts on the base first.
    both = tmakit.explain_triton(**args((64, 64), base=4104, strides=[100, 1]))
    assert both.rule == "TT3"
    # A float block and a misaligned stride: validate_block_shape runs before the strides.
    assert tmakit.explain_triton(**args((64, 64.0), strides=[100, 1])).rule == "TT4"


# --- the tensor map Triton encodes, judged by the validator -----------------------------------


def test_a_block_wider_than_the_swizzle_span_is_valid():
    # The block is not the box: 256 fp16 = 512-byte rows load as four 128-byte boxes.
    result = tmakit.explain_triton(**args((64, 256)))
    assert result.ok and result.refused_by is None
    assert result.block == (64, 256) and result.box == (64, 64)
    assert result.swizzle_bytes == 128 and result.copies == 4
    assert result.spec["boxDim"] == [64, 64] and result.spec["swizzle"] == "128B"
    assert result.spec["l2Promotion"] == "128B" and result.spec["elementStrides"] == [1, 1]
    assert result.triton_version == "3.6" and "no user of the load" in result.assumed


def test_the_driver_refusals_triton_lets_through_are_named_before_launch():
    narrow = tmakit.explain_triton(**args((64, 4)))  # 8-byte rows, no swizzle
    assert narrow.rule == "T7" and narrow.refused_by == "driver"
    assert narrow.box == (64, 4) and narrow.swizzle_bytes == 0
    assert "make block_shape[-1] at least 8 elements" in narrow.message
    fp8_nan = tmakit.explain_triton(**args((64, 64), dtype="torch.float8_e4m3fn",
                                           padding="nan"))
    assert fp8_nan.rule == "T13" and fp8_nan.refused_by == "driver"
    assert "padding='zero'" in fp8_nan.message
    huge_stride = tmakit.explain_triton(**args((1, 64), shape=(1, 64), strides=[2 ** 40, 1]))
    assert huge_stride.rule == "T6"
    long_dim = tmakit.explain_triton(**args((8, 64), shape=(2 ** 32 + 1, 64)))
    assert long_dim.rule == "T5"
    rank1 = tmakit.explain_triton(**args((4,), shape=(64,)))  # rank 1: 8 bytes
    assert rank1.rule == "T7" and rank1.box == (4,)
    wide_rank1 = tmakit.explain_triton(**args((1024,), shape=(4096,)))
    assert wide_rank1.ok and wide_rank1.box == (256,) and wide_rank1.copies == 4


def test_every_triton_type_maps_to_its_tma_type():
    for dtype, tma in [("float16", "FLOAT16"), ("bfloat16", "BFLOAT16"),
                       ("float32", "FLOAT32"), ("float64", "FLOAT64"),
                       ("torch.float8_e4m3fn", "UINT8"), ("torch.float8_e5m2", "UINT8"),
                       ("int8", "UINT8"), ("uint8", "UINT8"), ("int16", "UINT16"),
                       ("uint16", "UINT16"), ("int32", "INT32"), ("uint32", "UINT32"),
                       ("int64", "INT64"), ("uint64", "UINT64"), ("fp16", "FLOAT16")]:
        result = tmakit.explain_triton(**args((16, 64), dtype=dtype))
        assert result.ok, (dtype, result)
        assert result.spec["dataType"] == tma, dtype


def test_a_stated_shared_layout_changes_the_box():
    assert tmakit.explain_triton(**args((64, 64), swizzle="32B")).box == (64, 16)
    none = tmakit.explain_triton(**args((64, 64), swizzle="none"))
    assert none.box == (64, 64) and none.swizzle_bytes == 0 and "0B swizzle" in none.assumed
    with pytest.raises(ValueError, match="swizzle: '96B' is not one of"):
        tmakit.explain_triton(**args((64, 64), swizzle="96B"))


def test_descriptor_objects_and_host_arrays():
    raw = np.zeros(256 * 256 * 2 + 256, dtype=np.uint8)
    start = (-raw.ctypes.data) % 128
    x = raw[start:start + 256 * 256 * 2].view(np.float16).reshape(256, 256)

    def descriptor(base, block_shape, padding="zero"):
        # The attributes of triton.tools.tensor_descriptor.TensorDescriptor.
        return SimpleNamespace(base=base, shape=list(base.shape),
                               strides=[s // base.itemsize for s in base.strides],
                               block_shape=list(block_shape), padding=padding)

    assert tmakit.explain_triton(descriptor(x, (64, 64))).ok
    assert tmakit.explain_triton(descriptor(x, (64, 128))).ok       # two 128-byte boxes
    assert tmakit.explain_triton(descriptor(x, (64, 4))).rule == "T7"
    assert tmakit.explain_triton(descriptor(x[:, 3:], (64, 64))).rule == "TT3"
    assert tmakit.explain_triton(base=x, block_shape=[64, 64]).ok  # shape, strides: x's
    with pytest.raises(TypeError, match="descriptor: has no 'block_shape'"):
        tmakit.explain_triton(SimpleNamespace(base=x, shape=[1], strides=[1]))
    with pytest.raises(TypeError, match="give a descriptor or its arguments, not both"):
        tmakit.explain_triton(descriptor(x, (64, 64)), block_shape=[8, 8])


# --- hostile input: clear errors naming the argument ------------------------------------------


@pytest.mark.parametrize("kw, error, text", [
    (args((64, 64), shape="ab"), TypeError, "shape: expected a sequence of ints"),
    (args((64, 64), strides=7), TypeError, "strides: expected a sequence of ints"),
    (args((64, 64), strides=[]), ValueError, "strides: empty for a shape of 2 dimensions"),
    (args("64"), TypeError, "block_shape: expected a sequence of ints"),
    (args((64, 64), shape=(256, "x")), TypeError, "shape[1]: expected an int"),
    (args((64, 64), shape=(256, None)), TypeError, "shape[1]: expected an int"),
    (args((True, 64)), TypeError, "block_shape[0]: expected an int, got bool"),
    (args((64, 64), dtype=None), ValueError, "dtype: an integer base address needs dtype="),
    (args((64, 64), dtype="bogus"), ValueError, "dtype: 'bogus' is not a torch or NumPy dtype"),
    (dict(base=4096, dtype="float16", block_shape=[8]), ValueError, "shape: missing"),
    (dict(base=4096, dtype="float16", shape=[8]), ValueError, "strides: missing"),
    (dict(dtype="float16", shape=[8], strides=[1], block_shape=[8]), ValueError,
     "base: missing"),
    (args((64, 64), base="0x1000"), TypeError, "base: expected a torch tensor"),
    (args((64, 64), shape=(2 ** 64, 256)), ValueError, "shape[0]: 18446744073709551616 is "
                                                       "outside 0..2**64-1"),
    (args((64, 64), strides=(2 ** 63, 1)), ValueError, "strides[0]: 9223372036854775808 is "
     "outside -2**63..2**63-1"),
    (args((64, 64), shape=itertools.count(1), strides=(256, 1)), ValueError,
     "shape: more than 64 values"),
    (args((64, 64), strides=itertools.count(1)), ValueError, "strides: more than 64 values"),
    (args(itertools.repeat(64)), ValueError, "block_shape: more than 64 values"),
    (args((64, 64), shape=np.array(5), strides=(256, 1)), TypeError,
     "shape: expected a sequence of ints"),
])
def test_arguments_that_are_not_a_descriptor_raise_naming_the_argument(kw, error, text):
    with pytest.raises(error) as info:
        tmakit.explain_triton(**kw)
    assert text in str(info.value)


def test_non_integer_blocks_are_refused_not_truncated():
    for block in [(64, 64.0), (64.5, 64), (64, np.int64(64))]:
        result = tmakit.explain_triton(**args(block))
        assert result.rule == "TT4" and "must have type `constexpr[int]`" in result.message


def test_numpy_integers_are_addresses_of_the_dtype_given():
    spec = tmakit.explain_triton(**args((64, 64), base=np.int64(4096))).spec
    assert spec["globalAddress"] == 4096 and spec["dataType"] == "FLOAT16"
    high = tmakit.explain_triton(**args((64, 64), base=np.uint64(2 ** 64 - 16)))
    assert high.rule == "X2" and not high.ok
    assert tmakit.explain_triton(**args((64, 64)), swizzle=np.int64(128)).swizzle_bytes == 128


def test_an_array_base_takes_no_other_dtype():
    x = np.zeros((16, 64), np.float32)
    with pytest.raises(ValueError, match="dtype: 'float16' differs from base's float32"):
        tmakit.explain_triton(base=x, dtype="float16", block_shape=[8, 64])


def test_a_descriptor_that_cannot_be_read_is_refused_by_name():
    class Broken:
        base, strides, block_shape = 4096, [256, 1], [64, 64]

        @property
        def shape(self):
            raise RuntimeError("no shape here")

    with pytest.raises(TypeError, match="descriptor: .*raised RuntimeError: no shape here"):
        tmakit.explain_triton(Broken())


def test_torch_tensor_subclasses_and_meta_tensors():
    torch = pytest.importorskip("torch")
    sub = torch.zeros(64, 128).as_subclass(type("Sub", (torch.Tensor,), {}))
    assert tmakit.tensor_map(sub, box=(8, 32)).spec["dataType"] == "FLOAT32"
    assert tmakit.explain_triton(base=sub, block_shape=[8, 32]).block == (8, 32)
    for call in (lambda: tmakit.tensor_map(torch.zeros(8, 8, device="meta"), box=(2, 4)),
                 lambda: tmakit.explain_triton(base=torch.zeros(8, 8, device="meta"),
                                               block_shape=[2, 4])):
        with pytest.raises(ValueError, match="a meta tensor, which has no memory"):
            call()


def test_an_array_interface_names_its_type_by_its_type_string():
    # "<f2" is NumPy's float16: judged as the FLOAT16 array tensor_map reads it as (was TT9)
    class Interface:
        __cuda_array_interface__ = dict(shape=(64, 64), typestr="<f2", data=(4096, False),
                                        version=3)

    result = tmakit.explain_triton(base=Interface(), block_shape=[16, 64])
    assert result.ok and result.spec["dataType"] == "FLOAT16"
    assert tmakit.tensor_map(Interface(), box=(16, 64)).spec["dataType"] == "FLOAT16"


def test_strides_reach_the_driver_as_the_launcher_forms_them():
    # Triton's launcher reads every stride but the last (the constructor wants it 1, and it is
    # not read again), and hands the driver each as the bits of a signed 64-bit product
    ok = tmakit.explain_triton(**args((8, 64), shape=(64, 64), strides=[64, np.int64(1)]))
    assert ok.ok, ok
    negative = tmakit.explain_triton(**args((8, 64), shape=(64, 64), strides=[-64, 1]))
    assert (negative.rule, negative.refused_by) == ("T6", "driver")
    assert negative.spec["globalStrides"] == [(1 << 64) - 128]
    # (Triton's own checks still come first, in its order)
    assert tmakit.explain_triton(**args((8, 64), shape=(64, 64), strides=[-64, 1],
                                        base=4100)).rule == "TT3"


def test_the_map_is_judged_as_sm90a_whatever_gpu_is_present(monkeypatch):
    # Triton on sm_90 is what explain_triton models (its fp8 list, its shared memory): the map
    # is judged by sm_90a's rules even where the process sees another GPU, whose rules the
    # validator would otherwise take by default
    import tmakit.triton_descriptors as td
    asked = []
    real = td.check
    monkeypatch.setattr(td, "check", lambda spec, arch=None: asked.append(arch) or
                        real(spec, arch=arch))
    assert tmakit.explain_triton(base=1 << 20, dtype="float16", shape=[64, 64],
                                 strides=[64, 1], block_shape=[64, 64]).ok
    assert asked == ["sm_90a"]
