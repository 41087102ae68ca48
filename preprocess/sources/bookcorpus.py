"""BookCorpus as the public crawl scripts write it: a directory of books, one UTF-8 ``.txt`` per book,
paragraphs separated by blank lines (``soskek/bookcorpus`` writes ``out_txts/<book>.txt``; other dumps
nest them in sub-directories, which are searched too). A book is a document.

A book that is not valid UTF-8 is an older crawl's cp1252 or Latin-1 text: it is decoded as cp1252 (the
Windows superset of Latin-1, with curly quotes and dashes in 0x80-0x9F), or as Latin-1 where cp1252 leaves
a byte undefined, and counted and named in the summary (``decoded_files``). Only a file that is not text —
it contains NUL bytes or other control characters (a PDF or EPUB saved under ``.txt``) — is skipped and
counted (``binary``), and the first few names are printed; neither stops a run over 17,000 books. A
directory without any ``.txt`` is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from macaron_workflow.errors import UserError, cannot_read
from macaron_workflow.files import UTF8_BOM

SKIP_REASONS = ("binary",)
FALLBACK_ENCODINGS = ("cp1252", "latin-1")
"""Tried in this order on a book that is not UTF-8 (Latin-1 decodes any byte)."""
#: C0 control characters that do not occur in text (everything below 0x20 except \t \n \v \f \r, ESC)
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
BINARY_CONTROL_FRACTION = 0.001
"""A decoded file with more control characters than this fraction of its characters is binary."""
_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Book:
    """A book's document key (its path relative to the books directory) and its paragraphs."""

    key: str
    paragraphs: list[str]
    encoding: str = "utf-8"
    """How the file was decoded: ``utf-8``, or one of :data:`FALLBACK_ENCODINGS`."""


def book_files(directory: Path) -> list[Path]:
    """The ``.txt`` files under ``directory``, sorted; an error if there is none."""
    if not directory.is_dir():
        raise UserError(f"--bookcorpus {directory} is not a directory")
    files = sorted(path for path in directory.rglob("*.txt") if path.is_file())
    if not files:
        raise UserError(
            f"--bookcorpus {directory} holds no .txt files (expected one UTF-8 .txt per book, paragraphs "
            "separated by blank lines)"
        )
    return files


def _decode_fallback(data: bytes) -> tuple[str, str]:
    for encoding in FALLBACK_ENCODINGS[:-1]:
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    return data.decode(FALLBACK_ENCODINGS[-1]), FALLBACK_ENCODINGS[-1]  # Latin-1 decodes every byte


def decode_book(data: bytes) -> tuple[str, str] | None:
    """``(text, encoding)``: UTF-8 (a byte-order mark dropped), else cp1252, else Latin-1; ``None`` for a
    file that is not text (NUL bytes, or control characters above :data:`BINARY_CONTROL_FRACTION`)."""
    if b"\0" in data:
        return None
    try:
        text, encoding = data.removeprefix(UTF8_BOM).decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = _decode_fallback(data)
    if len(_CONTROL.findall(text)) > BINARY_CONTROL_FRACTION * max(len(text), 1):
        return None
    return text, encoding


def read_book(path: Path, directory: Path) -> tuple[Book | None, str | None]:
    """The book at ``path``, or ``None`` and the reason it was skipped (one of :data:`SKIP_REASONS`).

    Lines of a paragraph are joined with spaces (books are often hard-wrapped); whitespace runs become
    one space; ``\r\n`` line ends and a byte-order mark are accepted; see :func:`decode_book` for the
    encodings.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    decoded = decode_book(data)
    if decoded is None:
        return None, "binary"
    text, encoding = decoded
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = [_WHITESPACE.sub(" ", block).strip() for block in _BLANK_LINES.split(text)]
    key = path.relative_to(directory).as_posix()
    return Book(key, [paragraph for paragraph in paragraphs if paragraph], encoding), None
