"""A bounded, seeded fuzz of the Python API with hostile arguments, as tests/host/
test_fuzz_hostile.cpp does for the library and the CLI: check, fix, describe, simulate,
tensor_map (over NumPy arrays and fake array interfaces) and TensorMap.encode, given
deeply nested and self-containing values, NaN, huge integers, buffers, sets, NumPy scalars and
arrays of every dtype, objects whose hooks raise, non-UTF-8 text, huge ranks and sizes.

The cases run in a child process that may map at most 4 GiB more than it holds at the start. A crash, a hang (the
child's timeout or one slow case), a case that raises the child's peak memory by more than
256 MiB, and any outcome but a result or a ValueError / TypeError naming what it refuses
fail the test. Oracles: unknown keys are ignored whatever they hold; a spec fix() returns
passes check(); check's verdict on every line equals `tmakit check`'s. About 10 s of CI.
TMAKIT_FUZZ_SEED=<n> replays another sequence; TMAKIT_FUZZ_CASES=<n> sets the count.
"""

import array
import decimal
import fractions
import json
import os
import random
import re
import resource
import subprocess
import sys
import time

import numpy as np

SEED = int(os.environ.get("TMAKIT_FUZZ_SEED", "20261128"))
CASES = int(os.environ.get("TMAKIT_FUZZ_CASES", "4000"))
ADDRESS_SPACE_BYTES = 4 << 30
CASE_SECONDS = 5.0
PEAK_GROWTH_KIB = 256 << 10

# What a refusal's message may start with: an argument, a spec key (with its path), the
# library's words for a line it cannot read, or a rule id.
SPEC_KEYS = ("encode", "dataType", "rank", "globalAddress", "globalDim", "globalStrides",
             "boxDim", "elementStrides", "interleave", "swizzle", "l2Promotion", "oobFill",
             "pixelBoxLowerCorner", "pixelBoxUpperCorner", "channelsPerPixel",
             "pixelsPerColumn", "coords")
ARGUMENTS = ("spec", "tensor", "box", "swizzle", "interleave", "l2_promotion", "oob_fill",
             "element_strides", "data_type", "global_bytes", "coords", "explain_triton")
NAMED = re.compile(r"^((%s)\b|(%s)\b|the line\b|character \d+ of the line|invalid JSON at byte"
                   r"|byte \d+ of the line|expected a JSON object|no passing spec near"
                   r"|global byte at offset|the box's|[A-Z]+\d+: |[A-Za-z_]\w*(\[[^]]*\])*: )"
                   % ("|".join(SPEC_KEYS), "|".join(ARGUMENTS)))


# --- hostile values ---------------------------------------------------------------------------


class RaisingIndex:
    def __index__(self):
        raise RuntimeError("index")


class RaisingToList:
    def tolist(self):
        raise KeyError("tolist")


class SelfToList:
    def tolist(self):
        return self


class ChainToList:
    def tolist(self):
        return ChainToList()


class HugeToList:
    def numel(self):
        return 10 ** 12

    def tolist(self):
        raise AssertionError("tolist() called on a value too large for any line")


class RaisingGetattr:
    def __getattr__(self, name):
        raise RuntimeError(name)


class RaisingStr:
    def __str__(self):
        raise RuntimeError("str")

    __repr__ = __str__


class WeirdInt(int):
    def __index__(self):
        raise RuntimeError("index")

    def __str__(self):
        raise RuntimeError("str")


class BadInterface:
    """An object with a malformed NumPy or CUDA array interface."""

    def __init__(self, interface, cuda=False):
        setattr(self, "__cuda_array_interface__" if cuda else "__array_interface__", interface)


class RaisingInterface:
    @property
    def __array_interface__(self):
        raise OSError("interface")


def nested_list(depth):
    v = 1
    for _ in range(depth):
        v = [v]
    return v


def nested_dict(depth):
    v = 1
    for _ in range(depth):
        v = {"k": v}
    return v


def self_list():
    x = [1]
    x.append(x)
    return x


def self_dict():
    x = {"a": 1}
    x["self"] = x
    return x


def self_object_array():
    a = np.empty(2, dtype=object)
    a[0], a[1] = 1, a
    return a


BIG_LIST = list(range(600000))  # past a line's 1 MiB once written as JSON


