"""Streaming reader of MediaWiki XML exports (``enwiki-*-pages-articles*.xml[.bz2]``).

An export is ``<mediawiki>``, a ``<siteinfo>`` header and one ``<page>`` element per page. Inside a page's
text ``<`` is always escaped (``&lt;``), so the literal tags ``<page>`` and ``</page>`` can only be element
boundaries: pages are cut out of the decompressed bytes by searching for them (:class:`PageCutter`) and
each is parsed on its own with ElementTree. Memory holds one block of input plus one page, whatever the
size of the dump.

Compression is recognised from the first bytes, not the file name: bz2 (one stream, as in the numbered
part files ``pages-articles1.xml-p1p41242.bz2``, or many, as in ``*-multistream.xml.bz2``), gzip, or
plain XML. A multistream dump is a concatenation of independent bz2 streams of 100 pages each (the first
holds only the header, the last only ``</mediawiki>``); ``*-multistream-index.txt.bz2`` lists the byte
offset of each stream (``OFFSET:PAGE_ID:TITLE``). :func:`stream_ranges` cuts such a dump into
:class:`StreamRange`\\s of whole streams that worker processes decompress and parse independently, which is
what makes bz2 decompression parallel. Without the index the stream starts are found by their signature
(``BZh`` + block size + the block magic ``1AY&SY``).
"""

from __future__ import annotations

import bisect
import bz2
import gzip
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from macaron_workflow.errors import UserError, cannot_read

BLOCK_BYTES = 1 << 20
MAX_PAGE_BYTES = 256 << 20
"""A ``<page>`` without ``</page>`` after this many bytes means the input is not a dump; so do this many bytes
outside any ``<page>`` (before the first, between two, after the last): the cut-out bytes held in memory
never exceed it (a 645-byte bz2 of blanks after the last ``</page>`` used to grow the buffer to gigabytes)."""
WHAT_TO_GIVE = (
    "give a complete Wikipedia pages-articles dump (enwiki-YYYYMMDD-pages-articles*.xml.bz2 from "
    "dumps.wikimedia.org; download it again if its md5 differs from the dump's enwiki-YYYYMMDD-md5sums.txt)"
)
"""The fix every error saying the input is not a (complete) export ends with."""
HEADER_SEARCH_BYTES = 1 << 20
"""The ``<mediawiki>`` root must start within this many bytes."""
_BZ2_STREAM_START = re.compile(rb"BZh[1-9]1AY&SY")
_PAGE_OPEN, _PAGE_CLOSE = b"<page>", b"</page>"
_END = b"</mediawiki>"
_KEPT_END = 64  # bytes kept of a run outside pages: a tag cut between two blocks is found whole


@dataclass(frozen=True)
class Page:
    """One ``<page>``: its id, title, namespace number, whether it is a redirect, and its wikitext."""

    id: int
    title: str
    namespace: int
    redirect: bool
    text: str


@dataclass(frozen=True)
class SiteInfo:
    """The ``<siteinfo>`` header: the wiki's database name and its namespaces (number -> prefix)."""

    dbname: str
    namespaces: dict[int, str] = field(default_factory=dict)

    def namespace_of(self, title: str) -> int:
        """The namespace number of ``title`` from its prefix (for exports older than ``<ns>``)."""
        prefix, colon, _ = title.partition(":")
        if colon:
            for number, name in self.namespaces.items():
                if name and name == prefix:
                    return number
        return 0


@dataclass(frozen=True)
class StreamRange:
    """Compressed bytes ``[start, end)`` of ``path``: whole bz2 streams (``end`` is ``None``: to the end)."""

    path: Path
    start: int
    end: int | None

    @property
    def is_last(self) -> bool:
        return self.end is None


