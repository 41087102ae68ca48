"""Line-oriented file access shared by every stage.

A *line* is what ``fairseq-preprocess``, sentencepiece and sacreBLEU see as a line: bytes up to ``\\n``.
Files are therefore read in binary mode and split on ``\\n`` only (never with ``str.splitlines``, which
also splits on U+2028, U+0085, ...). A final line without a trailing newline still counts as a line.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from preprocess.errors import PreprocessError

_BLOCK_SIZE = 1 << 20


@dataclass(frozen=True)
class ParallelFiles:
    """The two sides of one parallel text: ``src`` line *i* is aligned with ``tgt`` line *i*."""

    src: Path
    tgt: Path

    @classmethod
    def from_prefix(cls, prefix: Path | str, src_lang: str, tgt_lang: str) -> ParallelFiles:
        """``prefix.src_lang`` / ``prefix.tgt_lang``, the naming convention of fairseq-preprocess."""
        return cls(Path(f"{prefix}.{src_lang}"), Path(f"{prefix}.{tgt_lang}"))

    def both(self) -> tuple[Path, Path]:
        return self.src, self.tgt


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
        raise PreprocessError(f"missing {what}:\n  " + "\n  ".join(missing))


def check_parallel_counts(files: ParallelFiles, stage: str) -> int:
    """Line count shared by both sides; a mismatch names both files and both counts."""
    n_src, n_tgt = count_lines(files.src), count_lines(files.tgt)
    if n_src != n_tgt:
        raise PreprocessError(
            f"line count mismatch {stage}: {files.src} has {n_src} lines but {files.tgt} has {n_tgt} lines"
        )
    return n_src


def iter_lines(path: Path) -> Iterator[bytes]:
    """Lines of ``path`` as bytes without the ``\\n`` (and without a ``\\r`` before it)."""
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            yield line


def iter_line_pairs(files: ParallelFiles) -> Iterator[tuple[bytes, bytes]]:
    """Aligned line pairs; raises if one side ends before the other (counts are checked up front too)."""
    src_lines, tgt_lines = iter_lines(files.src), iter_lines(files.tgt)
    n = 0
    for n, src in enumerate(src_lines, start=1):
        tgt = next(tgt_lines, None)
        if tgt is None:
            raise PreprocessError(f"{files.tgt} ended after {n - 1} lines while {files.src} goes on")
        yield src, tgt
    if next(tgt_lines, None) is not None:
        raise PreprocessError(f"{files.src} ended after {n} lines while {files.tgt} goes on")


def ensure_writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove it is writable by creating and deleting a probe file."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise PreprocessError(f"destination {path} is not writable: {exc.strerror or exc}") from exc
    return path
