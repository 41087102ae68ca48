"""Generated English-Wikipedia-style MediaWiki XML export dumps, for the tests of the Wikipedia
preprocessing and for its throughput benchmarks: :func:`write_dump`, what it wrote (:class:`DumpManifest`),
and the files it writes.

A dump holds the pages of :mod:`~macaron_synthetic.wiki.pages` in the export format of
:mod:`~macaron_synthetic.wiki.export_format`, in one of three flavours chosen by its name: ``*.xml`` plain
XML; ``*.xml.bz2`` and part files ``*.xml-p1p41242.bz2`` one bz2 stream of the whole file;
``*multistream*.bz2`` Wikimedia's multistream layout — a first bz2 stream with only the header
(``<mediawiki ...>`` + ``<siteinfo>``), one stream per ``pages_per_stream`` ``<page>`` elements, a last
stream with only ``</mediawiki>\\n``, all concatenated — plus its index ``*-multistream-index.txt.bz2``
(``OFFSET:PAGEID:TITLE`` per page, OFFSET the byte offset in the dump of the stream holding the page, the
title unescaped). Page kinds (:data:`KINDS`): ``article`` (≥ 2 prose sentences), ``stub`` (exactly one),
``empty`` (an article with no prose at all: templates, tables, lists, categories), ``redirect``,
``other_namespace``, ``disambiguation``.
"""

from __future__ import annotations

import bz2
import itertools
import queue
import random
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from macaron_synthetic.wiki.export_format import FOOTER, HEADER
from macaron_synthetic.wiki.pages import PageGenerator

KINDS = ("article", "stub", "empty", "redirect", "other_namespace", "disambiguation")
#: Kind proportions of a dump drawn by size or page count (roughly those of enwiki pages-articles), by
#: :data:`KINDS`.
DEFAULT_PROPORTIONS = dict(zip(KINDS, (0.50, 0.04, 0.01, 0.30, 0.12, 0.03), strict=True))


@dataclass
class DumpManifest:
    """What :func:`write_dump` wrote: the page ids of each kind (in dump order), titles, sizes, paths.

    ``prose_sentences`` maps each article and stub id to its number of prose sentences as generated (every
    one contains :func:`~macaron_synthetic.wiki.markers.article_word` of the id exactly once; a sentence
    splitter may split some of the hard cases — "Dr.", "No. 5", quotes — differently).
    """

    articles: list[int] = field(default_factory=list)
    stubs: list[int] = field(default_factory=list)
    empty_articles: list[int] = field(default_factory=list)
    redirects: list[int] = field(default_factory=list)
    other_namespace: list[int] = field(default_factory=list)
    disambiguation: list[int] = field(default_factory=list)
    titles: dict[int, str] = field(default_factory=dict)
    redirect_targets: dict[int, str] = field(default_factory=dict)
    namespaces: dict[int, int] = field(default_factory=dict)
    prose_sentences: dict[int, int] = field(default_factory=dict)
    xml_bytes: int = 0
    compressed_bytes: int = 0
    streams: int = 0
    seconds: float = 0.0
    path: Path | None = None
    index_path: Path | None = None
    flavour: str = "plain"

    @property
    def pages(self) -> int:
        return len(self.titles)

    def ids(self, kind: str) -> list[int]:
        """The page ids of one of :data:`KINDS`."""
        return getattr(self, _MANIFEST_FIELD[kind])

    def counts(self) -> dict[str, int]:
        return {kind: len(self.ids(kind)) for kind in KINDS}


_FIELD_NAMES = ("articles", "stubs", "empty_articles", "redirects", "other_namespace", "disambiguation")
_MANIFEST_FIELD = dict(zip(KINDS, _FIELD_NAMES, strict=True))


def _kind_sequence(
    rng: random.Random, pages: int | None, target_bytes: int | None, kinds: dict[str, int] | None
) -> Iterator[str]:
    """The kind of each page of the dump, in order (endless when sized by ``target_bytes``)."""
    if kinds is not None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown page kinds {sorted(unknown)}; known: {KINDS}")
        seq = [k for k in KINDS for _ in range(kinds.get(k, 0))]
        rng.shuffle(seq)
        yield from seq
        return
    names = list(DEFAULT_PROPORTIONS)
    cum = list(itertools.accumulate(DEFAULT_PROPORTIONS.values()))
    count = itertools.count() if pages is None else range(pages)
    for _ in count:
        yield rng.choices(names, cum_weights=cum)[0]


