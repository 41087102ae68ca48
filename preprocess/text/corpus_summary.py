"""``summary.json`` and the table ``python -m macaron_preprocess.bert_corpus`` prints: per source and split,
documents, sentences and tokens; pages and files dropped, by reason; the time of each stage."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from macaron_preprocess.sources.bookcorpus import FALLBACK_ENCODINGS, SKIP_REASONS
from macaron_preprocess.text.corpus_layout import SPLITS
from macaron_preprocess.text.wikitext import DROP_REASONS

MEASURES = ("documents", "sentences", "tokens")
DOCUMENT_DROP_REASONS = ("empty", "too_short")
"""The drop reasons that apply to books (the others are about wiki pages)."""


def build_summary(reports: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate the stage reports (extract stages per source kind, BPE, binarize) into one record."""
    per_source: dict[str, Counter[str]] = {}
    files: dict[str, list[str]] = {}
    decoded_names: dict[str, list[str]] = {}
    for name, report in reports.items():
        if name.startswith("extract-"):
            source = report["source"]
            per_source.setdefault(source, Counter()).update(report["counts"])
            files.setdefault(source, []).append(report["file"])
            decoded_names.setdefault(source, []).extend(report.get("decoded_files", []))
    sources = {}
    for source, counts in per_source.items():
        entry: dict[str, Any] = {
            split: {measure: counts[f"{split}.{measure}"] for measure in MEASURES} for split in SPLITS
        }
        reasons = DROP_REASONS if source == "wikipedia" else DOCUMENT_DROP_REASONS
        entry["dropped"] = {reason: counts[f"dropped.{reason}"] for reason in reasons}
        if source == "wikipedia":
            entry["pages"] = counts["pages"]
            entry["xml_bytes"] = counts["xml_bytes"]
            entry["paragraphs_rejected_as_not_prose"] = counts["paragraphs_rejected"]
        else:
            entry["files"] = counts["files"]
            entry["skipped_files"] = {reason: counts[f"skipped.{reason}"] for reason in SKIP_REASONS}
            entry["decoded_files"] = {enc: counts[f"decoded.{enc}"] for enc in FALLBACK_ENCODINGS}
            entry["decoded_file_names"] = decoded_names.get(source, [])
        entry["moved_to_valid"] = counts["moved_to_valid"]
        entry["inputs"] = files[source]
        sources[source] = entry
    binarized = reports.get("binarize", {})
    return {
        "sources": sources,
        "total": {
            split: {measure: sum(s[split][measure] for s in sources.values()) for measure in MEASURES}
            for split in SPLITS
        },
        "bpe": {
            "vocab_size": reports.get("learn-bpe", {}).get("vocab_size"),
            "dictionary_size": binarized.get("dictionary_size"),
            **{split: binarized.get(split) for split in SPLITS},
        },
        "stage_seconds": {name: report.get("seconds") for name, report in reports.items()},
    }


def summary_table(summary: Mapping[str, Any]) -> str:
    """The summary as the text table printed at the end of a run."""
    rows = [f"{'source':<12}{'split':<7}{'documents':>12}{'sentences':>14}{'tokens':>16}"]
    rows.append("-" * len(rows[0]))
    named = [*summary["sources"].items(), ("total", summary["total"])]
    for source, entry in named:
        for split in SPLITS:
            counts = entry[split]
            rows.append(
                f"{source:<12}{split:<7}{counts['documents']:>12,}{counts['sentences']:>14,}"
                f"{counts['tokens']:>16,}"
            )
    for source, entry in summary["sources"].items():
        dropped = ", ".join(f"{reason.replace('_', ' ')} {n:,}" for reason, n in entry["dropped"].items())
        rows.append(f"{source} dropped: {dropped}")
        if "skipped_files" in entry:
            skipped = ", ".join(
                f"{reason.replace('_', '-')} {n:,}" for reason, n in entry["skipped_files"].items()
            )
            rows.append(f"{source} files skipped (not text): {skipped}")
        if sum(entry.get("decoded_files", {}).values()):
            decoded = ", ".join(f"{encoding} {n:,}" for encoding, n in entry["decoded_files"].items() if n)
            names = ", ".join(entry["decoded_file_names"][:5])
            rows.append(f"{source} files not UTF-8, decoded as: {decoded} (e.g. {names})")
        if "pages" in entry:
            rows.append(
                f"{source}: {entry['pages']:,} pages, {entry['xml_bytes'] / 1e6:,.1f} MB of page XML, "
                f"{entry['paragraphs_rejected_as_not_prose']:,} cleaned paragraphs rejected as not prose"
            )
    bpe = summary["bpe"]
    if bpe.get("train"):
        rows.append(
            f"BPE: {bpe['vocab_size']:,} pieces, dictionary {bpe['dictionary_size']:,}; binarized train "
            f"{bpe['train']['tokens']:,} tokens, valid {bpe['valid']['tokens']:,} tokens (</s> included)"
        )
    times = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in summary["stage_seconds"].items())
    rows.append(f"stage times: {times}")
    return "\n".join(rows)
