"""tmakit.tensor_map over host arrays (NumPy): the spec a descriptor over the array would have,
judged by the validator. (explain_triton: test_triton_rules.py.)"""

import numpy as np
import pytest

import tmakit


def aligned(shape, dtype=np.float32, offset_bytes=0):
    """A C-contiguous array whose data starts `offset_bytes` past a 128-byte boundary."""
    itemsize = np.dtype(dtype).itemsize
    count = int(np.prod(shape))
    raw = np.zeros(count * itemsize + 256, dtype=np.uint8)
    start = (-raw.ctypes.data) % 128 + offset_bytes
    return raw[start:start + count * itemsize].view(dtype).reshape(shape)


def test_spec_comes_from_the_array_in_the_drivers_order():
    x = aligned((64, 128))
    tm = tmakit.tensor_map(x, box=(8, 32), swizzle="128B", l2_promotion=128)
    assert tm.spec == {
        "encode": "tiled", "dataType": "FLOAT32", "rank": 2, "globalAddress": x.ctypes.data,
        "globalDim": [128, 64], "globalStrides": [512], "boxDim": [32, 8],
        "interleave": "NONE", "swizzle": "128B", "l2Promotion": "128B", "oobFill": "NONE"}
    assert tm.check().ok
    assert tm.describe().startswith("tiled FLOAT32 rank 2 @0x")
    assert tmakit.check(tm).ok and tmakit.describe(tm) == tm.describe()


def test_the_common_mistakes_name_their_rule_and_fix():
    x = aligned((64, 128))
    wide = tmakit.tensor_map(x, box=(8, 64), swizzle="128B").check()
    assert wide.rule == "T9" and "use boxDim[0] <= 32" in wide.message
    narrow = tmakit.tensor_map(aligned((64, 128), np.float16), box=(8, 4)).check()
    assert narrow.rule == "T7" and "is not a multiple of 16" in narrow.message
    shifted = tmakit.tensor_map(x[1:], box=(8, 32)).check()  # a row later: still aligned
    assert shifted.ok
    misaligned = tmakit.tensor_map(x[:, 1:], box=(8, 32)).check()  # 4 bytes into a row
    assert misaligned.rule == "T4" and "not 16-byte aligned" in misaligned.message
    odd_rows = tmakit.tensor_map(aligned((64, 98)), box=(8, 32)).check()  # 392-byte rows
    assert odd_rows.rule == "T6"


def test_element_types_map_to_tma_types():
    for dtype, name in [(np.float64, "FLOAT64"), (np.int32, "INT32"), (np.uint8, "UINT8"),
                        (np.int8, "UINT8"), (np.uint16, "UINT16"), (np.int64, "INT64")]:
        assert tmakit.tensor_map(aligned((16, 64), dtype), box=(4, 16)).spec["dataType"] == name
    tf32 = tmakit.tensor_map(aligned((16, 64)), box=(4, 16), data_type="tfloat32")
    assert tf32.spec["dataType"] == "TFLOAT32"
    with pytest.raises(TypeError, match="no TMA data type holds"):
        tmakit.tensor_map(aligned((4, 8), np.complex64), box=(1, 2))
    # 16-byte elements: no type of their size to suggest, a view of their bytes instead
    with pytest.raises(TypeError, match="TMA's types have 1, 2, 4 or 8 bytes, its elements 16"):
        tmakit.tensor_map(aligned((4, 8), np.complex128), box=(1, 2))


def test_a_maps_spec_is_a_copy_that_changes_no_map():
    tm = tmakit.tensor_map(aligned((64, 128)), box=(8, 32), swizzle="128B")
    spec = tm.spec
    spec["boxDim"] = [64, 8]  # past the swizzle's span: T9
    assert tm.check().ok and tm.spec["boxDim"] == [32, 8]
    assert tmakit.check(spec).rule == "T9"
    assert tmakit.TensorMap(spec).check().rule == "T9"
    with pytest.raises(AttributeError):
        tm.spec = spec


def test_arguments_that_cannot_be_a_tensor_map_raise():
    x = aligned((64, 128))
    with pytest.raises(ValueError, match="the elements of its last dimension are 8 bytes "
                                         "apart, not 4"):
        tmakit.tensor_map(x[:, ::2], box=(8, 16))
    fields = np.zeros((8, 16), dtype=[("a", "u1"), ("b", "<f4")])["b"]  # 5 bytes apart
    with pytest.raises(ValueError, match="are 5 bytes apart, not 4"):
        tmakit.tensor_map(fields, box=(2, 4))
    with pytest.raises(ValueError, match="box: 1 entries for a tensor of 2 dimensions"):
        tmakit.tensor_map(x, box=(8,))
    with pytest.raises(TypeError, match="box: expected a sequence"):
        tmakit.tensor_map(x, box=8)
    with pytest.raises(ValueError, match="swizzle: '96B' is not one of"):
        tmakit.tensor_map(x, box=(8, 32), swizzle="96B")
    with pytest.raises(TypeError, match="tensor: expected a torch tensor or an array"):
        tmakit.tensor_map([[1.0]], box=(1, 1))


