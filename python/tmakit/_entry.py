"""The command-line entry points' exit: output that cannot be written (a full disk, a closed
pipe, a closed stdout) is exit status 2 and one line on stderr, not a traceback or a 0."""

import os
import sys


def run(main, prog: str) -> int:
    """``main()``'s exit status, or 2 where what it printed could not be written."""
    if sys.stdout is None:  # (started with stdout closed: `>&-`)
        print(f"{prog}: stdout is closed, so nothing can be printed", file=sys.stderr)
        return 2
    try:
        try:
            status = main()
        except SystemExit:
            # NOTE: argparse's --help and usage errors exit here: what --help printed is
            # flushed (and its failure caught) before the status goes out
            sys.stdout.flush()
            raise
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # NOTE: the reader left (`| head`): nothing more can be said on stdout, and the
        # interpreter's own flush at exit must not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 2
    except OSError as error:
        if error.filename is None:  # (a file named by an option names itself: raised as is)
            print(f"{prog}: cannot write the output: {error}", file=sys.stderr)
            return 2
        raise
