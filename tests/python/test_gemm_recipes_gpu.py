"""The FP8 GEMM's row-wise and 128-block scales on a Hopper GPU: odd shapes against an fp64
reference of the dequantised operands, torch._scaled_mm's row-wise result, every scale layout
taken, scales changed between CUDA graph replays, four streams, torch.compile and bad input."""

import pytest

torch = pytest.importorskip("torch")
import tmakit  # noqa: E402

pytestmark = pytest.mark.gpu

FP8 = torch.float8_e4m3fn


def random_fp8(rows, cols):
    return (torch.randn(rows, cols, device="cuda") * 2).to(FP8)


def random_scales(*shape, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.rand(*shape, device="cuda", generator=g) * 3.75 + 0.25  # [1/4, 4)


def row_scales(m, n, seed=0):
    return random_scales(m, 1, seed=seed), random_scales(1, n, seed=seed + 1)


def block_scales(m, n, k, seed=0):
    """torch's layouts: scale_a (M, ceil(K/128)) M-major, scale_b (ceil(N/128), ceil(K/128))
    row-major."""
    kb, nb = -(-k // 128), -(-n // 128)
    sa = random_scales(kb, m, seed=seed).t()  # strides (1, M)
    return sa, random_scales(nb, kb, seed=seed + 1)


def reference(a, b, sa, sb, alpha, recipe=None):
    """The fp64 product of the dequantised operands and the same of their magnitudes (the
    accumulation error's scale), for row-wise (sa (M, 1), sb (1, N); per-tensor scales in
    that shape too) or 128-block scales: ``recipe`` "row" or "block", or None to read it
    from the shapes."""
    af, bf = a.to(torch.float64), b.to(torch.float64)
    m, k = a.shape
    n = b.shape[0]
    if recipe is None:
        recipe = "row" if sa.shape == (m, 1) else "block"
    if recipe != "block":
        scale = sa.double() * sb.double()
        return (af @ bf.T) * scale * alpha, (af.abs() @ bf.abs().T) * scale * alpha
    ref = torch.zeros(m, n, dtype=torch.float64, device="cuda")
    mag = torch.zeros_like(ref)
    for kb in range(-(-k // 128)):
        cols = slice(kb * 128, min(k, kb * 128 + 128))
        # the kernel multiplies each partial by scale_a * scale_b rounded to float
        scale = (sa[:, kb:kb + 1] * sb[:, kb].repeat_interleave(128)[:n][None, :]).double()
        ref += (af[:, cols] @ bf[:, cols].T) * scale
        mag += (af[:, cols].abs() @ bf[:, cols].abs().T) * scale
    return ref * alpha, mag * alpha


def assert_close(d, a, b, sa, sb, alpha, accumulate="promoted", recipe=None, case="D"):
    """Within one rounding of D's type plus the accumulation error of
    include/tmakit/kernels/gemm.hpp: 2^-10 of sum |a b| (scaled) promoted; fast 2^-13 per 32
    of K, at least 2^-11. ``case`` names the call in the failure."""
    ref, mag = reference(a, b, sa, sb, alpha, recipe)
    k = a.shape[1]
    accumulation = 2.0 ** -10 if accumulate == "promoted" else max(2.0 ** -11,
                                                                   2.0 ** -13 * k / 32)
    ulp = 2.0 ** -8 if d.dtype == torch.bfloat16 else 2.0 ** -11
    error = (d.to(torch.float64) - ref).abs()
    worst = (error - (ulp * ref.abs() + accumulation * mag + 1e-30)).max().item()
    assert worst <= 0, f"{case}: an element is {worst:.3g} beyond the bound"


ODD = [(1, 1, 16), (7, 200, 144), (65, 333, 272), (129, 77, 4096), (300, 520, 1040),
       (1000, 1024, 2048)]


@pytest.mark.parametrize("m,n,k", ODD)
@pytest.mark.parametrize("accumulate", ["promoted", "fast"])
def test_row_wise_scales_match_the_dequantised_product(m, n, k, accumulate):
    torch.manual_seed(m + n + k)
    a, b = random_fp8(m, k), random_fp8(n, k)
    sa, sb = row_scales(m, n, seed=k)
    out_dtype = torch.float16 if m % 2 else torch.bfloat16
    d = tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, alpha=0.75, out_dtype=out_dtype,
                        accumulate=accumulate)
    assert d.shape == (m, n) and d.dtype == out_dtype
    assert_close(d, a, b, sa, sb, 0.75, accumulate)


@pytest.mark.parametrize("m,n,k", ODD)
def test_block_scales_match_the_dequantised_product(m, n, k):
    # K = 144, 272, 1040: a last k-block of 16 of K, its scale applied to what there is
    torch.manual_seed(m * n + k)
    a, b = random_fp8(m, k), random_fp8(n, k)
    sa, sb = block_scales(m, n, k, seed=k)
    d = tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, alpha=1.5)
    assert_close(d, a, b, sa, sb, 1.5)


@pytest.mark.parametrize("m,n,k", [(128, 256, 512), (300, 2112, 7168), (4096, 512, 1024)])
@pytest.mark.parametrize("fast", [False, True])
def test_row_wise_agrees_with_torch_scaled_mm(m, n, k, fast):
    torch.manual_seed(k)
    a, b = random_fp8(m, k), random_fp8(n, k)
    sa, sb = row_scales(m, n, seed=m)
    ours = tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, accumulate="fast" if fast else "promoted")
    theirs = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                              use_fast_accum=fast)
    mode = "fast" if fast else "promoted"
    assert_close(ours, a, b, sa, sb, 1.0, mode)
    assert_close(theirs, a, b, sa, sb, 1.0, mode)  # the same bound holds for torch's


