"""What every command shares: option types, the parser (its usage names the command as the user typed it, its
help shows every default and no reStructuredText markup, its usage errors follow the error rule), deprecated
spellings of options, the quieting of libraries' warnings and INFO lines (:func:`quiet_loggers`), and the one
wrapper that ends every CLI, pipeline and tool by the error rule of :mod:`macaron_workflow.errors`
(:func:`run_cli`). The option tables built on these are :mod:`macaron_workflow.options`."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable
from functools import cache
from typing import Any, NoReturn

from macaron_workflow.errors import INTERRUPTED_EXIT, USAGE_EXIT, ReportedError, storage_failure
from macaron_workflow.files import CREATED_DIRS, remove_empty_created


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def quiet_loggers(*names: str) -> None:
    """No warnings at all, and nothing below WARNING from the loggers ``names`` (fairseq's INFO lines while a
    command builds tasks and models itself)."""
    warnings.simplefilter("ignore")
    for name in names:
        logging.getLogger(name).setLevel(logging.WARNING)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


class _DeprecatedSpelling(argparse.Action):
    """An old spelling of an option: does what the new one does, after a one-line note on stderr."""

    def __init__(self, option_strings: list[str], dest: str, new: argparse.Action, **_: object) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=new.nargs,
            type=new.type,
            choices=new.choices,
            metavar=new.metavar,
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,
        )
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


#: rST roles (``:func:`~a.b```) and inline literals (````x````) in docstrings that become help texts
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?\.?([^`<]*?)(?:\s*<[^`]*>)?`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def plain(text: str) -> str:
    """``text`` without reStructuredText markup, as a terminal shows it: ``:func:`~a.b.c``` -> ``c``,
    ``:mod:`.suite``` -> ``suite``, a double-backquoted literal -> the literal."""

    def role(match: re.Match[str]) -> str:
        target = match.group(1)
        return target.rsplit(".", 1)[-1] if match.group(0).split("`", 1)[1].startswith("~") else target

    return _LITERAL.sub(r"\1", _ROLE.sub(role, text))


def shown_default(value: Any) -> str:
    """How --help shows a default (a list as its words)."""
    if isinstance(value, list | tuple):
        return " ".join(str(item) for item in value)
    return str(value) if value != "" else "''"


def shows_default(action: argparse.Action) -> bool:
    """Whether --help must show this option's default: it has one (not None), it takes a value, and its help
    is shown."""
    return (
        action.default is not None
        and action.default is not argparse.SUPPRESS
        and action.default not in ([], ())
        and action.help is not argparse.SUPPRESS
        and action.nargs != 0  # switches (store_true, ...): their default is their absence
        and bool(action.option_strings or action.nargs in ("?", "*"))
    )


_NO_HELP = "\x00"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The one help layout: the description and epilog as written (without rST markup), and every option's
    default shown (``(default: X)`` appended unless the help already says it with ``%(default)s``, ``default``
    or a bracketed ``[X]``)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return super()._fill_text(plain(text), width, indent)

    def _expand_help(self, action: argparse.Action) -> str:
        text = plain(super()._expand_help(action)).replace(_NO_HELP, "").strip()
        if not shows_default(action):
            return text
        value = shown_default(action.default)
        if value in text and ("default" in text or f"[{value}]" in text):
            return text
        return f"{text} (default: {value})" if text else f"default: {value}"

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is not None or not shows_default(action):
            return super()._format_action(action)
        action.help = _NO_HELP  # an option without help still shows its default
        try:
            return super()._format_action(action)
        finally:
            action.help = None


#: the layouts argparse gives by default or on request that :class:`ArgumentParser` replaces by its own
_ARGPARSE_LAYOUTS = (None, argparse.HelpFormatter, argparse.RawDescriptionHelpFormatter)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors follow the error rule: one line ``PROG: error: ... (see
    --help)`` and exit 2 (argparse itself prints the whole usage first); a ``prog`` of ``python -m MODULE``
    becomes the console script's name when that is what runs (:func:`typed_name`), and its help is laid out
    by :class:`HelpFormatter` (also when argparse's default or raw-description formatter is asked for)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("prog"):
            kwargs["prog"] = typed_name(kwargs["prog"])
        if kwargs.get("formatter_class") in _ARGPARSE_LAYOUTS:
            kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        report(self.prog, "error", f"{message} (see --help)")
        sys.exit(USAGE_EXIT)


@cache
def console_script_module(name: str) -> str | None:
    """The module the installed console script ``name`` runs (``macaron_tools.average_checkpoints``), or
    None when ``name`` is not one."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="console_scripts", name=name):
        return entry.module
    return None


def program_name(module: str, script: str | None = None) -> str:
    """How the user called this command, for its usage and messages: the console script (``macaron-export``)
    when that is what runs — ``sys.argv[0]`` is ``script``, or, without ``script``, an installed console
    script whose entry point is in ``module`` (or its ``__main__``) — else ``python -m module``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if script is not None:
        return script if name == script else f"python -m {module}"
    if name and not name.endswith(".py") and console_script_module(name) in (module, f"{module}.__main__"):
        return name
    return f"python -m {module}"


def typed_name(prog: str) -> str:
    """``prog`` as the user typed it: ``python -m MODULE`` becomes the console script's name when that is what
    runs (:func:`program_name`); anything else is kept."""
    match = re.fullmatch(r"python -m ([\w.]+)", prog)
    return program_name(match.group(1)) if match else prog


def report(prog: str | None, label: str, message: object) -> None:
    """``PROG: label: message`` on stderr, as one line (a message's own line breaks become ``; ``)."""
    text = ""
    for line in (line.strip() for line in str(message).strip().splitlines()):
        if line:
            text += ("" if not text else " " if text.endswith(":") else "; ") + line
    prog = typed_name(prog) if prog else prog
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
