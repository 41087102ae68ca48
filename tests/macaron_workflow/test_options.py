"""Option tables (macaron_workflow.options): one row gives the argparse option and the environment variable a
shell wrapper maps to it; deprecated spellings keep working with a one-line note."""

from __future__ import annotations

from pathlib import Path

import pytest

from macaron_workflow.cli import ArgumentParser, add_deprecated_alias
from macaron_workflow.errors import UserError
from macaron_workflow.options import (
    FROM_ENV,
    Option,
    add_options,
    add_run_options,
    environment_arguments,
    environment_table,
    with_environment,
)

TABLE = (
    Option("--workdir", "where", env="WORKDIR", type=Path, required=True),
    Option("--sizes", "list", env="SIZES", kind="list", type=int, default=[]),
    Option("--rate", "a rate", env="RATE", type=float, default=0.5),
    Option("--small", "small", env="SMALL", kind="switch"),
    Option("--quiet", "no env", kind="switch"),
    Option("--bpe-vocab-size", "pieces", type=int, default=8, deprecated=("--vocab-size",)),
)


def parser() -> ArgumentParser:
    result = ArgumentParser(prog="prog")
    add_options(result, TABLE)
    return result


def test_the_table_gives_the_parser_and_the_help_names_the_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parser().parse_args(["--workdir", "w", "--sizes", "1", "2", "--small"])
    assert (args.workdir, args.sizes, args.rate, args.small, args.quiet) == (
        Path("w"),
        [1, 2],
        0.5,
        True,
        False,
    )
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "where [env WORKDIR]" in help_text and "no env" in help_text and "[env QUIET]" not in help_text
    assert "--vocab-size" not in help_text  # the deprecated spelling is hidden
    assert environment_table(TABLE).splitlines() == [
        "  WORKDIR  --workdir",
        "  SIZES    --sizes",
        "  RATE     --rate",
        "  SMALL    --small",
    ]


def test_environment_variables_become_the_same_flags() -> None:
    environ = {"WORKDIR": "w", "SIZES": "16 32", "RATE": "", "SMALL": "1", "QUIET": "1"}
    assert environment_arguments(TABLE, environ) == ["--workdir", "w", "--sizes", "16", "32", "--small"]
    assert environment_arguments(TABLE, {"SMALL": "0"}, defaults={"WORKDIR": "d"}) == ["--workdir", "d"]
    with pytest.raises(UserError, match=r"SMALL=yes: expected 1 or 0 \(the option --small\)"):
        environment_arguments(TABLE, {"SMALL": "yes"})


def test_from_env_puts_the_variables_before_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKDIR", "from-env")
    monkeypatch.setenv("RATE", "0.1")
    assert with_environment(["--rate", "2"], TABLE) == ["--rate", "2"]  # without --from-env: untouched
    argv = with_environment([FROM_ENV, "--rate", "2", "--", FROM_ENV], TABLE)
    assert argv == ["--workdir", "from-env", "--rate", "0.1", "--rate", "2", "--", FROM_ENV]
    args = parser().parse_args(argv[: argv.index("--")])
    assert args.workdir == Path("from-env") and args.rate == 2.0  # the command line wins


def test_a_deprecated_spelling_works_with_a_one_line_note(capsys: pytest.CaptureFixture[str]) -> None:
    args = parser().parse_args(["--workdir", "w", "--vocab-size", "5"])
    assert args.bpe_vocab_size == 5
    assert (
        capsys.readouterr().err
        == "prog: note: --vocab-size is deprecated, use --bpe-vocab-size (it will be removed)\n"
    )
    assert parser().parse_args(["--workdir", "w"]).bpe_vocab_size == 8  # the alias does not reset the default


def test_a_required_option_is_given_by_its_deprecated_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    def build() -> ArgumentParser:
        result = ArgumentParser(prog="prog")
        result.add_argument("--dest", type=Path, required=True)
        add_deprecated_alias(result, "--out", "--dest")
        add_run_options(result)
        add_deprecated_alias(result, "--redo", "--force")
        return result

    args = build().parse_args(["--out", "d", "--redo"])
    assert args.dest == Path("d") and args.force
    assert capsys.readouterr().err.count("is deprecated") == 2
    with pytest.raises(SystemExit) as exc:
        build().parse_args([])
    assert exc.value.code == 2 and "--dest is required" in capsys.readouterr().err


def test_workers_is_checked_the_same_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    result = ArgumentParser(prog="prog")
    add_run_options(result)
    assert result.parse_args(["--workers", "3"]).workers == 3
    with pytest.raises(SystemExit):
        result.parse_args(["--workers", "0"])
    assert "argument --workers: must be >= 1, got 0" in capsys.readouterr().err