def test_every_scale_layout_gives_the_same_result():
    m, n, k = 200, 384, 1040
    a, b = random_fp8(m, k), random_fp8(n, k)
    sa, sb = block_scales(m, n, k, seed=5)
    want = tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb)
    kb = sa.shape[1]
    # scale_a row-major; DeepGEMM's M-major with M padded to 4 (TMA-aligned); scale_b
    # column-major; a broadcast scale_b (one value per K block, every N block)
    rows = sa.contiguous()
    tma_aligned = torch.empty(kb, 204, device="cuda")
    tma_aligned[:, :m] = sa.t()
    padded_a = tma_aligned.t()[:m]
    b_cols = sb.t().contiguous().t()
    for scale_a, scale_b in ((rows, sb), (padded_a, sb), (sa, b_cols)):
        assert torch.equal(tmakit.gemm_fp8(a, b, scale_a=scale_a, scale_b=scale_b), want)
    one_row = sb[:1].expand(sb.shape[0], kb)
    d = tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=one_row)
    assert torch.equal(d, tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=one_row.contiguous()))
    # row-wise: strided views of larger buffers
    ra, rb = row_scales(m, n, seed=6)
    wide_a = torch.zeros(m, 3, device="cuda")
    wide_a[:, 1:2] = ra
    assert torch.equal(tmakit.gemm_fp8(a, b, scale_a=wide_a[:, 1:2], scale_b=rb),
                       tmakit.gemm_fp8(a, b, scale_a=ra, scale_b=rb))


@pytest.mark.parametrize("recipe", ["row", "block"])
def test_scales_changed_between_graph_replays_are_read(recipe):
    m, n, k = 96, 640, 2048
    a, b = random_fp8(m, k), random_fp8(n, k)
    sa, sb = row_scales(m, n) if recipe == "row" else block_scales(m, n, k)
    sa, sb = sa.clone(), sb.clone()  # (dense copies that fill_ can change)
    want = tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb)
    out = torch.empty_like(want)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, out=out)  # (a split-K workspace, if any)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb, out=out)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want)
    sa.mul_(2.0)  # every scale of A doubled: every element of D doubles exactly
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want * 2)


def test_four_streams_are_bit_identical_to_one():
    shapes = [(64, 2112, 7168), (128, 1536, 1024), (300, 768, 2048), (1024, 512, 512)]
    cases = []
    for i, (m, n, k) in enumerate(shapes):
        a, b = random_fp8(m, k), random_fp8(n, k)
        scales = row_scales(m, n, seed=i) if i % 2 == 0 else block_scales(m, n, k, seed=i)
        cases.append((a, b, *scales))
    want = [tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb) for a, b, sa, sb in cases]
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in cases]
    got = []
    for stream, (a, b, sa, sb) in zip(streams, cases):
        with torch.cuda.stream(stream):
            got.append([tmakit.gemm_fp8(a, b, scale_a=sa, scale_b=sb) for _ in range(3)])
    torch.cuda.synchronize()
    for w, g in zip(want, got):
        for d in g:
            assert torch.equal(d, w)


def test_torch_compile_fullgraph_with_recipe_scales():
    torch._dynamo.reset()

    def f(a, b, ra, rb, ba, bb):
        row = tmakit.gemm_fp8(a, b, scale_a=ra, scale_b=rb)
        block = tmakit.gemm_fp8(a, b, scale_a=ba, scale_b=bb, out_dtype=torch.float16)
        return row, block

    m, n, k = 72, 320, 640
    a, b = random_fp8(m, k), random_fp8(n, k)
    ra, rb = row_scales(m, n)
    ba, bb = block_scales(m, n, k)
    compiled = torch.compile(f, fullgraph=True)
    for g, w in zip(compiled(a, b, ra, rb, ba, bb), f(a, b, ra, rb, ba, bb)):
        assert torch.equal(g, w)


def test_bad_scales_are_refused_by_name_and_nothing_is_written():
    m, n, k = 64, 256, 384
    a, b = random_fp8(m, k), random_fp8(n, k)
    ra, rb = row_scales(m, n)
    ba, bb = block_scales(m, n, k)
    out = torch.full((m, n), 7.0, dtype=torch.bfloat16, device="cuda")
    cases = [
        (dict(scale_a=ra[:-1], scale_b=rb), ValueError, r"scale_a: scale_a \(63, 1\)"),
        (dict(scale_a=ra, scale_b=rb[:, :-1]), ValueError, r"scale_b: scale_a \(64, 1\)"),
        (dict(scale_a=ra, scale_b=bb), ValueError, "scale_b: .* no recipe"),
        (dict(scale_a=ra.half(), scale_b=rb), TypeError, "scale_a: dtype torch.float16"),
        (dict(scale_a=ra.cpu(), scale_b=rb), ValueError, "scale_a: is on cpu"),
        (dict(scale_a=2.0, scale_b=rb), TypeError, "scale_a: a Python float beside"),
        (dict(scale_a=ra.view(-1), scale_b=rb), ValueError, r"scale_a: shape \(64,\)"),
        (dict(scale_a=ba, scale_b=bb, accumulate="fast"), ValueError,
         "accumulate: fast with 128-block scales"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            tmakit.gemm_fp8(a, b, out=out, **kwargs)
    # a scale array inside out
    holder = torch.zeros(m, n + 8, dtype=torch.bfloat16, device="cuda")
    inside = holder.view(torch.float32)[:, :1]  # (M, 1) float32 over out's first columns
    with pytest.raises(ValueError, match="out: overlaps scale_a"):
        tmakit.gemm_fp8(a, b, scale_a=inside, scale_b=rb, out=holder[:, :n])
    torch.cuda.synchronize()
    assert (out == 7).all()
