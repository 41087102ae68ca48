"""Generated English-Wikipedia-style MediaWiki XML export dumps, for the tests of the Wikipedia
preprocessing and for its throughput benchmarks: :func:`write_dump` and what it wrote (:class:`DumpManifest`).

A dump is written exactly in the layout of Wikimedia's ``enwiki-*-pages-articles*.xml*`` files
(:mod:`~macaron_synthetic.wiki.export_format`), plain, bz2 or multistream by its name
(:mod:`~macaron_synthetic.wiki.multistream`). The wikitext is realistic (infoboxes with nested templates,
refs and named refs, links, files, galleries, tables, lists, headings, comments, entities, categories,
interlanguage links, redirects, disambiguation pages, pages of other namespaces; :mod:`~macaron_synthetic.
wiki.pages`) and carries the test oracles of :mod:`~macaron_synthetic.wiki.markers`.

Page kinds (:data:`KINDS`): ``article`` (≥ 2 prose sentences), ``stub`` (exactly one prose sentence),
``empty`` (an article with no prose at all: templates, tables, lists, categories), ``redirect``,
``other_namespace``, ``disambiguation``. :func:`write_dump` returns a :class:`DumpManifest` naming the pages
of each kind. Command line: ``python -m macaron_synthetic.wiki`` (see its ``--help``).
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from macaron_synthetic.wiki.export_format import FOOTER, HEADER
from macaron_synthetic.wiki.multistream import MultistreamSink, PlainSink, flavour_of, index_path_for
from macaron_synthetic.wiki.pages import PageGenerator

KINDS = ("article", "stub", "empty", "redirect", "other_namespace", "disambiguation")
#: Kind proportions of a dump drawn by size or page count (roughly those of enwiki pages-articles).
DEFAULT_PROPORTIONS = {"article": 0.50, "stub": 0.04, "empty": 0.01, "redirect": 0.30,
                       "other_namespace": 0.12, "disambiguation": 0.03}  # fmt: skip


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


_MANIFEST_FIELD = dict(zip(KINDS, ("articles", "stubs", "empty_articles", "redirects", "other_namespace",
                                    "disambiguation"), strict=True))  # fmt: skip


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
    flavour: str | None = None,
    threads: int = 2,
) -> DumpManifest:
    """Write a generated pages-articles dump to ``path`` and return what it holds.

    Exactly one of ``pages`` (that many pages, kinds drawn in :data:`DEFAULT_PROPORTIONS`),
    ``target_bytes`` (pages until the uncompressed XML reaches about that size; it stops at the first page
    that reaches it, so it overshoots by less than one page) and ``kinds`` (exact counts per kind of
    :data:`KINDS`, in a seeded shuffled order) sizes the dump. ``flavour`` (``plain``, ``bz2``,
    ``multistream``) defaults to :func:`~macaron_synthetic.wiki.multistream.flavour_of` the name; a
    multistream dump also writes its index at :func:`~macaron_synthetic.wiki.multistream.index_path_for`.
    Page ids increase from ``start_id`` with small gaps. The XML is the same for every flavour (a seed fixes
    it), and is written page by page: memory stays bounded at any size.
    ``threads`` bz2 compression threads run beside the generating one (0: compress inline); each
    multistream block is compressed on its own with ``compresslevel`` (9, like Wikimedia's).
    """
    if sum(x is not None for x in (pages, target_bytes, kinds)) != 1:
        raise ValueError("give exactly one of pages=, target_bytes=, kinds=")
    path = Path(path)
    flavour = flavour or flavour_of(path)
    if flavour not in ("plain", "bz2", "multistream"):
        raise ValueError(f"unknown flavour {flavour!r}")
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

