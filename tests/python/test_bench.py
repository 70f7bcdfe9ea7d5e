"""python -m tmakit.bench's GEMM recipe rows: the shape sets and the cases' names (made only
when run), the float64 reference of the dequantised operands and its allowance, torch's
block-wise scale layouts; on a Hopper GPU, each recipe's check of both sides, a wrong or raising
call reported on its row (the run goes on), torch's block-wise layout found or its refusal
said, and the sustained protocol (CUDA graphs) timing every side or left out."""

import json

import pytest

torch = pytest.importorskip("torch")
from tmakit import bench  # noqa: E402

FP8 = torch.float8_e4m3fn
RECIPES = [("row", False), ("row", True), ("block", False)]


# --- without a GPU (torch only) ---------------------------------------------------------------

def test_deepseek_set_is_its_six_projections_at_three_m():
    shapes = bench.GEMM_SHAPE_SETS["deepseek"]
    assert len(shapes) == 18 and len(set(shapes)) == 18
    assert {(n, k) for _, n, k in shapes} == {(2112, 7168), (24576, 1536), (32768, 512),
                                              (7168, 16384), (4096, 7168), (7168, 2048)}
    assert {m for m, _, _ in shapes} == {64, 128, 4096}


def test_memcpy_ceiling_copies_whole_4_kib_never_fewer_bytes():
    assert bench._ceiling_bytes(0) == 0
    assert bench._ceiling_bytes(1) == 4096
    assert bench._ceiling_bytes(4096) == 4096
    assert bench._ceiling_bytes(4097) == 8192
    assert bench._ceiling_bytes(8191 * 8193) == 8192 * 8192  # 67,108,863 -> 67,108,864
    assert bench._ceiling_bytes(11012096) == 11014144


def test_cases_are_named_before_anything_is_made():
    made = []
    original = bench._gemm_recipe_case
    try:
        bench._gemm_recipe_case = lambda *args: made.append(args)
        names = [p.name for p in bench.cases(True, ("default", "deepseek", "default"))]
    finally:
        bench._gemm_recipe_case = original
    assert made == []  # nothing allocated until a case runs
    assert len(names) == len(set(names))
    for m, n, k in bench.GEMM_SHAPE_SETS["deepseek"]:
        for name in (f"gemm_fp8 {m}x{n}x{k}", f"gemm_fp8 row {m}x{n}x{k}",
                     f"gemm_fp8 row fast {m}x{n}x{k}", f"gemm_fp8 block {m}x{n}x{k}"):
            assert name in names
    assert "gemm_fp8 block fast 64x2112x7168" not in names  # block scales: promoted only
    assert names.index("gemm_fp8 4096x4096x4096") < names.index("gemm_fp8 64x2112x7168")


