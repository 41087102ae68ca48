"""Splitting every N-th pair off a cleaned corpus (IWSLT14's valid = every 23rd training pair).

Several aligned parallel files (e.g. the raw and the tokenized version of the same corpus) are split in
lockstep, so line *i* goes to the same side of the split in all of them: ``awk 'NR%N==0'`` -> held out,
``awk 'NR%N!=0'`` -> kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles, check_bitext_counts
from macaron_workflow.errors import UserError
from macaron_workflow.files import iter_lines
from macaron_workflow.stages import StageReport, StageRunner


def split_every_nth(
    sources: Sequence[Path], kept: Sequence[Path], held_out: Sequence[Path], every: int
) -> tuple[int, int]:
    """Write 1-based lines ``i % every != 0`` of each source to ``kept``, the others to ``held_out``."""
    n_kept = n_held = 0
    with ExitStack() as stack:
        readers = [iter_lines(path) for path in sources]
        keep_files = [stack.enter_context(open(path, "wb")) for path in kept]
        held_files = [stack.enter_context(open(path, "wb")) for path in held_out]
        for lineno, lines in enumerate(zip(*readers, strict=True), start=1):
            outputs = held_files if lineno % every == 0 else keep_files
            for out, line in zip(outputs, lines, strict=True):
                out.write(line + b"\n")
            if lineno % every == 0:
                n_held += 1
            else:
                n_kept += 1
    return n_kept, n_held


def holdout_split(
    runner: StageRunner,
    name: str,
    sources: Sequence[BitextFiles],
    kept: Sequence[BitextFiles],
    held_out: Sequence[BitextFiles],
    every: int,
) -> StageReport:
    """Stage ``name``: split each source pair into ``kept``/``held_out`` pairs, then check every count."""
    source_paths = [p for files in sources for p in files.both()]
    kept_paths = [p for files in kept for p in files.both()]
    held_paths = [p for files in held_out for p in files.both()]

    def build(temps: Mapping[Path, Path]) -> StageReport:
        totals = {check_bitext_counts(files, f"before stage {name}") for files in sources}
        if len(totals) != 1:
            raise UserError(f"{name}: the aligned inputs differ in length: {sorted(totals)}")
        try:
            n_kept, n_held = split_every_nth(
                source_paths, [temps[p] for p in kept_paths], [temps[p] for p in held_paths], every
            )
        except ValueError as exc:  # zip(strict=True): one input shorter than another
            raise UserError(f"{name}: inputs {source_paths} are not aligned: {exc}") from exc
        for outputs, expected in ((kept, n_kept), (held_out, n_held)):
            for files in outputs:
                temp = BitextFiles(temps[files.src], temps[files.tgt])
                if check_bitext_counts(temp, f"after stage {name} ({files.src.name})") != expected:
                    raise UserError(f"{name}: {files.src} does not have the expected {expected} lines")
        return {"kept": n_kept, "held_out": n_held, "every": every}

    return runner.run(name, source_paths, kept_paths + held_paths, {"every": every}, build)
