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
        # The coords message differs in wording only where the CLI reads a JSON array.
        if spec["coords"] != [0]:
            assert str(error.value) == cli_line[len("error: "):]


def test_bad_global_bytes_raise():
    spec = {"dataType": "FLOAT32", "globalAddress": 0, "globalDim": [8], "boxDim": [8]}
    with pytest.raises(TypeError):
        tmakit.simulate(spec, 12345)
    with pytest.raises(ValueError, match="im2col|tiled"):
        tmakit.simulate({"encode": "im2col", "dataType": "FLOAT32", "globalAddress": 0,
                         "globalDim": [16, 8, 8], "globalStrides": [64, 512],
                         "pixelBoxLowerCorner": [0], "pixelBoxUpperCorner": [0],
                         "channelsPerPixel": 16, "pixelsPerColumn": 8}, bytes(4096))
