"""python -m tmakit: where the package's entry points are."""

import sys

from . import __version__

USAGE = f"""tmakit {__version__}: checked, simulated and benchmarked TMA for NVIDIA Hopper.

From Python:  import tmakit; tmakit.check(spec), tmakit.fix(spec), tmakit.describe(spec),
              tmakit.rules(), tmakit.tensor_map(tensor, box), tmakit.simulate(spec, bytes),
              tmakit.explain_triton(desc), and the ops tmakit.gemm_fp8 / transpose /
              stencil3x3 / add / quantize_fp8 (PyTorch)
Benchmark:    python -m tmakit.bench --help
The CLI (tmakit check / rules / simulate / swizzle / bench) is built with the C++ library:
              scripts/build, then build/tools/tmakit --help (README.md)"""


def main(argv=None) -> int:
    """Prints where the entry points are; it runs no command, so any argument but --help is
    refused (exit status 2), not ignored."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args not in (["-h"], ["--help"]):
        print(f"python -m tmakit: runs no command (got {' '.join(args)!r}); the CLI is "
              f"build/tools/tmakit, the benchmark python -m tmakit.bench\n\n{USAGE}",
              file=sys.stderr)
        return 2
    print(USAGE)
    return 0


if __name__ == "__main__":
    from ._entry import run

    sys.exit(run(main, "python -m tmakit"))
