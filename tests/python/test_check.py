"""tmakit.check / rules / describe against the shipped driver corpus and the `tmakit` CLI."""

import gzip
import json

import pytest

import tmakit
from conftest import REPO

CORPUS = REPO / "tests" / "data" / "driver_corpus.jsonl.gz"
README_SPEC = {"dataType": "FLOAT32", "rank": 2, "globalAddress": 4096,
               "globalDim": [1024, 512], "globalStrides": [4096], "boxDim": [25, 32]}


@pytest.fixture(scope="module")
def corpus_lines():
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) > 50000, f"corpus missing or truncated: {CORPUS}"
    return lines


def test_check_gives_the_drivers_verdict_on_every_corpus_spec(corpus_lines):
    accepted = refused = 0
    disagreements = []
    for number, line in enumerate(corpus_lines, 1):
        record = json.loads(line)
        driver_ok = record["driver"] == "ok"
        result = tmakit.check(line)
        assert result.verdict != "error", f"line {number}: {result.message}"
        accepted += driver_ok
        refused += not driver_ok
        if result.ok != driver_ok:
            disagreements.append(f"line {number}: driver {record['driver']}, tmakit {result}")
    assert disagreements == [], "\n".join(disagreements[:10])
    # Both verdicts are well represented, so agreement is not agreement with a constant.
    assert accepted > 10000 and refused > 10000


def test_check_text_equals_the_cli_on_every_corpus_spec(corpus_lines, cli):
    run = cli(["check", "--jsonl", "-"], ("\n".join(corpus_lines) + "\n").encode())
    assert run.returncode == 1, run.stderr  # the corpus holds refused specs
    cli_lines = run.stdout.splitlines()
    assert len(cli_lines) == len(corpus_lines)
    for number, (line, expected) in enumerate(zip(corpus_lines, cli_lines), 1):
        assert str(tmakit.check(line)) == expected, f"line {number}: {line}"


def test_a_dict_and_its_json_line_get_one_verdict():
    result = tmakit.check(README_SPEC)
    assert not result.ok and result.verdict == "rejected"
    assert result.rule == "T7"
    assert result.message == ("T7: boxDim[0]*4 = 100 bytes is not a multiple of 16; "
                              "use 24 or 28")
    assert str(result) == "rejected " + result.message
    assert repr(tmakit.check(json.dumps(README_SPEC))) == repr(result)
    fixed = dict(README_SPEC, boxDim=[24, 32], comment="unknown keys are ignored")
    good = tmakit.check(fixed)
    assert good.ok and bool(good) and good.rule is None and good.message == ""
    assert str(good) == "ok"


def test_numpy_integers_are_plain_json_numbers():
    np = pytest.importorskip("numpy")
    spec = dict(README_SPEC, globalDim=np.array([1024, 512]), boxDim=[np.int64(24), 32])
    assert tmakit.check(spec).ok


# Malformed lines: each gets the CLI's verdict, never a crash.
MALFORMED = [
    "",
    "{",
    "[]",
    "null",
    '{"dataType":"FLOAT32"}',
    '{"dataType":"FLOAT33","globalAddress":0,"globalDim":[16],"boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":-1,"globalDim":[16],"boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":[16.5],"boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":[18446744073709551616],"boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":"16","boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":[16,16],"boxDim":[4,4]}',
    '{"dataType":"FLOAT32","rank":7,"globalAddress":0,"globalDim":[16],"boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":true,"globalDim":[16],"boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":[[[[[[[[[[16]]]]]]]]]],"boxDim":[4]}',
    '{"dataType":"UINT8","globalAddress":0,"globalDim":[16],"boxDim":[4],"oobFill":"NAN_REQUEST_ZERO_FMA"}',
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":[16],"boxDim":[4],"swizzle":"\u00e9\u0001"}',
    '{"encode":"im2col","dataType":"FLOAT32","globalAddress":0,"globalDim":[16,8,8]}',
    "\u00ff\u00fe garbage \u0007",
]


