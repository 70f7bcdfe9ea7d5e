"""tmakit.check / rules / describe against the shipped driver corpus and the `tmakit` CLI."""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
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
    judged = [line for line in MALFORMED if line.strip()]  # (the CLI skips blank lines)
    assert len(expected) == len(judged)
    for line, cli_line in zip(judged, expected):
        result = tmakit.check(line)
        assert not result.ok
        assert str(result) == cli_line, line
    empty = tmakit.check("")
    assert empty.verdict == "error" and "the line is empty" in empty.message


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
    with pytest.raises(TypeError, match=r"^globalDim: an object is not a JSON value"):
        tmakit.check(dict(README_SPEC, globalDim=object()))
    with pytest.raises(TypeError, match="spec: expected a dict"):
        tmakit.check(42)
    with pytest.raises(ValueError, match="one JSON line expected"):
        tmakit.check(json.dumps(README_SPEC) + "\n" + json.dumps(README_SPEC))


def test_rules_are_the_clis(cli):
    run = cli(["rules"])
    assert run.returncode == 0, run.stderr
    table = [line.split("\t") for line in run.stdout.splitlines() if "\t" in line]
    assert [(r.id + (f" / {r.im2col_id}" if r.im2col_id else ""), r.summary)
            for r in tmakit.rules()] == [tuple(row) for row in table]
    assert {r.id: r.im2col_id for r in tmakit.rules()}["T8"] == "I6"
    assert {"T4", "T6", "T7", "T9"} <= {r.id for r in tmakit.rules()}


def test_rules_per_architecture_are_the_clis(cli):
    def table(args):
        run = cli(["rules", *args])
        assert run.returncode == 0, run.stderr
        return [tuple(line.split("\t")) for line in run.stdout.splitlines() if "\t" in line]

    def listed(rules):
        return [(r.id + (f" / {r.im2col_id}" if r.im2col_id else ""), r.summary) for r in rules]

    for arch in ("sm_90a", "sm_100a", "sm_103a", "sm_120a"):
        assert listed(tmakit.rules(arch)) == table(["--arch", arch]), arch
    # None: every rule of every architecture, as the CLI without --arch (not the GPU's)
    assert listed(tmakit.rules(None)) == listed(tmakit.rules()) == table([])
    ids = {arch: [r.id for r in tmakit.rules(arch)] for arch in ("sm_90a", "sm_100a", "sm_120a")}
    assert "A1" in ids["sm_90a"] and "A1" in ids["sm_120a"] and "A1" not in ids["sm_100a"]
    assert "T10" not in ids["sm_90a"] and "I8" in ids["sm_100a"]
    assert tmakit.rules("sm_90a")[0].summary == "data type is one of the 13 Hopper tensor-map types"
    assert tmakit.rules("sm_100a")[0].summary == (
        "data type is one of the 16 tensor-map types (Hopper's 13 and 16U4_ALIGN8B, "
        "16U4_ALIGN16B, 16U6_ALIGN16B)")
    with pytest.raises(ValueError, match=r"unknown architecture sm_89 \(known: sm_90a, "
                                         r"sm_100a, sm_103a, sm_120a\)"):
        tmakit.rules("sm_89")
    with pytest.raises(TypeError, match="arch: expected a name"):
        tmakit.rules(100)


def test_the_docs_tables_list_the_rules_in_the_order_they_apply():
    """docs/rules.md says validate() applies the rules in table order: every table of rules there
    lists its ids in the order `tmakit rules` gives, and every rule is in one."""
    order = [r.id for r in tmakit.rules()]
    tables, current = [], None
    for line in (REPO / "docs" / "rules.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| id |"):
            current = []
            tables.append(current)
        elif line.startswith("|") and current is not None:
            rule = line.split("|")[1].strip().split(" / ")[0]
            if rule in order:
                current.append(rule)
        else:
            current = None
    assert len(tables) == 3
    for ids in tables:
        assert ids == sorted(ids, key=order.index), ids
    assert set(order) == {rule for ids in tables for rule in ids}


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


