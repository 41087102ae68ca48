"""Adverbs: the quickstart's bilingual frequency, manner and time adverbials (with the tenses they suit), and
the English adverbs of the Wikipedia generator."""

from __future__ import annotations

from dataclasses import dataclass

from macaron_synthetic.lexicon.tables import words


@dataclass(frozen=True)
class Adverb:
    """An adverb or adverbial phrase and its German translation."""

    en: str
    de: str


def _adverbs(pairs: str) -> tuple[Adverb, ...]:
    """Adverbs from space-separated ``english:german`` pairs."""
    return tuple(Adverb(*pair.split(":")) for pair in pairs.split())


FREQ_ADVERBS = _adverbs("often:oft always:immer sometimes:manchmal never:nie rarely:selten")
MANNER_ADVERBS = _adverbs(
    "quickly:schnell slowly:langsam quietly:leise loudly:laut carefully:vorsichtig happily:fröhlich well:gut"
)
# time adverbials and the tenses they combine with
TIME_ADVERBS: tuple[tuple[Adverb, frozenset[str]], ...] = tuple(
    (Adverb(en, de), frozenset(tenses.split(",")))
    for en, de, tenses in (
        ("today", "heute", "pres,prog,past,perf,fut,can,must,want"),
        ("now", "jetzt", "pres,prog,can,must,want"),
        ("yesterday", "gestern", "past"),
        ("tomorrow", "morgen", "fut,pres,can,must,want"),
        ("in the morning", "am Morgen", "pres,past,fut,can"),
        ("in the evening", "am Abend", "pres,past,fut,can"),
        ("every day", "jeden Tag", "pres,past"),
        ("last week", "letzte Woche", "past"),
        ("next week", "nächste Woche", "fut,pres"),
        ("on Monday", "am Montag", "pres,past,fut"),
        ("on Friday", "am Freitag", "pres,past,fut"),
        ("on Sunday", "am Sonntag", "pres,past,fut"),
        ("this morning", "heute Morgen", "past,perf"),
    )
)

ENCYCLOPEDIC_ADVERBS = words("""
largely mostly partly briefly gradually rapidly slowly quickly eventually finally initially originally
formerly later subsequently previously recently currently officially formally widely commonly rarely
frequently occasionally regularly annually primarily mainly chiefly entirely completely extensively
heavily severely successfully effectively reportedly allegedly apparently probably possibly certainly
notably particularly especially significantly considerably substantially slightly relatively
""")
