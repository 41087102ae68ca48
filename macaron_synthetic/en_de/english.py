"""English realisation of the abstract syntax: noun phrases, verb groups with do-support, questions,
relative clauses; SVO order with an optionally fronted time adverbial."""

from __future__ import annotations

from macaron_synthetic.en_de.syntax import Clause, NounPhrase, PrepPhrase
from macaron_synthetic.lexicon.english import indefinite_article
from macaron_synthetic.lexicon.function_words import PRONOUNS

BE_PRESENT = {"1sg": "am", "2sg": "are", "3sg": "is", "1pl": "are", "3pl": "are"}
BE_PAST = {"1sg": "was", "2sg": "were", "3sg": "was", "1pl": "were", "3pl": "were"}


def en_np(np: NounPhrase, role: str = "subj") -> list[str]:
    """English words of a noun phrase; role "subj" or "obj" selects the pronoun form."""
    if np.kind == "pron":
        subj, obj = PRONOUNS[np.pron][:2]
        return [subj if role == "subj" else obj]
    if np.kind == "name":
        return [np.name]
    if np.kind == "coord":
        left, right = np.parts
        return [*en_np(left, role), "and", *en_np(right, role)]
    assert np.noun is not None
    head = np.noun.en_pl if np.number == "pl" else np.noun.en_sg
    assert head is not None
    words: list[str] = (["very"] if np.very else []) + [a.en for a in np.adjs] + [head]
    det = np.det
    if det == "def":
        words.insert(0, "the")
    elif det == "indef":
        words.insert(0, indefinite_article(words[0]))
    elif det == "dem":
        words.insert(0, "these" if np.number == "pl" else "this")
    elif det.startswith("poss:"):
        words.insert(0, det[5:])
    elif det.startswith("num:"):
        words.insert(0, det[4:])
    if np.rel is not None:
        words += en_relative(np, np.rel)
    return words


def en_relative(head: NounPhrase, clause: Clause) -> list[str]:
    """Relative clause after ``head``: "who"/"that" + the clause with a subject or object gap."""
    is_person = head.noun is not None and "person" in head.noun.tags
    if head.rel_role == "subj":
        return ["who" if is_person else "that", *en_clause(clause, "rel_subj")]
    return ["that", *en_clause(clause, "rel_obj")]


def en_pp(pp: PrepPhrase) -> list[str]:
    """English prepositional phrase (the object in its object form)."""
    if pp.np is None:
        return pp.en.split()
    return pp.en.split() + en_np(pp.np, "obj")


def en_verb_group(c: Clause, question: bool) -> tuple[list[str], list[str]]:
    """(auxiliary part that moves in questions, rest of the verb group) in English."""
    person = c.subj.person
    third = person == "3sg"
    v = c.verb
    neg = ["not"] if c.neg else []
    freq = [c.freq.en] if c.freq else []
    if v is None:  # copula "be"
        be = {"pres": BE_PRESENT[person], "past": BE_PAST[person]}.get(c.tense)
        if be:
            return [be], neg + freq
        if c.tense == "perf":
            return ["has" if third else "have"], neg + freq + ["been"]
        return ["will"], neg + freq + ["be"]
    particle = [v.en_particle] if v.en_particle else []
    t = c.tense
    if t == "pres":
        if c.neg or question:
            return ["does" if third else "do"], [*neg, v.en, *particle]
        return [], [*freq, v.en_third() if third else v.en, *particle]
    if t == "prog":
        return [BE_PRESENT[person]], [*neg, v.en_gerund(), *particle]
    if t == "past":
        if c.neg or question:
            return ["did"], [*neg, v.en, *particle]
        return [], [*freq, v.en_past, *particle]
    if t == "perf":
        return ["has" if third else "have"], neg + freq + [v.en_pp] + particle
    if t == "fut":
        return ["will"], neg + freq + [v.en] + particle
    if t == "can":
        if c.neg and not question:
            return ["cannot"], [*freq, v.en, *particle]
        return ["can"], [*freq, v.en, *particle]
    if t == "must":
        return ["must"], neg + freq + [v.en] + particle
    if t == "want":
        if c.neg or question:
            return ["does" if third else "do"], [*neg, "want", "to", v.en, *particle]
        return [], [*freq, "wants" if third else "want", "to", v.en, *particle]
    raise ValueError(f"unknown tense {t}")


def en_clause(c: Clause, mode: str) -> list[str]:
    """English clause. mode: "main" (declarative, also used in subordinate clauses), "question",
    "rel_subj"/"rel_obj" (relative clause with a subject/object gap)."""
    question = mode == "question"
    aux, rest = en_verb_group(c, question)
    subj = [] if mode == "rel_subj" else en_np(c.subj, "subj")
    objects: list[str] = []
    if c.verb is None:
        assert c.pred_adj is not None
        objects = (["very"] if c.pred_very else []) + [c.pred_adj.en]
    elif c.verb.frame == "ditr":
        assert c.acc is not None and c.dat is not None
        if c.en_to_dative:
            objects = [*en_np(c.acc, "obj"), "to", *en_np(c.dat, "obj")]
        else:
            objects = en_np(c.dat, "obj") + en_np(c.acc, "obj")
    elif mode == "rel_obj":
        objects = []
    elif c.acc is not None:
        objects = en_np(c.acc, "obj")
    elif c.dat is not None:
        objects = en_np(c.dat, "obj")
    tail = ([c.manner.en] if c.manner else []) + (en_pp(c.pp) if c.pp else [])
    time = c.time.en.split() if c.time else []
    if c.complement is not None:
        tail += ["that", *en_clause(c.complement, "main")]
    if question:
        words = aux + subj + rest + objects + tail + time
    else:
        words = subj + aux + rest + objects + tail
        words = time + words if c.time_front else words + time
    return words
