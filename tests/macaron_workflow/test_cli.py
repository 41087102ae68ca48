"""How the preprocessing CLIs end (macaron_workflow.cli.run_cli): one ``error:`` line and exit 2 for what the
user
can fix, a traceback only for bugs."""

from __future__ import annotations

import errno
import os

import pytest

from macaron_workflow.cli import run_cli
from macaron_workflow.errors import UserError


def _raise(exc: BaseException) -> None:
    raise exc


def test_user_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run_cli(lambda: _raise(UserError("cannot read RAW/train.en: Permission denied (EACCES)")))
    assert caught.value.code == 2
    assert capsys.readouterr().err == "error: cannot read RAW/train.en: Permission denied (EACCES)\n"


WRITE_ONLY_ERRNOS = [errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS]


@pytest.mark.parametrize("code", WRITE_ONLY_ERRNOS, ids=errno.errorcode.get)
def test_errors_only_writing_causes_are_reported_without_traceback(
    code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    error = OSError(code, os.strerror(code), "OUT/tok/.train.en.tmp-1")
    with pytest.raises(SystemExit) as caught:
        run_cli(lambda: _raise(error))
    assert caught.value.code == 2
    message = capsys.readouterr().err
    name = errno.errorcode[code]
    assert message.startswith(f"error: cannot write OUT/tok/.train.en.tmp-1: {os.strerror(code)} ({name}); ")
    assert message.endswith("and rerun (completed stages are kept)\n") and "delete" not in message


def test_a_write_error_without_a_file_name_still_says_what_failed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_cli(lambda: _raise(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    assert capsys.readouterr().err.startswith("error: cannot write an output file: No space left on device")


def test_other_os_errors_keep_their_traceback() -> None:
    with pytest.raises(FileNotFoundError):  # a missing file the code should have checked is a bug
        run_cli(lambda: _raise(FileNotFoundError(errno.ENOENT, "No such file or directory", "x")))


def test_help_texts_lose_their_rst_markup() -> None:
    from macaron_workflow.cli import plain

    text = "see :func:`~macaron_workflow.cli.run_cli`, :mod:`.suite` and ``--help`` (:class:`a.B`)"
    assert plain(text) == "see run_cli, suite and --help (a.B)"


def test_every_default_is_shown_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Appended where the help does not say it; kept where it does (``%(default)s``, ``[X]``, in words)."""
    from macaron_workflow.cli import ArgumentParser

    parser = ArgumentParser(prog="tool")
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps")
    parser.add_argument("--bare", default="x")
    parser.add_argument("--said", type=int, default=8, help="the throttle (default 8)")
    parser.add_argument("--table", default="en", help="source language [%(default)s]")
    parser.add_argument("--parts", nargs="+", default=["a", "b"], help="which parts")
    parser.add_argument("--off", action="store_true", help="a switch")
    parser.add_argument("--none", help="nothing to show")
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "optimizer steps (default: 200)" in out and "--bare BARE default: x" in out
    assert "the throttle (default 8) --table" in out and "source language [en] --parts" in out
    assert "which parts (default: a b)" in out and "a switch --none NONE nothing to show" in out
