"""The test oracles written into every generated page and book: words that trace prose, and markers that
flag what a correct extraction must drop.

* every prose sentence of an article contains the article's own word :func:`article_word` (``artword``
  + page id, once per sentence; match it as a whole word: ``artword12`` is a prefix of ``artword123``) —
  so the sentences kept from a document, and the split they landed in, can be traced; every narrative
  sentence of a book contains :func:`book_word` of its id likewise;
* every non-prose element carries a marker word that never occurs in prose: headings
  (:data:`MARK_HEADING`), list items (:data:`MARK_LIST`), table cells (:data:`MARK_TABLE`), infobox
  values (:data:`MARK_INFOBOX`), file and gallery captions (:data:`MARK_CAPTION`), reference texts
  (:data:`MARK_REF`), category names (:data:`MARK_CATEGORY`), templates with visible text
  (:data:`MARK_TEMPLATE`), comments (:data:`MARK_COMMENT`), interlanguage links (:data:`MARK_INTERWIKI`);
  and the bodies of pages that must be dropped carry :data:`MARK_REDIRECT`, :data:`MARK_DISAMBIGUATION`,
  :data:`MARK_TALK` (Talk and User talk pages) or :data:`MARK_NAMESPACE` (the other namespaces) — their
  prose sentences carry the marker where an article's carry its word. :data:`MARKERS` lists them all;
  none of them survives a correct extraction. Exceptions, on purpose as in real articles: the standard
  section headings ("See also", "Notes", "References", "Further reading", "External links") carry no
  marker, nor do templates inside prose sentences (``{{convert}}``, ``{{lang}}``, ``{{IPA}}``, ``{{snd}}``,
  ``{{sfn}}``, ``{{citation needed}}``: a cleaner may drop or expand them) and templates without
  visible text (``{{Reflist}}``, ``{{Use dmy dates}}``, ``{{DEFAULTSORT:...}}``, ...).
"""

from __future__ import annotations

from pathlib import Path

MARK_HEADING = "Zqheading"
MARK_LIST = "Zqlistitem"
MARK_TABLE = "Zqtable"
MARK_INFOBOX = "Zqinfobox"
MARK_CAPTION = "Zqcaption"
MARK_REF = "Zqref"
MARK_CATEGORY = "Zqcategory"
MARK_TEMPLATE = "Zqtemplate"
MARK_COMMENT = "Zqcomment"
MARK_INTERWIKI = "Zqinterwiki"
MARK_REDIRECT = "Zqredirect"
MARK_DISAMBIGUATION = "Zqdisamb"
MARK_TALK = "Zqtalk"
MARK_NAMESPACE = "Zqnamespace"
#: Every marker: those of markup (none may survive the extraction of an article), then those of the bodies
#: of pages that must be dropped whole.
MARKERS = (
    MARK_HEADING,
    MARK_LIST,
    MARK_TABLE,
    MARK_INFOBOX,
    MARK_CAPTION,
    MARK_REF,
    MARK_CATEGORY,
    MARK_TEMPLATE,
    MARK_COMMENT,
    MARK_INTERWIKI,
    MARK_REDIRECT,
    MARK_DISAMBIGUATION,
    MARK_TALK,
    MARK_NAMESPACE,
)

ARTICLE_WORD_PREFIX = "artword"
BOOK_WORD_PREFIX = "bookword"


def article_word(page_id: int) -> str:
    """The word that every prose sentence of article ``page_id`` contains (``artword<id>``)."""
    return f"{ARTICLE_WORD_PREFIX}{page_id}"


def book_word(book_id: int) -> str:
    """The word that every narrative sentence of book ``book_id`` contains (``bookword<id>``)."""
    return f"{BOOK_WORD_PREFIX}{book_id}"


def book_id(path: Path) -> int:
    """The id of a generated book, from its file name ``<id>__<slug>.txt``."""
    return int(Path(path).name.split("__", 1)[0])