_MULTISTREAM_NAME = re.compile(r"^(?P<stem>.*multistream)(?P<num>\d*)\.xml(?P<range>-p\d+p\d+)?\.bz2$")


def flavour_of(path: Path) -> str:
    """``plain``, ``bz2`` (one stream) or ``multistream``, from a dump file's name."""
    name = Path(path).name
    if name.endswith(".xml"):
        return "plain"
    if name.endswith(".bz2"):
        return "multistream" if "multistream" in name else "bz2"
    raise ValueError(f"cannot tell the dump flavour of {name!r} (.xml, .xml.bz2, .xml-pNpM.bz2)")


def index_path_for(path: Path) -> Path:
    """The multistream index's name, as Wikimedia names it:
    ``X-multistream.xml.bz2`` → ``X-multistream-index.txt.bz2``, part files
    ``X-multistream3.xml-p1p41242.bz2`` → ``X-multistream-index3.txt-p1p41242.bz2``."""
    path = Path(path)
    m = _MULTISTREAM_NAME.match(path.name)
    if m:
        return path.with_name(f"{m['stem']}-index{m['num']}.txt{m['range'] or ''}.bz2")
    return path.with_name(path.name.removesuffix(".bz2").removesuffix(".xml") + "-index.txt.bz2")


class PlainSink:
    """A plain or single-stream bz2 file; with ``threads`` a background thread compresses (bz2 releases the
    GIL), overlapping generation."""

    def __init__(self, path: Path, compresslevel: int, compressed: bool, threads: int) -> None:
        self.f = bz2.open(path, "wb", compresslevel=compresslevel) if compressed else open(path, "wb")
        self.streams = 1 if compressed else 0
        self.chunk: list[bytes] = []
        self.chunk_bytes = 0
        self.queue: queue.Queue[bytes | None] | None = None
        self.error: BaseException | None = None
        if compressed and threads > 0:
            self.queue = queue.Queue(maxsize=8)
            self.thread = threading.Thread(target=self._writer, daemon=True)
            self.thread.start()

    def _writer(self) -> None:
        assert self.queue is not None
        while (data := self.queue.get()) is not None:
            if self.error is None:
                try:
                    self.f.write(data)
                except BaseException as e:  # re-raised by close()
                    self.error = e

    def _write(self, data: bytes) -> None:
        if self.queue is None:
            self.f.write(data)
            return
        self.chunk.append(data)
        self.chunk_bytes += len(data)
        if self.chunk_bytes >= 1 << 20:
            self.queue.put(b"".join(self.chunk))
            self.chunk, self.chunk_bytes = [], 0

    def header(self, data: bytes) -> None:
        self._write(data)

    def page(self, page_id: int, title: str, data: bytes) -> None:
        self._write(data)

    def close(self, footer: bytes) -> None:
        self._write(footer)
        if self.queue is not None:
            self.queue.put(b"".join(self.chunk))
            self.queue.put(None)
            self.thread.join()
        self.f.close()
        if self.error is not None:
            raise self.error


