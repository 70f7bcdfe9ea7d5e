"""explain_triton against real Triton launches (needs Triton, torch and an sm_90 GPU).

Random descriptors (ranks 1-5, every torch dtype Triton takes and a few it does not, odd row
pitches and base offsets, blocks up to and past Triton's and TMA's limits, both padding modes)
are each built with triton.tools.tensor_descriptor.TensorDescriptor (Triton may refuse) and,
when built, handed to a small Triton kernel that loads one block through it and stores it; the
tile is compared with torch's slice (out-of-bounds elements zero or NaN). explain_triton must
agree on every one: ok exactly when construction and launch work and the tile is right, and a
refusal attributed to Triton or to the driver as it happened. The counts per outcome are
printed (pytest -s).

Knobs: TMAKIT_TRITON_SEED (default 0) and TMAKIT_TRITON_CASES (default 1200).

NOTE: Triton 3.6 encodes the tensor map in the launcher, before the kernel runs, and raises
RuntimeError ("Failed to create tensor map descriptor") when the driver refuses it, so a
refused descriptor never reaches the GPU and cannot poison the CUDA context. The loads only
touch memory the test allocated (a huge extent or stride is given only to a dimension whose
loaded part stays inside the allocation). One outcome kills the process: a torch.bool
descriptor makes Triton 3.6's compiler abort on an assertion (no TMA type for i1), so those
launches run in a subprocess, one per distinct kernel signature.
"""

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
descriptor_module = pytest.importorskip("triton.tools.tensor_descriptor")

import tmakit  # noqa: E402

pytestmark = pytest.mark.gpu

DEVICE = "cuda"

# torch dtype name -> bytes per element (torch's element_size)
DTYPES = {
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4,
    "uint32": 4, "int64": 8, "uint64": 8,
    # Not for Triton on sm_90: fnuz fp8 (the compiler refuses), no Triton type (the JIT
    # refuses), and bool (the compiler aborts).
    "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1,
    "bool": 1,
}
# Draw weights: every type Triton takes alike; the others less often (bool's launches each
# cost a subprocess).
WEIGHTS = {name: 4 for name in DTYPES}
WEIGHTS.update({"float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1,
                "float4_e2m1fn_x2": 1, "bool": 1})

# A limited set of blocks per rank, so that Triton compiles a bounded number of kernels: below,
# at and past TMA's limits (16-byte rows, 256 per dimension, the swizzle span) and Triton's
# (powers of two, 2^20 elements, shared memory), and a zero the constructor lets through.
BLOCKS = {
    1: [(8,), (32,), (512,), (48,), (1 << 21,)],
    2: [(1, 16), (8, 4), (64, 64), (16, 512), (512, 8), (256, 256), (24, 32), (8, 1)],
    3: [(2, 4, 64), (1, 8, 32), (4, 2, 512), (0, 8, 16)],
    4: [(2, 2, 2, 32), (1, 1, 16, 16), (2, 1, 8, 128)],
    5: [(1, 2, 2, 2, 16), (2, 1, 1, 8, 64), (1, 1, 1, 1, 4)],
}


@triton.jit
def _load_rank1(desc, out, B0: tl.constexpr):
    tile = desc.load([0])
    tl.store(out + tl.arange(0, B0), tile)


@triton.jit
def _load_rank2(desc, out, B0: tl.constexpr, B1: tl.constexpr):
    tile = desc.load([0, 0])
    offs = tl.arange(0, B0)[:, None] * B1 + tl.arange(0, B1)[None, :]
    tl.store(out + offs, tile)


