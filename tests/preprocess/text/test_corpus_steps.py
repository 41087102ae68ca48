"""The steps of the pre-training corpus: page filters, text passages, sentences, Moses, documents and the
document-level split, books, and the at-least-one-validation-document rule."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from sacremoses import MosesTokenizer

from macaron_preprocess.sources.bookcorpus import book_files, decode_book, read_book
from macaron_preprocess.sources.mediawiki import Page
from macaron_preprocess.text.documents import (
    DocumentConfig,
    DocumentProcessor,
    ExtractedText,
    split_fraction,
)
from macaron_preprocess.text.extract import move_to_validation, write_extracted
from macaron_preprocess.text.moses import MosesTokenizerWithCharsets
from macaron_preprocess.text.sentences import SentenceSplitter, cut_long
from macaron_preprocess.text.wikitext import article_paragraphs, drop_reason, is_text_passage
from macaron_workflow.errors import UserError

ARTICLE = """{{Short description|American physicist}}
{{Infobox person
| name = Infoboxvalue Doe
| birth_date = {{birth date|1900|1|1}}
}}
'''John Doe''' (born 1 January 1900) was an [[United States|American]] [[physicist]].<ref name="a">{{cite web
|url=http://x.org |title=Refword}}</ref> He lived in [[Boston]] &amp; New&nbsp;York.<ref>Refword, p. 3</ref>

== Headingword life ==
Doe was born in a small town.<!-- Commentword --> His father was a [[farmer]].
[[File:Doe.jpg|thumb|right|Captionword in 1920, with a [[hat]]]]

=== Headingword two ===
* Listword one of a list.
* Listword two with [[link]].
# Listword numbered.

{| class="wikitable"
|-
! Tableword !! Tableword
|-
| 1950 || Tableword Prize
|}

He studied at MIT. It was fine &mdash; mostly.
== References ==
{{Reflist}}
== External links ==
* [http://example.com Listword site]
[[Category:Categoryword births]]
"""


def page(text: str, title: str = "John Doe", namespace: int = 0, redirect: bool = False) -> Page:
    return Page(id=7, title=title, namespace=namespace, redirect=redirect, text=text)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"text": "#REDIRECT [[Boston]]", "redirect": True}, "redirect"),
        ({"text": "#redirect [[Boston]]"}, "redirect"),
        ({"text": "Some text.", "namespace": 1, "title": "Talk:Boston"}, "other_namespace"),
        (
            {"text": "'''Mercury''' may refer to:\n* [[Mercury (planet)]]\n{{disambiguation}}"},
            "disambiguation",
        ),
        ({"text": "'''Smith''' is a surname.\n{{Disambiguation|surname}}"}, "disambiguation"),
        ({"text": "'''Smith''' may be:\n{{hndis|Smith, John}}"}, "disambiguation"),
        ({"text": "x", "title": "Mercury (disambiguation)"}, "disambiguation"),
        ({"text": "{{Dablink|x}} '''Mercury''' is a planet."}, None),
        ({"text": ARTICLE}, None),
    ],
)
def test_which_pages_are_articles(kwargs: dict, reason: str | None) -> None:
    assert drop_reason(page(**kwargs)) == reason


def test_articles_keep_text_passages_only() -> None:
    passages, _ = article_paragraphs(page(ARTICLE))
    text = "\n".join(passages)
    assert "John Doe (born 1 January 1900) was an American physicist." in text
    assert "He studied at MIT. It was fine — mostly." in text
    assert "Boston & New York" in text  # entities decoded, no-break space made a space
    markers = ["Headingword", "Listword", "Tableword", "Captionword", "Categoryword", "Refword"]
    markers += ["Infoboxvalue", "Commentword", "[[", "{{", "<ref", "&amp;", "&nbsp;", "References"]
    for leftover in markers:
        assert leftover not in text, leftover


@pytest.mark.parametrize(
    ("paragraph", "kept"),
    [
        ("A sentence that ends.", True),
        ('He said "stop."', True),
        ("Early life", False),  # a heading written as a line
        ("Listword one of a list", False),
        ("| 1950 || Prize.", False),
        ("Text with [[a link]] left.", False),
        ("Text with &amp; entity.", False),
        ("Text with <span>tag</span>.", False),
        ("", False),
    ],
)
def test_text_passage_rule(paragraph: str, kept: bool) -> None:
    assert is_text_passage(paragraph) is kept


def test_sentencizer_on_paragraphs_and_long_input() -> None:
    splitter = SentenceSplitter()
    result = splitter.split(
        ["One sentence here. Another one follows! Is it a question?", "Second paragraph."]
    )
    assert result == [
        ["One sentence here.", "Another one follows!", "Is it a question?"],
        ["Second paragraph."],
    ]
    splitter.nlp.max_length = 1000
    long_paragraph = "This is a sentence of words. " * 200  # 5,800 characters: E088 without cutting
    sentences = splitter.split([long_paragraph])[0]
    assert sum(len(s.split()) for s in sentences) == 6 * 200


def test_cut_long_cuts_at_spaces() -> None:
    pieces = list(cut_long("aaaa bbbb cccc dddd", 10))
    assert pieces == ["aaaa bbbb", "cccc dddd"]
    assert all(len(p) <= 10 for p in cut_long("x" * 25, 10))


def test_tokenizer_with_charsets_answers_as_sacremoses() -> None:
    rng = random.Random(0)
    original, fast = MosesTokenizer(lang="en"), MosesTokenizerWithCharsets(lang="en")
    alphabet = "aZé.ü1 -'\"ßΩ東U.S."
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        assert original.isanyalpha(text) == fast.isanyalpha(text)
        assert original.islower(text) == fast.islower(text)
    sentence = "Mr. Smith met the U.S. envoy in St. Louis, e.g. at No. 5 on Jan. 3. Then he left."
    assert fast.tokenize(sentence, escape=False, return_str=True) == original.tokenize(
        sentence, escape=False, return_str=True
    )


def test_documents_are_lowercased_tokenized_sentences_and_short_ones_are_counted() -> None:
    processor = DocumentProcessor(DocumentConfig(valid_ratio=0.0))
    out = ExtractedText()
    processor.add(
        out,
        [
            (
                "wikipedia:1",
                ["The U.S. Army paid “$3.5 million” in 1950. It was late!", "New paragraph here."],
            ),
            ("wikipedia:2", ["Only one sentence."]),
            ("wikipedia:3", []),
        ],
    )
    text = out.text["train"].decode()
    assert text == 'the u.s. army paid " $ 3.5 million " in 1950 .\nit was late !\nnew paragraph here .\n\n'
    assert out.counts["train.documents"] == 1 and out.counts["train.sentences"] == 3
    assert out.counts["dropped.too_short"] == 1 and out.counts["dropped.empty"] == 1
    kept = ExtractedText()
    DocumentProcessor(DocumentConfig(valid_ratio=0.0, keep_short=True)).add(kept, [("k", ["Only one."])])
    assert kept.text["train"].decode() == "only one .\n\n"


def test_split_is_a_function_of_the_key_with_the_requested_share() -> None:
    keys = [f"wikipedia:{i}" for i in range(40_000)]
    valid = [key for key in keys if split_fraction(key) < 0.005]
    assert 140 <= len(valid) <= 260  # 200 expected; binomial sd 14
    assert valid == [key for key in reversed(keys) if split_fraction(key) < 0.005][::-1]
    assert split_fraction("bookcorpus:a.txt") == split_fraction("bookcorpus:a.txt") != split_fraction("b")


def test_at_least_one_validation_document_is_moved_deterministically(tmp_path: Path) -> None:
    processor = DocumentProcessor(DocumentConfig(valid_ratio=1e-12))
    documents = [(f"wikipedia:{i}", [f"Document {i} first. Document {i} second."]) for i in range(6)]
    results = []
    for batch in (documents[:3], documents[3:]):
        out = ExtractedText()
        processor.add(out, batch)
        results.append(out)
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    counts, _, _ = write_extracted(results, train, valid, lambda c: None)
    smallest = min(range(6), key=lambda i: split_fraction(f"wikipedia:{i}"))
    assert valid.read_text() == f"document {smallest} first .\ndocument {smallest} second .\n\n"
    assert f"document {smallest} " not in train.read_text()
    assert train.read_text().count("\n\n") == 5
    assert (
        counts["train.documents"] == 5 and counts["valid.documents"] == 1 and counts["valid.sentences"] == 2
    )
    assert counts["valid.tokens"] == 8 and counts["moved_to_valid"] == 1


def test_move_to_validation_keeps_the_rest_byte_for_byte(tmp_path: Path) -> None:
    train, valid = tmp_path / "t", tmp_path / "v"
    train.write_bytes(b"a .\nb .\n\nc .\nd .\n\ne .\nf .\n\n")
    valid.write_bytes(b"")
    counts: Counter[str] = Counter({"train.documents": 3, "train.sentences": 6, "train.tokens": 12})
    move_to_validation(train, valid, 9, 18, counts)
    assert train.read_bytes() == b"a .\nb .\n\ne .\nf .\n\n" and valid.read_bytes() == b"c .\nd .\n\n"
    assert counts["valid.tokens"] == 4 and counts["train.tokens"] == 8


def test_books_paragraphs_and_skipped_files(tmp_path: Path) -> None:
    books = tmp_path / "books"
    (books / "genre").mkdir(parents=True)
    (books / "genre" / "one.txt").write_bytes(
        "\ufeffChapter 1\r\n\r\nIt was a dark\r\nand stormy night.\r\n\r\n\r\n“Hello,” she said.\r\n".encode()
    )
    (books / "latin1.txt").write_bytes("caf\xe9 au lait.\n".encode("latin-1"))
    (books / "scan.txt").write_bytes(b"%PDF-1.4\x00\x00binary")
    (books / "notes.md").write_text("not a book")
    files = book_files(books)
    assert [f.name for f in files] == ["one.txt", "latin1.txt", "scan.txt"]
    book, reason = read_book(files[0], books)
    assert reason is None and book is not None
    assert book.key == "genre/one.txt"
    assert book.paragraphs == ["Chapter 1", "It was a dark and stormy night.", "“Hello,” she said."]
    latin1, reason = read_book(files[1], books)  # not UTF-8: decoded, not dropped
    assert reason is None and latin1 is not None
    assert latin1.paragraphs == ["café au lait."] and latin1.encoding == "cp1252"
    assert read_book(files[2], books) == (None, "binary")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("“Curly” quotes — and café.\n".encode("cp1252"), ("“Curly” quotes — and café.\n", "cp1252")),
        (b"caf\xe9 \x81 x\n", ("caf\xe9 \x81 x\n", "latin-1")),  # 0x81 is undefined in cp1252
        ("déjà vu\n".encode(), ("déjà vu\n", "utf-8")),
        (b"PK\x03\x04\x14\x00", None),  # an EPUB (zip) saved as .txt
        (bytes(range(1, 32)) * 40, None),  # control characters without NUL
    ],
)
def test_book_decoding_falls_back_to_cp1252_and_latin1_and_drops_only_binary(
    data: bytes, expected: tuple[str, str] | None
) -> None:
    assert decode_book(data) == expected


def test_a_books_directory_without_txt_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.epub").write_bytes(b"PK")
    with pytest.raises(UserError, match=r"holds no \.txt files"):
        book_files(tmp_path)
    with pytest.raises(UserError, match=r"is not a directory"):
        book_files(tmp_path / "missing")
