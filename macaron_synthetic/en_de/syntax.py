"""Abstract syntax shared by both languages: a sampled clause is rendered once in English
(:mod:`.english`) and once in German (:mod:`.german`), so the two sides are translations of each other."""

from __future__ import annotations

from dataclasses import dataclass

from macaron_synthetic.lexicon.adjectives import Adjective
from macaron_synthetic.lexicon.adverbs import Adverb
from macaron_synthetic.lexicon.nouns import Noun
from macaron_synthetic.lexicon.verbs import Verb


@dataclass
class NounPhrase:
    """A noun phrase: a common noun with determiner/adjectives, a name, a pronoun, or a coordination."""

    kind: str  # "noun", "name", "pron", "coord"
    noun: Noun | None = None
    number: str = "sg"
    det: str = "def"  # def, indef, dem, poss:<en>, num:<en>, bare, neg
    adjs: tuple[Adjective, ...] = ()
    very: bool = False
    name: str = ""
    pron: str = ""  # key of function_words.PRONOUNS
    parts: tuple[NounPhrase, ...] = ()
    rel: Clause | None = None  # relative clause
    rel_role: str = ""  # "subj" or "obj": the role of the head noun inside the relative clause

    @property
    def person(self) -> str:
        """Grammatical person and number of the phrase as a subject: "1sg", "2sg", "3sg", "1pl", "3pl"."""
        if self.kind == "pron":
            return self.pron.split(":")[0]
        if self.kind == "coord":
            return "3pl"
        return "3pl" if self.number == "pl" else "3sg"

    @property
    def indefinite(self) -> bool:
        """A common noun with an indefinite article or none: negated with German "kein"."""
        return self.kind == "noun" and self.det in ("indef", "bare")


@dataclass
class PrepPhrase:
    """A prepositional phrase; ``np`` is None for fixed adverbials ("home", "at home")."""

    en: str  # English preposition ("in", "into", "to", "with", ...), or "home"/"at home"
    de: str  # German preposition
    case: str  # case it governs
    np: NounPhrase | None


@dataclass
class Clause:
    """A clause: subject, verb (or copula + predicative adjective), tense, objects and adjuncts.

    tense: "pres", "prog", "past", "perf", "fut", or a modal: "can", "must", "want".
    """

    subj: NounPhrase
    verb: Verb | None  # None → copula with adjective predicate
    tense: str
    acc: NounPhrase | None = None
    dat: NounPhrase | None = None
    en_to_dative: bool = False  # "gives a book to the child" instead of "gives the child a book"
    pred_adj: Adjective | None = None
    pred_very: bool = False
    neg: bool = False
    freq: Adverb | None = None
    manner: Adverb | None = None
    time: Adverb | None = None
    time_front: bool = False
    pp: PrepPhrase | None = None
    complement: Clause | None = None  # dass-clause of a "say" verb
