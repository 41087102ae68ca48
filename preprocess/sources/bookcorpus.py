"""BookCorpus as the public crawl scripts write it: a directory of books, one UTF-8 ``.txt`` per book,
paragraphs separated by blank lines (``soskek/bookcorpus`` writes ``out_txts/<book>.txt``; other dumps
nest them in sub-directories, which are searched too). A book is a document.

A file that is not text — it contains NUL bytes (a PDF or EPUB saved under ``.txt``) or is not valid
UTF-8 — is skipped and counted by reason in the summary (``binary``, ``not_utf8``), and the first few
names are printed; it never stops a run over 17,000 books. A directory without any ``.txt`` is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from workflow.errors import UserError, cannot_read
from workflow.files import UTF8_BOM

SKIP_REASONS = ("binary", "not_utf8")
_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Book:
    """A book's document key (its path relative to the books directory) and its paragraphs."""

    key: str
    paragraphs: list[str]


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


def read_book(path: Path, directory: Path) -> tuple[Book | None, str | None]:
    """The book at ``path``, or ``None`` and the reason it was skipped (one of :data:`SKIP_REASONS`).

    Lines of a paragraph are joined with spaces (books are often hard-wrapped); whitespace runs become
    one space; ``\\r\\n`` line ends and a byte-order mark are accepted.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    if b"\0" in data:
        return None, "binary"
    try:
        text = data.removeprefix(UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError:
        return None, "not_utf8"
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = [_WHITESPACE.sub(" ", block).strip() for block in _BLANK_LINES.split(text)]
    key = path.relative_to(directory).as_posix()
    return Book(key, [paragraph for paragraph in paragraphs if paragraph]), None
