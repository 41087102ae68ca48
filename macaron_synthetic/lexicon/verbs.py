"""Verbs: the quickstart's bilingual verbs (their English and German forms and their argument frames), and
the Wikipedia generator's English verbs and participles."""

from __future__ import annotations

from dataclasses import dataclass

from macaron_synthetic.lexicon.english import gerund, regular_past, third_person
from macaron_synthetic.lexicon.nouns import ANIMATE, CONCRETE
from macaron_synthetic.lexicon.tables import words


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


def _weak_forms(de_inf: str) -> tuple[str, str]:
    """Präteritum 1/3sg and participle of a regular (weak) German verb."""
    stem = de_inf[:-1] if de_inf.endswith(("ern", "eln")) else de_inf[:-2]
    e = "e" if _needs_e(stem) else ""
    ge = "" if de_inf.endswith("ieren") else "ge"  # repariert, not *gerepariert
    return stem + e + "te", ge + stem + e + "t"


def _tags(spec: str) -> frozenset[str]:
    """Semantic tags from a comma-separated list; ``animate`` and ``concrete`` stand for their groups."""
    out: set[str] = set()
    for tag in spec.split(",") if spec else ():
        out |= ANIMATE if tag == "animate" else CONCRETE if tag == "concrete" else {tag}
    return frozenset(out)


# German present forms that Verb.de_present does not derive (vowel change, ...), for every verb of that
# infinitive: infinitive, 1sg, 2sg, 3sg ("-": derived)
_DE_PRESENT_TABLE = """
schlafen   -        schläfst  schläft
laufen     -        läufst    läuft
fahren     -        fährst    fährt
sehen      -        siehst    sieht
lesen      -        liest     liest
essen      -        isst      isst
mögen      mag      magst     mag
tragen     -        trägst    trägt
waschen    -        wäschst   wäscht
nehmen     -        nimmst    nimmt
treffen    -        triffst   trifft
vergessen  -        vergisst  vergisst
laden      -        lädst     lädt
füttern    füttere  -         -
werfen     -        wirfst    wirft
fangen     -        fängst    fängt
helfen     -        hilfst    hilft
geben      -        gibst     gibt
wissen     weiß     weißt     weiß
"""
_DE_PRESENT = {
    infinitive: {
        field: form for field, form in zip(("de_1sg", "de_2sg", "de_3sg"), forms, strict=True) if form != "-"
    }
    for infinitive, *forms in map(str.split, _DE_PRESENT_TABLE.strip().splitlines())
}

# english                german                             subject  object  [Verb field=value ...]
_VERB_TABLE = """
[intr]
sleep/slept              schlafen/schlief/geschlafen        animate  -
laugh                    lachen                             person   -
work                     arbeiten                           person   -
dance                    tanzen                             person   -
sing/sang/sung           singen/sang/gesungen               person   -
wait                     warten                             animate  -
play                     spielen                            animate  -
cry                      weinen                             person   -
live                     wohnen                             animate  -
stay                     bleiben/blieb/geblieben            animate  -  de_aux=sein
travel                   reisen                             person   -  de_aux=sein
wake_up/woke/woken       auf|wachen                         animate  -  de_aux=sein
fall_asleep/fell/fallen  ein|schlafen/schlief/geschlafen    animate  -  de_aux=sein
arrive                   an|kommen/kam/gekommen             animate  -  de_aux=sein
[motion]
go/went/gone             gehen/ging/gegangen                animate  -  de_aux=sein en_3sg=goes
run/ran/run              laufen/lief/gelaufen               animate  -  de_aux=sein en_ing=running
come/came/come           kommen/kam/gekommen                animate  -  de_aux=sein
drive/drove/driven       fahren/fuhr/gefahren               person   -  de_aux=sein
fly/flew/flown           fliegen/flog/geflogen              animate  -  de_aux=sein
swim/swam/swum           schwimmen/schwamm/geschwommen      animate  -  de_aux=sein en_ing=swimming
[tr]
see/saw/seen             sehen/sah/gesehen                  animate  animate,concrete,place
read/read                lesen/las/gelesen                  person   readable
write/wrote/written      schreiben/schrieb/geschrieben      person   readable
eat/ate/eaten            essen/aß/gegessen                  animate  food
drink/drank/drunk        trinken/trank/getrunken            animate  drink
buy/bought               kaufen                             person   portable,vehicle,food,drink,readable
sell/sold                verkaufen/verkaufte/verkauft       person   portable,vehicle,readable
find/found               finden/fand/gefunden               animate  portable,animal
lose/lost                verlieren/verlor/verloren          person   portable
need                     brauchen                           person   portable,vehicle,food,drink
love                     lieben                             animate  animate
like                     mögen/mochte/gemocht               person   animate,food,drink,readable
visit                    besuchen/besuchte/besucht          person   person,place
open                     öffnen                             person   open
close                    schließen/schloss/geschlossen      person   open
carry                    tragen/trug/getragen               person   portable
wash                     waschen/wusch/gewaschen            person   animal,portable,vehicle
cook                     kochen                             person   food
paint                    malen                              person   animate,portable,thing,vehicle,place
take/took/taken          nehmen/nahm/genommen               person   portable,food,readable
meet/met                 treffen/traf/getroffen             person   person
forget/forgot/forgotten  vergessen/vergaß/vergessen         person   portable,person  en_ing=forgetting
hear/heard               hören                              animate  animate
ask                      fragen                             person   person
know/knew/known          kennen/kannte/gekannt              person   person,place,readable
repair                   reparieren                         person   fixable
understand/understood    verstehen/verstand/verstanden      person   person,readable
look_for                 suchen                             animate  portable,animate
call                     an|rufen/rief/gerufen              person   person
pick_up                  ab|holen                           person   person,portable
invite                   ein|laden/lud/geladen              person   person
tidy_up                  auf|räumen                         person   room
clean                    putzen                             person   room,vehicle,portable
feed/fed                 füttern                            person   animal
throw/threw/thrown       werfen/warf/geworfen               person   portable
catch/caught             fangen/fing/gefangen               animate  animal,toy
draw/drew/drawn          zeichnen                           person   animate,portable,thing,vehicle,place
order                    bestellen/bestellte/bestellt       person   food,drink
watch                    beobachten/beobachtete/beobachtet  animate  animate
[dat]
help                     helfen/half/geholfen               person   animate
thank                    danken                             person   person
follow                   folgen                             animate  animate  de_aux=sein
answer                   antworten                          person   person
[ditr]
give/gave/given          geben/gab/gegeben                  person   portable,food,drink,readable
show                     zeigen                             person   portable,readable,vehicle
send/sent                schicken                           person   portable,readable
bring/brought            bringen/brachte/gebracht           person   portable,food,drink,readable
[say]
say/said                 sagen                              person   -  en_3sg=says
think/thought            denken/dachte/gedacht              person   -
know/knew/known          wissen/wusste/gewusst              person   -
hope                     hoffen                             person   -
believe                  glauben                            person   -
"""