@triton.jit
def _load_rank3(desc, out, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    tile = desc.load([0, 0, 0])
    offs = (tl.arange(0, B0)[:, None, None] * (B1 * B2)
            + tl.arange(0, B1)[None, :, None] * B2 + tl.arange(0, B2)[None, None, :])
    tl.store(out + offs, tile)


@triton.jit
def _load_rank4(desc, out, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr,
                B3: tl.constexpr):
    tile = desc.load([0, 0, 0, 0])
    offs = (tl.arange(0, B0)[:, None, None, None] * (B1 * B2 * B3)
            + tl.arange(0, B1)[None, :, None, None] * (B2 * B3)
            + tl.arange(0, B2)[None, None, :, None] * B3
            + tl.arange(0, B3)[None, None, None, :])
    tl.store(out + offs, tile)


@triton.jit
def _load_rank5(desc, out, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr,
                B3: tl.constexpr, B4: tl.constexpr):
    tile = desc.load([0, 0, 0, 0, 0])
    offs = (tl.arange(0, B0)[:, None, None, None, None] * (B1 * B2 * B3 * B4)
            + tl.arange(0, B1)[None, :, None, None, None] * (B2 * B3 * B4)
            + tl.arange(0, B2)[None, None, :, None, None] * (B3 * B4)
            + tl.arange(0, B3)[None, None, None, :, None] * B4
            + tl.arange(0, B4)[None, None, None, None, :])
    tl.store(out + offs, tile)

LOAD_KERNELS = {1: _load_rank1, 2: _load_rank2, 3: _load_rank3, 4: _load_rank4,
                5: _load_rank5}


def draw_cases(seed, count):
    """Descriptor arguments as plain data: dtype (torch's name), shape and strides (elements),
    block, padding, offset (elements past a 256-byte aligned allocation)."""
    rng = random.Random(seed)
    names = list(DTYPES)
    weights = [WEIGHTS[n] for n in names]
    cases = []
    for _ in range(count):
        rank = rng.randint(1, 5)
        dtype = rng.choices(names, weights)[0]
        itemsize = DTYPES[dtype]
        block = rng.choice(BLOCKS[rank])
        padding = rng.choices(["zero", "nan", "NaN"], [72, 25, 3])[0]
        shape = []
        for b in block:
            b = max(b, 1)
            shape.append(rng.choice([1, b // 2 + 1, b, b + rng.randint(1, 7),
                                     rng.randint(1, 2 * b + 8)]))
        if rng.random() < 0.02:
            shape[rng.randrange(rank)] = 0
        # Strides: the inner dimension dense (sometimes not); row pitches mostly padded to 16
        # bytes as an allocator would, sometimes dense (odd when the row is) or odd.
        align = max(16 // itemsize, 1)
        strides = [1] * rank
        if rank >= 2:
            row = max(shape[-1], 1)
            strides[-2] = rng.choices(
                [-(-row // align) * align + align * rng.choice([0, 0, 1, 2]), row,
                 row + rng.choice([1, 3, 5])], [78, 14, 8])[0]
        for i in range(rank - 3, -1, -1):
            strides[i] = strides[i + 1] * max(shape[i + 1], 1) + rng.choice(
                [0] * 10 + [align, 1])
        if rng.random() < 0.03:
            strides[-1] = 2
        offset = rng.choice([0] * 12 + [1, 3, align, 4 * align])
        odd = rng.random()
        if odd < 0.03 and rank >= 2:
            # A stride of 2^40 elements on a dimension of extent 1: past TMA's stride limit,
            # while the load reads only that dimension's first element.
            i = rng.randrange(rank - 1)
            shape[i], strides[i] = 1, 1 << 40
        elif odd < 0.06:
            # An extent past 2^32 (the driver's limit) or past 2^31 - 1 (the int32 the kernel
            # gets) on the outermost dimension; the load reads its first rows only.
            shape[0] = rng.choice([1 << 32, 1 << 31]) + rng.choice([1, 16])
        cases.append(dict(dtype=dtype, shape=shape, strides=strides, block=list(block),
                          padding=padding, offset=offset))
    return cases


def _touched_bytes(case):
    """Bytes from the allocation's start that a load of the first block can read."""
    itemsize = DTYPES[case["dtype"]]
    last = case["offset"]
    for extent, stride, b in zip(case["shape"], case["strides"], case["block"]):
        reach = min(max(extent, 1), max(b, 1)) - 1
        last += reach * stride
    return (last + 1) * itemsize


def _allocate(case, torch):
    """A random-filled allocation covering what the load can read, and the base view."""
    itemsize = DTYPES[case["dtype"]]
    nbytes = _touched_bytes(case) + 256
    nbytes += (-nbytes) % itemsize
    raw = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=DEVICE)
    storage = raw.view(getattr(torch, case["dtype"]))
    return raw, storage[case["offset"]:]


def _expected_and_actual_agree(case, raw, out, torch):
    """The stored tile against torch's slice of the allocation, byte for byte, and the
    out-of-bounds part zero (padding 'zero') or NaN (padding 'nan')."""
    itemsize = DTYPES[case["dtype"]]
    block = case["block"]
    touched = [min(e, b) for e, b in zip(case["shape"], block)]
    region = raw.as_strided(touched + [itemsize],
                            [s * itemsize for s in case["strides"]] + [1],
                            case["offset"] * itemsize)
    got = out.view(torch.uint8).reshape(block + [itemsize])
    inside = tuple(slice(0, t) for t in touched)
    if not torch.equal(got[inside], region):
        return False
    mask = torch.ones(block, dtype=torch.bool, device=DEVICE)
    mask[inside] = False
    if not bool(mask.any()):
        return True
    if case["padding"] == "zero":
        return bool((got[mask] == 0).all())
    return bool(torch.isnan(out[mask].float()).all())


def _launch(case, torch, allocation=None):
    """Build the descriptor and load one block through it: (outcome, detail, descriptor).
    Outcomes: 'triton-constructor', 'triton-launch', 'driver', 'ok', 'wrong-data' (and
    'error' from _launch_in_subprocess)."""
    raw, base = allocation or _allocate(case, torch)
    try:
        desc = descriptor_module.TensorDescriptor(base, case["shape"], case["strides"],
                                                  case["block"], case["padding"])
    except (AssertionError, TypeError, ValueError) as error:
        return "triton-constructor", f"{type(error).__name__}: {error}", None
    rank = len(case["block"])
    # NOTE: zeroed as bytes: torch has no fill for some of these dtypes (float8_e8m0fnu, ...).
    out = torch.empty(case["block"], dtype=base.dtype, device=DEVICE)
    out.view(torch.uint8).zero_()
    try:
        LOAD_KERNELS[rank][(1,)](desc, out, *case["block"], num_warps=4)
    except RuntimeError as error:
        if "Failed to create tensor map descriptor" in str(error):
            return "driver", str(error).splitlines()[0], desc
        return "triton-launch", f"{type(error).__name__}: {error}"[:300], desc
    except Exception as error:  # noqa: BLE001 - the JIT, compiler and launcher raise many
        return "triton-launch", f"{type(error).__name__}: {error}"[:300], desc
    # NOTE: an error here means the kernel faulted: the CUDA context is gone, so stop.
    torch.cuda.synchronize()
    if not _expected_and_actual_agree(case, raw, out, torch):
        return "wrong-data", "the stored tile differs from torch's slice", desc
    return "ok", "", desc


def _launch_in_subprocess(case):
    """Run _launch for one case in a fresh Python: (outcome, detail); 'error' when it died of
    something other than the compiler's assertion."""
    script = ("import json, sys, torch; sys.path.insert(0, sys.argv[1]); "
              "import test_triton_gpu as t; "
              "outcome, detail, _ = t._launch(json.loads(sys.argv[2]), torch); "
              "print('OUTCOME', json.dumps([outcome, detail]))")
    result = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent),
                             json.dumps(case)], capture_output=True, text=True, timeout=300)
    for line in result.stdout.splitlines():
        if line.startswith("OUTCOME "):
            return tuple(json.loads(line[len("OUTCOME "):]))
    tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
    if result.returncode < 0 and "Assertion" in result.stderr:
        # Killed by the compiler's failed assertion (SIGABRT): Triton's refusal.
        return "triton-launch", f"the compiler aborted (signal {-result.returncode}): {tail}"[:300]
    return "error", f"the process died otherwise (exit {result.returncode}): {tail}"[:300]