class MultistreamSink:
    """Concatenated bz2 streams (header, blocks of pages, footer) and the index; with ``threads`` the blocks
    are compressed by a thread pool while the next ones are generated, and written in order."""

    def __init__(
        self, path: Path, index: Path, compresslevel: int, pages_per_stream: int, threads: int
    ) -> None:
        if pages_per_stream < 1:
            raise ValueError(f"pages_per_stream must be positive, got {pages_per_stream}")
        self.f = open(path, "wb")
        self.index = bz2.open(index, "wt", encoding="utf-8", compresslevel=compresslevel)
        self.level = compresslevel
        self.per_stream = pages_per_stream
        self.block: list[bytes] = []
        self.block_pages: list[tuple[int, str]] = []
        self.offset = 0
        self.streams = 0
        self.pool = ThreadPoolExecutor(threads) if threads > 0 else None
        self.max_pending = 2 * threads + 2
        self.pending: deque[tuple[Future[bytes], list[tuple[int, str]]]] = deque()

    def _stream(self, data: bytes, pages: list[tuple[int, str]]) -> None:
        if self.pool is None:
            self._write(bz2.compress(data, self.level), pages)
            return
        self.pending.append((self.pool.submit(bz2.compress, data, self.level), pages))
        while len(self.pending) > self.max_pending:
            self._drain()

    def _drain(self) -> None:
        future, pages = self.pending.popleft()
        self._write(future.result(), pages)

    def _write(self, compressed: bytes, pages: list[tuple[int, str]]) -> None:
        if pages:
            offset = self.offset
            self.index.write("".join(f"{offset}:{pid}:{title}\n" for pid, title in pages))
        self.f.write(compressed)
        self.offset += len(compressed)
        self.streams += 1

    def header(self, data: bytes) -> None:
        self._stream(data, [])

    def page(self, page_id: int, title: str, data: bytes) -> None:
        self.block.append(data)
        self.block_pages.append((page_id, title))
        if len(self.block) >= self.per_stream:
            self._flush()

    def _flush(self) -> None:
        if self.block:
            self._stream(b"".join(self.block), self.block_pages)
            self.block, self.block_pages = [], []

    def close(self, footer: bytes) -> None:
        self._flush()
        self._stream(footer, [])
        while self.pending:
            self._drain()
        if self.pool is not None:
            self.pool.shutdown()
        self.f.close()
        self.index.close()


def write_dump(
    path: Path,
    *,
    pages: int | None = None,
    target_bytes: int | None = None,
    seed: int = 0,
    pages_per_stream: int = 100,
    compresslevel: int = 9,
    kinds: dict[str, int] | None = None,
    start_id: int = 1,
    threads: int = 2,
) -> DumpManifest:
    """Write a generated pages-articles dump to ``path`` and return what it holds.

    Exactly one of ``pages`` (that many pages, kinds drawn in :data:`DEFAULT_PROPORTIONS`),
    ``target_bytes`` (pages until the uncompressed XML reaches about that size; it stops at the first page
    that reaches it, so it overshoots by less than one page) and ``kinds`` (exact counts per kind of
    :data:`KINDS`, in a seeded shuffled order) sizes the dump. Its name decides the flavour
    (:func:`flavour_of`); a multistream dump also writes its index at :func:`index_path_for`. Page ids
    increase from ``start_id`` with small gaps. The XML is the same for every flavour (a seed fixes it), and
    is written page by page: memory stays bounded at any size. ``threads`` bz2 compression threads run
    beside the generating one (0: compress inline); each multistream block is compressed on its own with
    ``compresslevel`` (9, like Wikimedia's).
    """
    if sum(x is not None for x in (pages, target_bytes, kinds)) != 1:
        raise ValueError("give exactly one of pages=, target_bytes=, kinds=")
    path = Path(path)
    flavour = flavour_of(path)
    start = time.perf_counter()
    manifest = DumpManifest(path=path, flavour=flavour)
    if flavour == "multistream":
        manifest.index_path = index_path_for(path)
        sink: PlainSink | MultistreamSink = MultistreamSink(
            path, manifest.index_path, compresslevel, pages_per_stream, threads
        )
    else:
        sink = PlainSink(path, compresslevel, flavour == "bz2", threads)
    gen = PageGenerator(seed)
    rng = gen.rng
    header, footer = HEADER.encode("utf-8"), FOOTER.encode("utf-8")
    sink.header(header)
    written = len(header) + len(footer)
    page_id = start_id
    for kind in _kind_sequence(random.Random(seed + 1_000_003), pages, target_bytes, kinds):
        if target_bytes is not None and written >= target_bytes:
            break
        page = gen.page(kind, page_id)
        data = gen.page_xml(page).encode("utf-8")
        sink.page(page_id, page.title, data)
        written += len(data)
        manifest.ids(kind).append(page_id)
        manifest.titles[page_id] = page.title
        if page.ns:
            manifest.namespaces[page_id] = page.ns
        if page.redirect is not None:
            manifest.redirect_targets[page_id] = page.redirect
        if kind in ("article", "stub"):
            manifest.prose_sentences[page_id] = page.sentences
        page_id += 1 if rng.random() < 0.6 else rng.randint(2, 9)
    sink.close(footer)
    manifest.xml_bytes = written
    manifest.streams = sink.streams
    manifest.compressed_bytes = path.stat().st_size
    manifest.seconds = time.perf_counter() - start
    return manifest