def test_one_version_everywhere(cli):
    import re

    project = re.search(r"project\(tmakit VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text())
    package = re.search(r'^version = "([0-9.]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert project and package
    assert project.group(1) == package.group(1) == tmakit.__version__
    assert cli(["--version"]).stdout.strip() == f"tmakit {tmakit.__version__}"


def test_without_torch_the_ops_and_the_bench_say_what_to_install():
    # (torch made unimportable in a fresh interpreter, as where it is not installed)
    script = """
import runpy, sys
sys.modules["torch"] = None
import tmakit
from tmakit import *
assert "check" in dir() and "add" not in dir(), dir()
try:
    tmakit.add
except ImportError as error:
    print(error)
for argv in (["--help"], ["--list"], ["--reps", "0"]):
    sys.argv = ["python -m tmakit.bench"] + argv
    try:
        runpy.run_module("tmakit.bench", run_name="__main__")
    except SystemExit as error:
        print("exit", error.code)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    hint = "needs PyTorch: pip install 'tmakit[torch]' (or a torch build for your CUDA)"
    lines = run.stdout.splitlines()
    # the help needs no torch; a run ends with the hint on stderr, exit status 1; bad usage is
    # exit status 2 with or without torch
    assert lines[0] == f"tmakit.add {hint}"
    assert lines[1].startswith("usage: python -m tmakit.bench"), lines
    assert "--host-time-only" in run.stdout
    assert lines[-3:] == ["exit 0", "exit 1", "exit 2"], lines
    assert run.stderr.startswith(f"tmakit.bench {hint}\n"), run.stderr
    assert "error: --reps: 0 is outside 1..100000" in run.stderr
    sys_modules_torch = "import sys; sys.modules['torch'] = None; import tmakit.bench"
    imported = subprocess.run([sys.executable, "-c", sys_modules_torch], capture_output=True,
                              text=True, timeout=120)
    assert imported.returncode == 1 and f"ImportError: tmakit.bench {hint}" in imported.stderr


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


# --- hostile values: each refused naming its key, or ignored under an unknown key ------------

GOOD = dict(README_SPEC, boxDim=[24, 32])


def nested(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


class SelfListing:
    def tolist(self):
        return self


def test_unknown_keys_are_ignored_whatever_they_hold():
    cyclic = [1]
    cyclic.append(cyclic)
    for value in ({"a": {"b": 1}}, b"\x00\xff", bytearray(b"x"), memoryview(b"ab"), {1, 2},
                  frozenset(), float("nan"), float("inf"), nested(5000), cyclic, SelfListing(),
                  2 ** 5000, "\ud800", object(), 1j, list(range(600000))):
        spec = dict(GOOD, note=value)
        assert tmakit.check(spec).ok, repr(value)[:80]
        assert tmakit.describe(spec) == tmakit.describe(GOOD)
        fixed = tmakit.fix(dict(README_SPEC, note=value))
        # kept as given (left out of the line) or as its JSON (the same value)
        assert fixed["note"] is value or fixed["note"] == value
        assert fixed["boxDim"] == [24, 32]
    # a dict key that is not a str is no key the library reads: ignored too
    assert tmakit.check({**GOOD, 1: "x", None: b"y"}).ok


def test_a_value_the_library_reads_that_json_cannot_hold_is_named_with_its_path():
    cyclic = [1]
    cyclic.append(cyclic)
    cases = [
        (dict(GOOD, globalDim=[1024, float("nan")]), ValueError,
         "globalDim[1]: nan is not a number JSON can hold"),
        (dict(GOOD, globalAddress=float("inf")), ValueError,
         "globalAddress: inf is not a number JSON can hold"),
        (dict(GOOD, globalDim=[1024, 2 ** 5000]), ValueError,
         "globalDim[1]: an integer of 5001 bits is too large for any number"),
        (dict(GOOD, globalDim=b"\x00\x04"), TypeError, "globalDim: bytes is not a JSON value"),
        (dict(GOOD, globalDim=memoryview(b"ab")), TypeError,
         "globalDim: memoryview is not a JSON value"),
        (dict(GOOD, boxDim={24, 32}), TypeError, "boxDim: a set has no order"),
        (dict(GOOD, globalDim=cyclic), ValueError, "globalDim[1]: contains itself"),
        (dict(GOOD, boxDim=SelfListing()), ValueError, "boxDim: contains itself"),
        (dict(GOOD, globalDim=nested(5000)), ValueError,
         "globalDim" + "[0]" * 15 + ": nested deeper than 16 levels"),
        (dict(GOOD, dataType="FLOAT\ud83232"), ValueError,
         "dataType: the string holds a lone surrogate U+D832 at character 5"),
        (dict(GOOD, globalDim=list(range(600000))), ValueError,
         "globalDim: too large: a spec line holds at most 1048576 bytes"),
        (dict(GOOD, globalDim=[1024, np.datetime64("2026-11-28")]), TypeError,
         "globalDim[1]: a NumPy datetime64 value is not a JSON value"),
        (dict(GOOD, globalDim=np.zeros(2, "m8[s]")), TypeError,
         "globalDim: a NumPy array of timedelta64[s] is not a JSON value"),
        (dict(GOOD, globalDim=[1024, 1j]), TypeError, "globalDim[1]: a complex is not"),
    ]
    for spec, error, message in cases:
        for call in (tmakit.check, tmakit.describe, tmakit.fix):
            with pytest.raises(error) as raised:
                call(spec)
            assert str(raised.value).startswith(message), (call.__name__, str(raised.value))


def test_nesting_up_to_the_parsers_bound_passes_through():
    # the spec object is the first of 16 levels, as the library counts them
    assert tmakit.check(dict(GOOD, note=nested(15))).ok
    assert tmakit.check(json.dumps(dict(GOOD, note=nested(15)))).ok
    assert tmakit.check(json.dumps(dict(GOOD, note=nested(16)))).verdict == "error"
    assert tmakit.check(dict(GOOD, note=nested(16))).ok  # unknown: left out, so ignored
    result = tmakit.check(dict(GOOD, globalDim=[nested(14), 512]))
    assert result.verdict == "error"
    assert result.message == "globalDim[0]: expected an integer, got an array"
    with pytest.raises(ValueError, match=r"^globalDim(\[0\]){15}: nested deeper than 16"):
        tmakit.check(dict(GOOD, globalDim=[nested(15), 512]))


def test_numpy_values_of_every_kind_are_json_or_refused_by_name():
    spec = dict(GOOD, globalDim=np.array([1024, 512], dtype=np.uint16),
                globalStrides=(np.int64(4096),), boxDim=[np.float64(24), 32],
                dataType=np.str_("FLOAT32"), swizzle=np.str_("NONE"))
    result = tmakit.check(spec)  # a float boxDim: the library's own words, naming the key
    assert result.verdict == "error" and result.message == (
        "boxDim[0]: 24.0 is a whole number written as a float; give it as the integer 24")
    assert tmakit.check(dict(spec, boxDim=np.array([24, 32]))).ok
    assert tmakit.check(dict(GOOD, rank=np.array(2))).ok  # a 0-d array is its value
    assert tmakit.check(dict(GOOD, note=np.zeros(3, dtype=object))).ok
    with pytest.raises(TypeError, match=r"^globalDim\[0\]: a NumPy void value"):
        tmakit.check(dict(GOOD, globalDim=[np.void(b"\x01"), 512]))
    huge = np.broadcast_to(np.int64(1), (10 ** 6, 10 ** 6))  # 10^12 elements, no memory
    with pytest.raises(ValueError, match="^globalDim: too large"):
        tmakit.check(dict(GOOD, globalDim=huge))
    assert tmakit.check(dict(GOOD, note=huge)).ok


def test_a_byte_order_mark_is_skipped_by_check_and_fix_alike(cli):
    line = "\ufeff" + json.dumps(GOOD)
    run = cli(["check", "--jsonl", "-"], (line + "\n").encode())
    assert run.stdout.strip() == "ok" and tmakit.check(line).ok
    assert tmakit.fix(line) == GOOD
    assert tmakit.fix("\ufeff" + json.dumps(README_SPEC)) == GOOD
    assert tmakit.describe(line) == tmakit.describe(GOOD)


def test_non_ascii_text_in_a_line_gives_the_parsers_message_escaped_everywhere(cli):
    lines = [
        '{"dataType":"\u201cFLOAT32\u201d","globalAddress":0,"globalDim":[16],"boxDim":[4]}',
        '{"dataType":"' + "\u00e9" * 200 + '","globalAddress":0,"globalDim":[16],"boxDim":[4]}',
        '{"' + "\u00e9" * 100 + '":1e999,"dataType":"FLOAT32","globalAddress":0,'
        '"globalDim":[16],"boxDim":[4]}',
    ]
    run = cli(["check", "--jsonl", "-"], ("\n".join(lines) + "\n").encode())
    for number, (line, cli_line) in enumerate(zip(lines, run.stdout.splitlines())):
        result = tmakit.check(line)
        assert str(result) == cli_line and result.verdict == "error"
        assert result.message.isascii() and "\\x" in result.message
        # (the last line's bad number stands under an unknown key: a dict drops it)
        encode = [lambda s: tmakit.TensorMap(json.loads(s)).encode()] if number < 2 else []
        for call in [tmakit.describe, tmakit.fix, lambda s: tmakit.simulate(s, b"")] + encode:
            with pytest.raises(ValueError) as raised:
                call(line)
            assert str(raised.value) == result.message


def test_a_lone_surrogate_in_a_line_is_an_error_verdict_not_an_exception():
    line = '{"dataType":"FLOAT32\ud800","globalAddress":0,"globalDim":[16],"boxDim":[4]}'
    result = tmakit.check(line)
    assert result.verdict == "error"
    assert result.message == ("character 20 of the line is a lone surrogate U+D800, which is "
                              "not text UTF-8 can carry")
    with pytest.raises(ValueError, match="^character 20 of the line is a lone surrogate"):
        tmakit.describe(line)


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
    with pytest.raises(ValueError,
                       match="data type 16U4_ALIGN16B is not a Hopper tensor-map type"):
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


def test_arch_is_a_name_or_none():
    for call in (tmakit.check, tmakit.fix, tmakit.describe):
        with pytest.raises(ValueError, match="arch: the name is empty; give one such as 'sm_90a', "
                                             "or None"):
            call(README_SPEC, arch="")
        with pytest.raises(TypeError, match="arch: expected a name such as 'sm_90a' or None"):
            call(README_SPEC, arch=90)
    with pytest.raises(ValueError, match="arch: the name is empty"):
        tmakit.rules(arch="")


def test_a_bad_arch_is_refused_even_for_a_line_that_cannot_be_read():
    # as `tmakit check --arch` exits 2 before it reads a line
    with pytest.raises(ValueError, match="arch: unknown architecture bogus"):
        tmakit.check("{not json", arch="bogus")
    with pytest.raises(TypeError, match="arch: expected a name"):
        tmakit.check("\ud800", arch=42)
    assert tmakit.check("{not json", arch="sm_100a").verdict == "error"
    long_name = "a" * 63 + "\u00e9"
    with pytest.raises(ValueError) as error:
        tmakit.check({}, arch=long_name)
    assert "a" * 48 + "... (known: sm_90a" in str(error.value)


def test_a_dict_under_a_lines_bound_is_judged_whatever_its_values():
    # the estimate charges no value more than its JSON text: 600 KB of zeros is a line, judged
    spec = {"dataType": "FLOAT32", "globalAddress": 4096, "globalDim": [64, 8],
            "globalStrides": [256], "boxDim": [8, 4]}
    for values in ([0] * 200_000, [8] * 290_000, [512] * 200_000, [None] * 100_000,
                   [True] * 100_000, [0.5] * 100_000):
        assert len(json.dumps(dict(spec, elementStrides=values))) < 1 << 20
        result = tmakit.check(dict(spec, elementStrides=values))
        assert result.verdict == "error" and "elementStrides" in result.message, result
    # and one past it is refused before its whole text is made
    with pytest.raises(ValueError, match=r"elementStrides\[\d+\]: too large: a spec line holds "
                                         "at most 1048576 bytes"):
        tmakit.check(dict(spec, elementStrides=[1234567] * 150_000))


@pytest.mark.parametrize("module, argv", [("tmakit", ["--help"]), ("tmakit.bench", ["--help"])])
def test_entry_points_say_when_their_output_cannot_be_written(module, argv):
    # a full disk, a closed stdout: exit status 2 and one line, not a traceback or a 0
    command = [sys.executable, "-m", module, *argv]
    with open("/dev/full", "w") as full:
        run = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True,
                             timeout=120)
    assert run.returncode == 2 and "cannot write the output" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    run = subprocess.run(command, stderr=subprocess.PIPE, text=True, timeout=120,
                         preexec_fn=lambda: os.close(1))
    assert run.returncode == 2 and "stdout is closed" in run.stderr, run.stderr


def test_python_m_tmakit_refuses_arguments_after_help():
    run = subprocess.run([sys.executable, "-m", "tmakit", "--help", "extra"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "runs no command (got '--help extra')" in run.stderr
