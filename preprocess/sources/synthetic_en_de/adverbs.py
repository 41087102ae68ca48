"""Adverbs of the synthetic corpus: frequency, manner, and time adverbials with the tenses they suit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Adverb:
    """An adverb or adverbial phrase and its German translation."""

    en: str
    de: str


FREQ_ADVERBS = (Adverb("often", "oft"), Adverb("always", "immer"), Adverb("sometimes", "manchmal"),
                Adverb("never", "nie"), Adverb("rarely", "selten"))
MANNER_ADVERBS = (Adverb("quickly", "schnell"), Adverb("slowly", "langsam"), Adverb("quietly", "leise"),
                  Adverb("loudly", "laut"), Adverb("carefully", "vorsichtig"), Adverb("happily", "fröhlich"),
                  Adverb("well", "gut"))
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
