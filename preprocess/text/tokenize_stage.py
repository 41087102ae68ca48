"""Stage "tokenize": raw parallel text -> pairwise-checked raw copy + Moses-tokenized text.

One streaming pass per split, parallel over chunks of line pairs (order preserved). For each pair:

1. decode both sides as UTF-8; a pair with invalid UTF-8 on either side is **dropped** (so that no
   replacement characters reach the vocabulary) and reported with file, line and offending bytes;
2. tokenize both sides (:mod:`macaron_preprocess.text.moses`); a pair where either side is empty or
   whitespace-only after tokenization is dropped (pairwise, so the sides stay aligned);
3. for splits with a :class:`~macaron_preprocess.text.cleaning.CleanConfig` (training data), drop pairs
   failing the length/ratio filter.

Kept pairs are written twice: the raw text (detokenized references for sacreBLEU; a stray ``\\r`` inside
a line becomes a space so that no line-based reader splits it) and the tokenized text. A training split
(one with a cleaning config) that keeps no pair at all is an error naming the stage and what dropped the
pairs: BPE could not be learned from it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from macaron_preprocess.text.bitext import BitextFiles, check_bitext_counts, iter_line_pairs
from macaron_preprocess.text.cleaning import CleanConfig, keep_pair
from macaron_preprocess.text.moses import MosesConfig, MosesPipeline
from macaron_preprocess.text.summary import dropped_pairs
from macaron_workflow.errors import UserError
from macaron_workflow.files import require_files
from macaron_workflow.stages import StageReport, StageRunner
from macaron_workflow.workers import chunked, ordered_map

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class TokenizeJob:
    """What the tokenize stage does for one split."""

    split: str
    inputs: tuple[BitextFiles, ...]
    raw_out: BitextFiles
    tok_out: BitextFiles
    src_config: MosesConfig
    tgt_config: MosesConfig
    clean: CleanConfig | None = None


@dataclass
class ChunkResult:
    """Output of one worker call: encoded blobs ready to append, plus drop counters."""

    input_pairs: int = 0
    raw_src: bytes = b""
    raw_tgt: bytes = b""
    tok_src: bytes = b""
    tok_tgt: bytes = b""
    kept: int = 0
    invalid_utf8: int = 0
    empty: int = 0
    length_ratio: int = 0
    examples: list[str] = field(default_factory=list)


LinePair = tuple[int, int, bytes, bytes]
"""(index of the input BitextFiles, 1-based line number, source bytes, target bytes)."""

_worker_state: dict[str, Any] = {}


def _init_worker(job: TokenizeJob) -> None:
    _worker_state["job"] = job
    _worker_state["src"] = MosesPipeline(job.src_config)
    _worker_state["tgt"] = MosesPipeline(job.tgt_config)


def _describe_bad_utf8(job: TokenizeJob, index: int, lineno: int, side: str, data: bytes) -> str:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        path = getattr(job.inputs[index], side)
        bad = data[exc.start : exc.end + 3]
        return f"{path}:{lineno}: invalid UTF-8 at byte {exc.start}: {bad!r}"
    return ""


def process_chunk(pairs: list[LinePair]) -> ChunkResult:
    """Decode, tokenize and filter one chunk of line pairs (runs in a worker process)."""
    job: TokenizeJob = _worker_state["job"]
    src_pipeline: MosesPipeline = _worker_state["src"]
    tgt_pipeline: MosesPipeline = _worker_state["tgt"]
    result = ChunkResult(input_pairs=len(pairs))
    raw_src: list[str] = []
    raw_tgt: list[str] = []
    tok_src: list[str] = []
    tok_tgt: list[str] = []
    for index, lineno, src_bytes, tgt_bytes in pairs:
        try:
            src_text = src_bytes.decode("utf-8")
            tgt_text = tgt_bytes.decode("utf-8")
        except UnicodeDecodeError:
            result.invalid_utf8 += 1
            if len(result.examples) < MAX_EXAMPLES:
                for side, data in (("src", src_bytes), ("tgt", tgt_bytes)):
                    if message := _describe_bad_utf8(job, index, lineno, side, data):
                        result.examples.append(message)
            continue
        src_tok = src_pipeline(src_text) if src_text.strip() else ""
        tgt_tok = tgt_pipeline(tgt_text) if tgt_text.strip() else ""
        if not src_tok or not tgt_tok:
            result.empty += 1
            continue
        if job.clean is not None and not keep_pair(src_tok, tgt_tok, job.clean):
            result.length_ratio += 1
            continue
        raw_src.append(src_text.replace("\r", " "))
        raw_tgt.append(tgt_text.replace("\r", " "))
        tok_src.append(src_tok)
        tok_tgt.append(tgt_tok)
    result.kept = len(tok_src)
    if result.kept:
        result.raw_src = ("\n".join(raw_src) + "\n").encode("utf-8")
        result.raw_tgt = ("\n".join(raw_tgt) + "\n").encode("utf-8")
        result.tok_src = ("\n".join(tok_src) + "\n").encode("utf-8")
        result.tok_tgt = ("\n".join(tok_tgt) + "\n").encode("utf-8")
    return result


def _numbered_pairs(inputs: tuple[BitextFiles, ...]) -> Iterator[LinePair]:
    for index, files in enumerate(inputs):
        for lineno, (src, tgt) in enumerate(iter_line_pairs(files), start=1):
            yield index, lineno, src, tgt


def run_tokenize(job: TokenizeJob, temps: Mapping[Path, Path], workers: int, chunk_lines: int) -> StageReport:
    """Build function of the stage: writes the four outputs to their temporary paths."""
    total = sum(check_bitext_counts(files, f"in the input of split {job.split}") for files in job.inputs)
    outputs = (job.raw_out.src, job.raw_out.tgt, job.tok_out.src, job.tok_out.tgt)
    handles = [open(temps[path], "wb") for path in outputs]
    totals = ChunkResult()
    try:
        progress = tqdm(total=total, desc=f"tokenize {job.split}", unit="lines", file=sys.stderr, delay=0.5)
        with progress:
            chunks = chunked(_numbered_pairs(job.inputs), chunk_lines)
            for result in ordered_map(process_chunk, chunks, workers, _init_worker, (job,)):
                for handle, blob in zip(
                    handles, (result.raw_src, result.raw_tgt, result.tok_src, result.tok_tgt), strict=True
                ):
                    handle.write(blob)
                totals.kept += result.kept
                totals.invalid_utf8 += result.invalid_utf8
                totals.empty += result.empty
                totals.length_ratio += result.length_ratio
                totals.examples.extend(result.examples[: MAX_EXAMPLES - len(totals.examples)])
                progress.update(result.input_pairs)
    finally:
        for handle in handles:
            handle.close()
    for side_pair, label in ((job.raw_out, "raw"), (job.tok_out, "tokenized")):
        temp_pair = BitextFiles(temps[side_pair.src], temps[side_pair.tgt])
        written = check_bitext_counts(temp_pair, f"after stage tokenize ({label} {job.split})")
        if written != totals.kept:
            raise UserError(f"{label} {job.split}: wrote {written} lines but kept {totals.kept} pairs")
    if totals.invalid_utf8:
        print(
            f"warning: {job.split}: dropped {totals.invalid_utf8} pair(s) with invalid UTF-8, e.g.\n  "
            + "\n  ".join(totals.examples),
            file=sys.stderr,
        )
    return {
        "split": job.split,
        "input_pairs": total,
        "kept_pairs": totals.kept,
        "dropped_invalid_utf8": totals.invalid_utf8,
        "dropped_empty": totals.empty,
        "dropped_length_ratio": totals.length_ratio,
        "invalid_utf8_examples": totals.examples,
    }


def tokenize_split(
    runner: StageRunner, job: TokenizeJob, workers: int, chunk_lines: int = 2000
) -> StageReport:
    """Run (or skip, if complete) the tokenize stage for one split."""
    inputs = [path for files in job.inputs for path in files.both()]
    require_files(inputs, f"input files of split {job.split}")
    params = {
        "src": job.src_config.as_params(),
        "tgt": job.tgt_config.as_params(),
        "clean": job.clean.as_params() if job.clean else None,
        "version": 1,
    }
    outputs = [*job.raw_out.both(), *job.tok_out.both()]
    report = runner.run(
        f"tokenize-{job.split}",
        inputs,
        outputs,
        params,
        lambda temps: run_tokenize(job, temps, workers, chunk_lines),
    )
    require_training_pairs(job, report)
    return report


def require_training_pairs(job: TokenizeJob, report: StageReport) -> None:
    """A training split (one with a cleaning config) must keep at least one pair: BPE is learned on it."""
    if job.clean is None or report["kept_pairs"] > 0:
        return
    raise UserError(
        f"no training pair left after stage tokenize-{job.split} ({_why_no_pair_is_left(job, report)}); "
        "nothing to learn BPE from"
    )


def _why_no_pair_is_left(job: TokenizeJob, report: StageReport) -> str:
    if report["input_pairs"] == 0:
        files = ", ".join(str(path) for files in job.inputs for path in files.both())
        return f"the input has no lines: {files}"
    assert job.clean is not None
    n = report["input_pairs"]
    return (
        f"cleaning dropped {n} of {n} pairs: {dropped_pairs(report)}; the length filter keeps "
        f"{job.clean.min_len}-{job.clean.max_len} tokens per side and a length ratio <= {job.clean.ratio}"
    )
