"""tmakit.simulate against `tmakit simulate`: the same bytes and the same written mask."""

import json

import numpy as np
import pytest

import tmakit

# A 16 x 32 x 2 tensor of counting bytes (so every byte says where it came from).
GLOBAL = (np.arange(16 * 32 * 2 * 4, dtype=np.uint32) * 2654435761 >> 24).astype(np.uint8)

SPECS = [
    # dtype, dims, strides, box, swizzle, element strides, coords (driver order)
    ("FLOAT32", [8, 4], [32], [8, 4], "64B", None, [0, 0]),
    ("FLOAT32", [32, 16], [128], [32, 8], "128B", None, [0, 3]),
    ("FLOAT32", [32, 16], [128], [16, 8], "64B", None, [20, 12]),      # partly out of bounds
    ("FLOAT16", [64, 16], [128], [16, 16], "32B", None, [-8, -4]),     # negative corner
    ("FLOAT16", [64, 16], [128], [64, 4], "128B", [1, 2], [0, 1]),     # element strides
    ("UINT8", [128, 16], [128], [64, 8], "NONE", None, [16, 2]),
    ("FLOAT64", [16, 16, 2], [128, 2048], [8, 4, 2], "64B", None, [4, 4, 0]),
    ("INT32", [32, 16, 2], [128, 2048], [4, 8, 2], "NONE", [1, 3, 1], [28, 0, 1]),
]


def spec_dict(dtype, dims, strides, box, swizzle, element_strides):
    spec = {"dataType": dtype, "globalAddress": 0, "globalDim": dims, "globalStrides": strides,
            "boxDim": box, "swizzle": swizzle}
    if element_strides:
        spec["elementStrides"] = element_strides
    return spec


def test_loads_equal_the_clis(cli, tmp_path):
    (tmp_path / "global.bin").write_bytes(GLOBAL.tobytes())
    lines = [json.dumps(dict(spec_dict(*s[:6]), coords=s[6])) for s in SPECS]
    (tmp_path / "loads.jsonl").write_text("\n".join(lines) + "\n")
    run = cli(["simulate", "--global", str(tmp_path / "global.bin"),
               "--jsonl", str(tmp_path / "loads.jsonl")])
    assert run.returncode == 0, run.stdout + run.stderr
    expected = run.stdout.splitlines()
    assert len(expected) == len(SPECS)
    written_counts = set()
    for spec, line, cli_line in zip(SPECS, lines, expected):
        from_line = tmakit.simulate(line, GLOBAL.tobytes())      # coords from the line
        from_dict = tmakit.simulate(spec_dict(*spec[:6]), GLOBAL, coords=spec[6])
        assert from_line.hex() == cli_line, line
        assert from_dict.hex() == cli_line, line
        assert from_dict.bytes.dtype == np.uint8 and from_dict.written.dtype == bool
        assert from_dict.bytes.shape == from_dict.written.shape
        assert not from_dict.bytes[~from_dict.written].any()
        written_counts.add(int(from_dict.written.sum()))
    assert len(written_counts) > 3  # the loads differ, partly out of bounds ones included


def test_a_swizzled_row_lands_where_the_model_says():
    # FLOAT32 8x4 box with the 64B swizzle (README): rows 2 and 3 have their two 16-byte
    # halves swapped.
    counting = np.arange(256, dtype=np.uint8)
    s = tmakit.simulate({"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8, 8],
                         "globalStrides": [32], "boxDim": [8, 4], "swizzle": "64B"}, counting)
    assert s.bytes.shape == (4, 64) and s.row_bytes == 64
    assert s.bytes[2, :32].tolist() == list(range(0x50, 0x60)) + list(range(0x40, 0x50))
    assert s.written[:, :32].all() and not s.written[:, 32:].any()


def test_errors_are_the_clis(cli, tmp_path):
    bad = [
        {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [16, 8], "globalStrides": [64],
         "boxDim": [16, 4], "swizzle": "32B", "coords": [0, 0]},                 # T9
        {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [64, 64],
         "globalStrides": [256], "boxDim": [8, 8], "coords": [0, 0]},            # past the bytes
        {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8, 8], "globalStrides": [32],
         "boxDim": [8, 4], "coords": [0]},                                       # coords rank
        {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8, 8], "globalStrides": [32],
         "boxDim": [8, 4], "coords": [0, 0], "direction": "store"},              # not a load
        {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8, 8], "globalStrides": [32],
         "boxDim": [8, 1], "coords": [0, 0], "tileMode": "gather4"},             # four rows
        {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8, 8], "globalStrides": [32],
         "boxDim": [4, 4], "coords": [1, 0]},                  # off 16 bytes: killed (O1)
    ]
    (tmp_path / "global.bin").write_bytes(bytes(256))
    (tmp_path / "bad.jsonl").write_text("\n".join(json.dumps(b) for b in bad) + "\n")
    run = cli(["simulate", "--global", str(tmp_path / "global.bin"),
               "--jsonl", str(tmp_path / "bad.jsonl")])
    assert run.returncode == 1
    for spec, cli_line in zip(bad, run.stdout.splitlines()):
        assert cli_line.startswith("error: ")
        with pytest.raises(ValueError) as error:
            tmakit.simulate(spec, bytes(256))
        # the spec's "coords" key read as the CLI reads it, in its words
        assert str(error.value) == cli_line[len("error: "):]
    assert "(docs/hardware.md O1); start the box at 0 (a multiple of 4 elements)" in \
        run.stdout.splitlines()[-1]