class Hostile:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def int_(self):
        r = self.rng
        return self.pick([0, 1, -1, 7, 16, 128, 256, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64, -2 ** 63,
                          2 ** 64 + 1, 10 ** 30, 2 ** 1023, 2 ** 1100, 10 ** 5000,
                          r.randrange(-10 ** 6, 10 ** 6), r.randrange(2 ** 64), True, False])

    def float_(self):
        return self.pick([0.0, -0.0, 2.5, 16.0, 1e308, -1e-300, float("nan"), float("inf"),
                          float("-inf")])

    def str_(self):
        r = self.rng
        return self.pick(["", "FLOAT32", "128B", "\u201cFLOAT32\u201d", "FLOAT32\u201d",
                          "\ufeffFLOAT32", "\ud800", "a\udfffb", "\x00", "\n", "\r",
                          "\u00e9" * r.randrange(1, 300), "x" * r.randrange(1, 5000),
                          "\U0001f600" * 40, "none", "NaN", "nan", "zero"])

    def numpy_scalar(self):
        return self.pick([np.int8(-3), np.uint8(200), np.int16(16), np.uint16(128),
                          np.int32(64), np.uint32(2 ** 32 - 1), np.int64(128), np.uint64(2 ** 64 - 1),
                          np.float16(1.5), np.float32("nan"), np.float64(16), np.longdouble(2),
                          np.longdouble("1e4000"), np.complex64(1j), np.bool_(True),
                          np.datetime64("2026-11-28"), np.timedelta64(5, "s"), np.str_("32B"),
                          np.bytes_(b"32B"), np.void(b"\x00\x01")])

    def numpy_array(self):
        r = self.rng
        shape = self.pick([(), (0,), (2,), (3, 2), (2, 1, 2), (1,) * 20])
        dtype = self.pick(["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8",
                           "c8", "?", "M8[s]", "m8[ms]", "U3", "S3", "O", "V4"])
        a = np.zeros(shape, dtype=dtype)
        if dtype == "O" and a.size:
            a.reshape(-1)[0] = self.value(2)
        if dtype in ("f4", "f8") and a.size and r.random() < 0.3:
            a.reshape(-1)[0] = np.nan
        return self.pick([a, a.T, np.broadcast_to(np.int64(3), (10 ** 6, 10 ** 6)),
                          np.arange(4)[::-1], self_object_array()]) if r.random() < 0.2 else a

    def value(self, depth=0):
        r = self.rng
        kind = r.randrange(30 if depth < 3 else 12)
        if kind < 3:
            return self.int_()
        if kind < 5:
            return self.float_()
        if kind < 7:
            return self.str_()
        if kind == 7:
            return None
        if kind == 8:
            return self.numpy_scalar()
        if kind == 9:
            return self.pick([b"\x00\x01", bytearray(b"ab"), memoryview(b"abcd"),
                              memoryview(b"abcdefgh").cast("I"), {1, 2}, frozenset(),
                              1j, decimal.Decimal("1.5"), fractions.Fraction(1, 3), object(),
                              RaisingIndex(), RaisingToList(), SelfToList(), ChainToList(),
                              HugeToList(), RaisingStr(), RaisingGetattr(), WeirdInt(5),
                              Ellipsis, len,
                              array.array("i", [1, 2]), array.array("d", [float("nan")])])
        if kind == 10:
            return self.pick([nested_list(r.randrange(10, 40)), nested_dict(r.randrange(10, 40)),
                              nested_list(5000), self_list(), self_dict(), range(10 ** 20),
                              range(4), BIG_LIST, [BIG_LIST], {"k": BIG_LIST}])
        if kind == 11:
            return self.numpy_array()
        n = r.randrange(6)
        if kind < 20:
            return [self.value(depth + 1) if r.random() < 0.2 else r.randrange(-2, 300)
                    for _ in range(n)]
        if kind < 24:
            return tuple(self.value(depth + 1) for _ in range(n))
        return {self.pick(["k", 1, None, (1,), "\ud800", "", "coords"]): self.value(depth + 1)
                for _ in range(n)}

    # --- specs and lines

    def base_spec(self):
        r = self.rng
        rank = r.randrange(1, 6)
        dims = [self.pick([8, 16, 64, 100]) for _ in range(rank)]
        size = self.pick([1, 2, 4, 8])
        dtype = {1: "UINT8", 2: "FLOAT16", 4: "FLOAT32", 8: "FLOAT64"}[size]
        strides, step = [], dims[0] * size
        for d in dims[1:]:
            step = (step + 15) // 16 * 16
            strides.append(step)
            step *= d
        spec = {"dataType": dtype, "rank": rank, "globalAddress": self.pick([0, 4096, 1024]),
                "globalDim": dims, "globalStrides": strides,
                "boxDim": [min(d, 16 // size * self.pick([1, 2, 4])) for d in dims],
                "swizzle": self.pick(["NONE", "32B", "64B", "128B"])}
        if r.random() < 0.3:
            spec["coords"] = [r.randrange(-4, 8) for _ in range(rank)]
        return spec

    def spec(self):
        r = self.rng
        spec = self.base_spec()
        for _ in range(r.randrange(3)):
            choice = r.randrange(4)
            if choice == 0:
                spec[self.pick(SPEC_KEYS)] = self.value()
            elif choice == 1:
                spec.pop(self.pick(SPEC_KEYS), None)
            elif choice == 2:
                key = self.pick(SPEC_KEYS)
                if isinstance(spec.get(key), list) and spec[key]:
                    spec[key] = list(spec[key])
                    spec[key][r.randrange(len(spec[key]))] = self.value(1)
            else:
                spec["rank"] = self.pick([0, 6, 2 ** 31, 10 ** 9, 10 ** 100, None, "2", [2],
                                          2.0, -1, True, np.int64(10 ** 9)])
        return spec

    def line(self):
        r = self.rng
        text = json.dumps(self.base_spec())
        choice = r.randrange(9)
        if choice == 0:
            return "\ufeff" + text
        if choice == 1:
            return text.replace('"', self.pick(["\u201c", "\u201d"]), r.randrange(1, 6))
        if choice == 2:
            at = r.randrange(len(text))
            return text[:at] + self.str_() + text[at + 1:]
        if choice == 3:
            return text[:r.randrange(len(text))]
        if choice == 4:
            return text[:-1] + ', "x": "' + "\u00e9" * r.randrange(1, 600000) + '"}'
        if choice == 5:
            return "".join(chr(r.randrange(1, 0x250)) for _ in range(r.randrange(60)))
        if choice == 6:
            return text[:-1] + ', "deep": ' + "[" * r.randrange(10, 3000) + "]}"
        if choice == 7:  # many keys (a linear search per key would take minutes)
            return "{" + "".join(f'"k{i}":{i},' for i in range(r.randrange(1, 90000))) + \
                text[1:]
        return text


# --- the cases ---------------------------------------------------------------------------------


def aligned_array(r, shape, dtype):
    raw = np.zeros(int(np.prod(shape)) * np.dtype(dtype).itemsize + 256, dtype=np.uint8)
    start = (-raw.ctypes.data) % 128
    return raw[start:start + int(np.prod(shape)) * np.dtype(dtype).itemsize].view(dtype) \
        .reshape(shape)


def run_case(tmakit, h, name, oracle_failures):
    """One call; returns ("ok", None) or (exception type name, message)."""
    r = h.rng
    if name == "check":
        spec = h.spec() if r.random() < 0.7 else h.line()
        result = tmakit.check(spec)
        assert result.verdict in ("ok", "rejected", "error")
        if isinstance(spec, dict) and r.random() < 0.5:
            # unknown keys are ignored, whatever they hold
            hostile = dict(spec, **{h.pick(["x", "comment", "k\u00e9y", "coordz"]): h.value()})
            if str(tmakit.check(hostile)) != str(result):
                oracle_failures.append(f"an unknown key changed the verdict: {result} vs "
                                       f"{tmakit.check(hostile)}")
        return str(result)
    if name == "fix":
        spec = h.spec() if r.random() < 0.7 else h.line()
        fixed = tmakit.fix(spec)
        if not tmakit.check({k: v for k, v in fixed.items()
                             if isinstance(k, str) and k in SPEC_KEYS}).ok:
            oracle_failures.append(f"fix() returned a spec that does not pass: {fixed!r:.200}")
        return None
    if name == "describe":
        text = tmakit.describe(h.spec() if r.random() < 0.7 else h.line())
        assert isinstance(text, str)
        return None
    if name == "simulate":
        spec = h.spec() if r.random() < 0.8 else h.line()
        data = h.pick([bytes(1 << 16), bytearray(4096), np.zeros(1 << 14, np.float32),
                       memoryview(bytes(1 << 16)), np.zeros((64, 64), np.uint8)[:, ::2],
                       h.value(), np.zeros(4, dtype=object), "text"])
        coords = None if r.random() < 0.5 else h.pick(
            [[0, 0], [1], [0] * 5, h.value(), [2 ** 40, 0], [np.int64(3), 0]])
        s = tmakit.simulate(spec, data, coords=coords)
        assert s.bytes.shape == s.written.shape and s.bytes.dtype == np.uint8
        return None
    if name in ("tensor_map", "encode"):
        shape = h.pick([(64, 128), (16, 64), (4, 8, 32), (256,), (2, 2, 2, 2, 2, 16)])
        tensor = aligned_array(r, shape, h.pick([np.float32, np.float16, np.uint8, np.int64]))
        if r.random() < 0.3:
            tensor = h.pick([tensor[:, 1:] if tensor.ndim > 1 else tensor[1:], tensor.T,
                             np.zeros(shape, dtype=h.pick(["c8", "M8[s]", "m8", "O", "U2", "V4"])),
                             np.zeros(()), h.value(), RaisingInterface(),
                             BadInterface(h.pick([None, 1, {}, {"typestr": "<f4"},
                                                  {"typestr": "<M8[s]", "shape": (2,),
                                                   "data": (0, False)},
                                                  {"typestr": "<f4", "shape": (2, 2),
                                                   "data": (2 ** 70, False)},
                                                  {"typestr": "<f4", "shape": h.value(),
                                                   "data": (0, False)},
                                                  {"typestr": h.value(), "shape": (4,),
                                                   "data": (0, False)},
                                                  {"typestr": "<f4", "shape": (4, 4),
                                                   "strides": h.value(), "data": (0, False)},
                                                  {"typestr": "<f4", "shape": (4,),
                                                   "data": h.value()}]),
                                          cuda=r.random() < 0.5)])
        rank = max(tensor.ndim, 1) if isinstance(tensor, np.ndarray) else len(shape)
        box = [h.pick([1, 8, 16, 32]) for _ in range(rank)] if r.random() < 0.7 else h.value()
        options = {}
        for key, good in (("swizzle", ["none", "128B", 64, np.int64(128)]),
                          ("interleave", ["none", "16B"]), ("l2_promotion", ["none", 256]),
                          ("oob_fill", ["none", "nan"]),
                          ("element_strides", [[1] * rank]),
                          ("data_type", ["tfloat32", np.float32, np.dtype("f4"), "UINT8"])):
            if r.random() < 0.25:
                options[key] = h.pick(good) if r.random() < 0.5 else h.value()
        tm = tmakit.tensor_map(tensor, box, **options)
        result = tm.check()
        if name == "encode":
            try:
                encoded = tm.encode()
                assert isinstance(encoded, bytes) and len(encoded) == 128
            except RuntimeError:
                # without a driver, a spec the validator passes gets that far, and only such
                # a spec; with one, the driver takes every spec the validator passes
                if tmakit.driver_available() or not result.ok:
                    raise
        return None
    raise AssertionError(name)


def worker(seed, count, out_path):
    """The child: runs `count` cases, writes one JSON record per case to out_path."""
    import tmakit

    # NOTE: the CUDA driver reserves far more address space than the limit, when it
    # initialises (driver_available) and makes a context (the first encode): both first, then
    # the limit on top of what the process holds.
    if tmakit.driver_available():
        try:
            tmakit.TensorMap({"dataType": "UINT8", "globalAddress": 0, "globalDim": [16],
                              "boxDim": [16]}).encode()
        except (RuntimeError, ValueError):
            pass
    with open("/proc/self/status") as status:
        held = next((int(line.split()[1]) * 1024 for line in status
                     if line.startswith("VmSize:")), 0)
    limit = held + ADDRESS_SPACE_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    h = Hostile(seed)
    names = ["check"] * 30 + ["fix"] * 12 + ["describe"] * 10 + ["simulate"] * 18 + \
        ["tensor_map"] * 22 + ["encode"] * 8
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(out_path, "w", encoding="utf-8") as out:
        for case in range(count):
            name = h.pick(names)
            oracle_failures = []
            started = time.monotonic()
            try:
                verdict = run_case(tmakit, h, name, oracle_failures)
                outcome, message = "ok", verdict
            except (ValueError, TypeError) as error:
                outcome, message = type(error).__name__, str(error)
            except BaseException as error:  # noqa: B036 - a foreign type is what is looked for
                outcome, message = "FOREIGN " + type(error).__qualname__, str(error)[:500]
            seconds = time.monotonic() - started
            now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            record = {"case": case, "name": name, "outcome": outcome,
                      "message": (message or "")[:2000], "seconds": round(seconds, 3),
                      "peak_growth_kib": now - peak, "oracle": oracle_failures}
            peak = now
            out.write(json.dumps(record, ensure_ascii=True) + "\n")
            out.flush()


# --- the test ---------------------------------------------------------------------------------


def run_worker(tmp_path, seed, count, timeout_s):
    out = tmp_path / f"fuzz-{seed}.jsonl"
    # the child imports what this process imports
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    started = time.monotonic()
    try:
        child = subprocess.run([sys.executable, __file__, "--worker", str(seed), str(count),
                                str(out)], capture_output=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        done = out.read_text().count("\n") if out.exists() else 0
        raise AssertionError(f"seed {seed}: hung: no end after {timeout_s} s, {done} cases "
                             f"done (the next one hangs; replay with TMAKIT_FUZZ_SEED)")
    records = [json.loads(line) for line in out.read_text().splitlines()] \
        if out.exists() else []
    assert child.returncode == 0, (
        f"seed {seed}: the child died (exit {child.returncode}) after case "
        f"{len(records) - 1}: {child.stderr.decode(errors='replace')[-2000:]}")
    assert len(records) == count
    return records, time.monotonic() - started


def test_hostile_calls_end_in_a_result_or_a_named_value_or_type_error(tmp_path):
    records, seconds = run_worker(tmp_path, SEED, CASES, timeout_s=120)
    failures, unnamed = [], []
    outcomes = {}
    for r in records:
        key = (r["name"], r["outcome"].split(" ")[0])
        outcomes[key] = outcomes.get(key, 0) + 1
        where = f"case {r['case']} ({r['name']})"
        if r["outcome"].startswith("FOREIGN"):
            failures.append(f"{where}: {r['outcome']}: {r['message'][:300]}")
        if r["seconds"] > CASE_SECONDS:
            failures.append(f"{where}: took {r['seconds']} s")
        if r["peak_growth_kib"] > PEAK_GROWTH_KIB:
            failures.append(f"{where}: raised the peak memory by {r['peak_growth_kib']} KiB")
        failures.extend(f"{where}: {o}" for o in r["oracle"])
        if r["outcome"] in ("ValueError", "TypeError"):
            if not r["message"] or not NAMED.match(r["message"]):
                unnamed.append(f"{where}: {r['outcome']}: {r['message'][:200]}")
    assert failures == [], f"seed {SEED}: " + "\n".join(failures[:20])
    # The refusals name what they refuse; a handful may not (a list's own words).
    assert len(unnamed) <= 5, "\n".join(unnamed[:40])
    # Every function was reached with results and with refusals alike.
    for name in ("check", "fix", "describe", "simulate", "tensor_map", "encode"):
        assert outcomes.get((name, "ok"), 0) > 10 or name == "fix", (name, outcomes)
        assert sum(n for (f, o), n in outcomes.items() if f == name and o != "ok") > 10, \
            (name, outcomes)
    assert seconds < 60, f"the fuzz took {seconds:.1f} s; CI allows it well under a minute"


def test_check_agrees_with_the_cli_on_hostile_lines(cli):
    import tmakit

    h = Hostile(SEED + 1)
    lines = [h.line() for _ in range(400)]
    # one line each, as the CLI splits its input (at "\n" only); blank lines (nothing but
    # spaces and tabs), which the CLI skips, left out
    lines = [line for line in lines
             if "\n" not in line and "\r" not in line and line.strip(" \t")]
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n"
    run = cli(["check", "--jsonl", "-"], data)
    assert run.returncode in (0, 1), run.stderr
    expected = run.stdout.splitlines()
    assert len(expected) == len(lines)
    agreed = 0
    for line, cli_line in zip(lines, expected):
        result = tmakit.check(line)
        assert result.ok == (cli_line == "ok"), (line[:200], cli_line[:200])
        if not any(0xD800 <= ord(c) < 0xE000 for c in line):
            assert str(result) == cli_line, line[:200]
            agreed += 1
    assert agreed > 250


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--worker":
    worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
