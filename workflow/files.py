"""Line-oriented file access shared by every stage.

A *line* is what ``fairseq-preprocess``, sentencepiece and sacreBLEU see as a line: bytes up to ``\\n``.
Files are therefore read in binary mode and split on ``\\n`` only (never with ``str.splitlines``, which
also splits on U+2028, U+0085, ...). A final line without a trailing newline still counts as a line.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from workflow.errors import UserError

_BLOCK_SIZE = 1 << 20


def count_lines(path: Path) -> int:
    """Number of lines of ``path`` (a non-empty last line without ``\\n`` counts)."""
    count = 0
    last = b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK_SIZE):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (0 if last == b"\n" else 1)


def require_files(paths: Iterable[Path], what: str) -> None:
    """Fail with the full list of missing files (not just the first one)."""
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise UserError(f"missing {what}:\n  " + "\n  ".join(missing))


def iter_lines(path: Path) -> Iterator[bytes]:
    """Lines of ``path`` as bytes without the ``\\n`` (and without a ``\\r`` before it)."""
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            yield line


def ensure_writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove it is writable by creating and deleting a probe file."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"destination {path} is not writable: {exc.strerror or exc}") from exc
    return path
