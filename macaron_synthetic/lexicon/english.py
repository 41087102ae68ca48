"""English inflection, written once for every generator: noun plurals, the third person singular, the
gerund and the regular past of verbs, and "a"/"an"."""

from __future__ import annotations

import re

from macaron_synthetic.lexicon.tables import pairs, words

_IRREGULAR_PLURAL_TABLE = """
species:species series:series genus:genera sheep:sheep fish:fish deer:deer analysis:analyses
thesis:theses leaf:leaves wolf:wolves volcano:volcanoes headquarters:headquarters aircraft:aircraft
man:men woman:women child:children mouse:mice knife:knives potato:potatoes tomato:tomatoes
"""
#: plurals that no rule of :func:`plural` gives (both generators' nouns)
IRREGULAR_PLURALS = dict(pairs(words(_IRREGULAR_PLURAL_TABLE)))
VOWEL_LETTERS = "aeiou"
_A_BEFORE_VOWEL = re.compile(rf"\b([Aa]) (?=[{VOWEL_LETTERS}{VOWEL_LETTERS.upper()}])")


def plural(noun: str) -> str:
    """The plural of a noun: irregular ones from :data:`IRREGULAR_PLURALS`, else -es, -ies or -s."""
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in VOWEL_LETTERS:
        return noun[:-1] + "ies"
    return noun + "s"


def third_person(verb: str) -> str:
    """The present third person singular of a regular verb: goes, washes, cries, runs."""
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in VOWEL_LETTERS:
        return verb[:-1] + "ies"
    return verb + "s"


def gerund(verb: str) -> str:
    """The -ing form of a verb whose last consonant is not doubled: lying, dancing, seeing, playing."""
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    return verb + "ing"


def regular_past(verb: str) -> str:
    """The past (and participle) of a regular verb: danced, cried, played."""
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2] not in VOWEL_LETTERS:
        return verb[:-1] + "ied"
    return verb + "ed"


def indefinite_article(word: str) -> str:
    """ "an" before a vowel letter, else "a"."""
    return "an" if word[0].lower() in VOWEL_LETTERS else "a"


def articles_before_vowels(text: str) -> str:
    """``text`` with every "a"/"A" before a word that starts with a vowel letter made "an"/"An"."""
    return _A_BEFORE_VOWEL.sub(r"\1n ", text)