def test_element_strides_and_oob_fill_reach_the_spec():
    x = aligned((64, 128))
    tm = tmakit.tensor_map(x, box=(8, 32), element_strides=(2, 1), oob_fill="nan")
    assert tm.spec["elementStrides"] == [1, 2]
    assert tm.spec["oobFill"] == "NAN_REQUEST_ZERO_FMA"
    assert tm.check().ok
    bad = tmakit.tensor_map(aligned((64, 128), np.int32), box=(8, 32), oob_fill="nan").check()
    assert bad.rule == "T13"


def test_data_type_takes_names_numpy_and_is_refused_by_name_otherwise():
    x = aligned((16, 64))
    for data_type in ("TFLOAT32", "tfloat32", np.float32, np.dtype("f4"), np.dtype("<u4"),
                      np.int32):
        spec = tmakit.tensor_map(x, box=(4, 16), data_type=data_type).spec
        assert spec["dataType"] in ("TFLOAT32", "FLOAT32", "UINT32", "INT32")
    assert tmakit.tensor_map(x, box=(4, 16), data_type=np.uint32).spec["dataType"] == "UINT32"
    cases = [
        (4, TypeError, "data_type: expected a TMA type name ('TFLOAT32'), a NumPy dtype or a "
                       "torch dtype, got 4"),
        (True, TypeError, "data_type: expected a TMA type name"),
        (np.int64(7), TypeError, "data_type: expected a TMA type name"),
        ("", ValueError, "data_type: an empty string names no type"),
        ("FLOAT33", ValueError, "data_type: 'FLOAT33' is not a TMA data type"),
        ("\ud800", ValueError, "data_type: '\\ud800' is not a TMA data type"),
        (np.complex64, TypeError, "data_type: no TMA data type holds NumPy's complex64"),
        ("FLOAT64", ValueError, "data_type: FLOAT64 has 8-byte elements, the tensor's (<f4) "
                                "are 4 bytes"),
        (np.float16, ValueError, "data_type: FLOAT16 has 2-byte elements"),
    ]
    for data_type, error, message in cases:
        with pytest.raises(error) as raised:
            tmakit.tensor_map(x, box=(4, 16), data_type=data_type)
        assert str(raised.value).startswith(message), str(raised.value)
    # an element type without a TMA type takes one of its size
    dates = tmakit.tensor_map(aligned((16, 8), "M8[s]"), box=(4, 8), data_type="UINT64")
    assert dates.spec["dataType"] == "UINT64" and dates.check().ok


def test_enum_arguments_take_numpy_integers_and_refuse_other_types_by_name():
    x = aligned((64, 128))
    assert tmakit.tensor_map(x, box=(8, 32), swizzle=np.int64(128)).spec["swizzle"] == "128B"
    assert tmakit.tensor_map(x, box=(8, 32), l2_promotion=np.uint16(256)) \
        .spec["l2Promotion"] == "256B"
    for value, error, message in [
            (128.0, TypeError, "swizzle: expected a str ('NONE', '32B', '64B', '128B') or its "
                               "byte count, got 128.0"),
            ([128], TypeError, "swizzle: expected a str"),
            (True, TypeError, "swizzle: expected a str"),
            (2 ** 5000, ValueError, "swizzle: an integer of 5001 bits is not one of"),
            ("x" * 10 ** 6, ValueError, "swizzle: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... "
                                        "is not one of")]:
        with pytest.raises(error) as raised:
            tmakit.tensor_map(x, box=(8, 32), swizzle=value)
        assert str(raised.value).startswith(message), str(raised.value)


def test_box_entries_are_named_and_its_values_converted_once():
    x = aligned((64, 128))
    assert tmakit.tensor_map(x, box=np.array([8, 32])).spec["boxDim"] == [32, 8]
    assert tmakit.tensor_map(x, box=range(8, 40, 24)).spec["boxDim"] == [32, 8]
    for box, error, message in [((8, "32"), TypeError, "box[1]: expected an int, got '32'"),
                                ((8, 32.5), TypeError, "box[1]: expected an int, got 32.5"),
                                ((8, float("nan")), ValueError, "box[1]: nan is not a number"),
                                (memoryview(b"ab"), TypeError, "box: expected a sequence"),
                                ({8, 32}, TypeError, "box: expected a sequence"),
                                ((8, [32]), TypeError, "box[1]: expected an int, got a list")]:
        with pytest.raises(error) as raised:
            tmakit.tensor_map(x, box=box)
        assert str(raised.value).startswith(message), str(raised.value)


