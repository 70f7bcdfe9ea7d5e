"""explain_triton against Triton itself, on the host (needs Triton, no GPU; skipped without
Triton; the last test also needs torch, CPU tensors do).

- The constructor: the random descriptors of test_triton_gpu.py, built by Triton's own
  TensorDescriptor over a stand-in base (an address and a dtype): explain_triton, given the
  same arguments, refuses exactly those Triton refuses, quoting Triton's assertion.
- The compiler: every (dtype, block) kernel signature of that test compiled for sm_90 by
  Triton's own compiler; the box, swizzle and TMA type Triton records for the launcher
  (tensordesc_meta) are those explain_triton derives, the shared memory the kernel needs
  decides the shared-memory refusal, and the compiler's refusals are the ones it names.
- Torch tensors: Triton's constructor and its JIT's type for each torch dtype against the
  verdict on the same tensor.
"""

import subprocess
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")
descriptor_module = pytest.importorskip("triton.tools.tensor_descriptor")
from triton._utils import canonicalize_dtype  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import tmakit  # noqa: E402
from tmakit.triton_descriptors import SM90_MAX_SHARED_BYTES  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import test_triton_gpu as draws  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)
# The device-side TMA type numbers the compiler records (TMAUtilities.cpp's enum).
DEVICE_TMA_TYPES = {0: "UINT8", 1: "UINT16", 2: "UINT32", 3: "INT32", 4: "UINT64", 5: "INT64",
                    6: "FLOAT16", 7: "FLOAT32", 9: "FLOAT64", 10: "BFLOAT16"}
SWIZZLE_MODES = {0: 0, 1: 32, 2: 64, 3: 128}


class StandInDtype:
    """What TensorDescriptor reads of a torch dtype."""

    def __init__(self, name):
        self.name = name
        self.itemsize = draws.DTYPES[name]
        self.is_floating_point = "float" in name

    def __str__(self):
        return f"torch.{self.name}"


class StandInBase:
    def __init__(self, address, dtype):
        self.address = address
        self.dtype = dtype

    def data_ptr(self):
        return self.address


def test_triton_refuses_exactly_the_descriptors_explain_triton_says_it_refuses():
    refused = accepted = 0
    for seed in (0, 1):
        for case in draws.draw_cases(seed, 1500):
            address = (1 << 20) + case["offset"] * draws.DTYPES[case["dtype"]]
            base = StandInBase(address, StandInDtype(case["dtype"]))
            explained = tmakit.explain_triton(
                base=address, dtype=f"torch.{case['dtype']}", shape=case["shape"],
                strides=case["strides"], block_shape=case["block"], padding=case["padding"])
            try:
                descriptor_module.TensorDescriptor(base, case["shape"], case["strides"],
                                                   case["block"], case["padding"])
            except (AssertionError, TypeError, ValueError) as error:
                refused += 1
                assert explained.refused_by == "triton", (case, error, explained)
                assert int(explained.rule[2:]) <= 8, (case, error, explained)
                assert str(error).split(": TensorDescriptor(")[0] in explained.message, \
                    (case, error, explained)
                continue
            accepted += 1
            # Built: whatever explain_triton says comes from the launch (TT9 on) or the driver.
            assert explained.ok or explained.refused_by == "driver" or \
                int(explained.rule[2:]) >= 9, (case, explained)
    assert refused > 500 and accepted > 500


def _compile(dtype, block):
    rank = len(block)
    signature = {"desc": f"tensordesc<{dtype}[{', '.join(map(str, block))}]>",
                 "out": f"*{dtype}"}
    constants = {}
    for i, b in enumerate(block):
        signature[f"B{i}"] = "constexpr"
        constants[f"B{i}"] = b
    source = ASTSource(draws.LOAD_KERNELS[rank], signature=signature, constexprs=constants)
    return triton.compile(source, target=SM90, options={"num_warps": 4})


def _signatures():
    for name in draws.DTYPES:
        if name in ("bool", "float8_e8m0fnu", "float4_e2m1fn_x2"):
            continue
        for blocks in draws.BLOCKS.values():
            for block in blocks:
                if all(b & (b - 1) == 0 for b in block) and \
                        eval("*".join(map(str, block))) <= 1 << 20:
                    yield name, block


