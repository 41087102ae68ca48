"""Wikipedia pages -> text passages, following BERT's rule for its Wikipedia corpus: "we only extract the
text passages and ignore lists, tables, and headers" (Devlin et al. 2019, §3.1).

Which pages count: articles only (namespace 0), no redirects, no disambiguation pages
(:func:`drop_reason`). The wikitext of an article is cleaned by ``wikiextractor`` (3.1.0), composed as a
library: its :class:`~wikiextractor.extract.Extractor` drops templates, tables, references, comments,
files and list items, and with ``keepSections=False`` it writes no headings. What it lets through is then
filtered here (:func:`is_text_passage`): paragraphs left with markup (``[[``, ``{{``, ``|``-table rows, tags,
HTML entities, its ``formula_1``/``codice_1`` placeholders for ``<math>``/``<code>``) and lines that are not
prose (no sentence-final punctuation: headings written as lines, captions, list-like remnants). Indented
and definition-list lines (``:``, ``;``), which it keeps, are removed before it runs, and the empty
parentheses dropped templates leave behind (``Granmouth ({{IPA|...}})`` -> ``Granmouth ()``) after.

Known loss (documented in docs/pretraining_data.md): templates are dropped, not expanded, so a value
written with ``{{convert|80|kg}}`` leaves a gap in its sentence, as in every wikiextractor-based corpus.
"""

from __future__ import annotations

import logging
import re

from wikiextractor.extract import Extractor

from macaron_preprocess.sources.mediawiki import Page

DROP_REASONS = ("redirect", "other_namespace", "disambiguation", "empty", "too_short")
"""Why a page or document is not in the corpus, in the order the summary lists them."""

_REDIRECT = re.compile(r"\s*#\s*redirect\b", re.IGNORECASE)
# {{Disambiguation}}, {{disambig}}, {{Dab}}, {{Hndis}}, {{Geodis}}, {{Disambiguation|surname}},
# {{Human name disambiguation}}, {{Set index article}} is not one (it is an article).
_DISAMBIGUATION_TEMPLATE = re.compile(
    r"\{\{\s*(?:[\w ]*\bdisambiguation|disambig\w*|dab|dis|[a-z]+dis)\s*(?:\||\}\})", re.IGNORECASE
)
_MARKUP_REMNANT = re.compile(
    r"\[\[|\]\]|\{\{|\}\}|\{\||\|\}|^\s*[|!]|\|\||</?[a-zA-Z][^>]*>|&[a-zA-Z]+;|&#\d+;|__[A-Z]+__"
)
_INDENTED_OR_DEFINITION_LINE = re.compile(r"^[:;][^\n]*", re.MULTILINE)
_EMPTY_PARENTHESES = re.compile(r"\s*\(\s*[,;]?\s*\)")
_PLACEHOLDER = re.compile(r"\b(?:formula|codice)_\d+\b")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]»]*\s*$")
_SPACES = re.compile(r"[ \t\u00a0\u2009\u200a\u202f]+")

logging.getLogger("wikiextractor.extract").setLevel(logging.ERROR)  # it warns per unknown template


def is_disambiguation(page: Page) -> bool:
    return page.title.endswith("(disambiguation)") or bool(_DISAMBIGUATION_TEMPLATE.search(page.text))


def drop_reason(page: Page) -> str | None:
    """Why ``page`` is not an article to extract (one of :data:`DROP_REASONS`), or ``None``."""
    if page.namespace != 0:
        return "other_namespace"
    if page.redirect or _REDIRECT.match(page.text):
        return "redirect"
    if is_disambiguation(page):
        return "disambiguation"
    return None


def is_text_passage(paragraph: str) -> bool:
    """Whether a cleaned paragraph is prose: no markup left, and it ends like a sentence."""
    return (
        bool(paragraph)
        and not _MARKUP_REMNANT.search(paragraph)
        and not _PLACEHOLDER.search(paragraph)
        and bool(_SENTENCE_END.search(paragraph))
    )


def article_paragraphs(page: Page) -> tuple[list[str], int]:
    """The text passages of an article, and the number of cleaned paragraphs rejected as non-prose."""
    extractor = Extractor(page.id, 0, "", page.title, [], keepSections=False)
    # wikiextractor keeps indented lines (":" with the colon stripped): definition lists, quotes, hatnotes
    text = _INDENTED_OR_DEFINITION_LINE.sub("", page.text)
    cleaned = extractor.clean_text(text, mark_headers=False, expand_templates=False, html_safe=False)
    passages, rejected = [], 0
    for paragraph in cleaned:
        paragraph = _SPACES.sub(" ", _EMPTY_PARENTHESES.sub("", paragraph)).strip()
        if not paragraph:
            continue
        if is_text_passage(paragraph):
            passages.append(paragraph)
        else:
            rejected += 1
    return passages, rejected
