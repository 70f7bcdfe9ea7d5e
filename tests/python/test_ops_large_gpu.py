"""The memory-bound ops on tensors past what TMA's signed 32-bit coordinates reach: a dimension
of more than 2^31 - 4096 elements (a dense tensor of more elements is one row to the kernels)
runs through the plain kernels, which index in 64 bits (rule P6, plain_path.hpp), and views
of more than 2^31 elements or 4 GiB in all through whatever path their rows take. Each case
needs up to 30 GB of device memory and is skipped, saying so, where the GPU has less free."""

import pytest

torch = pytest.importorskip("torch")
import tmakit  # noqa: E402

pytestmark = pytest.mark.gpu

MOST = 2 ** 31 - 4096  # the largest extent the TMA kernels take


def need(gib):
    free, _ = torch.cuda.mem_get_info()
    if free < gib * 2 ** 30:
        pytest.skip(f"needs {gib} GiB of free device memory, {free / 2 ** 30:.1f} GiB free")


def pattern(shape, dtype, seed=1):
    """Values that differ with the position (a wrong address shows), made in pieces."""
    n = 1
    for s in shape:
        n *= s
    out = torch.empty(n, device="cuda", dtype=dtype)
    step = 2 ** 27
    for i in range(0, n, step):
        idx = torch.arange(i, min(n, i + step), device="cuda", dtype=torch.int64)
        v = (idx * 2654435761 + seed) % 251
        out[i:i + step] = (v.to(torch.float32) - 125.0).to(dtype) if dtype.is_floating_point \
            else v.to(dtype)
    return out.view(shape)


def assert_equal_in_pieces(got, want, piece=2 ** 27):
    """got == want bit for bit, compared a piece of the first dimension at a time."""
    assert got.shape == want.shape
    for r in range(0, got.shape[0], piece):
        a, b = got[r:r + piece], want[r:r + piece]
        if not torch.equal(a, b):
            first = (a != b).nonzero()[0].tolist()
            raise AssertionError(f"differs from {r} on, first at {first}")


def test_add_on_a_dense_tensor_of_more_than_2_31_elements():
    need(30)
    x = pattern((2 ** 31 + 33,), torch.float32)
    assert_equal_in_pieces(tmakit.add(x, 1.5), x + 1.5)
    y = x.view(2 ** 31 + 33, 1)[1:]  # one element on: the dense run starts off 16 bytes
    assert_equal_in_pieces(tmakit.add(y, -2.0), y - 2.0)


def test_add_in_place_on_a_dense_int8_tensor_of_more_than_2_32_elements():
    need(12)
    x = pattern((2 ** 32 + 5,), torch.int8)
    want = x + 100  # wraps, as torch's add
    assert tmakit.add(x, 100, out=x) is x
    assert_equal_in_pieces(x, want)


def test_add_on_a_row_longer_than_the_tma_extent_in_a_strided_view():
    need(30)
    big = pattern((2, MOST + 24), torch.bfloat16)
    x = big[:, 8:]  # two rows of MOST + 16 elements, start and pitch on 16 bytes: rule P6
    got = tmakit.add(x, 0.5)
    assert got.shape == x.shape
    assert_equal_in_pieces(got, x + 0.5)


def test_transpose_of_a_row_and_a_column_longer_than_the_tma_extent():
    need(16)
    x = pattern((1, MOST + 17), torch.uint8)
    got = tmakit.transpose(x)
    assert got.shape == (MOST + 17, 1)
    assert_equal_in_pieces(got, x.t())
    back = tmakit.transpose(got)
    assert_equal_in_pieces(back, x)
    flat = tmakit.transpose(x.view(-1))  # a 1-D x: its own transpose
    assert_equal_in_pieces(flat, x.view(-1))


def test_stencil_on_an_image_wider_than_the_tma_extent():
    need(48)
    x = pattern((2, MOST + 12), torch.float32)  # rows on 16 bytes: rule P6
    w = [[0.5, -1.0, 2.0], [1.0, -4.0, 0.25], [-2.0, 3.0, 1.0]]
    got = tmakit.stencil3x3(x, w)
    assert got.shape == x.shape
    # the reference a piece of columns at a time: the nine shifted products of a window one
    # column wider on each side, zero past the image's edges
    step = 2 ** 28
    cols = x.shape[1]
    for c0 in range(0, cols, step):
        c1 = min(cols, c0 + step)
        lo, hi = max(0, c0 - 1), min(cols, c1 + 1)
        window = torch.nn.functional.pad(x[:, lo:hi], (1 if c0 == 0 else 0,
                                                       1 if c1 == cols else 0, 1, 1))
        want = torch.zeros(2, c1 - c0, device="cuda")
        for i in range(3):
            for j in range(3):
                want += w[i][j] * window[i:i + 2, j:j + c1 - c0]
        err = (got[:, c0:c1] - want).abs().max().item()
        assert err <= 1e-4 * max(1.0, want.abs().max().item()), f"columns {c0}..: {err}"


def test_transpose_and_add_past_4_gib_with_extents_within_it():
    """Byte offsets past 2^32 where every extent is one TMA takes: the row-class, TMA and
    plain kernels' 64-bit addresses."""
    need(32)
    x = pattern((46341, 46349), torch.uint8)  # odd pitch: the row-class kernel, 2.1 GB
    assert_equal_in_pieces(tmakit.transpose(x), x.t(), piece=4096)
    del x
    x = pattern((40000, 60000), torch.float32)  # aligned: the TMA kernel, 9.6 GB
    assert_equal_in_pieces(tmakit.transpose(x), x.t(), piece=4096)
    y = x[:, 1:]  # start and pitch off 16 bytes: the plain kernels
    assert_equal_in_pieces(tmakit.add(y, 3.0), y + 3.0, piece=4096)
