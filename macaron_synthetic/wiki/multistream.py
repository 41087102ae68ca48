"""Writing a dump file in one of three flavours chosen by its name: ``*.xml`` plain XML; ``*.xml.bz2`` and
part files ``*.xml-p1p41242.bz2`` one bz2 stream of the whole file; ``*multistream*.bz2`` Wikimedia's
multistream layout — a first bz2 stream with only the header (``<mediawiki ...>`` + ``<siteinfo>``), one
stream per ``pages_per_stream`` ``<page>`` elements, a last stream with only ``</mediawiki>\\n``, all
concatenated — plus its index ``*-multistream-index.txt.bz2`` (``OFFSET:PAGEID:TITLE`` per page, OFFSET the
byte offset in the dump of the stream holding the page, the title unescaped)."""

from __future__ import annotations

import bz2
import queue
import re
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

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

