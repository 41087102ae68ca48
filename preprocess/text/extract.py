"""Stages "extract-<source>": a Wikipedia dump or a books directory -> ``train.txt`` and ``valid.txt`` of
tokenized, lowercased sentences, documents separated by a blank line.

Work is cut into units that worker processes handle from start to finish, reading their input
themselves where they can: ranges of whole bz2 streams of a multistream dump (decompressed in parallel,
see :mod:`macaron_preprocess.sources.mediawiki`), batches of books; a single-stream or plain-XML dump is read
and cut into pages by the main process, which sends batches of pages. Each worker cleans the wikitext,
splits sentences and tokenizes (:class:`~macaron_preprocess.text.documents.DocumentProcessor`) and returns the
text of each split; the main process writes it in input order (:func:`macaron_workflow.workers.ordered_map`,
at
most two units per worker in flight, so memory does not grow with the input).

At least one validation document: when no document of a source falls into the validation share (a tiny
input), the training document with the smallest split fraction is moved there, so the choice is still
fixed by the document keys.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from macaron_preprocess.sources import bookcorpus, mediawiki
from macaron_preprocess.text.documents import DocumentConfig, DocumentProcessor, ExtractedText
from macaron_preprocess.text.wikitext import article_paragraphs, drop_reason
from macaron_workflow.atomic import atomic_output
from macaron_workflow.errors import UserError
from macaron_workflow.files import OutputFile
from macaron_workflow.stages import StageReport, StageRunner
from macaron_workflow.workers import chunked, ordered_map

STREAM_UNIT_BYTES = 1 << 20
"""Compressed bytes of a multistream dump per work unit (about 5 MB of XML)."""
PAGE_BATCH_BYTES = 2 << 20
"""XML bytes of pages handled together (a work unit when the main process reads the dump; a batch inside
a stream range otherwise), so that a worker holds at most this much XML at a time."""
BOOKS_PER_UNIT = 4
EXTRACT_VERSION = 1
BOOK_DECODING = "utf-8|cp1252|latin-1"
"""How books are decoded (a key of the extract-bookcorpus stage: books that were skipped as not UTF-8 by an
earlier version are read on a rerun)."""


@dataclass(frozen=True)
class ExtractOutputs:
    """The two files an extract stage writes (in ``directory``)."""

    directory: Path

    @property
    def train(self) -> Path:
        return self.directory / "train.txt"

    @property
    def valid(self) -> Path:
        return self.directory / "valid.txt"

    def both(self) -> list[Path]:
        return [self.train, self.valid]


# ------------------------------------------------------------------------------------------ workers
_processor: dict[str, Any] = {}


def _init_worker(config: DocumentConfig, site: mediawiki.SiteInfo | None) -> None:
    _processor["documents"] = DocumentProcessor(config)
    _processor["site"] = site


def _wiki_pages(path: Path, chunks: Sequence[bytes], out: ExtractedText | None = None) -> ExtractedText:
    """Clean, split and tokenize the pages in ``chunks``, appending to ``out`` (a new one by default)."""
    out = ExtractedText() if out is None else out
    documents = []
    for chunk in chunks:
        page = mediawiki.parse_page(path, chunk, _processor["site"])
        out.counts["pages"] += 1
        out.counts["xml_bytes"] += len(chunk)
        reason = drop_reason(page)
        if reason is not None:
            out.counts[f"dropped.{reason}"] += 1
            continue
        paragraphs, rejected = article_paragraphs(page)
        out.counts["paragraphs_rejected"] += rejected
        documents.append((f"wikipedia:{page.id}", paragraphs))
    _processor["documents"].add(out, documents)
    return out


def wiki_stream_range(stream_range: mediawiki.StreamRange) -> ExtractedText:
    """Decompress, cut, clean and tokenize one range of whole bz2 streams, a batch of pages at a time."""
    out = ExtractedText()
    cutter = mediawiki.PageCutter(stream_range.path)
    batch: list[bytes] = []
    for block in mediawiki.decompress_bz2(stream_range):
        batch += cutter.feed(block)
        if sum(map(len, batch)) >= PAGE_BATCH_BYTES:
            _wiki_pages(stream_range.path, batch, out)
            batch = []
    _wiki_pages(stream_range.path, batch, out)
    if stream_range.is_last:
        mediawiki.check_end(stream_range.path, cutter)
    elif b"<page>" in cutter.tail:
        raise UserError(
            f"{stream_range.path}: a <page> element crosses the bz2 stream boundary at byte "
            f"{stream_range.end:,}: not a multistream dump, or a wrong index file"
        )
    return out


def wiki_page_batch(job: tuple[Path, list[bytes]]) -> ExtractedText:
    path, chunks = job
    return _wiki_pages(path, chunks)


def book_batch(job: tuple[Path, list[Path]]) -> ExtractedText:
    directory, paths = job
    out = ExtractedText()
    documents = []
    for path in paths:
        book, reason = bookcorpus.read_book(path, directory)
        out.counts["files"] += 1
        if book is None:
            out.counts[f"skipped.{reason}"] += 1
            out.skipped_files.append(str(path.relative_to(directory)))
            continue
        if book.encoding != "utf-8":
            out.counts[f"decoded.{book.encoding}"] += 1
            out.decoded_files.append(f"{path.relative_to(directory)} ({book.encoding})")
        out.counts["text_bytes"] += sum(len(paragraph) for paragraph in book.paragraphs)
        documents.append((f"bookcorpus:{book.key}", book.paragraphs))
    _processor["documents"].add(out, documents)
    return out


# ------------------------------------------------------------------------------------------- writer
def write_extracted(
    results: Iterable[ExtractedText], train: Path, valid: Path, progress: Callable[[Counter[str]], None]
) -> tuple[Counter[str], list[str], list[str]]:
    """Write every result's text in order; then make sure ``valid`` holds at least one document.

    Returns the summed counts and the names of the first (at most 20) skipped input files and of the first
    (at most 20) files decoded with a fallback encoding.
    """
    counts: Counter[str] = Counter()
    skipped: list[str] = []
    decoded: list[str] = []
    smallest: tuple[float, int, int] | None = None
    written = 0
    with OutputFile(train) as train_out, OutputFile(valid) as valid_out:
        for result in results:
            candidate = result.smallest_train
            if candidate is not None and (smallest is None or candidate[0] < smallest[0]):
                smallest = (candidate[0], written + candidate[1], written + candidate[2])
            train_out.write(bytes(result.text["train"]))
            valid_out.write(bytes(result.text["valid"]))
            written += len(result.text["train"])
            counts.update(result.counts)
            skipped += result.skipped_files[: 20 - len(skipped)]
            decoded += result.decoded_files[: 20 - len(decoded)]
            progress(result.counts)
    if counts["valid.documents"] == 0 and smallest is not None:
        move_to_validation(train, valid, smallest[1], smallest[2], counts)
    return counts, skipped, decoded


def move_to_validation(train: Path, valid: Path, start: int, end: int, counts: Counter[str]) -> None:
    """Move bytes ``[start, end)`` (one document) of ``train`` to the end of ``valid``; fix ``counts``."""
    with atomic_output(train) as rewritten, open(train, "rb") as source, OutputFile(rewritten) as target:
        shutil.copyfileobj(_limited(source, start), target)
        document = source.read(end - start)
        shutil.copyfileobj(source, target)
    with open(valid, "ab") as out:
        out.write(document)
    sentences = document.rstrip(b"\n").split(b"\n")
    moved = {"documents": 1, "sentences": len(sentences), "tokens": sum(len(s.split()) for s in sentences)}
    for name, value in moved.items():
        counts[f"train.{name}"] -= value
        counts[f"valid.{name}"] += value
    counts["moved_to_valid"] += 1


class _limited:
    """The first ``size`` bytes of a binary file, as a file object for ``shutil.copyfileobj``."""

    def __init__(self, handle: Any, size: int) -> None:
        self.handle, self.left = handle, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.handle.read(n)
        self.left -= len(data)
        return data


# ------------------------------------------------------------------------------------------- stages
def _bar(description: str, total: int | None, unit: str) -> tqdm:
    return tqdm(
        total=total, desc=description, unit=unit, unit_scale=True, file=sys.stderr, delay=1, mininterval=1
    )


WorkPlan = tuple[str, Iterator[Any], Callable[[Any], ExtractedText], int]


def wikipedia_units(dump: Path, workers: int) -> WorkPlan:
    """How a dump is cut into work: ``(mode, units, worker function, number of ranges)``."""
    if mediawiki.is_bz2(dump):
        ranges = mediawiki.stream_ranges(dump, STREAM_UNIT_BYTES, min_parts=4 * workers)
        if len(ranges) > 1:
            return "parallel bz2 streams", iter(ranges), wiki_stream_range, len(ranges)
    batches = mediawiki.batched_chunks(mediawiki.iter_page_chunks(dump), PAGE_BATCH_BYTES)
    return "read by the main process", ((dump, batch) for batch in batches), wiki_page_batch, 0


def extract_wikipedia(
    runner: StageRunner, dump: Path, outputs: ExtractOutputs, config: DocumentConfig, workers: int
) -> StageReport:
    """Stage "extract-wikipedia-<dump file name>"."""
    index = mediawiki.index_path(dump)
    inputs = [dump, *([index] if index is not None and index.exists() else [])]

    def build(temps: Mapping[Path, Path]) -> StageReport:
        site = mediawiki.read_site_info(dump)
        mode, units, function, ranges = wikipedia_units(dump, workers)
        runner.log(f"[extract] {dump.name}: {mode}" + (f" ({ranges} ranges)" if ranges else ""))
        with _bar(f"extract {dump.name}", None, "pages") as bar:
            results = ordered_map(function, units, workers, _init_worker, (config, site))
            counts, _, _ = write_extracted(
                results, temps[outputs.train], temps[outputs.valid], lambda c: bar.update(c["pages"])
            )
        if counts["pages"] == 0:
            raise UserError(f"{dump}: the export holds no <page>")
        return {"source": "wikipedia", "file": str(dump), "dbname": site.dbname, "counts": dict(counts)}

    params = {"version": EXTRACT_VERSION, "source": "wikipedia", **config.as_params()}
    return runner.run(f"extract-wikipedia-{dump.name}", inputs, outputs.both(), params, build)


def extract_bookcorpus(
    runner: StageRunner, directory: Path, outputs: ExtractOutputs, config: DocumentConfig, workers: int
) -> StageReport:
    """Stage "extract-bookcorpus"."""
    files = bookcorpus.book_files(directory)

    def build(temps: Mapping[Path, Path]) -> StageReport:
        units = ((directory, batch) for batch in chunked(files, BOOKS_PER_UNIT))
        with _bar(f"extract {directory.name}", len(files), "books") as bar:
            results = ordered_map(book_batch, units, workers, _init_worker, (config, None))
            counts, skipped_files, decoded_files = write_extracted(
                results, temps[outputs.train], temps[outputs.valid], lambda c: bar.update(c["files"])
            )
        skipped = {reason: counts[f"skipped.{reason}"] for reason in bookcorpus.SKIP_REASONS}
        if sum(skipped.values()):
            runner.log(
                f"[extract] {directory}: skipped {skipped['binary']} binary file(s) (not text), "
                f"e.g. {', '.join(skipped_files[:5])}"
            )
        decoded = sum(counts[f"decoded.{encoding}"] for encoding in bookcorpus.FALLBACK_ENCODINGS)
        if decoded:
            runner.log(
                f"[extract] {directory}: {decoded} book(s) not UTF-8, decoded as cp1252/Latin-1, "
                f"e.g. {', '.join(decoded_files[:5])}"
            )
        if counts["files"] == sum(skipped.values()):
            raise UserError(f"--bookcorpus {directory}: none of its {len(files)} .txt files is text")
        return {
            "source": "bookcorpus",
            "file": str(directory),
            "counts": dict(counts),
            "skipped_files": skipped_files,
            "decoded_files": decoded_files,
        }

    params = {
        "version": EXTRACT_VERSION,
        "source": "bookcorpus",
        "decoding": BOOK_DECODING,
        **config.as_params(),
    }
    return runner.run("extract-bookcorpus", files, outputs.both(), params, build)