# ------------------------------------------------------------------------------------ decompression
def _magic(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(3)
    except OSError as exc:
        raise cannot_read(path, exc) from exc


def is_bz2(path: Path) -> bool:
    return _magic(path) == b"BZh"


def _corrupt(path: Path, offset: int, produced: int, reason: str) -> UserError:
    return UserError(
        f"{path}: {reason} after {offset:,} compressed bytes ({produced:,} bytes of XML decompressed): "
        "the file is truncated or corrupt; download it again"
    )


def decompress_bz2(stream_range: StreamRange, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The decompressed bytes of the bz2 streams in ``stream_range``, block by block.

    Streams follow each other (a multistream dump, or ``cat``-ed files); a range that ends inside a
    stream, or data that is not bz2, is a ``UserError`` naming the file and how far it got.
    """
    path = stream_range.path
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    with handle:
        handle.seek(stream_range.start)
        offset, produced = stream_range.start, 0
        remaining = None if stream_range.end is None else stream_range.end - stream_range.start
        decompressor, fed = bz2.BZ2Decompressor(), False
        while remaining is None or remaining > 0:
            data = handle.read(block_bytes if remaining is None else min(block_bytes, remaining))
            if not data:
                break
            if remaining is not None:
                remaining -= len(data)
            while True:  # at most block_bytes out per call: a few bytes of bz2 can hold gigabytes of blanks
                try:
                    out = decompressor.decompress(data, max_length=block_bytes)
                except (OSError, EOFError) as exc:
                    raise _corrupt(path, offset, produced, f"invalid bz2 data ({exc})") from exc
                data, fed = b"", True
                produced += len(out)
                if out:
                    yield out
                if decompressor.eof:
                    data = decompressor.unused_data
                    decompressor, fed = bz2.BZ2Decompressor(), False
                    if data and not data.startswith(b"BZh"):
                        # zero padding after the last stream is tolerated (tape-style writers add it)
                        if data.strip(b"\0"):
                            raise _corrupt(path, offset, produced, "bytes that are not a bz2 stream")
                        data = b""
                    if not data:
                        break
                elif decompressor.needs_input:
                    break
            offset = handle.tell()
        if fed and not decompressor.eof:
            raise _corrupt(path, offset, produced, "the compressed data ends inside a bz2 stream")
        if remaining:
            raise _corrupt(path, offset, produced, f"the file ends {remaining:,} bytes early")


def decompressed_blocks(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The whole export's XML, block by block, whatever its compression (bz2, gzip or none)."""
    magic = _magic(path)
    if magic == b"BZh":
        yield from decompress_bz2(StreamRange(path, 0, None), block_bytes)
        return
    opener = gzip.open if magic[:2] == b"\x1f\x8b" else open
    try:
        with opener(path, "rb") as handle:
            while block := handle.read(block_bytes):
                yield block
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise UserError(f"{path}: truncated or corrupt gzip data ({exc}); download it again") from exc
    except OSError as exc:
        raise cannot_read(path, exc) from exc


# ------------------------------------------------------------------------------------ page cutting
class PageCutter:
    """Cuts ``<page>...</page>`` elements out of consecutive blocks of XML.

    What precedes the first page is kept as :attr:`head` (the ``<mediawiki>`` + ``<siteinfo>`` header
    when the blocks start at the beginning of the export); what follows the last one as :attr:`tail`.
    """

    def __init__(self, source: Path) -> None:
        self.source = source
        self.buffer = bytearray()
        self.head: bytes | None = None
        self.pages = 0
        self.outside = 0  # bytes after the last page dropped from the buffer (only a short end is kept)
        self.closed = False  # a dropped part held </mediawiki>

    def feed(self, block: bytes) -> list[bytes]:
        buffer = self.buffer
        buffer += block
        pages, position = [], 0
        while (start := buffer.find(_PAGE_OPEN, position)) >= 0:
            end = buffer.find(_PAGE_CLOSE, start)
            if end < 0:
                if len(buffer) - start > MAX_PAGE_BYTES:
                    raise UserError(
                        f"{self.source}: a <page> element longer than {MAX_PAGE_BYTES >> 20} MB after "
                        f"{self.pages:,} pages: not a MediaWiki export, or a corrupt one; {WHAT_TO_GIVE}"
                    )
                break
            if self.head is None:
                self.head = bytes(buffer[:start])
            pages.append(bytes(buffer[start : end + len(_PAGE_CLOSE)]))
            position = end + len(_PAGE_CLOSE)
        if position:
            del buffer[:position]
            self.outside, self.closed = 0, False
        elif self.head is None and len(buffer) > HEADER_SEARCH_BYTES and b"<mediawiki" not in buffer:
            raise not_an_export(self.source, bytes(buffer[:80]))
        self.pages += len(pages)
        if _PAGE_OPEN not in buffer:  # all of it outside any <page>: bounded like a page
            if self.outside + len(buffer) > MAX_PAGE_BYTES:
                raise UserError(
                    f"{self.source}: more than {MAX_PAGE_BYTES >> 20} MB outside any <page> element after "
                    f"{self.pages:,} pages: not a MediaWiki export, or a corrupt one; {WHAT_TO_GIVE}"
                )
            if self.head is not None and len(buffer) > 2 * _KEPT_END:  # after a page: keep a short end only
                self.closed = self.closed or _END in buffer
                self.outside += len(buffer) - _KEPT_END
                del buffer[:-_KEPT_END]
        return pages

    @property
    def tail(self) -> bytes:
        """What follows the last complete page (all of the input if there was none); of a long run after a
        page, its end (and ``</mediawiki>`` if the dropped part held it)."""
        return (_END if self.closed else b"") + bytes(self.buffer)


def not_an_export(path: Path, start: bytes) -> UserError:
    return UserError(
        f"{path} is not a MediaWiki XML export (no <mediawiki> root with <page> elements; it starts with "
        f"{start[:80]!r}); {WHAT_TO_GIVE}"
    )


def parse_site_info(path: Path, head: bytes) -> SiteInfo:
    """The ``<siteinfo>`` of an export's header (the bytes before its first ``<page>``)."""
    text = head.strip()
    if b"<mediawiki" not in text:
        raise not_an_export(path, text)
    try:
        root = ET.fromstring(text + b"</mediawiki>")
    except ET.ParseError as exc:
        raise UserError(f"{path}: the <mediawiki> header is not well-formed XML ({exc})") from exc
    if not root.tag.endswith("mediawiki"):
        raise not_an_export(path, text)
    namespaces = {
        int(element.get("key", "0")): (element.text or "")
        for element in root.iterfind("{*}siteinfo/{*}namespaces/{*}namespace")
    }
    return SiteInfo(root.findtext("{*}siteinfo/{*}dbname") or "", namespaces)


def parse_page(path: Path, chunk: bytes, site: SiteInfo | None = None) -> Page:
    """One ``<page>`` element (cut out by :class:`PageCutter`, so without the export's XML namespace)."""
    try:
        element = ET.fromstring(chunk)
        title = element.findtext("title") or ""
        page_id = int(element.findtext("id") or "")
    except (ET.ParseError, ValueError) as exc:
        raise UserError(f"{path}: malformed <page> element ({exc}): {chunk[:120]!r}") from exc
    namespace = element.findtext("ns")
    return Page(
        id=page_id,
        title=title,
        namespace=int(namespace) if namespace else (site.namespace_of(title) if site else 0),
        redirect=element.find("redirect") is not None,
        text=element.findtext("revision/text") or "",
    )


def read_site_info(path: Path) -> SiteInfo:
    """The export's ``<siteinfo>``, reading no further than its first page (or the first MB)."""
    cutter = PageCutter(path)
    for block in decompressed_blocks(path, block_bytes=1 << 16):
        if cutter.feed(block) or cutter.head is not None:
            break
        if len(cutter.buffer) > HEADER_SEARCH_BYTES:
            break
    head = cutter.head if cutter.head is not None else cutter.tail
    return parse_site_info(path, head)


def check_end(path: Path, cutter: PageCutter) -> None:
    """After the last page of an export: a ``</mediawiki>`` must follow, nothing else."""
    tail = cutter.tail
    if _PAGE_OPEN in tail:
        raise UserError(
            f"{path}: the XML ends inside a <page> element after {cutter.pages:,} complete pages "
            f"(truncated file?); {WHAT_TO_GIVE}"
        )
    if b"</mediawiki>" not in tail:
        raise UserError(
            f"{path}: no closing </mediawiki> after {cutter.pages:,} pages: the file is truncated "
            f"(or not a MediaWiki export); {WHAT_TO_GIVE}"
        )


def iter_page_chunks(path: Path) -> Iterator[bytes]:
    """Every ``<page>`` element of the export at ``path``, in order, checked to be complete."""
    cutter = PageCutter(path)
    checked_head = False
    for block in decompressed_blocks(path):
        chunks = cutter.feed(block)
        if chunks and not checked_head:
            parse_site_info(path, cutter.head or b"")
            checked_head = True
        yield from chunks
    if not checked_head:
        parse_site_info(path, cutter.tail)  # raises if it is not an export at all
    check_end(path, cutter)


# ---------------------------------------------------------------------------------- multistream
def index_path(dump: Path) -> Path | None:
    """``X-multistream-index.txt.bz2`` next to ``X-multistream.xml.bz2``, if the name has that shape."""
    name = dump.name
    if "multistream" not in name or not name.endswith(".xml.bz2"):
        return None
    return dump.with_name(name[: -len(".xml.bz2")] + "-index.txt.bz2")


def offsets_from_index(index: Path, dump_size: int) -> list[int]:
    """The distinct stream offsets listed in a multistream index (``OFFSET:PAGE_ID:TITLE`` lines)."""
    offsets: set[int] = set()
    try:
        with bz2.open(index, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                head, _, _ = line.partition(":")
                if not head.isdigit() or int(head) >= dump_size:
                    raise UserError(
                        f"{index}:{number}: not a multistream index line for a dump of "
                        f"{dump_size:,} bytes: {line.strip()[:100]!r}"
                    )
                offsets.add(int(head))
    except (OSError, EOFError) as exc:
        raise UserError(f"{index}: unreadable multistream index ({exc}); delete or re-download it") from exc
    return sorted(offsets)


def offsets_by_scanning(path: Path, block_bytes: int = 16 << 20) -> list[int]:
    """Start offsets of the bz2 streams of ``path``, found by their signature."""
    offsets, position, carry = [], 0, b""
    overlap = 9
    with open(path, "rb") as handle:
        while block := handle.read(block_bytes):
            data = carry + block
            base = position - len(carry)
            for match in _BZ2_STREAM_START.finditer(data):
                offset = base + match.start()
                if not offsets or offset > offsets[-1]:
                    offsets.append(offset)
            position += len(block)
            carry = data[-overlap:]
    return offsets


def stream_ranges(path: Path, unit_bytes: int, min_parts: int = 1) -> list[StreamRange]:
    """``path`` (bz2) as ranges of whole streams of about ``unit_bytes`` compressed bytes each (at least
    ``min_parts`` of them when it has that many streams), in order; one range if it has a single stream.
    The multistream index is used when it lies next to the dump."""
    size = path.stat().st_size
    index = index_path(path)
    if index is not None and index.exists():
        offsets = sorted({0, *offsets_from_index(index, size)})
    else:
        offsets = offsets_by_scanning(path)
    if not offsets or offsets[0] != 0:
        raise UserError(f"{path}: does not start with a bz2 stream")
    parts = max(min_parts, size // max(1, unit_bytes))
    if len(offsets) == 1 or parts <= 1:
        return [StreamRange(path, 0, None)]
    cuts = [0]
    for i in range(1, parts):
        # the first stream starting at or after an equal share of the compressed size
        position = bisect.bisect_left(offsets, size * i // parts)
        if position < len(offsets) and offsets[position] > cuts[-1]:
            cuts.append(offsets[position])
    ends: list[int | None] = [*cuts[1:], None]
    return [StreamRange(path, start, end) for start, end in zip(cuts, ends, strict=True)]


def batched_chunks(chunks: Iterable[bytes], batch_bytes: int) -> Iterator[list[bytes]]:
    """Consecutive lists of page chunks of about ``batch_bytes`` together."""
    batch: list[bytes] = []
    size = 0
    for chunk in chunks:
        batch.append(chunk)
        size += len(chunk)
        if size >= batch_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
