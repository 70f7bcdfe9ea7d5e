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


def test_arguments_that_cannot_be_a_tensor_map_raise():
    x = aligned((64, 128))
    with pytest.raises(ValueError, match="last dimension is 2 elements apart"):
        tmakit.tensor_map(x[:, ::2], box=(8, 16))
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
