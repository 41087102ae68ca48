"""Option tables: a command's options written once, as data, from which both its argparse parser and its
shell wrapper's environment mapping are generated.

A pipeline lists its options as :class:`Option` rows (flag, type, default, help, environment variable);
:func:`add_options` adds them to a parser, and :func:`environment_arguments` turns the environment variables
of the rows into the same command-line flags, so that ``bash pipelines/NAME.sh`` only runs ``python -m
pipelines.NAME --from-env "$@"`` (:func:`with_environment`) instead of re-spelling every option. A
row's ``deprecated`` spellings keep working with a one-line note
(:func:`macaron_workflow.cli.add_deprecated_alias`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from macaron_workflow.cli import add_deprecated_alias, available_cores, positive_int
from macaron_workflow.errors import UserError

FROM_ENV = "--from-env"
"""The flag a shell wrapper passes: read the options of the table from their environment variables too."""

Kind = Literal["value", "switch", "list"]


@dataclass(frozen=True)
class Option:
    """One option of a command: ``--flag VALUE`` (``kind="value"``), ``--flag`` (``"switch"``: its
    environment variable is ``1`` or ``0``) or ``--flag V1 V2 ...`` (``"list"``: the environment variable's
    words)."""

    flag: str
    help: str
    env: str | None = None
    type: Callable[[str], Any] | None = None
    default: Any = None
    kind: Kind = "value"
    required: bool = False
    choices: Sequence[Any] | None = None
    metavar: str | None = None
    deprecated: tuple[str, ...] = ()
    """Old spellings, still accepted with a one-line deprecation note."""

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def with_env(self, env: str) -> Option:
        return replace(self, env=env)


WORKERS = Option(
    "--workers",
    "worker processes (default: the usable cores, here %(default)s)",
    type=positive_int,
    default=available_cores(),
)
FORCE = Option(
    "--force",
    "redo every stage even if its completion marker says it is up to date (without it, a rerun resumes after "
    "the last completed stage)",
    kind="switch",
)
RUN_OPTIONS = (WORKERS, FORCE)
"""``--workers`` and ``--force``: the same in every command that has them (pipelines replace the help)."""


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """--workers and --force, identical in every command that has them (:data:`RUN_OPTIONS`)."""
    add_options(parser, RUN_OPTIONS)


SKIP_INSTALL = Option(
    "--skip-install",
    "the .sh wrapper does not run scripts/install.sh first (python -m never installs)",
    env="SKIP_INSTALL",
    kind="switch",
)
"""Read by the shell wrappers (before any Python of the project runs); accepted by the pipelines."""


def add_options(parser: argparse.ArgumentParser, options: Iterable[Option]) -> None:
    """Add every row to ``parser`` (its help names its environment variable, if it has one)."""
    for option in options:
        env = f" [env {option.env}]" if option.env else ""
        kwargs: dict[str, Any] = {"help": option.help + env}
        if option.kind == "switch":
            kwargs["action"] = "store_true"
        else:
            kwargs.update(type=option.type, default=option.default, metavar=option.metavar)
            if option.choices is not None:
                kwargs["choices"] = option.choices
            if option.kind == "list":
                kwargs["nargs"] = "+"
            if option.required:
                kwargs["required"] = True
        parser.add_argument(option.flag, **kwargs)
        for old in option.deprecated:
            add_deprecated_alias(parser, old, option.flag)


def environment_arguments(
    options: Iterable[Option], environ: Mapping[str, str] | None = None, defaults: Mapping[str, str] = {}
) -> list[str]:
    """The flags that the rows' environment variables stand for (unset or empty: none; ``defaults`` fill
    unset variables). A switch's variable must be ``1`` or ``0``."""
    environ = os.environ if environ is None else environ
    argv: list[str] = []
    for option in options:
        if option.env is None:
            continue
        value = environ.get(option.env) or defaults.get(option.env, "")
        if not value:
            continue
        if option.kind == "switch":
            if value not in ("0", "1"):
                raise UserError(f"{option.env}={value}: expected 1 or 0 (the option {option.flag})")
            argv += [option.flag] if value == "1" else []
        elif option.kind == "list":
            argv += [option.flag, *value.split()]
        else:
            argv += [option.flag, value]
    return argv


def with_environment(
    argv: Sequence[str], options: Iterable[Option], defaults: Mapping[str, str] = {}
) -> list[str]:
    """``argv`` itself, or, when it holds :data:`FROM_ENV` (before a ``--``), ``argv`` without it preceded
    by the flags of the environment variables (so that flags given on the command line win)."""
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    if FROM_ENV not in argv[:split]:
        return argv
    argv.remove(FROM_ENV)
    return environment_arguments(options, defaults=defaults) + argv


def environment_table(options: Iterable[Option]) -> str:
    """``NAME  --flag`` lines: the environment variables a wrapper reads (for --help epilogues)."""
    rows = [(option.env, option.flag) for option in options if option.env]
    width = max((len(env) for env, _ in rows), default=0)
    return "\n".join(f"  {env:<{width}}  {flag}" for env, flag in rows)
