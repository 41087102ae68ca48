"""Text of ``<seg id="N">...</seg>`` lines in IWSLT ``.xml`` and WMT ``.sgm`` evaluation sets.

Same selection as fairseq's scripts: every line containing ``<seg id``, with
``s/<seg id="[0-9]*">\\s*//g`` and ``s/\\s*<\\/seg>\\s*//g`` applied. Works on bytes so that invalid UTF-8
is left for the tokenize stage to report. Several files can be concatenated into one parallel set; each
file pair must have the same number of segments on both sides.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles
from macaron_workflow.errors import UserError
from macaron_workflow.files import iter_lines, require_files
from macaron_workflow.stages import StageReport, StageRunner

_SEG_OPEN = re.compile(rb'<seg id="[0-9]*">\s*')
_SEG_CLOSE = re.compile(rb"\s*</seg>\s*")


def segments(path: Path) -> Iterator[bytes]:
    """The segment texts of one XML/SGML file, in file order."""
    for line in iter_lines(path):
        if b"<seg id" in line:
            yield _SEG_CLOSE.sub(b"", _SEG_OPEN.sub(b"", line))


def write_segments(sets: Sequence[BitextFiles], target: BitextFiles) -> StageReport:
    """Concatenate the segments of ``sets`` into ``target`` (both sides), checking per-file counts."""
    per_set = {}
    with open(target.src, "wb") as src_out, open(target.tgt, "wb") as tgt_out:
        for files in sets:
            src_segments, tgt_segments = list(segments(files.src)), list(segments(files.tgt))
            if len(src_segments) != len(tgt_segments):
                raise UserError(
                    f"segment count mismatch: {files.src} has {len(src_segments)} <seg> lines but "
                    f"{files.tgt} has {len(tgt_segments)}"
                )
            if not src_segments:
                raise UserError(f"no <seg id=...> lines in {files.src} and {files.tgt}")
            src_out.write(b"".join(s + b"\n" for s in src_segments))
            tgt_out.write(b"".join(t + b"\n" for t in tgt_segments))
            per_set[files.src.name] = len(src_segments)
    return {"segments": sum(per_set.values()), "per_file": per_set}


def extract_segments(
    runner: StageRunner, name: str, sets: Sequence[BitextFiles], target: BitextFiles
) -> StageReport:
    """Stage ``name``: the concatenated segments of ``sets`` into ``target``."""
    inputs = [path for files in sets for path in files.both()]
    require_files(inputs, f"evaluation files for {name}")

    def build(temps: Mapping[Path, Path]) -> StageReport:
        return write_segments(sets, BitextFiles(temps[target.src], temps[target.tgt]))

    return runner.run(name, inputs, target.both(), {"version": 1}, build)