def test_malformed_lines_get_the_clis_verdicts(cli):
    run = cli(["check", "--jsonl", "-"], ("\n".join(MALFORMED) + "\n").encode())
    assert run.returncode == 1, run.stderr
    expected = run.stdout.splitlines()
    assert len(expected) == len(MALFORMED)
    for line, cli_line in zip(MALFORMED, expected):
        result = tmakit.check(line)
        assert not result.ok
        assert str(result) == cli_line, line


# Lines the parser must survive whatever the CLI prints for them.
HOSTILE = MALFORMED + [
    '{"dataType":"FLOAT32","globalAddress":1e400,"globalDim":[16],"boxDim":[4]}',
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":' + "[" * 5000 + "]" * 5000 + "}",
    '{"dataType":"FLOAT32","globalAddress":0,"globalDim":[16],"boxDim":[4],"x":"' + "y" * 100000,
    '{"dataType":"\u0000","globalAddress":0,"globalDim":[16],"boxDim":[4]}',
]


@pytest.mark.parametrize("line", HOSTILE, ids=range(len(HOSTILE)))
def test_malformed_lines_are_verdicts_not_exceptions(line):
    result = tmakit.check(line)
    assert result.verdict in ("rejected", "error") and result.message
    assert (result.rule is None) == (result.verdict == "error")


def test_input_that_is_no_spec_raises_naming_the_problem():
    with pytest.raises(TypeError, match=r"spec\['globalDim'\]: a object is not a JSON value"):
        tmakit.check(dict(README_SPEC, globalDim=object()))
    with pytest.raises(TypeError, match="spec: expected a dict"):
        tmakit.check(42)
    with pytest.raises(ValueError, match="one JSON line expected"):
        tmakit.check(json.dumps(README_SPEC) + "\n" + json.dumps(README_SPEC))


def test_rules_are_the_clis(cli):
    run = cli(["rules"])
    assert run.returncode == 0, run.stderr
    table = [line.split("\t") for line in run.stdout.splitlines() if "\t" in line]
    assert [(r.id, r.summary) for r in tmakit.rules()] == [tuple(row) for row in table]
    assert {"T4", "T6", "T7", "T9"} <= {r.id for r in tmakit.rules()}


def test_describe_names_every_field():
    text = tmakit.describe(dict(README_SPEC, boxDim=[32, 32], swizzle="128B"))
    assert text == ("tiled FLOAT32 rank 2 @0x1000 dim [1024, 512] strides [4096] box [32, 32] "
                    "elementStrides [1, 1] interleave NONE swizzle 128B l2 NONE oobFill NONE")
    with pytest.raises(ValueError, match="globalDim: missing"):
        tmakit.describe({"dataType": "FLOAT32", "globalAddress": 0, "boxDim": [4]})


def test_the_package_imports_without_torch_or_a_gpu():
    # The validator is usable on any machine: nothing above needed the driver.
    assert isinstance(tmakit.driver_available(), bool)
    assert tmakit.__version__


def test_the_fix_is_data_and_fix_gives_the_nearest_passing_spec():
    result = tmakit.check(README_SPEC)
    assert result.fix == {"field": "boxDim", "index": 0, "value": result.fix["value"]}
    assert str(result.fix["value"]) in result.message  # the value the message names
    fixed = tmakit.fix(dict(README_SPEC, note="kept"))
    assert tmakit.check(fixed).ok and fixed["note"] == "kept"
    assert fixed["boxDim"] == [result.fix["value"], 32]
    assert tmakit.fix(dict(README_SPEC, boxDim=[24, 32]))["boxDim"] == [24, 32]
    assert tmakit.check(dict(README_SPEC, boxDim=[24, 32])).fix is None
    with pytest.raises(ValueError, match="globalDim"):
        tmakit.fix({"dataType": "FLOAT32", "globalAddress": 0, "boxDim": [4]})