def _parse_verbs(table: str) -> tuple[Verb, ...]:
    """The verbs of a table: ``[frame]`` lines start the verbs of a frame, then one verb a line (in the order
    the sampler draws from: a change of order changes the corpus), columns:

    * english: ``base[_particle][/past[/participle]]``, e.g. ``wake_up/woke/woken`` ("wake up"); the past
      is regular unless given, the participle is the past unless given;
    * german: ``[prefix|]infinitive[/preterite/participle]``, e.g. ``an|rufen/rief/gerufen`` (separable
      "an": "anrufen", "angerufen"); regular (weak) forms unless given; irregular present forms come from
      :data:`_DE_PRESENT`;
    * subject and object: tags (:func:`_tags`), ``-`` for no object;
    * then optionally ``field=value`` for other fields of :class:`Verb` (``de_aux=sein``).
    """
    verbs = []
    frame = ""
    for line in table.strip().splitlines():
        if line.startswith("["):
            frame = line.strip("[]")
            continue
        english, german, subj, obj, *options = line.split()
        en_forms = english.split("/")
        en, _, particle = en_forms[0].partition("_")
        en_past = en_forms[1] if len(en_forms) > 1 else regular_past(en)
        en_pp = en_forms[2] if len(en_forms) > 2 else en_past
        prefix, _, de_forms = german.rpartition("|")
        if "/" in de_forms:
            de_inf, de_past, de_pp = de_forms.split("/")
        else:
            de_inf, (de_past, de_pp) = de_forms, _weak_forms(de_forms)
        fields = {"en_particle": particle, "de_prefix": prefix, **_DE_PRESENT.get(de_inf, {})}
        fields.update(option.split("=") for option in options)
        obj_tags = _tags("" if obj == "-" else obj)
        verbs.append(
            Verb(en, en_past, en_pp, de_inf, de_past, prefix + de_pp, frame, obj_tags, _tags(subj), **fields)
        )
    return tuple(verbs)


VERBS = _parse_verbs(_VERB_TABLE)
# no English progressive ("*is knowing"): a sampled progressive becomes the present
STATIVE = frozenset({"know", "like", "love", "need", "understand", "hear", "see", "think", "believe", "hope"})
#: the verbs of each frame, in lexicon order (frames in order of first appearance)
VERBS_BY_FRAME = {
    frame: tuple(v for v in VERBS if v.frame == frame) for frame in dict.fromkeys(v.frame for v in VERBS)
}

PARTICIPLES = words("""
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
""")
ENCYCLOPEDIC_VERBS = words("""
remain serve include contain attract support require produce feature cover dominate surround border
""")
