"""Verbs: the quickstart's bilingual verbs (their English and German forms and their argument frames), and
the Wikipedia generator's English verbs and participles."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from macaron_synthetic.lexicon.english import gerund, regular_past, third_person
from macaron_synthetic.lexicon.nouns import ANIMATE, CONCRETE


@dataclass(frozen=True)
class Verb:
    """A verb with its English and German morphology and its argument frame.

    frame: "intr" (subject only), "motion" (subject + directional phrase), "tr" (accusative object),
    "dat" (dative object), "ditr" (dative person + accusative thing), "say" (subject + dass-clause).
    """

    en: str  # base form, first word only ("wake" for "wake up")
    en_past: str
    en_pp: str
    de_inf: str  # without separable prefix ("rufen" for "anrufen")
    de_past: str  # Präteritum 1/3 sg
    de_pp: str  # participle, including a separable prefix ("angerufen")
    frame: str
    obj_tags: frozenset[str] = frozenset()
    subj_tags: frozenset[str] = frozenset({"person"})
    en_particle: str = ""  # "up" in "wake up", "for" in "look for"
    de_prefix: str = ""  # separable prefix: "an" in "anrufen"
    de_aux: str = "haben"
    de_2sg: str = ""  # irregular present 2sg ("siehst"); else computed
    de_3sg: str = ""  # irregular present 3sg ("sieht"); else computed
    de_1sg: str = ""  # irregular present 1sg ("mag", "weiß"); else computed
    en_3sg: str = ""
    en_ing: str = ""

    def de_present(self, person: str) -> str:
        """Present tense without the separable prefix."""
        inf = self.de_inf
        stem = inf[:-1] if inf.endswith(("ern", "eln")) else inf[:-2]
        if person in ("1pl", "3pl"):
            return inf
        if person == "1sg":
            return self.de_1sg or stem + "e"
        needs_e = _needs_e(stem)
        if person == "2sg":
            if self.de_2sg:
                return self.de_2sg
            if stem.endswith(("s", "ß", "z", "x")):
                return stem + "t"
            return stem + ("est" if needs_e else "st")
        if self.de_3sg:
            return self.de_3sg
        return stem + ("et" if needs_e else "t")

    def de_preterite(self, person: str) -> str:
        past = self.de_past
        weak = past.endswith("te")
        if person in ("1sg", "3sg"):
            return past
        if person == "2sg":
            if weak or not past.endswith(("t", "d", "s", "ß", "z")):
                return past + "st"
            return past + "est"
        return past + ("n" if weak else "en")

    def de_infinitive(self) -> str:
        return self.de_prefix + self.de_inf

    def en_third(self) -> str:
        return self.en_3sg or third_person(self.en)

    def en_gerund(self) -> str:
        return self.en_ing or gerund(self.en)


def _needs_e(stem: str) -> bool:
    """German e-insertion before -st/-t/-te: arbeit-e-t, öffn-e-t, zeichn-e-t (but wohn-t, komm-t)."""
    if stem.endswith(("t", "d")):
        return True
    if stem.endswith(("m", "n")) and len(stem) > 2:
        prev = stem[-2]
        if prev in "aeiouäöülrmn" or (prev == "h" and stem[-3] in "aeiouäöü"):
            return False
        return True
    return False


def _weak_forms(de_inf: str, inseparable: bool = False) -> tuple[str, str]:
    """Präteritum 1/3sg and participle of a regular (weak) German verb."""
    stem = de_inf[:-1] if de_inf.endswith(("ern", "eln")) else de_inf[:-2]
    e = "e" if _needs_e(stem) else ""
    past = stem + e + "te"
    if inseparable or de_inf.endswith("ieren"):
        pp = stem + e + "t"
    else:
        pp = "ge" + stem + e + "t"
    return past, pp


def _weak(
    en: str,
    de_inf: str,
    frame: str,
    obj: str = "",
    subj: str = "person",
    *,
    en_past: str = "",
    en_pp: str = "",
    en_particle: str = "",
    aux: str = "haben",
    inseparable: bool = False,
    en_3sg: str = "",
    en_ing: str = "",
) -> Verb:
    """A verb that is regular (weak) in German; English past regular unless ``en_past``, participle equal
    to the past unless ``en_pp``."""
    past, pp = _weak_forms(de_inf, inseparable)
    en_p = en_past or regular_past(en)
    return Verb(
        en,
        en_p,
        en_pp or en_p,
        de_inf,
        past,
        pp,
        frame,
        _tags(obj),
        _tags(subj),
        en_particle,
        de_aux=aux,
        en_3sg=en_3sg,
        en_ing=en_ing,
    )


def _strong(
    en: str,
    en_past: str,
    en_pp: str,
    de_inf: str,
    de_past: str,
    de_pp: str,
    frame: str,
    obj: str = "",
    subj: str = "person",
    **kw: str,
) -> Verb:
    """A verb with explicitly given (irregular) forms; keyword arguments go to ``Verb``."""
    return Verb(en, en_past, en_pp, de_inf, de_past, de_pp, frame, _tags(obj), _tags(subj), **kw)


def _tags(spec: str) -> frozenset[str]:
    """Semantic tags from a comma-separated list; ``animate`` and ``concrete`` stand for their groups."""
    out: set[str] = set()
    for tag in spec.split(",") if spec else ():
        out |= ANIMATE if tag == "animate" else CONCRETE if tag == "concrete" else {tag}
    return frozenset(out)


def _sep(verb: Verb, prefix: str) -> Verb:
    """Mark a verb as carrying a separable German prefix (the participle already includes it)."""
    return replace(verb, de_prefix=prefix, de_pp=prefix + verb.de_pp)


VERBS: tuple[Verb, ...] = (
    # intransitive
    _strong(
        "sleep",
        "slept",
        "slept",
        "schlafen",
        "schlief",
        "geschlafen",
        "intr",
        subj="animate",
        de_2sg="schläfst",
        de_3sg="schläft",
    ),
    _weak("laugh", "lachen", "intr"),
    _weak("work", "arbeiten", "intr"),
    _weak("dance", "tanzen", "intr"),
    _strong("sing", "sang", "sung", "singen", "sang", "gesungen", "intr"),
    _weak("wait", "warten", "intr", subj="animate"),
    _weak("play", "spielen", "intr", subj="animate"),
    _weak("cry", "weinen", "intr"),
    _weak("live", "wohnen", "intr", subj="animate"),
    _strong(
        "stay", "stayed", "stayed", "bleiben", "blieb", "geblieben", "intr", subj="animate", de_aux="sein"
    ),
    _weak("travel", "reisen", "intr", aux="sein", en_past="traveled"),
    _sep(
        _strong(
            "wake",
            "woke",
            "woken",
            "wachen",
            "wachte",
            "gewacht",
            "intr",
            subj="animate",
            en_particle="up",
            de_aux="sein",
        ),
        "auf",
    ),
    _sep(
        _strong(
            "fall",
            "fell",
            "fallen",
            "schlafen",
            "schlief",
            "geschlafen",
            "intr",
            subj="animate",
            en_particle="asleep",
            de_aux="sein",
            de_2sg="schläfst",
            de_3sg="schläft",
        ),
        "ein",
    ),
    _sep(
        _strong(
            "arrive", "arrived", "arrived", "kommen", "kam", "gekommen", "intr", subj="animate", de_aux="sein"
        ),
        "an",
    ),
    # motion (take a directional phrase)
    _strong(
        "go",
        "went",
        "gone",
        "gehen",
        "ging",
        "gegangen",
        "motion",
        subj="animate",
        de_aux="sein",
        en_3sg="goes",
    ),
    _strong(
        "run",
        "ran",
        "run",
        "laufen",
        "lief",
        "gelaufen",
        "motion",
        subj="animate",
        de_aux="sein",
        de_2sg="läufst",
        de_3sg="läuft",
        en_ing="running",
    ),
    _strong("come", "came", "come", "kommen", "kam", "gekommen", "motion", subj="animate", de_aux="sein"),
    _strong(
        "drive",
        "drove",
        "driven",
        "fahren",
        "fuhr",
        "gefahren",
        "motion",
        de_aux="sein",
        de_2sg="fährst",
        de_3sg="fährt",
    ),
    _strong("fly", "flew", "flown", "fliegen", "flog", "geflogen", "motion", subj="animate", de_aux="sein"),
    _strong(
        "swim",
        "swam",
        "swum",
        "schwimmen",
        "schwamm",
        "geschwommen",
        "motion",
        subj="animate",
        de_aux="sein",
        en_ing="swimming",
    ),
    # transitive (accusative object)
    _strong(
        "see",
        "saw",
        "seen",
        "sehen",
        "sah",
        "gesehen",
        "tr",
        "animate,concrete,place",
        "animate",
        de_2sg="siehst",
        de_3sg="sieht",
    ),
    _strong(
        "read", "read", "read", "lesen", "las", "gelesen", "tr", "readable", de_2sg="liest", de_3sg="liest"
    ),
    _strong("write", "wrote", "written", "schreiben", "schrieb", "geschrieben", "tr", "readable"),
    _strong(
        "eat",
        "ate",
        "eaten",
        "essen",
        "aß",
        "gegessen",
        "tr",
        "food",
        "animate",
        de_2sg="isst",
        de_3sg="isst",
    ),
    _strong("drink", "drank", "drunk", "trinken", "trank", "getrunken", "tr", "drink", "animate"),
    _weak("buy", "kaufen", "tr", "portable,vehicle,food,drink,readable", en_past="bought"),
    _weak("sell", "verkaufen", "tr", "portable,vehicle,readable", en_past="sold", inseparable=True),
    _strong("find", "found", "found", "finden", "fand", "gefunden", "tr", "portable,animal", "animate"),
    _strong("lose", "lost", "lost", "verlieren", "verlor", "verloren", "tr", "portable"),
    _weak("need", "brauchen", "tr", "portable,vehicle,food,drink"),
    _weak("love", "lieben", "tr", "animate", "animate"),
    _strong(
        "like",
        "liked",
        "liked",
        "mögen",
        "mochte",
        "gemocht",
        "tr",
        "animate,food,drink,readable",
        de_1sg="mag",
        de_2sg="magst",
        de_3sg="mag",
    ),
    _weak("visit", "besuchen", "tr", "person,place", inseparable=True),
    _weak("open", "öffnen", "tr", "open"),
    _strong("close", "closed", "closed", "schließen", "schloss", "geschlossen", "tr", "open"),
    _strong(
        "carry",
        "carried",
        "carried",
        "tragen",
        "trug",
        "getragen",
        "tr",
        "portable",
        de_2sg="trägst",
        de_3sg="trägt",
    ),
    _strong(
        "wash",
        "washed",
        "washed",
        "waschen",
        "wusch",
        "gewaschen",
        "tr",
        "animal,portable,vehicle",
        de_2sg="wäschst",
        de_3sg="wäscht",
    ),
    _weak("cook", "kochen", "tr", "food"),
    _weak("paint", "malen", "tr", "animate,portable,thing,vehicle,place"),
    _strong(
        "take",
        "took",
        "taken",
        "nehmen",
        "nahm",
        "genommen",
        "tr",
        "portable,food,readable",
        de_2sg="nimmst",
        de_3sg="nimmt",
    ),
    _strong(
        "meet",
        "met",
        "met",
        "treffen",
        "traf",
        "getroffen",
        "tr",
        "person",
        de_2sg="triffst",
        de_3sg="trifft",
    ),
    _strong(
        "forget",
        "forgot",
        "forgotten",
        "vergessen",
        "vergaß",
        "vergessen",
        "tr",
        "portable,person",
        de_2sg="vergisst",
        de_3sg="vergisst",
        en_ing="forgetting",
    ),
    _weak("hear", "hören", "tr", "animate", "animate", en_past="heard"),
    _weak("ask", "fragen", "tr", "person"),
    _strong("know", "knew", "known", "kennen", "kannte", "gekannt", "tr", "person,place,readable"),
    _weak("repair", "reparieren", "tr", "fixable"),
    _strong(
        "understand",
        "understood",
        "understood",
        "verstehen",
        "verstand",
        "verstanden",
        "tr",
        "person,readable",
    ),
    _weak("look", "suchen", "tr", "portable,animate", "animate", en_particle="for"),
    _sep(_strong("call", "called", "called", "rufen", "rief", "gerufen", "tr", "person"), "an"),
    _sep(_weak("pick", "holen", "tr", "person,portable", en_particle="up"), "ab"),
    _sep(
        _strong(
            "invite",
            "invited",
            "invited",
            "laden",
            "lud",
            "geladen",
            "tr",
            "person",
            de_2sg="lädst",
            de_3sg="lädt",
        ),
        "ein",
    ),
    _sep(_weak("tidy", "räumen", "tr", "room", en_particle="up"), "auf"),
    _weak("clean", "putzen", "tr", "room,vehicle,portable"),
    Verb(
        "feed",
        "fed",
        "fed",
        "füttern",
        "fütterte",
        "gefüttert",
        "tr",
        _tags("animal"),
        _tags("person"),
        de_1sg="füttere",
    ),
    _strong(
        "throw",
        "threw",
        "thrown",
        "werfen",
        "warf",
        "geworfen",
        "tr",
        "portable",
        de_2sg="wirfst",
        de_3sg="wirft",
    ),
    _strong(
        "catch",
        "caught",
        "caught",
        "fangen",
        "fing",
        "gefangen",
        "tr",
        "animal,toy",
        "animate",
        de_2sg="fängst",
        de_3sg="fängt",
    ),
    _weak("draw", "zeichnen", "tr", "animate,portable,thing,vehicle,place", en_past="drew", en_pp="drawn"),
    _weak("order", "bestellen", "tr", "food,drink", inseparable=True),
    _weak("watch", "beobachten", "tr", "animate", "animate", inseparable=True),
    # dative object
    _strong(
        "help",
        "helped",
        "helped",
        "helfen",
        "half",
        "geholfen",
        "dat",
        "animate",
        de_2sg="hilfst",
        de_3sg="hilft",
    ),
    _weak("thank", "danken", "dat", "person"),
    _weak("follow", "folgen", "dat", "animate", "animate", aux="sein"),
    _weak("answer", "antworten", "dat", "person"),
    # ditransitive: dative person + accusative thing
    _strong(
        "give",
        "gave",
        "given",
        "geben",
        "gab",
        "gegeben",
        "ditr",
        "portable,food,drink,readable",
        de_2sg="gibst",
        de_3sg="gibt",
    ),
    _weak("show", "zeigen", "ditr", "portable,readable,vehicle"),
    _weak("send", "schicken", "ditr", "portable,readable", en_past="sent"),
    _strong(
        "bring",
        "brought",
        "brought",
        "bringen",
        "brachte",
        "gebracht",
        "ditr",
        "portable,food,drink,readable",
    ),
    # verbs of saying/thinking with a dass-clause
    _weak("say", "sagen", "say", en_past="said", en_3sg="says"),
    _strong("think", "thought", "thought", "denken", "dachte", "gedacht", "say"),
    _strong(
        "know",
        "knew",
        "known",
        "wissen",
        "wusste",
        "gewusst",
        "say",
        de_1sg="weiß",
        de_2sg="weißt",
        de_3sg="weiß",
    ),
    _weak("hope", "hoffen", "say"),
    _weak("believe", "glauben", "say"),
)
# no English progressive ("*is knowing"): a sampled progressive becomes the present
STATIVE = frozenset({"know", "like", "love", "need", "understand", "hear", "see", "think", "believe", "hope"})


def _group_by_frame(verbs: Iterable[Verb]) -> dict[str, tuple[Verb, ...]]:
    """The verbs of each frame, in lexicon order (frames in order of first appearance)."""
    groups: dict[str, tuple[Verb, ...]] = {}
    for verb in verbs:
        groups[verb.frame] = (*groups.get(verb.frame, ()), verb)
    return groups


VERBS_BY_FRAME = _group_by_frame(VERBS)

PARTICIPLES = tuple(
    """
built founded established opened closed designed constructed destroyed rebuilt restored renovated
expanded extended enlarged demolished abandoned acquired purchased sold inherited granted awarded won lost
defeated captured besieged occupied liberated annexed ruled governed administered elected appointed
nominated dismissed replaced named renamed described documented recorded published released issued
printed translated edited composed performed produced directed filmed broadcast premiered exhibited
painted carved discovered identified classified studied surveyed excavated explored mapped measured
estimated observed reported announced proposed approved rejected adopted abolished introduced funded
financed sponsored supported opposed criticised praised celebrated commemorated honoured dedicated
consecrated converted transferred relocated merged divided united connected served operated managed
controlled owned leased inhabited settled visited attacked raided damaged flooded burned repaired
improved modernised electrified upgraded withdrawn preserved protected listed registered recognised
""".split()
)
ENCYCLOPEDIC_VERBS = tuple(
    """
remain serve include contain attract support require produce feature cover dominate surround border
""".split()
)