def test_fix_equals_the_clis(corpus_lines, cli):
    lines = [line for line in corpus_lines[:3000] if not tmakit.check(line).ok][:500]
    run = cli(["check", "--fix", "--jsonl", "-"], ("\n".join(lines) + "\n").encode())
    assert run.returncode in (0, 1), run.stderr
    expected = run.stdout.splitlines()
    assert len(expected) == len(lines)
    mended = 0
    for line, cli_line in zip(lines, expected):
        if cli_line.startswith("error: "):
            with pytest.raises(ValueError) as error:
                tmakit.fix(line)
            assert "error: " + str(error.value) == cli_line
        else:
            assert tmakit.fix(line) == json.loads(cli_line), line
            mended += 1
    assert mended > 100


def test_a_line_past_the_bound_is_refused_unread(cli):
    line = '{"dataType":"FLOAT32","globalAddress":0,"globalDim":[16],"boxDim":[4],"x":"' + \
        "y" * (1 << 20) + '"}'
    run = cli(["check", "--jsonl", "-"], (line + "\n").encode())
    assert run.returncode == 1, run.stderr
    result = tmakit.check(line)
    assert result.verdict == "error" and str(result) == run.stdout.strip()


# --- architectures ---------------------------------------------------------------------------

U4_PADDED = {"dataType": "16U4_ALIGN16B", "globalAddress": 4112, "globalDim": [1024, 64],
             "globalStrides": [512], "boxDim": [128, 16], "swizzle": "128B_ATOM_32B"}


def test_check_judges_for_the_architecture_named():
    hopper = tmakit.check(U4_PADDED, arch="sm_90a")
    assert hopper.rule == "T2"
    for arch in ("sm_100a", "sm_103a", "sm_120a"):
        result = tmakit.check(U4_PADDED, arch=arch)
        assert result.rule == "P1"
        assert result.message == (
            "P1: globalAddress = 0x1010 is not 32-byte aligned (address % 32 = 16), which "
            "16U4_ALIGN16B needs; use 0x1000 and offset the coordinates")
        assert result.fix == {"field": "globalAddress", "index": None, "value": 4096}
        assert tmakit.check(dict(U4_PADDED, globalAddress=4096), arch=arch).ok


def test_fix_and_describe_take_the_architecture():
    fixed = tmakit.fix(U4_PADDED, arch="sm_100a")
    assert fixed == dict(U4_PADDED, globalAddress=4096)
    with pytest.raises(ValueError, match="data type 14 is not a Hopper tensor-map type"):
        tmakit.fix(U4_PADDED, arch="sm_90a")
    assert tmakit.describe(U4_PADDED, arch="sm_100a").startswith(
        "tiled 16U4_ALIGN16B rank 2 @0x1010")
    with pytest.raises(ValueError, match=r"128B, 128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B"):
        tmakit.describe(dict(U4_PADDED, swizzle="256B"), arch="sm_100a")


def test_an_unknown_architecture_is_refused_naming_the_known_ones():
    for call in (tmakit.check, tmakit.fix, tmakit.describe):
        with pytest.raises(ValueError, match=r"arch: unknown architecture sm_89 \(known: sm_90a, "
                                             r"sm_100a, sm_103a, sm_120a\)"):
            call(README_SPEC, arch="sm_89")


def test_cli_check_takes_the_architecture(cli, tmp_path):
    path = tmp_path / "specs.jsonl"
    path.write_text(json.dumps(U4_PADDED) + "\n")
    run = cli(["check", "--arch", "sm_120a", "--jsonl", str(path)])
    assert run.returncode == 1
    assert run.stdout == str(tmakit.check(U4_PADDED, arch="sm_120a")) + "\n"
    run = cli(["check", "--arch", "sm_89", "--jsonl", str(path)])
    assert run.returncode == 2
    assert "unknown architecture (known: sm_90a, sm_100a, sm_103a, sm_120a)" in run.stderr
