"""English prose from Debian's Python documentation (``python3.11-doc``) in the BookCorpus layout.

    python -m macaron_preprocess.sources.python_docs --dest DIR [--html /usr/share/doc/python3.11/html]
        [--install]

The package installs the HTML documentation of Python (the tutorial, the library and language references,
the HOWTOs, "What's New": about 530 pages, 67 MB of HTML) under ``/usr/share/doc/python3.11/html``. Each
page becomes one document, ``DIR/<page path>.txt``, paragraphs separated by blank lines — the layout
:mod:`macaron_preprocess.sources.bookcorpus` reads (``python -m macaron_preprocess.bert_corpus --bookcorpus
DIR``).

What is kept (:class:`ProseExtractor`): the text of the page's main part (Sphinx's ``div role="main"``),
one paragraph per ``p``/``li``/``dd``/``blockquote`` block. Left out: code (``pre``, and the
``div.highlight`` around it), tables, definition headers (``dt``: function signatures), headings,
navigation, scripts and styles, and Sphinx's ``¶`` permalinks. Inline code inside a sentence stays (it is
part of the sentence). Pages whose main part has no prose (the index pages) are skipped and counted.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from macaron_workflow import processes
from macaron_workflow.atomic import atomic_output
from macaron_workflow.cli import ArgumentParser, add_deprecated_alias, run_cli
from macaron_workflow.errors import ReportedError, UserError

DEFAULT_HTML = Path("/usr/share/doc/python3.11/html")
PACKAGE = "python3.11-doc"

#: elements whose text is dropped, with everything inside them
SKIPPED = {"pre", "script", "style", "table", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "nav", "head"}
#: elements that end a paragraph
BLOCKS = {"p", "li", "dd", "blockquote", "div", "section", "ul", "ol", "dl", "br", "figure", "caption"}
VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "col", "area", "base", "source"}
_SPACES = re.compile(r"\s+")


class ProseExtractor(HTMLParser):
    """The paragraphs of a Sphinx page's ``role="main"`` element (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._current: list[str] = []
        self._stack: list[tuple[str, bool, bool]] = []  # (tag, opens main, opens a skipped part)
        self._in_main = 0
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            if tag == "br":
                self._flush()
            return
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        main = attributes.get("role") == "main"
        skip = tag in SKIPPED or "highlight" in classes or "headerlink" in classes
        self._stack.append((tag, main, skip))
        self._in_main += main
        if skip:
            self._skipping += 1
        if tag in BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or not any(open_tag == tag for open_tag, _, _ in self._stack):
            return  # a stray end tag
        while self._stack:
            open_tag, main, skip = self._stack.pop()
            self._in_main -= main
            self._skipping -= skip
            if open_tag == tag:
                break
        if tag in BLOCKS or tag in SKIPPED:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_main and not self._skipping:
            self._current.append(data)

    def _flush(self) -> None:
        text = _SPACES.sub(" ", "".join(self._current)).replace("¶", "").strip()
        self._current = []
        if text:
            self.paragraphs.append(text)

    def close(self) -> None:
        super().close()
        self._flush()


def page_paragraphs(html: str) -> list[str]:
    parser = ProseExtractor()
    parser.feed(html)
    parser.close()
    return parser.paragraphs


@dataclass
class ConversionSummary:
    source: str
    pages: int = 0
    documents: int = 0
    skipped_no_prose: int = 0
    paragraphs: int = 0
    words: int = 0
    html_bytes: int = 0
    text_bytes: int = 0
    skipped_pages: list[str] = field(default_factory=list)


def convert(html_dir: Path, out: Path) -> ConversionSummary:
    """Every ``*.html`` under ``html_dir`` (but Sphinx's ``_static``/``_sources``/``_images``) to
    ``out/<relative path>.txt``; written through :func:`macaron_workflow.atomic.atomic_output`, so a
    half-converted directory never stands at ``out``."""
    pages = sorted(
        p
        for p in html_dir.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(html_dir).parts)
    )
    if not pages:
        raise UserError(f"{html_dir}: no HTML pages (is {PACKAGE} installed? use --install)")
    summary = ConversionSummary(source=str(html_dir))
    with atomic_output(out) as tmp:
        tmp.mkdir()
        for page in pages:
            summary.pages += 1
            data = page.read_bytes()
            summary.html_bytes += len(data)
            paragraphs = page_paragraphs(data.decode("utf-8", errors="replace"))
            relative = page.relative_to(html_dir).with_suffix(".txt")
            if not paragraphs:
                summary.skipped_no_prose += 1
                summary.skipped_pages.append(relative.as_posix())
                continue
            text = "\n\n".join(paragraphs) + "\n"
            target = tmp / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            summary.documents += 1
            summary.paragraphs += len(paragraphs)
            summary.words += sum(len(p.split()) for p in paragraphs)
            summary.text_bytes += len(text.encode("utf-8"))
    return summary


def install(package: str = PACKAGE) -> None:
    """``apt-get install -y PACKAGE`` (after ``apt-get update``)."""
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", package]):
        proc = processes.run(command, capture=True)
        if proc.status != 0:
            raise ReportedError(f"{' '.join(command)} failed ({proc.status}): {proc.output[-2000:]}")


def main(argv: list[str] | None = None) -> None:
    ap = ArgumentParser(
        prog="python -m macaron_preprocess.sources.python_docs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--dest", type=Path, required=True, help="the books directory to write")
    add_deprecated_alias(ap, "--out", "--dest")
    ap.add_argument("--html", type=Path, default=DEFAULT_HTML, help=f"default: {DEFAULT_HTML}")
    ap.add_argument("--install", action="store_true", help=f"apt-get install {PACKAGE} when it is missing")
    a = ap.parse_args(argv)
    if not a.html.is_dir():
        if not a.install:
            raise UserError(f"{a.html}: not a directory (apt-get install {PACKAGE}, or --install)")
        install()
    summary = convert(a.html, a.dest)
    print(json.dumps({k: v for k, v in summary.__dict__.items() if k != "skipped_pages"}, indent=2))


if __name__ == "__main__":
    run_cli(main, "python -m macaron_preprocess.sources.python_docs")
