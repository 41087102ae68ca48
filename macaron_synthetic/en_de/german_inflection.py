"""German inflection tables: auxiliaries and modals by person, articles, determiner and adjective endings,
relative pronouns, and preposition + article contractions.

Tables keyed by gender/number (``"m"``, ``"f"``, ``"n"``, ``"pl"``) hold one form per case, in the order
of :data:`CASES`; tables by person hold one form per person, in the order of :data:`PERSONS`.
"""

from __future__ import annotations

PERSONS = ("1sg", "2sg", "3sg", "1pl", "3pl")
CASES = ("nom", "acc", "dat")

# auxiliaries and modals: present forms by person (1sg, 2sg, 3sg, 1pl, 3pl)
AUXILIARY_PRESENT = {
    "haben": ("habe", "hast", "hat", "haben", "haben"),
    "sein": ("bin", "bist", "ist", "sind", "sind"),
    "werden": ("werde", "wirst", "wird", "werden", "werden"),
    "können": ("kann", "kannst", "kann", "können", "können"),
    "müssen": ("muss", "musst", "muss", "müssen", "müssen"),
    "dürfen": ("darf", "darfst", "darf", "dürfen", "dürfen"),
    "wollen": ("will", "willst", "will", "wollen", "wollen"),
}
SEIN_PRETERITE = ("war", "warst", "war", "waren", "waren")

DEFINITE_ARTICLE = {
    "m": ("der", "den", "dem"),
    "f": ("die", "die", "der"),
    "n": ("das", "das", "dem"),
    "pl": ("die", "die", "den"),
}
DIESER_ENDINGS = {
    "m": ("er", "en", "em"),
    "f": ("e", "e", "er"),
    "n": ("es", "es", "em"),
    "pl": ("e", "e", "en"),
}
EIN_ENDINGS = {"m": ("", "en", "em"), "f": ("e", "e", "er"), "n": ("", "", "em"), "pl": ("e", "e", "en")}
STRONG_ADJECTIVE_ENDINGS = {
    "m": ("er", "en", "em"),
    "f": ("e", "e", "er"),
    "n": ("es", "es", "em"),
    "pl": ("e", "e", "en"),
}
WEAK_ADJECTIVE_ENDINGS = {
    "m": ("e", "en", "en"),
    "f": ("e", "e", "en"),
    "n": ("e", "e", "en"),
    "pl": ("en", "en", "en"),
}
MIXED_ADJECTIVE_ENDINGS = {
    "m": ("er", "en", "en"),
    "f": ("e", "e", "en"),
    "n": ("es", "es", "en"),
    "pl": ("en", "en", "en"),
}
RELATIVE_PRONOUN = {
    "m": ("der", "den", "dem"),
    "f": ("die", "die", "der"),
    "n": ("das", "das", "dem"),
    "pl": ("die", "die", "denen"),
}
CONTRACTIONS = {
    ("in", "dem"): "im",
    ("in", "das"): "ins",
    ("zu", "dem"): "zum",
    ("zu", "der"): "zur",
    ("von", "dem"): "vom",
    ("an", "dem"): "am",
    ("bei", "dem"): "beim",
}


def auxiliary(name: str, person: str) -> str:
    """Present tense of an auxiliary or modal (``haben``, ``sein``, ``werden``, ``können``, ...)."""
    return AUXILIARY_PRESENT[name][PERSONS.index(person)]
