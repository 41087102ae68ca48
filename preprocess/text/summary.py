"""The per-stage line-count table printed at the end of a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from macaron_preprocess.text.layout import OutputLayout
from macaron_workflow.files import count_lines

_DROP_LABELS = (
    ("metadata_pairs_dropped", "talk metadata"),
    ("dropped_invalid_utf8", "invalid UTF-8"),
    ("dropped_empty", "empty"),
    ("dropped_length_ratio", "length/ratio"),
)


def dropped_pairs(report: Mapping[str, Any]) -> str:
    """``"3 empty, 12 length/ratio"`` from a stage report (``-`` if nothing was dropped)."""
    return ", ".join(f"{report[key]} {label}" for key, label in _DROP_LABELS if report.get(key)) or "-"


def describe_cleaning(
    name: str, reports: Mapping[str, Mapping[str, Any]], extra_key: str | None = None
) -> str:
    """One line about a tokenize stage whose output is split further (IWSLT14's train.tags)."""
    report = dict(reports.get(f"tokenize-{name}", {}))
    if extra_key is not None:
        first = reports.get(extra_key, {})
        report.update({k: v for k, v in first.items() if k == "metadata_pairs_dropped"})
        report["input_pairs"] = first.get("input_pairs", report.get("input_pairs"))
    return (
        f"{name}: {report.get('input_pairs', '-')} input pairs, kept {report.get('kept_pairs', '-')}, "
        f"dropped: {dropped_pairs(report)}"
    )


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
        rows.append(
            f"{split:<8}{report.get('input_pairs', '-')!s:>10}{counts[0]:>10}{counts[1]:>10}{counts[2]:>10}"
            f"{binarized.get(split, '-')!s:>11}  {dropped_pairs(report)}"
        )
    return "\n".join(rows)
