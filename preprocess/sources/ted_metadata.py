"""Removing the talk metadata of WIT3/IWSLT ``train.tags.*`` files **pairwise**.

fairseq's ``prepare-iwslt14.sh`` runs ``grep -v '<url>' | grep -v '<talkid>' | grep -v '<keywords>'`` on
each side separately and then strips ``<title>``/``</title>``/``<description>``/``</description>``. As soon
as a content line on one side contains such a pattern, that side loses a line and every later pair is
misaligned. Here both sides are read in lockstep and a pair is dropped only when **both** of its lines are
metadata lines; a tag-like line facing ordinary text is kept as content (and counted).

A metadata line is one that *starts* (after blanks) with ``<url>``, ``<keywords>``, ``<talkid>`` (the three
lines fairseq removes) or ``<speaker>``, ``<reviewer``, ``<translator``, ``<doc``, ``</doc>`` (metadata of
newer WIT3 releases, which fairseq's grep would keep as training text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles, check_bitext_counts, iter_line_pairs
from macaron_workflow.errors import UserError
from macaron_workflow.files import require_files
from macaron_workflow.stages import StageReport, StageRunner

_METADATA = re.compile(
    rb"^\s*(?:<url>|<keywords>|<talkid>|<speaker>|<reviewer\b|<translator\b|<doc\b|</doc>)"
)
_STRIPPED_TAGS = re.compile(rb"</?(?:title|description)>")


def is_metadata(line: bytes) -> bool:
    return _METADATA.match(line) is not None


def strip_title_description(line: bytes) -> bytes:
    """``sed -e 's/<title>//g' -e 's/<\\/title>//g' -e 's/<description>//g' -e 's/<\\/description>//g'``."""
    return _STRIPPED_TAGS.sub(b"", line)


def write_talk_text(source: BitextFiles, target: BitextFiles) -> StageReport:
    """Copy ``source`` to ``target`` without metadata pairs and with title/description tags stripped."""
    total = check_bitext_counts(source, "in the training files")
    dropped = one_sided = 0
    with open(target.src, "wb") as src_out, open(target.tgt, "wb") as tgt_out:
        for src, tgt in iter_line_pairs(source):
            src_meta, tgt_meta = is_metadata(src), is_metadata(tgt)
            if src_meta and tgt_meta:
                dropped += 1
                continue
            one_sided += src_meta != tgt_meta
            src_out.write(strip_title_description(src) + b"\n")
            tgt_out.write(strip_title_description(tgt) + b"\n")
    kept = check_bitext_counts(target, "after removing talk metadata")
    if kept != total - dropped:
        raise UserError(f"{target.src}: wrote {kept} pairs, expected {total - dropped}")
    return {"input_pairs": total, "metadata_pairs_dropped": dropped, "one_sided_tag_lines_kept": one_sided}


def remove_talk_metadata(runner: StageRunner, source: BitextFiles, target: BitextFiles) -> StageReport:
    """Stage "talk-text"."""
    require_files(source.both(), "IWSLT training files")

    def build(temps: Mapping[Path, Path]) -> StageReport:
        return write_talk_text(source, BitextFiles(temps[target.src], temps[target.tgt]))

    report = runner.run("talk-text", source.both(), target.both(), {"version": 1}, build)
    if report.get("one_sided_tag_lines_kept"):
        runner.log(
            f"note: kept {report['one_sided_tag_lines_kept']} pair(s) where only one side looked like a "
            "metadata tag (fairseq's per-side grep would have misaligned the corpus there)"
        )
    return report
