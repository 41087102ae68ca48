"""Tests of the generated Wikipedia dumps and BookCorpus-style books (macaron_synthetic.wiki)."""

from __future__ import annotations

import bz2
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from macaron_synthetic.wiki import __main__ as cli
from macaron_synthetic.wiki import books as wb
from macaron_synthetic.wiki import dump as wd
from macaron_synthetic.wiki import export_format as fmt
from macaron_synthetic.wiki import markers as mk
from macaron_synthetic.wiki import prose as wiki_prose
from macaron_synthetic.wiki import vocabulary as voc

NS = {"m": "http://www.mediawiki.org/xml/export-0.11/"}
KINDS = {"article": 6, "stub": 2, "empty": 2, "redirect": 5, "other_namespace": 8, "disambiguation": 2}


def _xml_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return bz2.decompress(data) if path.suffix == ".bz2" else data  # bz2.decompress reads every stream


def _pages(root: ET.Element) -> list[ET.Element]:
    return root.findall("m:page", NS)


def _text(page: ET.Element) -> str:
    return page.find("m:revision/m:text", NS).text or ""


@pytest.mark.parametrize(
    "name",
    [
        "enwiki-20250101-pages-articles.xml",
        "enwiki-20250101-pages-articles.xml.bz2",
        "enwiki-20250101-pages-articles1.xml-p1p41242.bz2",
        "enwiki-20250101-pages-articles-multistream.xml.bz2",
    ],
)
def test_dump_parses_with_requested_kinds(tmp_path: Path, name: str) -> None:
    m = wd.write_dump(tmp_path / name, kinds=KINDS, seed=3)
    data = _xml_bytes(tmp_path / name)
    assert len(data) == m.xml_bytes
    root = ET.fromstring(data)
    assert root.get("version") == "0.11"
    siteinfo = root.find("m:siteinfo", NS)
    assert siteinfo.find("m:dbname", NS).text == "enwiki"
    namespaces = siteinfo.findall("m:namespaces/m:namespace", NS)
    assert [(int(n.get("key")), n.text or "") for n in namespaces] == list(fmt.NAMESPACES)

    pages = _pages(root)
    assert m.counts() == {k: KINDS.get(k, 0) for k in wd.KINDS}
    assert len(pages) == sum(KINDS.values()) == m.pages
    ids = [int(p.find("m:id", NS).text) for p in pages]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    kind_of = {i: k for k in wd.KINDS for i in m.ids(k)}
    for page, pid in zip(pages, ids, strict=True):
        text = _text(page)
        text_el = page.find("m:revision/m:text", NS)
        assert int(text_el.get("bytes")) == len(text.encode("utf-8"))
        assert text_el.get("sha1") == page.find("m:revision/m:sha1", NS).text == fmt.sha1_base36(text)
        assert page.find("m:title", NS).text == m.titles[pid]
        ns = int(page.find("m:ns", NS).text)
        redirect = page.find("m:redirect", NS)
        kind = kind_of[pid]
        assert (ns != 0) == (kind == "other_namespace")
        assert (redirect is not None) == (kind == "redirect")
        if kind == "redirect":
            assert redirect.get("title") == m.redirect_targets[pid]
            assert re.match(r"#redirect ?\[\[", text, re.IGNORECASE)
            assert mk.MARK_REDIRECT in text
        elif kind == "other_namespace":
            assert m.titles[pid].split(":")[0] in dict((v, k) for k, v in fmt.NAMESPACES)
            assert mk.MARK_NAMESPACE in text or mk.MARK_TALK in text
        elif kind == "disambiguation":
            assert mk.MARK_DISAMBIGUATION in text and re.search(r"\{\{(Disambiguation|hndis|geodis)", text)
        elif kind in ("article", "stub"):
            assert text.count(mk.article_word(pid)) == m.prose_sentences[pid]
        else:
            assert mk.ARTICLE_WORD_PREFIX not in text
    assert all(m.prose_sentences[i] >= 2 for i in m.articles)
    assert all(m.prose_sentences[i] == 1 for i in m.stubs)


def test_xml_escapes_text_titles_and_attributes(tmp_path: Path) -> None:
    m = wd.write_dump(tmp_path / "d.xml", pages=300, seed=1)
    raw = (tmp_path / "d.xml").read_text(encoding="utf-8")
    assert "&amp;nbsp;" in raw and "&lt;ref" in raw and "&quot;" in raw and "&amp;" in raw
    assert any("&" in t for t in m.titles.values())  # "X & Y Railway" titles
    for title in m.titles.values():
        if "&" in title:
            assert f"<title>{fmt.xml_escape(title)}</title>" in raw
    ET.fromstring(raw)


