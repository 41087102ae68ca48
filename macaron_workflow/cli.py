"""What every command shares: option types, the parser whose usage errors follow the error rule, deprecated
spellings of options, and the one wrapper that ends every CLI, pipeline and tool by the error rule of
:mod:`macaron_workflow.errors` (:func:`run_cli`). The option tables built on these are
:mod:`macaron_workflow.options`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from macaron_workflow.errors import (
    INTERRUPTED_EXIT,
    USAGE_EXIT,
    ReportedError,
    storage_failure,
)
from macaron_workflow.files import CREATED_DIRS, remove_empty_created


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


class _DeprecatedSpelling(argparse.Action):
    """An old spelling of an option: does what the new one does, after a one-line note on stderr."""

    def __init__(self, option_strings: list[str], dest: str, new: argparse.Action, **_: object) -> None:
        super().__init__(
            option_strings, dest, nargs=new.nargs, type=new.type, choices=new.choices, metavar=new.metavar,
            default=argparse.SUPPRESS, help=argparse.SUPPRESS,
        )  # fmt: skip
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        spelling = self.new.option_strings[-1]
        report(parser.prog, "note", f"{option_string} is deprecated, use {spelling} (it will be removed)")
        self.new(parser, namespace, values, spelling)


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept ``old`` as a deprecated spelling of the already added option ``new`` (hidden from --help,
    same destination, a one-line note each time it is used), so that users' scripts keep working."""
    action = parser._option_string_actions[new]
    if not action.required:
        parser.add_argument(old, action=_DeprecatedSpelling, new=action)
        return
    # a required option given by its old spelling is given: both spellings in one required group
    action.required = False
    group = parser.add_mutually_exclusive_group(required=True)
    group._group_actions.append(action)
    group.add_argument(old, action=_DeprecatedSpelling, new=action)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors follow the error rule: one line ``PROG: error: ... (see
    --help)`` and exit 2 (argparse itself prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        report(self.prog, "error", f"{message} (see --help)")
        sys.exit(USAGE_EXIT)


def program_name(module: str, script: str | None = None) -> str:
    """How the user called this command, for its messages: the console script ``script``
    (``macaron-export``) when that is what runs, else ``python -m module``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return script if script is not None and name == script else f"python -m {module}"


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
    CREATED_DIRS.clear()  # this command's own
    try:
        status = main()
    except ReportedError as exc:
        remove_empty_created()  # an output directory this run created and wrote nothing into
        report(prog, exc.label, exc)
        sys.exit(exc.exit_status)
    except (OSError, RuntimeError) as exc:
        # errors only writing can cause, wherever they happen: an OSError of a full disk (...), or torch's
        # zip writer failing on one (a RuntimeError, DESIGN.md section 8)
        where = getattr(exc, "filename", None) or "an output file"
        error = storage_failure(where, exc)
        if error is None:
            raise
        remove_empty_created()
        report(prog, "error", f"{error} (completed stages are kept)")
        sys.exit(USAGE_EXIT)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        report(prog, "interrupted", "completed stages are kept, rerun the same command to resume")
        sys.exit(INTERRUPTED_EXIT)
    if isinstance(status, int) and not isinstance(status, bool) and status:
        sys.exit(status)
