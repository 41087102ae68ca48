"""Sampling of abstract clauses and sentences: which verbs, tenses, noun phrases, adjuncts and clause
combinations occur, and how often."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from macaron_synthetic.en_de.english import en_clause
from macaron_synthetic.en_de.german import de_clause
from macaron_synthetic.en_de.syntax import Clause, NounPhrase, PrepPhrase
from macaron_synthetic.lexicon import function_words as fw
from macaron_synthetic.lexicon.adjectives import ADJECTIVES, Adjective
from macaron_synthetic.lexicon.adverbs import FREQ_ADVERBS, MANNER_ADVERBS, TIME_ADVERBS
from macaron_synthetic.lexicon.names import NAMES
from macaron_synthetic.lexicon.nouns import ANIMATE, CONCRETE, NOUNS, Noun
from macaron_synthetic.lexicon.verbs import STATIVE, VERBS, VERBS_BY_FRAME, Verb

T = TypeVar("T")

# relative frequency of each tense (and modal) in sampled clauses
TENSE_WEIGHTS = {"pres": 30, "prog": 10, "past": 20, "perf": 15, "fut": 10, "can": 6, "must": 4, "want": 5}


class Sampler:
    """Samples abstract clauses with a private ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.rng.random() < p

    def pick(self, seq: Sequence[T]) -> T:
        """A uniformly chosen element of ``seq``."""
        return seq[self.rng.randrange(len(seq))]

    def noun_with(self, tags: frozenset[str]) -> Noun:
        """A noun carrying at least one of ``tags``."""
        return self.pick([n for n in NOUNS if n.tags & tags])

    def noun_phrase(
        self, tags: frozenset[str], role: str, depth: int, allow_pron: bool = True, allow_rel: bool = True
    ) -> NounPhrase:
        """role: "subj", "obj" or "pp" (affects pronouns and coordination)."""
        if "person" in tags and allow_pron:
            r = self.rng.random()
            if r < 0.22:
                key = self.pick(tuple(fw.PRONOUNS))
                return NounPhrase("pron", pron=key)
            if r < 0.30:
                return NounPhrase("name", name=self.pick(NAMES))
        if role == "subj" and depth == 0 and tags & ANIMATE and self.chance(0.04):
            left = self.noun_phrase(tags, "pp", depth, allow_pron=False, allow_rel=False)
            right = self.noun_phrase(tags, "pp", depth, allow_pron=False, allow_rel=False)
            if left.kind == right.kind == "noun":
                return NounPhrase("coord", parts=(left, right))
        noun = self.noun_with(tags)
        if noun.mass:
            number = "sg"
            det = self.pick(("def", "def", "bare", "bare", "dem", "poss:" + self.pick(tuple(fw.POSSESSIVES))))
        else:
            number = "pl" if self.chance(0.3) else "sg"
            if number == "sg":
                det = self.pick(("def", "def", "def", "indef", "indef", "dem", "poss"))
            else:
                det = self.pick(("def", "def", "indef", "dem", "poss", "num"))
            if det == "poss":
                det = "poss:" + self.pick(tuple(fw.POSSESSIVES))
            elif det == "num":
                det = "num:" + self.pick(tuple(fw.NUMERALS))
            elif det == "indef" and number == "pl":
                det = "bare"
        adjs: tuple[Adjective, ...] = ()
        very = False
        if self.chance(0.35):
            fitting = [a for a in ADJECTIVES if a.tags & noun.tags]
            first = self.pick(fitting)
            adjs = (first,)
            if self.chance(0.15):
                second = self.pick(fitting)
                if second != first:
                    adjs = (first, second)
            very = self.chance(0.12)
        np = NounPhrase("noun", noun=noun, number=number, det=det, adjs=adjs, very=very)
        if allow_rel and depth == 0 and noun.tags & (ANIMATE | CONCRETE) and self.chance(0.06):
            np.rel, np.rel_role = self.relative_clause(np)
        return np

    def relative_clause(self, head: NounPhrase) -> tuple[Clause, str]:
        """A relative clause on ``head`` and the head's role in it ("subj" or "obj")."""
        assert head.noun is not None
        tense = self.pick(("pres", "pres", "past", "perf"))
        as_subject = head.noun.tags & ANIMATE and self.chance(0.6)
        if as_subject:
            verbs = [v for v in VERBS if v.frame in ("intr", "tr") and v.subj_tags & head.noun.tags]
            verb = self.pick(verbs)
            clause = self.clause_for(verb, depth=1, tense=tense, subj=head, simple=True)
            clause.neg = False
            return clause, "subj"
        verbs = [v for v in VERBS if v.frame == "tr" and v.obj_tags & head.noun.tags]
        verb = self.pick(verbs)
        clause = self.clause_for(verb, depth=1, tense=tense, simple=True)
        clause.acc = head
        clause.neg = False
        return clause, "obj"

    def tense(self) -> str:
        """A tense drawn with :data:`TENSE_WEIGHTS`."""
        tenses = tuple(TENSE_WEIGHTS)
        return self.rng.choices(tenses, weights=[TENSE_WEIGHTS[t] for t in tenses])[0]

    def clause_for(
        self,
        verb: Verb | None,
        depth: int,
        tense: str | None = None,
        subj: NounPhrase | None = None,
        simple: bool = False,
        question: bool = False,
    ) -> Clause:
        """A clause around ``verb`` (None: copula + adjective); ``simple`` leaves out adverbs and most
        prepositional phrases, ``question`` never negates nor fronts the time adverbial."""
        tense = tense or self.tense()
        if tense == "prog" and (verb is None or verb.en in STATIVE or verb.frame == "say"):
            tense = "pres"
        if verb is None and tense not in ("pres", "past", "perf", "fut"):
            tense = self.pick(("pres", "past"))
        if subj is None:
            subj_tags = verb.subj_tags if verb is not None else ANIMATE | CONCRETE | frozenset({"place"})
            subj = self.noun_phrase(subj_tags, "subj", depth)
        c = Clause(subj=subj, verb=verb, tense=tense)
        if verb is None:
            noun_tags = subj.noun.tags if subj.noun is not None else frozenset({"person"})
            c.pred_adj = self.pick([a for a in ADJECTIVES if a.tags & noun_tags])
            c.pred_very = self.chance(0.2)
        elif verb.frame == "tr":
            c.acc = self.object_np(verb.obj_tags, subj, depth)
        elif verb.frame == "dat":
            c.dat = self.object_np(verb.obj_tags, subj, depth)
        elif verb.frame == "ditr":
            c.dat = self.object_np(frozenset({"person"}), subj, depth)
            c.acc = self.noun_phrase(verb.obj_tags, "obj", depth, allow_pron=False)
            c.en_to_dative = self.chance(0.3)
        if not question:
            c.neg = self.chance(0.15)
        if not simple:
            if not c.neg and not question and tense not in ("prog",) and self.chance(0.1):
                c.freq = self.pick(FREQ_ADVERBS)
            if verb is not None and verb.frame in ("intr", "motion") and self.chance(0.25):
                c.manner = self.pick(MANNER_ADVERBS)
            if self.chance(0.2):
                fitting = [a for a, tenses in TIME_ADVERBS if tense in tenses]
                if fitting:
                    c.time = self.pick(fitting)
                    c.time_front = not question and self.chance(0.5)
        if verb is not None:
            c.pp = self.prep_phrase(verb, depth, simple)
        return c

    def object_np(self, tags: frozenset[str], subj: NounPhrase, depth: int) -> NounPhrase:
        """An object noun phrase that is not the subject's own pronoun ("I see me")."""
        for _ in range(10):
            np = self.noun_phrase(tags, "obj", depth)
            if not (np.kind == "pron" and subj.kind == "pron" and np.person == subj.person):
                return np
        return self.noun_phrase(tags, "obj", depth, allow_pron=False)

    def prep_phrase(self, verb: Verb, depth: int, simple: bool) -> PrepPhrase | None:
        """A directional phrase for motion verbs; otherwise sometimes a place or companion phrase."""
        if verb.frame == "motion" and self.chance(0.85):
            r = self.rng.random()
            if r < 0.1:
                return PrepPhrase("home", "nach Hause", "dat", None)
            place = self.noun_phrase(frozenset({"place"}), "pp", depth, allow_rel=False)
            if r < 0.5:
                return PrepPhrase("to", "zu", "dat", place)
            if r < 0.8:
                return PrepPhrase("into", "in", "acc", place)
            return PrepPhrase("from", "von", "dat", place)
        if verb.frame == "say" or simple or not self.chance(0.3):
            return None
        r = self.rng.random()
        if r < 0.45:
            place = self.noun_phrase(frozenset({"place"}), "pp", depth, allow_rel=False)
            return PrepPhrase(*self.pick((("in", "in"), ("behind", "hinter"))), "dat", place)
        if r < 0.55:
            return PrepPhrase("at home", "zu Hause", "dat", None)
        companion = self.noun_phrase(ANIMATE, "obj", depth, allow_rel=False)
        if r < 0.8:
            return PrepPhrase("with", "mit", "dat", companion)
        return PrepPhrase(*self.pick((("for", "für"), ("without", "ohne"))), "acc", companion)

    def any_verb(self) -> Verb | None:
        """A verb of a weighted random frame, or None (a copula clause) one time in ten."""
        r = self.rng.random()
        if r < 0.1:
            return None  # copula
        frame = self.rng.choices(("intr", "motion", "tr", "dat", "ditr"), weights=(20, 15, 50, 7, 8))[0]
        return self.pick(VERBS_BY_FRAME[frame])

    def sentence(self) -> tuple[list[str], list[str]]:
        """One (English words, German words) pair, punctuation as separate tokens."""
        r = self.rng.random()
        if r < 0.45:
            c = self.clause_for(self.any_verb(), 0)
            return [*en_clause(c, "main"), "."], [*de_clause(c, "main"), "."]
        if r < 0.55:
            c = self.clause_for(self.any_verb(), 0, question=True)
            return [*en_clause(c, "question"), "?"], [*de_clause(c, "question"), "?"]
        if r < 0.65:
            say = self.pick(VERBS_BY_FRAME["say"])
            c = self.clause_for(say, 0, tense=self.pick(("pres", "pres", "past", "perf")), simple=True)
            c.neg = False
            c.complement = self.clause_for(self.any_verb(), 1, simple=True)
            return [*en_clause(c, "main"), "."], [*de_clause(c, "main"), "."]
        if r < 0.77:
            en_conj, de_conj = self.pick(fw.SUBORDINATORS)
            main = self.clause_for(self.any_verb(), 1, simple=True)
            sub = self.clause_for(self.any_verb(), 1, simple=True)
            return (
                [*en_clause(main, "main"), en_conj, *en_clause(sub, "main"), "."],
                [*de_clause(main, "main"), ",", de_conj, *de_clause(sub, "sub"), "."],
            )
        if r < 0.88:
            tense = self.pick(("pres", "pres", "past"))
            sub = self.clause_for(self.any_verb(), 1, tense=tense, simple=True)
            main = self.clause_for(self.any_verb(), 1, tense=tense, simple=True)
            en_conj = "when" if tense == "past" or self.chance(0.5) else "if"
            de_conj = "als" if tense == "past" else "wenn"
            return (
                [en_conj, *en_clause(sub, "main"), ",", *en_clause(main, "main"), "."],
                [de_conj, *de_clause(sub, "sub"), ",", *de_clause(main, "inverted"), "."],
            )
        en_conj, de_conj = self.pick(fw.COORDINATORS)
        left = self.clause_for(self.any_verb(), 1, simple=True)
        right = self.clause_for(self.any_verb(), 1, simple=True)
        comma = [","] if en_conj == "but" else []
        return (
            en_clause(left, "main") + comma + [en_conj] + en_clause(right, "main") + ["."],
            de_clause(left, "main") + comma + [de_conj] + de_clause(right, "main") + ["."],
        )