def _streams(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, decompressed) of each bz2 stream of a multistream file."""
    out, offset = [], 0
    while offset < len(data):
        d = bz2.BZ2Decompressor()
        text = d.decompress(data[offset:])
        assert d.eof
        out.append((offset, text))
        offset = len(data) - len(d.unused_data)
    return out


def test_multistream_layout_and_index(tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20250101-pages-articles-multistream.xml.bz2"
    m = wd.write_dump(path, kinds=KINDS, seed=5, pages_per_stream=7, compresslevel=1)
    assert m.index_path == tmp_path / "enwiki-20250101-pages-articles-multistream-index.txt.bz2"
    streams = _streams(path.read_bytes())
    n_pages = sum(KINDS.values())
    assert len(streams) == m.streams == 2 + -(-n_pages // 7)
    assert streams[0][1].decode() == fmt.HEADER
    assert streams[-1][1].decode() == fmt.FOOTER == "</mediawiki>\n"

    index = bz2.decompress(m.index_path.read_bytes()).decode("utf-8").splitlines()
    assert len(index) == n_pages
    by_offset: dict[int, list[int]] = {}
    for line in index:
        offset, pid, title = line.split(":", 2)
        assert m.titles[int(pid)] == title  # unescaped, may hold ":" (other namespaces)
        by_offset.setdefault(int(offset), []).append(int(pid))
    page_streams = dict(streams[1:-1])
    assert sorted(by_offset) == sorted(page_streams)
    for offset, ids in by_offset.items():
        text = page_streams[offset].decode("utf-8")
        assert text.startswith("  <page>\n") and text.endswith("  </page>\n")
        root = ET.fromstring(f"<x xmlns='{NS['m']}'>{text}</x>")
        assert [int(p.find("m:id", NS).text) for p in _pages(root)] == ids
        assert len(ids) <= 7

    plain = tmp_path / "same.xml"
    wd.write_dump(plain, kinds=KINDS, seed=5)
    assert b"".join(text for _, text in streams) == plain.read_bytes()


def test_multistream_inline_and_threaded_compression_agree(tmp_path: Path) -> None:
    a, b = tmp_path / "a-multistream.xml.bz2", tmp_path / "b-multistream.xml.bz2"
    wd.write_dump(a, pages=60, seed=2, pages_per_stream=10, compresslevel=1, threads=0)
    wd.write_dump(b, pages=60, seed=2, pages_per_stream=10, compresslevel=1, threads=2)
    assert a.read_bytes() == b.read_bytes()
    assert bz2.decompress((tmp_path / "a-multistream-index.txt.bz2").read_bytes()) == bz2.decompress(
        (tmp_path / "b-multistream-index.txt.bz2").read_bytes()
    )


def test_index_names_follow_wikimedia() -> None:
    assert wd.index_path_for(Path("d/enwiki-x-pages-articles-multistream.xml.bz2")) == Path(
        "d/enwiki-x-pages-articles-multistream-index.txt.bz2"
    )
    assert wd.index_path_for(Path("enwiki-x-pages-articles-multistream3.xml-p151574p311329.bz2")) == Path(
        "enwiki-x-pages-articles-multistream-index3.txt-p151574p311329.bz2"
    )
    assert wd.flavour_of(Path("enwiki-x-pages-articles1.xml-p1p41242.bz2")) == "bz2"
    assert wd.flavour_of(Path("a.xml")) == "plain"
    with pytest.raises(ValueError):
        wd.flavour_of(Path("a.txt"))


def test_target_bytes_and_proportions(tmp_path: Path) -> None:
    m = wd.write_dump(tmp_path / "d.xml", target_bytes=3_000_000, seed=4)
    size = (tmp_path / "d.xml").stat().st_size
    assert size == m.xml_bytes
    assert abs(size - 3_000_000) <= 0.05 * 3_000_000
    counts = m.counts()
    assert counts["article"] > counts["redirect"] > counts["other_namespace"] > counts["disambiguation"] > 0
    assert 0.4 < counts["article"] / m.pages < 0.6


def test_seeds_and_start_ids(tmp_path: Path) -> None:
    a = wd.write_dump(tmp_path / "a.xml", pages=80, seed=7)
    wd.write_dump(tmp_path / "b.xml", pages=80, seed=7)
    wd.write_dump(tmp_path / "c.xml", pages=80, seed=8)
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()
    assert (tmp_path / "a.xml").read_bytes() != (tmp_path / "c.xml").read_bytes()
    second = wd.write_dump(tmp_path / "d.xml", pages=80, seed=9, start_id=max(a.titles) + 1)
    assert min(second.titles) > max(a.titles)
    assert min(a.titles) == 1


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        wd.write_dump(tmp_path / "d.xml")
    with pytest.raises(ValueError):
        wd.write_dump(tmp_path / "d.xml", pages=3, target_bytes=10)
    with pytest.raises(ValueError):
        wd.write_dump(tmp_path / "d.xml", kinds={"articles": 3})


def test_every_template_fills() -> None:
    v = voc.Vocabulary(0, random.Random(0))
    templates = [
        *wiki_prose.SENTENCES,
        *wiki_prose.SIMPLE_STUB_LEADS,
        *(t for leads in wiki_prose.LEADS.values() for t in leads),
        *wiki_prose.REFS,
        *wiki_prose.INFOBOXES,
        wiki_prose.TABLE_HEAD,
        *wiki_prose.TABLE_ROWS,
        *wiki_prose.LIST_ITEMS,
        *wiki_prose.FILES,
        *wiki_prose.CATEGORIES,
        *wiki_prose.EXTERNAL,
        *wiki_prose.TEMPLATES,
        *wiki_prose.COMMENTS,
        wiki_prose.GALLERY,
        *wiki_prose.DEFINITIONS,
        *wb.BOOK_SENTENCES,
    ]
    for template in templates:
        filled = v.fill(template.replace("$title", "Title").replace("$M_REF", "X").replace("$M", "X"))
        assert not re.search(r"\$[A-Za-z_]", filled), template
    for template in (*wiki_prose.SENTENCES, *wb.BOOK_SENTENCES):
        assert template.count("$T") == 1, template
    for template in wiki_prose.SENTENCES:
        assert not re.search(r"\bZq", template)


def test_prose_never_holds_a_marker(tmp_path: Path) -> None:
    m = wd.write_dump(tmp_path / "d.xml", kinds={"article": 40}, seed=6)
    root = ET.parse(tmp_path / "d.xml").getroot()
    for page in _pages(root):
        pid = int(page.find("m:id", NS).text)
        text = re.sub(r"<ref[^>/]*>.*?</ref>|<!--.*?-->", "", _text(page), flags=re.DOTALL)
        for line in text.splitlines():
            if mk.article_word(pid) in line:  # a prose paragraph (refs removed)
                assert not any(marker in line for marker in mk.MARKERS), line
    assert m.articles


def test_wikiextractor_keeps_the_prose(tmp_path: Path) -> None:
    extract = pytest.importorskip("wikiextractor.extract")
    m = wd.write_dump(
        tmp_path / "d.xml", kinds={"article": 30, "stub": 4, "empty": 4, "disambiguation": 4}, seed=2
    )
    root = ET.parse(tmp_path / "d.xml").getroot()
    kind_of = {i: k for k in wd.KINDS for i in m.ids(k)}
    for page in _pages(root):
        pid = int(page.find("m:id", NS).text)
        lines = extract.Extractor(str(pid), "1", "", m.titles[pid], [], keepSections=False).clean_text(
            _text(page), mark_headers=False, expand_templates=False, html_safe=False
        )
        word = mk.article_word(pid)
        kind = kind_of[pid]
        if kind in ("article", "stub"):
            assert len(re.findall(rf"\b{word}\b", "\n".join(lines))) == m.prose_sentences[pid]
            for line in lines:  # prose, or a ":" definition line that wikiextractor keeps
                assert (word in line) != (mk.MARK_LIST in line), line
        elif kind == "empty":
            assert not [line for line in lines if line.strip()]
        else:
            assert all(mk.MARK_DISAMBIGUATION in line for line in lines)


def test_books(tmp_path: Path) -> None:
    paths = wb.write_books(tmp_path / "books", 4, seed=1, paragraphs=(3, 6))
    assert len(paths) == 4 and len({mk.book_id(p) for p in paths}) == 4
    for path in paths:
        assert re.fullmatch(r"\d+__[a-z0-9-]+\.txt", path.name)
        text = path.read_text(encoding="utf-8")
        paragraphs = text.strip().split("\n\n")
        word = mk.book_word(mk.book_id(path))
        prose = [p for p in paragraphs if word in p]
        assert 3 <= len(prose) <= 6
        assert "Smashwords Edition" in paragraphs[:5] and word not in paragraphs[0]
    again = wb.write_books(tmp_path / "again", 4, seed=1, paragraphs=(3, 6))
    assert [p.read_bytes() for p in paths] == [p.read_bytes() for p in again]


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "enwiki-pages-articles-multistream.xml.bz2"
    assert (
        cli.main(["--out", str(out), "--mb", "0.3", "--books-dir", str(tmp_path / "b"), "--books", "2"]) == 0
    )
    printed = capsys.readouterr().out
    assert "MB/s" in printed and "index" in printed and "2 books" in printed
    assert out.exists() and (tmp_path / "enwiki-pages-articles-multistream-index.txt.bz2").exists()
    assert len(list((tmp_path / "b").glob("*.txt"))) == 2
