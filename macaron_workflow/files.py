"""Line-oriented file access shared by every stage.

A *line* is what ``fairseq-preprocess``, sentencepiece and sacreBLEU see as a line: bytes up to ``\\n``.
Files are therefore read in binary mode and split on ``\\n`` only (never with ``str.splitlines``, which
also splits on U+2028, U+0085, ...). A final line without a trailing newline still counts as a line.

Text enters the project through these functions, so they are where its edge cases are handled once:

* a UTF-8 byte-order mark at the start of a file (Windows editors, GLUE's MRPC files) is not text: it is
  dropped by :func:`iter_lines` and :func:`open_text_input` (otherwise it sticks to the first token);
* an input that cannot be read (permission denied, a directory where a file is expected) is a
  :class:`~macaron_workflow.errors.UserError` naming it (:func:`require_files`, :func:`open_input`);
* an output that cannot be written (disk full, file-size limit) is a ``UserError`` naming the file being
  written and the errno (:class:`OutputFile`), never mistaken for a bad input.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, TextIO

from macaron_workflow.errors import UserError, cannot_read, cannot_write, os_error_reason

_BLOCK_SIZE = 1 << 20
UTF8_BOM = b"\xef\xbb\xbf"
"""The UTF-8 encoding of U+FEFF, which some editors put at the start of a file."""


def without_bom(first_line: bytes) -> bytes:
    """``first_line`` without a leading UTF-8 byte-order mark (for the first line of a file only)."""
    return first_line[len(UTF8_BOM) :] if first_line.startswith(UTF8_BOM) else first_line


def open_input(path: Path) -> BinaryIO:
    """``open(path, "rb")``; an unreadable path (permission, a directory, ...) is a ``UserError``
    naming it."""
    try:
        return open(path, "rb")
    except OSError as exc:
        raise cannot_read(path, exc) from exc


def open_text_input(path: Path) -> TextIO:
    """``path`` as UTF-8 text for ``csv``-style readers (``newline=""``), without a byte-order mark;
    unreadable paths are a ``UserError`` naming them."""
    try:
        return open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise cannot_read(path, exc) from exc


class OutputFile:
    """A binary file written from scratch whose write errors (disk full, file-size limit, permission) are
    a ``UserError`` naming it and the errno, so that callers can tell them apart from input errors."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self._handle = open(self.path, "wb")
        except OSError as exc:
            raise cannot_write(self.path, exc) from exc

    def write(self, data: bytes) -> None:
        try:
            self._handle.write(data)
        except OSError as exc:
            raise cannot_write(self.path, exc) from exc

    def close(self) -> None:
        """Flush and close (a full disk often shows here, when the last buffered block is written)."""
        try:
            self._handle.close()
        except OSError as exc:
            raise cannot_write(self.path, exc) from exc

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
            return
        try:  # the error already on its way is the one to report; closing is only cleanup
            self._handle.close()
        except OSError:
            pass


def count_lines(path: Path) -> int:
    """Number of lines of ``path`` (a non-empty last line without ``\\n`` counts)."""
    count = 0
    last = b"\n"
    with open_input(path) as handle:
        try:
            while block := handle.read(_BLOCK_SIZE):
                count += block.count(b"\n")
                last = block[-1:]
        except OSError as exc:
            raise cannot_read(path, exc) from exc
    return count + (0 if last == b"\n" else 1)


def unreadable_reason(path: Path) -> str | None:
    """Why the existing ``path`` cannot be read as an input file, or ``None`` if it can."""
    if path.is_dir():
        return "it is a directory, not a file"
    if not path.is_file():
        return "it is not a regular file (inputs are read more than once)"
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        return os_error_reason(exc)


def require_files(paths: Iterable[Path], what: str) -> None:
    """Fail unless every path is a readable file, listing all problems (not just the first one):
    missing files as one list, then one ``cannot read PATH: REASON`` line per unreadable one."""
    paths = [Path(p) for p in paths]
    missing = [str(p) for p in paths if not p.exists()]
    problems = [f"missing {what}:\n  " + "\n  ".join(missing)] if missing else []
    for path in paths:
        if path.exists() and (reason := unreadable_reason(path)) is not None:
            problems.append(f"cannot read {path} (one of the {what}): {reason}")
    if problems:
        raise UserError("\n".join(problems))


def _without_line_end(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
    if line.endswith(b"\r"):
        line = line[:-1]
    return line


def iter_lines(path: Path) -> Iterator[bytes]:
    """Lines of ``path`` as bytes without the ``\\n`` (and without a ``\\r`` before it), and without a
    byte-order mark at the start of the file."""
    with open_input(path) as handle:
        try:
            first = handle.readline()
            if first:
                yield _without_line_end(without_bom(first))
            for line in handle:
                yield _without_line_end(line)
        except OSError as exc:
            raise cannot_read(path, exc) from exc


#: the directories :func:`ensure_writable_dir` created in this process, deepest first: a command that fails
#: removes those that still hold no file (:func:`remove_empty_created`, called by
#: :func:`macaron_workflow.cli.run_cli`), so that a refused input leaves no empty output directory behind
CREATED_DIRS: list[Path] = []


def remove_empty_created() -> None:
    """Remove the directories :func:`ensure_writable_dir` created that hold no file (only empty directories,
    such as a resumable command's state directory before its first stage completed)."""
    while CREATED_DIRS:
        directory = CREATED_DIRS.pop(0)
        if directory.is_dir() and not any(p.is_file() or p.is_symlink() for p in directory.rglob("*")):
            for sub in sorted(directory.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                sub.rmdir()
            directory.rmdir()


def ensure_writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove it is writable by creating and deleting a probe file."""
    try:
        missing = [d for d in (path, *path.parents) if not d.exists()]
        path.mkdir(parents=True, exist_ok=True)
        CREATED_DIRS[:0] = missing
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"destination {path} is not writable: {exc.strerror or exc}") from exc
    return path
