"""What every command shares: option types, ``--workers``/``--force`` (preprocessing), and the one wrapper
that ends every CLI, pipeline and tool by the error rule of :mod:`macaron_workflow.errors`
(:func:`run_cli`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from macaron_workflow.errors import (
    INTERRUPTED_EXIT,
    OUTPUT_SIDE_ADVICE,
    USAGE_EXIT,
    ReportedError,
    cannot_write,
)


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


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors follow the error rule: one line ``PROG: error: ... (see
    --help)`` and exit 2 (argparse itself prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        report(self.prog, "error", f"{message} (see --help)")
        sys.exit(USAGE_EXIT)


def report(prog: str | None, label: str, message: object) -> None:
    """``PROG: label: message`` on stderr, as one line (a message's own line breaks become ``; ``)."""
    text = ""
    for line in (line.strip() for line in str(message).strip().splitlines()):
        if line:
            text += ("" if not text else " " if text.endswith(":") else "; ") + line
    print(f"{prog}: {label}: {text}" if prog else f"{label}: {text}", file=sys.stderr)


def run_cli(main: Callable[[], object], prog: str | None = None) -> None:
    """Run ``main`` by the error rule (:mod:`macaron_workflow.errors`): a :class:`ReportedError` is one line
    ``PROG: error: ...`` and its exit status (2 for a :class:`UserError`, 1 for an internal failure), and so
    are errors only writing can cause (disk full, file-size limit, read-only file system: exit 2) wherever
    they happen; Ctrl-C exits 130 with a resume hint. Any other exception is a bug and keeps its traceback
    (exit 1). ``main`` returning an int exits with it (0 or None: success)."""
    try:
        status = main()
    except ReportedError as exc:
        report(prog, exc.label, exc)
        sys.exit(exc.exit_status)
    except OSError as exc:
        if exc.errno not in OUTPUT_SIDE_ADVICE:
            raise
        where = exc.filename or "an output file"
        report(prog, "error", f"{cannot_write(where, exc)} (completed stages are kept)")
        sys.exit(USAGE_EXIT)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        report(prog, "interrupted", "completed stages are kept, rerun the same command to resume")
        sys.exit(INTERRUPTED_EXIT)
    if isinstance(status, int) and not isinstance(status, bool) and status:
        sys.exit(status)
