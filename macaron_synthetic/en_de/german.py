"""German realisation of the abstract syntax: case and agreement in noun phrases, verb forms, V2 main
clauses, V1 questions, verb-final subordinate and relative clauses, separable prefixes, "kein"/"nicht"."""

from __future__ import annotations

from dataclasses import replace

from macaron_synthetic.en_de.german_inflection import (
    CASES,
    CONTRACTIONS,
    DEFINITE_ARTICLE,
    DIESER_ENDINGS,
    EIN_ENDINGS,
    MIXED_ADJECTIVE_ENDINGS,
    PERSONS,
    RELATIVE_PRONOUN,
    SEIN_PRETERITE,
    STRONG_ADJECTIVE_ENDINGS,
    WEAK_ADJECTIVE_ENDINGS,
    auxiliary,
)
from macaron_synthetic.en_de.syntax import Clause, NounPhrase, PrepPhrase
from macaron_synthetic.lexicon.function_words import NUMERALS, POSSESSIVES, PRONOUNS


def de_np(np: NounPhrase, case: str) -> list[str]:
    """German words of a noun phrase in the given case, with agreement."""
    ci = CASES.index(case)
    if np.kind == "pron":
        return [PRONOUNS[np.pron][2 + ci]]
    if np.kind == "name":
        return [np.name]
    if np.kind == "coord":
        left, right = np.parts
        return [*de_np(left, case), "und", *de_np(right, case)]
    noun = np.noun
    assert noun is not None
    gn = "pl" if np.number == "pl" else noun.gender
    det = np.det
    words: list[str] = []
    if det == "def":
        words.append(DEFINITE_ARTICLE[gn][ci])
        adj_table = WEAK_ADJECTIVE_ENDINGS
    elif det == "dem":
        words.append("dies" + DIESER_ENDINGS[gn][ci])
        adj_table = WEAK_ADJECTIVE_ENDINGS
    elif det in ("indef", "neg") or det.startswith("poss:"):
        if det == "indef" and np.number == "pl":
            adj_table = STRONG_ADJECTIVE_ENDINGS  # plural "a" is bare
        else:
            stem = {"indef": "ein", "neg": "kein"}.get(det) or POSSESSIVES[det[5:]]
            words.append(stem + EIN_ENDINGS[gn][ci])
            adj_table = MIXED_ADJECTIVE_ENDINGS
    elif det.startswith("num:"):
        words.append(NUMERALS[det[4:]])
        adj_table = STRONG_ADJECTIVE_ENDINGS
    else:  # bare plural or mass noun
        adj_table = STRONG_ADJECTIVE_ENDINGS
    if np.very:
        words.append("sehr")
    ending = adj_table[gn][ci]
    words += [a.stem + ending for a in np.adjs]
    words.append(noun.de_form(np.number, case))
    if np.rel is not None:
        words += de_relative(np, np.rel)
    return words


def de_relative(head: NounPhrase, clause: Clause) -> list[str]:
    """Relative clause after ``head``, between commas: a relative pronoun agreeing with the head in gender
    and number, in the case of its role, and the verb-final clause with a gap."""
    assert head.noun is not None
    gn = "pl" if head.number == "pl" else head.noun.gender
    if head.rel_role == "subj":
        pron = RELATIVE_PRONOUN[gn][0]
        return [",", pron, *de_clause(clause, "sub", subject_gap=True), ","]
    case = "dat" if clause.verb is not None and clause.verb.frame == "dat" else "acc"
    pron = RELATIVE_PRONOUN[gn][CASES.index(case)]
    return [",", pron, *de_clause(clause, "sub", object_gap=True), ","]


def de_pp(pp: PrepPhrase) -> list[str]:
    """German prepositional phrase in the governed case; "in dem" → "im" and the other contractions."""
    if pp.np is None:
        return pp.de.split()
    words = de_np(pp.np, pp.case)
    key = (pp.de, words[0])
    if pp.np.kind == "noun" and pp.np.det == "def" and key in CONTRACTIONS:
        return [CONTRACTIONS[key], *words[1:]]
    return [pp.de, *words]


def de_verb_parts(c: Clause) -> tuple[str, list[str]]:
    """(finite verb, right-bracket words in main-clause order) for German."""
    person = c.subj.person
    v = c.verb
    t = c.tense
    if v is None:
        if t == "pres":
            return auxiliary("sein", person), []
        if t == "past":
            return SEIN_PRETERITE[PERSONS.index(person)], []
        if t == "perf":
            return auxiliary("sein", person), ["gewesen"]
        return auxiliary("werden", person), ["sein"]
    prefix = [v.de_prefix] if v.de_prefix else []
    if t in ("pres", "prog"):
        return v.de_present(person), prefix
    if t == "past":
        return v.de_preterite(person), prefix
    if t == "perf":
        return auxiliary(v.de_aux, person), [v.de_pp]
    modal = {"fut": "werden", "can": "können", "want": "wollen"}.get(t)
    if t == "must":
        modal = "dürfen" if c.neg else "müssen"
    if modal is None:
        raise ValueError(f"unknown tense {t}")
    return auxiliary(modal, person), [v.de_infinitive()]


def _neg_with_kein(c: Clause) -> NounPhrase | None:
    """The object that absorbs negation as 'kein' (an indefinite accusative, or dative if none)."""
    if not c.neg:
        return None
    for np in (c.acc, c.dat):
        if np is not None and np.indefinite:
            return np
    return None


def de_clause(c: Clause, mode: str, subject_gap: bool = False, object_gap: bool = False) -> list[str]:
    """German clause. mode: "main" (V2), "question"/"inverted" (V1), "sub" (verb-final)."""
    finite, right = de_verb_parts(c)
    kein_np = _neg_with_kein(c)

    def obj(np: NounPhrase, case: str) -> list[str]:
        if np is kein_np:
            np = replace(np, det="neg")
        return de_np(np, case)

    subj = [] if subject_gap else de_np(c.subj, "nom")
    pron_objs: list[str] = []
    nominal_objs: list[str] = []
    if not object_gap:
        for np, case in ((c.acc, "acc"), (c.dat, "dat")):  # pronouns: accusative before dative
            if np is not None and np.kind == "pron":
                pron_objs += obj(np, case)
        for np, case in ((c.dat, "dat"), (c.acc, "acc")):  # nouns: dative before accusative
            if np is not None and np.kind != "pron":
                nominal_objs += obj(np, case)
    time = c.time.de.split() if c.time else []
    front_time = c.time_front and mode == "main"
    adverbs = ([c.freq.de] if c.freq else []) + (["nicht"] if c.neg and kein_np is None else [])
    if c.verb is None:
        assert c.pred_adj is not None
        adverbs += (["sehr"] if c.pred_very else []) + [c.pred_adj.de]
    if c.manner:
        adverbs.append(c.manner.de)
    pp = de_pp(c.pp) if c.pp else []
    middle_after_subj = pron_objs + ([] if front_time else time) + nominal_objs + adverbs + pp
    complement: list[str] = []
    if c.complement is not None:
        complement = [",", "dass", *de_clause(c.complement, "sub")]
    if mode == "sub":
        if c.tense in ("pres", "prog", "past") and c.verb is not None and c.verb.de_prefix:
            verb_final = [c.verb.de_prefix + finite]
        else:
            verb_final = [*right, finite]
        return subj + middle_after_subj + verb_final + complement
    if mode in ("question", "inverted"):
        return [finite, *subj, *middle_after_subj, *right, *complement]
    if front_time:
        return [*time, finite, *subj, *middle_after_subj, *right, *complement]
    return [*subj, finite, *middle_after_subj, *right, *complement]