def test_bad_global_bytes_raise():
    spec = {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8], "boxDim": [8]}
    with pytest.raises(TypeError):
        tmakit.simulate(spec, 12345)
    with pytest.raises(ValueError, match="im2col|tiled"):
        tmakit.simulate({"encode": "im2col", "dataType": "FLOAT32", "globalAddress": 0,
                         "globalDim": [16, 8, 8], "globalStrides": [64, 512],
                         "pixelBoxLowerCorner": [0], "pixelBoxUpperCorner": [0],
                         "channelsPerPixel": 16, "pixelsPerColumn": 8}, bytes(4096))


SMALL = {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8, 8], "globalStrides": [32],
         "boxDim": [8, 4]}


def test_the_spec_is_validated_before_its_rank_sizes_anything():
    import resource
    import time

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for rank in (10 ** 9, 2 ** 31, 2 ** 32 - 1, 10 ** 100, 2 ** 5000):
        started = time.monotonic()
        with pytest.raises(ValueError) as error:
            tmakit.simulate(dict(SMALL, rank=rank), bytes(256))
        assert str(error.value).startswith(("rank: ", "globalDim: has 2 entries"))
        assert time.monotonic() - started < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 64 << 10  # KiB
    for rank, message in ((None, "rank: expected an integer, got a null"),
                          ([2], "rank: expected an integer, got an array"),
                          ("2", "rank: expected an integer, got a string"),
                          (2.5, "rank: 2.5 is not an integer (expected"),
                          (2 ** 70, "rank: about 1.1805916207174113e+21, past 64 bits, is out "
                                    "of range")):
        with pytest.raises(ValueError) as error:
            tmakit.simulate(dict(SMALL, rank=rank), bytes(256))
        assert str(error.value).startswith(message)


def test_coords_from_the_argument_or_the_spec_are_checked_by_name():
    zeros = tmakit.simulate(SMALL, bytes(256))
    assert tmakit.simulate(dict(SMALL, coords=[0, 0]), bytes(256)).hex() == zeros.hex()
    assert tmakit.simulate(SMALL, bytes(256), coords=np.array([0, 0])).hex() == zeros.hex()
    assert tmakit.simulate(SMALL, bytes(256), coords=(np.int64(0), 0)).hex() == zeros.hex()
    cases = [
        (dict(coords=[0, 2 ** 40]), ValueError, "coords[1]: 1099511627776 is not a signed 32-bit"),
        (dict(coords=[0, 2 ** 70]), ValueError, "coords[1]: an integer of 71 bits is not a signed"),
        (dict(coords=["0", 0]), TypeError, "coords[0]: expected an int, got '0'"),
        (dict(coords=5), TypeError, "coords: expected a sequence of ints"),
        (dict(coords=[0.5, 0]), TypeError, "coords[0]: expected an int, got 0.5"),
        (dict(coords=b"\x00\x00"), TypeError, "coords: bytes is not a JSON value"),
        (dict(coords=[0]), ValueError, "coords: expected 2 integers (one per dimension), got 1"),
    ]
    for coords, error, message in cases:
        with pytest.raises(error) as raised:
            tmakit.simulate(SMALL, bytes(256), **coords)
        assert str(raised.value).startswith(message), str(raised.value)
    # the same under the spec's "coords" key (the CLI's words where the library reads it)
    with pytest.raises(ValueError, match=r"^coords\[1\]: 1099511627776 is not a signed 32-bit"):
        tmakit.simulate(dict(SMALL, coords=[0, 2 ** 40]), bytes(256))
    with pytest.raises(TypeError, match=r"^coords: a set has no order"):
        tmakit.simulate(dict(SMALL, coords={0, 1}), bytes(256))
    assert tmakit.check(dict(SMALL, coords={0, 1})).ok  # no key of check's


def test_global_bytes_of_any_buffer_or_refused_by_name():
    expected = tmakit.simulate(SMALL, bytes(range(256))).hex()
    as_floats = np.frombuffer(bytes(range(256)), dtype=np.float32).reshape(8, 8)
    for data in (bytearray(range(256)), memoryview(bytes(range(256))),
                 memoryview(bytes(range(256))).cast("I"), as_floats,
                 np.asfortranarray(as_floats).T.copy().T,
                 np.frombuffer(bytes(range(256)), dtype=">u4")):
        assert tmakit.simulate(SMALL, data).hex() == expected
    strided = np.zeros(512, dtype=np.uint8)
    strided[::2] = np.arange(256)
    assert tmakit.simulate(SMALL, strided[::2]).hex() == expected
    assert tmakit.simulate(SMALL, memoryview(strided)[::2]).hex() == expected
    for data, message in ((12345, "global_bytes: expected bytes, a bytearray, a NumPy array"),
                          ("text", "global_bytes: a str is text, not bytes"),
                          (np.zeros(256, dtype=object), "global_bytes: a NumPy array of object"),
                          ([0] * 256, "global_bytes: expected bytes")):
        with pytest.raises(TypeError) as raised:
            tmakit.simulate(SMALL, data)
        assert str(raised.value).startswith(message)


def test_a_huge_non_contiguous_buffer_is_refused_not_copied():
    huge = np.broadcast_to(np.uint8(0), (1 << 20, 1 << 20))  # 1 TiB of one byte
    with pytest.raises(ValueError, match=r"^global_bytes: not contiguous, and its 1099511627776 "
                                         r"bytes are more than the 1073741824 copied"):
        tmakit.simulate(SMALL, huge)
