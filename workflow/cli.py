"""What every preprocessing CLI shares: option types, ``--workers``/``--force``, and error handling."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from workflow.errors import OUTPUT_SIDE_ADVICE, UserError, cannot_write


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """--workers and --force, identical in every preprocessing CLI."""
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=available_cores(),
        help="worker processes (default: the usable cores, here %(default)s)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="redo every stage even if its completion marker says it is up to date "
        "(without it, a rerun resumes after the last completed stage)",
    )


def run_cli(main: Callable[[], None]) -> None:
    """Run ``main``: user errors become ``error: ...`` (exit 2), and so do errors only writing can cause
    (disk full, file-size limit, read-only file system) wherever they happen; Ctrl-C exits 130 with a
    resume hint. Any other exception is a bug and keeps its traceback."""
    try:
        main()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:
        if exc.errno not in OUTPUT_SIDE_ADVICE:
            raise
        where = exc.filename or "an output file"
        print(f"error: {cannot_write(where, exc)} (completed stages are kept)", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("\ninterrupted: completed stages are kept, rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
