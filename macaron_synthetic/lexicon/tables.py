"""How the generators' lists are written: as running text, split once at import. A list keeps the order of
its text — the generators draw by index, so a change of order changes their outputs."""

from __future__ import annotations

from collections.abc import Iterable


def words(text: str) -> tuple[str, ...]:
    """The whitespace-separated words of ``text``: ``words("red green blue")``."""
    return tuple(text.split())


def phrases(text: str) -> tuple[str, ...]:
    """The ``|``-separated phrases of ``text`` (a phrase may hold spaces); line breaks are dropped, so a
    long list wraps anywhere: ``phrases("São Paulo|Kraków|Zürich")``."""
    return tuple(text.replace("\n", "").split("|"))


def pairs(entries: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``(key, value)`` of each ``key:value`` entry, split at its first colon: ``pairs(words("man:men"))``."""
    return tuple((key, value) for key, _, value in (entry.partition(":") for entry in entries))
