"""Run many commands' ``--help`` in this one process and describe what each printed (for
``tests/test_cli_convention.py``; one interpreter instead of one per command: torch, fairseq and DeepSpeed are
imported once).

    python cli_helps.py OUT.json ENTRY...

An ENTRY is ``script:NAME`` (the installed console script NAME, called as its file in the environment's
``bin`` would call it: ``sys.argv[0]`` is that file) or ``module:NAME`` (``python -m NAME``:
``sys.argv[0]`` is the module's file). For each, OUT.json gets its exit status, what it printed, and, for
every parser that printed its help, each option's help entry exactly as printed and its default, and every
option string the parser (with its sub-commands) accepts."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import runpy
import sys
import warnings
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

printed: list[argparse.ArgumentParser] = []
original_print_help = argparse.ArgumentParser.print_help


def recording_print_help(self: argparse.ArgumentParser, file: Any = None) -> None:
    printed.append(self)
    original_print_help(self, file)


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    found = []
    for action in parser._actions:
        found += action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += option_strings(sub)
    return found


def describe(parser: argparse.ArgumentParser) -> dict[str, Any]:
    options = []
    for action in parser._actions:
        if action.help is argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        formatter = parser._get_formatter()
        default = action.default
        shown = None if default is argparse.SUPPRESS else default
        if not isinstance(shown, str | int | float | bool | list | tuple | type(None)):
            shown = str(shown)
        options.append(
            {
                "flags": action.option_strings or [action.dest],
                "nargs": action.nargs
                if isinstance(action.nargs, int | str | type(None))
                else str(action.nargs),
                "default": list(shown) if isinstance(shown, tuple) else shown,
                "entry": formatter._format_action(action),
            }
        )
    return {"prog": parser.prog, "options": options, "accepted": option_strings(parser)}


def run(entry: str) -> dict[str, Any]:
    kind, name = entry.split(":", 1)
    printed.clear()
    out, err = io.StringIO(), io.StringIO()
    status: object = 0
    saved = sys.argv
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                if kind == "script":
                    (point,) = entry_points(group="console_scripts", name=name)
                    sys.argv = [str(Path(sys.executable).parent / name), "--help"]
                    point.load()()
                else:
                    sys.argv = [name, "--help"]  # runpy puts the module's file here, as python -m does
                    runpy.run_module(name, run_name="__main__", alter_sys=True)
            except SystemExit as exit:
                status = exit.code
            except BaseException as error:  # reported to the test
                status = f"{type(error).__name__}: {error}"
    finally:
        sys.argv = saved
    status = 0 if status is None else status
    return {
        "entry": entry,
        "status": status,
        "stdout": out.getvalue(),
        "stderr": err.getvalue()[-3000:],
        "parsers": [describe(parser) for parser in printed],
    }


def main() -> None:
    argparse.ArgumentParser.print_help = recording_print_help  # type: ignore[method-assign]
    out, *entries = sys.argv[1:]
    Path(out).write_text(json.dumps([run(entry) for entry in entries], indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