class Interface:
    def __init__(self, **interface):
        self.__array_interface__ = interface


def test_arrays_and_interfaces_that_hold_no_tensor_are_refused_by_name():
    good = {"typestr": "<f4", "shape": (16, 64), "data": (4096, False), "version": 3}
    assert tmakit.tensor_map(Interface(**good), box=(4, 16)).check().ok
    cases = [
        (np.zeros((4, 8), dtype=object), TypeError, "tensor: a NumPy array of object dtype"),
        (Interface(**dict(good, typestr="<M8[s]")), TypeError,
         "tensor: no TMA data type holds <M8[s]; pass data_type= with a type of its 8-byte"),
        (Interface(**dict(good, typestr="f4")), ValueError,
         "tensor.__array_interface__['typestr']: 'f4' is not an array type string"),
        (Interface(**dict(good, typestr=None)), ValueError,
         "tensor.__array_interface__['typestr']: None is not an array type string"),
        (Interface(**dict(good, shape=None)), TypeError,
         "tensor.__array_interface__['shape']: expected a tuple of ints, got None"),
        (Interface(**dict(good, shape=(16, "64"))), TypeError,
         "tensor.__array_interface__['shape'][1]: expected an int, got '64'"),
        (Interface(**dict(good, shape=(16, -1))), ValueError,
         "tensor.__array_interface__['shape'][1]: -1 is out of range"),
        (Interface(**dict(good, strides=(256,))), ValueError,
         "tensor.__array_interface__: 1 strides for 2 dimensions"),
        (Interface(**dict(good, data=None)), ValueError,
         "tensor.__array_interface__['data']: expected (address, read-only flag)"),
        (Interface(**dict(good, data=(2 ** 64, False))), ValueError,
         "tensor.__array_interface__['data']: expected (address, read-only flag)"),
        (Interface(**{k: v for k, v in good.items() if k != "typestr"}), ValueError,
         "tensor.__array_interface__['typestr']: None is not"),
    ]
    for tensor, error, message in cases:
        with pytest.raises(error) as raised:
            tmakit.tensor_map(tensor, box=(4, 16))
        assert str(raised.value).startswith(message), str(raised.value)
    bad = Interface()
    bad.__array_interface__ = [1, 2]
    with pytest.raises(TypeError, match=r"^tensor.__array_interface__: expected a dict"):
        tmakit.tensor_map(bad, box=(4, 16))


def test_a_tensor_map_spec_goes_through_the_one_conversion():
    with pytest.raises(ValueError, match=r"^globalDim\[0\]: nan is not a number"):
        tmakit.TensorMap({"dataType": "FLOAT32", "globalDim": [float("nan")]})
    with pytest.raises(TypeError, match="^spec: expected a dict"):
        tmakit.TensorMap("{}")
    tm = tmakit.TensorMap({"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [16],
                           "boxDim": [4], "note": b"ignored"})
    assert tm.check().ok and "note" not in tm.json


def test_a_dimension_of_one_element_takes_any_stride():
    # x.T of an (n, 1) array: strides (4, 4), as torch's x.t() of an (n, 1) tensor; the outer
    # dimension is never stepped, so its stride is not the rows' pitch (T6 would refuse 4)
    x = aligned((64, 1)).T
    assert x.strides == (4, 4)
    m = tmakit.tensor_map(x, box=(1, 32))
    assert m.check().ok, m.check()
    assert m.spec["globalDim"] == [64, 1] and m.spec["globalStrides"] == [256]
    # (a dimension inside it of one element too; the real strides elsewhere are kept)
    y = aligned((3, 1, 5))
    assert tmakit.tensor_map(y, box=(1, 1, 4)).spec["globalStrides"] == [32, 20]
    # on whole 32 bytes, which interleave 32B asks of every stride (T6)
    z = aligned((4, 2, 16), np.float16)[:, :1, :8]
    m = tmakit.tensor_map(z, box=(4, 1, 8), interleave="32B")
    assert m.check().ok, m.check()


def test_blackwells_packed_types_are_named_as_such():
    with pytest.raises(ValueError, match="data_type: 16U4_ALIGN8B is one of Blackwell's packed "
                                         "types, whose dimensions count 4- or 6-bit values"):
        tmakit.tensor_map(aligned((64, 64), np.uint8), box=(8, 64), data_type="16U4_ALIGN8B")
