"""From token lists to sentence text: attach punctuation, drop stray commas, capitalise."""

from __future__ import annotations

from collections.abc import Iterable

PUNCTUATION = (",", ".", "?")


def detokenize(words: Iterable[str]) -> str:
    """Join words into a sentence: punctuation attaches left, duplicate commas and commas before final
    punctuation are dropped, the first letter is capitalised."""
    out: list[str] = []
    for w in words:
        if w in PUNCTUATION:
            if not out:
                continue
            if out[-1] == "," and w != ",":
                out[-1] = w
                continue
            if out[-1] == "," and w == ",":
                continue
        out.append(w)
    text = ""
    for w in out:
        if not text:
            text = w
        elif w in PUNCTUATION:
            text += w
        else:
            text += " " + w
    return text[:1].upper() + text[1:]


def word_count(words: Iterable[str]) -> int:
    """Number of words, punctuation tokens not counted."""
    return sum(1 for w in words if w not in PUNCTUATION)