def _signature(case):
    return (case["dtype"], tuple(case["block"]))


def test_explain_triton_agrees_with_real_triton_launches():
    torch = pytest.importorskip("torch")
    seed = int(os.environ.get("TMAKIT_TRITON_SEED", "0"))
    count = int(os.environ.get("TMAKIT_TRITON_CASES", "1200"))
    started = time.monotonic()
    cases = [c for c in draw_cases(seed, count) if hasattr(torch, c["dtype"])]
    outcomes = Counter()
    by_rank = Counter()
    mismatches = []
    isolated = {}  # signature -> outcome of its launch in a subprocess
    for index, case in enumerate(cases):
        raw, base = _allocate(case, torch)
        explained = tmakit.explain_triton(base=base, shape=case["shape"],
                                          strides=case["strides"], block_shape=case["block"],
                                          padding=case["padding"])
        if case["dtype"] == "bool":
            try:
                descriptor_module.TensorDescriptor(base, case["shape"], case["strides"],
                                                   case["block"], case["padding"])
            except (AssertionError, TypeError, ValueError) as error:
                outcome, detail = "triton-constructor", f"{type(error).__name__}: {error}"
            else:
                # Triton compiles before it encodes, so the first launch of a signature
                # decides every launch of it.
                key = _signature(case)
                if key not in isolated:
                    isolated[key] = _launch_in_subprocess(case)
                outcome, detail = isolated[key]
        else:
            outcome, detail, desc = _launch(case, torch, (raw, base))
            if desc is not None:
                # The descriptor object itself gets the same verdict as its arguments.
                same = tmakit.explain_triton(desc)
                assert (same.verdict, same.rule) == (explained.verdict, explained.rule), case
        del raw, base
        outcomes[outcome] += 1
        by_rank[(len(case["block"]), outcome)] += 1
        worked = outcome == "ok"
        agree = explained.ok == worked and outcome != "error"
        if outcome.startswith("triton"):
            agree = agree and explained.refused_by == "triton"
        if outcome == "driver":
            agree = agree and explained.refused_by == "driver"
        if outcome == "triton-constructor":
            # The message quotes the assertion Triton raised.
            text = detail.split(": ", 1)[1] if ": " in detail else detail
            text = text.split(": TensorDescriptor(")[0].split(", got")[0]
            agree = agree and text in explained.message
        if not agree:
            mismatches.append((index, case, outcome, detail, str(explained)))
    elapsed = time.monotonic() - started
    print(f"\nexplain_triton vs Triton {triton.__version__} (seed {seed}, {len(cases)} "
          f"descriptors, {elapsed:.0f} s): Triton refused at construction "
          f"{outcomes['triton-constructor']}, Triton refused at launch "
          f"{outcomes['triton-launch']}, driver refused {outcomes['driver']}, launched ok "
          f"{outcomes['ok']}, wrong data {outcomes['wrong-data']}, other failures "
          f"{outcomes['error']}; mismatches {len(mismatches)}")
    print("per rank:", {r: {o: n for (rr, o), n in sorted(by_rank.items()) if rr == r}
                        for r in range(1, 6)})
    for index, case, outcome, detail, said in mismatches[:20]:
        print(f"MISMATCH #{index} {case}: {outcome} ({detail}); explain_triton: {said}")
    assert outcomes["ok"] > 0 and outcomes["driver"] > 0 and outcomes["triton-constructor"] > 0
    assert outcomes["wrong-data"] == 0
    assert not mismatches, f"{len(mismatches)} disagreements (printed above)"
