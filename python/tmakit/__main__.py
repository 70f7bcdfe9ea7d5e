"""python -m tmakit: where the package's entry points are."""

import sys

from . import __version__

USAGE = f"""tmakit {__version__}: checked, simulated and benchmarked TMA for NVIDIA Hopper.

From Python:  import tmakit; tmakit.check(spec), tmakit.fix(spec), tmakit.rules(),
              tmakit.simulate(spec, bytes), tmakit.explain_triton(desc), and the ops
              tmakit.gemm_fp8 / transpose / stencil3x3 / add / quantize_fp8 (PyTorch)
Benchmark:    python -m tmakit.bench --help
The CLI (tmakit check / rules / simulate / swizzle / bench) is built with the C++ library:
              scripts/build, then build/tools/tmakit --help (README.md)"""


def main() -> int:
    print(USAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
