"""A parallel text (bitext): two files whose line *i* are aligned, and the checks that keep them so."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from macaron_workflow.errors import UserError
from macaron_workflow.files import count_lines, iter_lines


@dataclass(frozen=True)
class BitextFiles:
    """The two sides of one parallel text: ``src`` line *i* is aligned with ``tgt`` line *i*."""

    src: Path
    tgt: Path

    @classmethod
    def from_prefix(cls, prefix: Path | str, src_lang: str, tgt_lang: str) -> BitextFiles:
        """``prefix.src_lang`` / ``prefix.tgt_lang``, the naming convention of fairseq-preprocess."""
        return cls(Path(f"{prefix}.{src_lang}"), Path(f"{prefix}.{tgt_lang}"))

    def both(self) -> tuple[Path, Path]:
        return self.src, self.tgt


def check_bitext_counts(files: BitextFiles, stage: str) -> int:
    """Line count shared by both sides; a mismatch names both files and both counts."""
    n_src, n_tgt = count_lines(files.src), count_lines(files.tgt)
    if n_src != n_tgt:
        raise UserError(
            f"line count mismatch {stage}: {files.src} has {n_src} lines but {files.tgt} has {n_tgt} lines"
        )
    return n_src


def iter_line_pairs(files: BitextFiles) -> Iterator[tuple[bytes, bytes]]:
    """Aligned line pairs; raises if one side ends before the other (counts are checked up front too)."""
    src_lines, tgt_lines = iter_lines(files.src), iter_lines(files.tgt)
    n = 0
    for n, src in enumerate(src_lines, start=1):
        tgt = next(tgt_lines, None)
        if tgt is None:
            raise UserError(f"{files.tgt} ended after {n - 1} lines while {files.src} goes on")
        yield src, tgt
    if next(tgt_lines, None) is not None:
        raise UserError(f"{files.src} ended after {n} lines while {files.tgt} goes on")