@pytest.mark.parametrize("name, block", list(_signatures()),
                         ids=lambda v: str(v).replace(" ", ""))
def test_the_box_and_swizzle_are_what_tritons_compiler_records(name, block):
    dtype = canonicalize_dtype(name)
    itemsize = draws.DTYPES[name]
    # A tensor twice the block in every dimension, rows padded to 16 bytes: one Triton builds.
    shape = [max(b, 1) * 2 for b in block]
    align = max(16 // itemsize, 1)
    strides, step = [], 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= -(-extent // align) * align if step == 1 else extent
    explained = tmakit.explain_triton(base=1 << 20, dtype=f"torch.{name}", shape=shape,
                                      strides=strides, block_shape=list(block))
    try:
        kernel = _compile(dtype, block)
    except Exception as error:  # noqa: BLE001 - the compiler's own refusal
        assert explained.refused_by == "triton" and explained.rule in ("TT9", "TT13"), \
            (error, explained)
        if explained.rule == "TT9":
            assert "not supported in this architecture" in str(error)
        return
    meta = kernel.metadata.tensordesc_meta[0]
    if kernel.metadata.shared > SM90_MAX_SHARED_BYTES:
        assert explained.rule == "TT10", (kernel.metadata.shared, explained)
        return
    assert explained.rule != "TT10", kernel.metadata.shared
    assert explained.box == tuple(meta["block_size"]), (meta, explained)
    assert explained.swizzle_bytes == SWIZZLE_MODES[meta["swizzle"]], (meta, explained)
    assert explained.spec["dataType"] == DEVICE_TMA_TYPES[meta["elem_type"]], meta
    assert meta["elem_size"] == itemsize and not meta["fp4_padded"]
    # The tensor map is the driver's to judge: only a too-short inner row breaks a rule here.
    assert explained.ok or explained.rule == "T7", explained


def test_a_bool_descriptor_aborts_tritons_compiler():
    # Run where an abort cannot take the test run with it.
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import test_triton as t; "
              "t._compile('u1', (16, 64)); print('compiled')")
    result = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "compiled" not in result.stdout
    assert "Assertion" in result.stderr
    explained = tmakit.explain_triton(base=1 << 20, dtype="bool", shape=[64, 64],
                                      strides=[64, 1], block_shape=[16, 64])
    assert explained.rule == "TT9" and "aborts" in explained.message


def test_torch_tensors_meet_the_same_checks_as_their_arguments():
    # CPU tensors stand for CUDA ones here: the constructor and the JIT's types read only the
    # address and the dtype.
    torch = pytest.importorskip("torch")
    from triton.runtime.jit import mangle_type
    checked = 0
    for name in draws.DTYPES:
        if not hasattr(torch, name):
            continue
        size = draws.DTYPES[name]
        storage = torch.empty((64 * 80 + 64) * size, dtype=torch.uint8).view(getattr(torch, name))
        start = (-storage.data_ptr()) % 16 // storage.element_size()
        x = storage[start:start + 64 * 80].view(64, 80)
        for block, padding, view in [((16, 64), "zero", x), ((16, 64), "nan", x),
                                     ((16, 48), "zero", x), ((16, 16), "zero", x[:, 1:])]:
            explained = tmakit.explain_triton(base=view, block_shape=list(block),
                                              padding=padding)
            try:
                desc = descriptor_module.TensorDescriptor.from_tensor(view, list(block), padding)
            except (AssertionError, TypeError, ValueError) as error:
                assert explained.refused_by == "triton" and int(explained.rule[2:]) <= 8, \
                    (name, block, padding, error, explained)
                continue
            same = tmakit.explain_triton(desc)
            assert (same.verdict, same.rule, same.box) == \
                (explained.verdict, explained.rule, explained.box)
            try:
                signature = mangle_type(desc)
            except KeyError:
                assert explained.rule == "TT9" and "no Triton type" in explained.message, \
                    (name, explained)
                checked += 1
                continue
            if signature.startswith("tensordesc<u1["):
                assert explained.rule == "TT9" and "aborts" in explained.message
            else:
                assert signature == f"tensordesc<{canonicalize_dtype(name)}[{block[0]}, " \
                    f"{block[1]}]>"
            checked += 1
    assert checked >= 25  # built descriptors whose JIT signature was compared
