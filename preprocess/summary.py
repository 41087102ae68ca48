"""The per-stage line-count table printed at the end of a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from preprocess.corpus_files import count_lines
from preprocess.layout import OutputLayout


def line_count_table(
    layout: OutputLayout, splits: Sequence[str], reports: Mapping[str, Mapping[str, Any]]
) -> str:
    """Lines per split at each stage, counted from the files on disk (both sides), plus dropped pairs."""
    header = f"{'split':<8}{'input':>10}{'raw':>10}{'tok':>10}{'bpe':>10}{'binarized':>11}  dropped"
    rows = [header, "-" * len(header)]
    binarized = reports.get("binarize", {}).get("sentences", {})
    for split in splits:
        counts = []
        for files in (layout.raw(split), layout.tok(split), layout.bpe(split)):
            n_src, n_tgt = count_lines(files.src), count_lines(files.tgt)
            counts.append(str(n_src) if n_src == n_tgt else f"{n_src}!={n_tgt}")
        report = reports.get(f"tokenize-{split}", {})
        dropped = ", ".join(
            f"{report.get(key, 0)} {label}"
            for key, label in (
                ("dropped_invalid_utf8", "invalid UTF-8"),
                ("dropped_empty", "empty"),
                ("dropped_length_ratio", "length/ratio"),
            )
            if report.get(key)
        )
        rows.append(
            f"{split:<8}{report.get('input_pairs', '-')!s:>10}{counts[0]:>10}{counts[1]:>10}{counts[2]:>10}"
            f"{binarized.get(split, '-')!s:>11}  {dropped or '-'}"
        )
    return "\n".join(rows)