def test_unknown_shape_set_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--gemm-shapes", "default,llama"])
    assert exit_info.value.code == 2
    assert "--gemm-shapes: 'llama' is not a shape set; the sets are default, deepseek" in \
        capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--stall-seconds", "-1"], "--stall-seconds: -1 is outside 0..86400"),
    (["--stall-seconds", "10000000000"], "--stall-seconds: 10000000000 is outside 0..86400"),
    (["--reps", "0"], "--reps: 0 is outside 1..100000"),
    (["--graph-calls", "-1"], "--graph-calls: -1 is outside 0..1000"),
    (["--graph-calls", "1001"], "--graph-calls: 1001 is outside 0..1000"),
    (["--host-time-only", "--graph-calls", "5"],
     "--host-time-only runs no case, so --graph-calls would do nothing"),
    (["--filter", "no such case"], "--filter 'no such case' matches no case; --list shows them"),
    (["--small", "--filter", "8191x8193"], "matches no case; --list shows them (--small names "
                                           "the odd shape 2047x2049)"),
    (["--json", "/no/such/folder/x.json"], "--json '/no/such/folder/x.json': its folder "
                                           "/no/such/folder does not exist"),
    (["--svg", "."], "--svg '.': is a folder"),
    (["--json", ""], "--json '': is empty"),
    (["--json", "r.out", "--svg", "./r.out"], "--json and --svg name one file, 'r.out'"),
    (["--host-time-only", "--no-overhead"], "not allowed with argument"),
    (["--host-time-only", "--filter", "gemm", "--list"],
     "--host-time-only runs no case, so --list, --filter would do nothing"),
    (["--list", "--filter", "no such case"], "matches no case"),  # (it listed nothing, 0)
    (["--list", "--json", "x.json"], "--list prints the cases' names and runs none, so --json "
                                     "would write nothing; leave it out"),
    (["--list", "--json", "x.json", "--svg", "x.svg"], "so --json and --svg would write nothing; "
                                                       "leave them out"),
    (["--gemm-shape", "16x16x16"], "unrecognized arguments: --gemm-shape"),  # no abbreviations
])
def test_bad_options_are_refused_before_anything_runs(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_list_prints_the_selected_cases_without_a_gpu(capsys):
    assert bench.main(["--list", "--small", "--filter", "transpose uint8"]) == 0
    names = capsys.readouterr().out.split("\n")
    assert [n for n in names if n] == [p.name for p in bench.cases(True)
                                       if "transpose uint8" in p.name]
    assert "transpose uint8 2047x2049" in names


def test_output_that_cannot_be_written_is_status_2_without_a_traceback():
    import subprocess
    import sys

    run = subprocess.run(f"{sys.executable} -m tmakit.bench --list --small > /dev/full",
                         shell=True, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("tmakit.bench: cannot write the output: ") and \
        "Traceback" not in run.stderr
    run = subprocess.run(f"{sys.executable} -m tmakit.bench --list | head -1", shell=True,
                         capture_output=True, text=True, timeout=300)
    assert run.stdout.count("\n") == 1 and "Traceback" not in run.stderr


def test_stall_watch_writes_to_a_real_descriptor_under_a_capturing_runner(capsys):
    # pytest's capsys swaps sys.stderr for a stream without a file descriptor, which
    # faulthandler refuses; the watch falls back to the process's own stderr
    import faulthandler
    import sys
    with pytest.raises(Exception):
        sys.stderr.fileno()
    target = bench._stack_dump_file()
    assert target is sys.__stderr__
    faulthandler.dump_traceback_later(3600, exit=True, file=target)
    faulthandler.cancel_dump_traceback_later()


def test_host_times_pair_each_dispatcher_form_with_its_eager_call(monkeypatch):
    # Host times without a GPU: the synchronisation is the only device call. A side that sleeps
    # 2 ms a call more than its baseline differs from it by about 2 ms in every round (sleep
    # overshoots, never undershoots; the margin is for the baseline's own sleep(0), which a
    # loaded machine can stretch); a side without a baseline has no difference.
    import time
    monkeypatch.setattr(bench.torch.cuda, "synchronize", lambda: None)
    calls = []

    def sleeper(name, seconds):
        def call():
            calls.append(name)
            time.sleep(seconds)
        return call

    variants = {"eager": sleeper("eager", 0.0), "dispatched": sleeper("dispatched", 2e-3),
                "other": sleeper("other", 0.0)}
    rows = bench._host_times(variants, {"dispatched": "eager"}, calls=3, rounds=5)
    assert [r.name for r in rows] == ["eager", "dispatched", "other"]
    eager, dispatched, other = rows
    assert eager.against is None and other.against is None and other.minus_us == 0.0
    assert dispatched.against == "eager"
    assert 1500 <= dispatched.minus_us and dispatched.minus_q1_us <= dispatched.minus_us
    assert dispatched.minus_us <= dispatched.minus_q3_us
    # 50 warm-up calls each, then 5 rounds of 3; the order reversed every other round
    assert len(calls) == 3 * 50 + 5 * 3 * 3
    timed = calls[150:]
    assert timed[:9:3] == ["eager", "dispatched", "other"]
    assert timed[9:18:3] == ["other", "dispatched", "eager"]


def test_dequantised_operands_weigh_each_element_by_its_scale():
    x = torch.randn(130, 300, dtype=torch.float64)
    rows = torch.rand(130, 1) + 0.5
    got = bench._dequantised(x, rows, "row", 1)
    assert torch.equal(got, x * rows.double())
    # 128-block: 2 row blocks (the last of 2 rows), 3 k-blocks (the last of 44)
    blocks = torch.rand(2, 3) + 0.5
    got = bench._dequantised(x, blocks, "block", 128)
    want = torch.empty_like(x)
    for r in range(130):
        for q in range(300):
            want[r, q] = x[r, q] * float(blocks[r // 128, q // 128])
    assert torch.equal(got, want)
    per_row = torch.rand(130, 3) + 0.5  # A's 1 x 128 scales: one row each
    got = bench._dequantised(x, per_row, "block", 1)
    assert torch.equal(got[129, 256:], x[129, 256:] * float(per_row[129, 2]))


def test_accumulation_allowance_is_the_gemms():
    assert bench._accumulation_bound(False, 16384) == 2.0 ** -10
    assert bench._accumulation_bound(True, 64) == 2.0 ** -11  # at least 2^-11
    assert bench._accumulation_bound(True, 16384) == 2.0 ** -13 * 512
    assert bench._accumulation_bound(True, 48) == 2.0 ** -11


def test_block_layouts_hold_the_same_values_in_torchs_forms():
    sa = torch.rand(200, 4)
    sb = torch.rand(3, 4)
    layouts = bench._block_layouts(sa, sb)
    name, a, b = layouts[0]
    assert "M-major" in name
    assert a.shape == (200, 4) and a.stride() == (1, 200)  # is_blockwise_1x128_scaling's
    # is_blockwise_128x128_scaling reads scale_b.t(): (ceil(N/128), ceil(K/128)) row-major
    assert b.shape == (4, 3) and b.t().stride() == (4, 1)
    for _, a, b in layouts:
        assert torch.equal(a, sa) and torch.equal(b.t(), sb)


# --- on a Hopper GPU -----------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(200, 272, 400), (64, 2112, 7168), (132, 4096, 512)])
@pytest.mark.parametrize("recipe,fast", RECIPES)
def test_recipe_case_checks_both_sides(recipe, fast, m, n, k):
    """Both sides within the allowance of the float64 product (K = 400: a last k-block of
    16); torch's block-wise layout found, or its refusal the row's note and tmakit checked
    alone. M a multiple of 4: torch hands cuBLASLt scale_a's k-block stride as M, where
    `tmakit bench` lays cuBLASLt's out rounded up to 4 (docs/bench.md); they agree there."""
    case = bench._gemm_recipe_case(m, n, k, recipe, fast)
    assert case.check() is None
    assert case.unit == "TFLOP/s" and case.work == 2.0 * m * n * k
    if recipe == "block":
        assert case.note.startswith("torch took ") or case.note.startswith("torch refuses: ")
        assert (case.theirs is None) == case.note.startswith("torch refuses: ")
    else:
        assert case.theirs is not None and case.note == ""


@pytest.mark.gpu
@pytest.mark.parametrize("recipe,fast", RECIPES)
def test_recipe_check_finds_a_wrong_or_raising_call(monkeypatch, recipe, fast):
    case = bench._gemm_recipe_case(128, 256, 384, recipe, fast)
    monkeypatch.setattr(bench.ops, "gemm_fp8", lambda a, b, **kw: kw["out"].fill_(1.0))
    assert case.check().startswith("tmakit.gemm_fp8 differs from the float64 product by ")

    def refuse(a, b, **kw):
        raise ValueError("scale_a: a made-up refusal\non two lines")

    monkeypatch.setattr(bench.ops, "gemm_fp8", refuse)
    assert case.check() == ("tmakit.gemm_fp8 raised ValueError: scale_a: a made-up refusal on "
                            "two lines")


@pytest.mark.gpu
def test_a_raising_row_is_reported_and_the_run_goes_on(monkeypatch, tmp_path, capsys):
    real = bench.ops.gemm_fp8

    def per_tensor_only(a, b, **kw):
        if isinstance(kw.get("scale_a"), torch.Tensor) and kw["scale_a"].numel() > 1:
            raise ValueError("scale_a: not taken here")
        return real(a, b, **kw)

    monkeypatch.setattr(bench.ops, "gemm_fp8", per_tensor_only)
    out = tmp_path / "bench.json"
    code = bench.main(["--filter", "16x8192x8192", "--reps", "2", "--no-overhead",
                       "--json", str(out)])
    assert code == 1  # a row that raised is a failure of the run
    rows = {r["name"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["gemm_fp8 16x8192x8192"]["problem"] is None
    assert rows["gemm_fp8 16x8192x8192"]["ours_us"] > 0
    for name in ("gemm_fp8 row 16x8192x8192", "gemm_fp8 row fast 16x8192x8192",
                 "gemm_fp8 block 16x8192x8192"):
        assert rows[name]["problem"] == ("tmakit.gemm_fp8 raised ValueError: scale_a: not taken "
                                         "here"), rows[name]
    assert "FAILED: tmakit.gemm_fp8 raised ValueError" in capsys.readouterr().out


@pytest.mark.gpu
def test_graph_protocol_times_every_side_and_can_be_left_out(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench.main(["--small", "--filter", "add float32 2047x2049", "--reps", "3",
                       "--graph-calls", "4", "--no-overhead", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["results"][0]
    assert row["problem"] is None
    for side in ("ours", "theirs", "memcpy"):
        assert row[f"{side}_graph_us"] > 0, row
    printed = capsys.readouterr().out
    assert "graphs of 4 calls, 3 replays a side" in printed and "graphs:" in printed
    assert bench.main(["--small", "--filter", "add float32 2047x2049", "--reps", "2",
                       "--graph-calls", "0", "--no-overhead", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["results"][0]
    assert row["ours_us"] > 0 and row["ours_graph_us"] == 0 and row["theirs_graph_us"] == 0
    assert "graphs:" not in capsys.readouterr().out


@pytest.mark.gpu
def test_graph_protocol_of_a_refused_counterpart_times_tmakit_and_the_copy():
    case = bench._add_case(256, 384, torch.float32)._replace(theirs=None)
    ours, theirs, memcpy = bench._time_graphs(case, 3, 3)
    assert ours > 0 and theirs == 0 and memcpy > 0
    ours, theirs, memcpy = bench._time_graphs(case._replace(memcpy=None), 3, 3)
    assert ours > 0 and theirs == 0 and memcpy == 0


@pytest.mark.gpu
def test_a_side_that_cannot_be_captured_keeps_its_row_and_fails_the_run(monkeypatch, tmp_path):
    def uncapturable(case, calls, replays):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(bench, "_time_graphs", uncapturable)
    out = tmp_path / "bench.json"
    assert bench.main(["--small", "--filter", "add float32 2047x2049", "--reps", "2",
                       "--no-overhead", "--json", str(out)]) == 1
    row = json.loads(out.read_text())["results"][0]
    assert row["problem"] is None and row["ours_us"] > 0 and row["ours_graph_us"] == 0
    assert row["note"] == ("graphs not timed: RuntimeError: operation not permitted when stream "
                           "is capturing")


class _FakeCuda:
    """torch.cuda as the timing code sees it, on a clock of its own: a call of a side costs
    its microseconds when run, a graph replays what its capture recorded, an event reads the
    clock. What the protocols do with the calls can then be checked without a GPU."""

    def __init__(self):
        self.now_us = 0.0
        self.capturing = None  # the graph being captured

    def run(self, us):
        if self.capturing is not None:
            self.capturing.recorded.append(us)
        else:
            self.now_us += us

    def namespace(self):
        fake = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = fake.now_us

            def elapsed_time(self, end):
                return (end.at - self.at) / 1e3  # ms

        class Stream:
            def wait_stream(self, other):
                pass

        class CUDAGraph:
            def __init__(self):
                self.recorded = []

            def replay(self):
                fake.now_us += sum(self.recorded)

        class capture:
            def __init__(self, graph, stream=None):
                self.graph = graph

            def __enter__(self):
                fake.capturing = self.graph

            def __exit__(self, *exc):
                fake.capturing = None

        class stream:
            def __init__(self, s):
                pass

            def __enter__(self):
                pass

            def __exit__(self, *exc):
                pass

        class Namespace:
            pass

        ns = Namespace()
        ns.Event, ns.Stream, ns.CUDAGraph, ns.graph, ns.stream = (Event, Stream, CUDAGraph,
                                                                  capture, stream)
        ns.current_stream = Stream
        ns.synchronize = lambda: None
        return ns


def _fake_case(fake, ran, with_theirs, with_copy):
    """A case whose sides cost ours 7 us a call, theirs 11, the copy 5 on `fake`'s clock; each
    call appends (its side, whether a graph was being captured) to `ran`."""
    def side(name, us):
        def call():
            ran.append((name, fake.capturing is not None))
            fake.run(us)
        return call

    return bench.Case("c", "GB/s", 1.0, side("ours", 7.0),
                      side("theirs", 11.0) if with_theirs else None, "torch", lambda: None,
                      side("copy", 5.0) if with_copy else None)


@pytest.mark.parametrize("with_theirs,with_copy", [(True, True), (False, True), (True, False),
                                                   (False, False)])
def test_graph_protocol_returns_each_sides_time_a_call(monkeypatch, with_theirs, with_copy):
    # each graph holds `calls` calls, each replay is timed alone, the copy runs as `calls`
    # launches outside any graph
    fake = _FakeCuda()
    monkeypatch.setattr(bench.torch, "cuda", fake.namespace())
    ran = []
    case = _fake_case(fake, ran, with_theirs, with_copy)
    ours, theirs, copy = bench._time_graphs(case, 4, 3)
    assert ours == pytest.approx(7.0)
    assert theirs == (pytest.approx(11.0) if with_theirs else 0.0)
    assert copy == (pytest.approx(5.0) if with_copy else 0.0)
    captured = [name for name, capturing in ran if capturing]
    assert captured == ["ours"] * 4 + (["theirs"] * 4 if with_theirs else [])
    assert ("copy", True) not in ran
    if with_copy:
        assert ran.count(("copy", False)) == 3 * 4  # 3 replays' worth of bursts of 4


@pytest.mark.parametrize("with_theirs,with_copy", [(True, True), (False, True), (True, False)])
def test_call_by_call_protocol_flushes_before_each_call(monkeypatch, with_theirs, with_copy):
    # the flush (a write past the L2) before every timed call, outside the events; three
    # warm-up calls of each side first
    fake = _FakeCuda()
    monkeypatch.setattr(bench.torch, "cuda", fake.namespace())
    ran = []

    class Flush:
        def zero_(self):
            ran.append(("flush", False))
            fake.run(100.0)

    case = _fake_case(fake, ran, with_theirs, with_copy)
    ours, theirs, copy = bench._time(case, 5, Flush())
    assert ours == pytest.approx(7.0)
    assert theirs == (pytest.approx(11.0) if with_theirs else 0.0)
    assert copy == (pytest.approx(5.0) if with_copy else 0.0)
    names = ["ours"] + (["theirs"] if with_theirs else []) + (["copy"] if with_copy else [])
    order = [name for name, _ in ran]
    assert order[:3 * len(names)] == names * 3
    assert order[3 * len(names):] == [x for name in names for x in ("flush", name)] * 5
