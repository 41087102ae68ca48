"""Generated BookCorpus-style books (the layout of the public crawler's output) from the Wikipedia
generator's vocabulary, with :func:`~macaron_synthetic.wiki.markers.book_word` in every narrative sentence."""

from __future__ import annotations

import random
import re
from pathlib import Path

from macaron_synthetic.lexicon.function_words import ORDINALS
from macaron_synthetic.wiki.markers import book_word
from macaron_synthetic.wiki.vocabulary import Vocabulary, strip_accents

BOOK_SENTENCES = (
    "$first looked at the $T $noun and sighed.",
    "“Where are you going?” she asked, glancing at the $T $noun.",
    "“I don't know,” $first said, holding the $T $noun a little tighter.",
    "The $T $noun was $adj, and the rain had not stopped since Tuesday.",
    "He had never seen a $noun so $adj — not even the $T one in $place.",
    "“You can't be serious!” $first shouted across the $T $noun.",
    "Mr. $surname opened the door of the $T $noun at exactly 7.30 p.m.",
    "She walked $adv toward the $T $noun, counting her steps: one, two, three.",
    "It was the $ordinal time that week that the $T $noun had $verbed anything.",
    "“Is it true?” asked $first, staring at the $T $noun.",
    "“Did the $T $noun really burn down?”",
    "Dr. $surname's office smelled of coffee and the $T $noun's old $nouns.",
    "They drove $int miles before $first noticed the $T $noun was gone.",
    "Nobody in $place remembered the $T $noun (or so they claimed).",
    "“Well,” said $first, “the $T $noun isn't going to fix itself, is it?”",
    "The $T $noun's $nouns were $adj; hers were $adj.",
    "I wanted to tell her about the $T $noun, but the words wouldn't come.",
    "$first laughed, a short, $adj sound that echoed off the $T $noun.",
    "By midnight the $T $noun was quiet again, and $first was asleep.",
)
_BOOK_GENRES = ("Romance", "Fantasy", "Science fiction", "Thriller", "Mystery", "Young adult", "Historical")


def _slug(text: str) -> str:
    """A file-name form of a title: ascii lowercase words joined by hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", strip_accents(text).lower()).strip("-")


def write_books(
    directory: Path, books: int, *, seed: int = 0, paragraphs: tuple[int, int] = (5, 40)
) -> list[Path]:
    """Write ``books`` BookCorpus-style plain-text books into ``directory`` and return their paths.

    Files are named as the public crawler (soskek/bookcorpus ``download_files.py``) names them in its flat
    output directory: ``<smashwords book id>__<epub name>.txt``, e.g. ``123456__the-silent-river.txt``.
    A book has Smashwords front matter (title, author, copyright, license notes; no book word), then
    chapters ("Chapter 1", "CHAPTER 2", "Chapter Three", "* * *" breaks) of ``paragraphs`` (min, max)
    narrative paragraphs separated by blank lines; every narrative sentence contains
    :func:`~macaron_synthetic.wiki.markers.book_word` of the book id (see ``markers.book_id``).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed + 7)
    v = Vocabulary(seed, rng)
    pool = [v.fill_prose(rng.choice(BOOK_SENTENCES)) for _ in range(3000)]
    paths = []
    current = rng.randint(1000, 90000)
    for _ in range(books):
        current += rng.randint(1, 500)
        title = v.fill("The $Adj $Noun") if rng.random() < 0.7 else v.fill("$Noun of $place")
        author = v.person()
        out: list[str] = [
            title,
            f"by {author}",
            f"Copyright © {rng.randint(2008, 2016)} {author}",
            "Smashwords Edition",
            "License Notes\nThis ebook is licensed for your personal enjoyment only. This ebook may not be "
            "re-sold or given away to other people. Thank you for respecting the hard work of this author.",
        ]
        if rng.random() < 0.5:
            out.append(f"Genre: {rng.choice(_BOOK_GENRES)}")
        n_paragraphs = rng.randint(*paragraphs)
        chapter = 0
        for i in range(n_paragraphs):
            if i == 0 or rng.random() < 0.08:
                chapter += 1
                ordinal = ORDINALS[(chapter - 1) % 12].capitalize()
                out.append(rng.choice((f"Chapter {chapter}", f"CHAPTER {chapter}", f"Chapter {ordinal}")))
            elif rng.random() < 0.04:
                out.append("* * *")
            out.append(" ".join(rng.choices(pool, k=rng.randint(1, 8))))
        if rng.random() < 0.5:
            out.append(f"About the Author\n{author} lives in {v.pick('place')} with two cats.")
        text = "\n\n".join(out).replace("\x00", book_word(current)) + "\n"
        path = directory / f"{current}__{_slug(title)}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
