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


def _by_gender(table: str) -> dict[str, tuple[str, ...]]:
    """A table by gender/number from its rows m | f | n | pl, each the forms of :data:`CASES` ("-": none)."""
    rows = (tuple("" if form == "-" else form for form in row.split()) for row in table.split("|"))
    return dict(zip(("m", "f", "n", "pl"), rows, strict=True))


DEFINITE_ARTICLE = _by_gender("der den dem | die die der | das das dem | die die den")
RELATIVE_PRONOUN = _by_gender("der den dem | die die der | das das dem | die die denen")
EIN_ENDINGS = _by_gender("- en em | e e er | - - em | e e en")
STRONG_ADJECTIVE_ENDINGS = _by_gender("er en em | e e er | es es em | e e en")
DIESER_ENDINGS = STRONG_ADJECTIVE_ENDINGS  # dies-er, dies-e, dies-es: the strong endings
WEAK_ADJECTIVE_ENDINGS = _by_gender("e en en | e e en | e e en | en en en")
MIXED_ADJECTIVE_ENDINGS = _by_gender("er en en | e e en | es es en | en en en")
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
