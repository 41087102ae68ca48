"""Generate a deterministic, offline English→German-like parallel corpus with real grammatical structure.

    python -m preprocess.synthetic_en_de --dest DIR [--train N --valid N --test N --seed S]

writes raw, detokenized ``DIR/{train,valid,test}.{en,de}`` (one sentence per line, aligned).

Both sides are rendered from one sampled abstract clause, so the German is a deterministic function of
the English (never a copy or a reversal). The German side follows the real grammar of German for the
constructions it uses:

* nouns carry grammatical gender and irregular plurals; German nouns are capitalised; weak masculine
  nouns take ``-(e)n`` outside the nominative; dative plurals add ``-n``;
* determiners (``der``/``ein``/``kein``/``dieser``/possessives) inflect for gender, number and case
  (nominative subjects, accusative/dative objects, case-governing prepositions with contractions
  ``im``/``ins``/``zum``/``zur``/``vom``/``am``/``beim``); adjectives take strong/weak/mixed endings;
* verbs conjugate for person and number in present, Präteritum (English simple past), Perfekt with
  ``haben``/``sein`` (English present perfect), future with ``werden`` and modals; the English
  progressive maps onto the German present; ``must not`` becomes ``darf nicht``;
* word order: V2 in main clauses (a fronted time adverb or subordinate clause inverts subject and
  verb), V1 in yes/no questions, verb-final in subordinate clauses (``weil``, ``dass``, ``obwohl``,
  ``während``, ``wenn``/``als``) and relative clauses; separable prefixes go to the end of main
  clauses; participles and infinitives close the clause;
* negation with ``kein`` for indefinite objects and ``nicht`` otherwise; German commas before
  subordinate and relative clauses.

All vocabulary and rules are written in this file (license-clean). The sampler is seeded by
``random.Random``: the same seed and sizes always give byte-identical files, and the test split does not
depend on the requested training-set size. Sentences are unique across all splits.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

MIN_WORDS = 4
MAX_WORDS = 25
SPLIT_ORDER = ("test", "valid", "train")  # test first: its content never depends on --train
PERSONS = ("1sg", "2sg", "3sg", "1pl", "3pl")
CASES = ("nom", "acc", "dat")

# ----------------------------------------------------------------------------------------------------------
# Lexicon
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Noun:
    """A noun lemma: English singular/plural, German singular/plural, gender, semantic tags."""

    en_sg: str
    en_pl: str | None
    de_sg: str
    de_pl: str | None
    gender: str  # "m", "f", "n"
    tags: frozenset[str]
    weak: bool = False  # n-declension masculine: der Junge, den Jungen, dem Jungen

    @property
    def mass(self) -> bool:
        return self.en_pl is None

    def de_form(self, number: str, case: str) -> str:
        if number == "pl":
            assert self.de_pl is not None
            if case == "dat" and not self.de_pl.endswith(("n", "s")):
                return self.de_pl + "n"
            return self.de_pl
        if self.weak and case != "nom":
            return self.de_sg + ("n" if self.de_sg.endswith(("e", "er", "ar")) else "en")
        return self.de_sg


# en_sg en_pl de_sg de_pl gender tags [weak]   ("-" = no plural: mass noun)
_NOUN_TABLE = """
man men Mann Männer m person
woman women Frau Frauen f person
child children Kind Kinder n person
boy boys Junge Jungen m person weak
girl girls Mädchen Mädchen n person
teacher teachers Lehrer Lehrer m person
student students Student Studenten m person weak
doctor doctors Arzt Ärzte m person
neighbour neighbours Nachbar Nachbarn m person weak
friend friends Freund Freunde m person
cook cooks Koch Köche m person
farmer farmers Bauer Bauern m person weak
king kings König Könige m person
queen queens Königin Königinnen f person
baker bakers Bäcker Bäcker m person
driver drivers Fahrer Fahrer m person
brother brothers Bruder Brüder m person
sister sisters Schwester Schwestern f person
mother mothers Mutter Mütter f person
father fathers Vater Väter m person
soldier soldiers Soldat Soldaten m person weak
singer singers Sänger Sänger m person
guest guests Gast Gäste m person
customer customers Kunde Kunden m person weak
lawyer lawyers Anwalt Anwälte m person
artist artists Künstler Künstler m person
dog dogs Hund Hunde m animal
cat cats Katze Katzen f animal
horse horses Pferd Pferde n animal
bird birds Vogel Vögel m animal
mouse mice Maus Mäuse f animal
cow cows Kuh Kühe f animal
fish fish Fisch Fische m animal
sheep sheep Schaf Schafe n animal
bear bears Bär Bären m animal weak
fox foxes Fuchs Füchse m animal
rabbit rabbits Hase Hasen m animal weak
duck ducks Ente Enten f animal
pig pigs Schwein Schweine n animal
wolf wolves Wolf Wölfe m animal
monkey monkeys Affe Affen m animal weak
lion lions Löwe Löwen m animal weak
apple apples Apfel Äpfel m food,portable
cake cakes Kuchen Kuchen m food,portable
egg eggs Ei Eier n food,portable
soup soups Suppe Suppen f food
sausage sausages Wurst Würste f food,portable
pear pears Birne Birnen f food,portable
banana bananas Banane Bananen f food,portable
cookie cookies Keks Kekse m food,portable
pizza pizzas Pizza Pizzen f food,portable
potato potatoes Kartoffel Kartoffeln f food,portable
tomato tomatoes Tomate Tomaten f food,portable
coffee - Kaffee - m drink
tea - Tee - m drink
milk - Milch - f drink
water - Wasser - n drink
juice - Saft - m drink
beer - Bier - n drink
wine - Wein - m drink
book books Buch Bücher n readable,portable,open
letter letters Brief Briefe m readable,portable,open
newspaper newspapers Zeitung Zeitungen f readable,portable
story stories Geschichte Geschichten f readable
poem poems Gedicht Gedichte n readable
map maps Karte Karten f readable,portable
magazine magazines Zeitschrift Zeitschriften f readable,portable
message messages Nachricht Nachrichten f readable
key keys Schlüssel Schlüssel m portable
ball balls Ball Bälle m portable,toy
bag bags Tasche Taschen f portable,open
cup cups Tasse Tassen f portable
bottle bottles Flasche Flaschen f portable,open
chair chairs Stuhl Stühle m thing,fixable
table tables Tisch Tische m thing,fixable
lamp lamps Lampe Lampen f portable,fixable
clock clocks Uhr Uhren f portable,fixable
phone phones Telefon Telefone n portable,fixable
computer computers Computer Computer m portable,fixable
picture pictures Bild Bilder n portable
flower flowers Blume Blumen f portable
box boxes Kiste Kisten f portable,open
shoe shoes Schuh Schuhe m portable
hat hats Hut Hüte m portable
coat coats Mantel Mäntel m portable
glass glasses Glas Gläser n portable
plate plates Teller Teller m portable
knife knives Messer Messer n portable
pen pens Stift Stifte m portable
gift gifts Geschenk Geschenke n portable,open
umbrella umbrellas Regenschirm Regenschirme m portable,open
ring rings Ring Ringe m portable
candle candles Kerze Kerzen f portable
guitar guitars Gitarre Gitarren f portable,fixable
window windows Fenster Fenster n thing,open,fixable
door doors Tür Türen f thing,open,fixable
bicycle bicycles Fahrrad Fahrräder n vehicle,fixable
car cars Auto Autos n vehicle,fixable
bus buses Bus Busse m vehicle,fixable
train trains Zug Züge m vehicle
boat boats Boot Boote n vehicle,fixable
garden gardens Garten Gärten m place
kitchen kitchens Küche Küchen f place,room
house houses Haus Häuser n place,room
school schools Schule Schulen f place
park parks Park Parks m place
city cities Stadt Städte f place
station stations Bahnhof Bahnhöfe m place
market markets Markt Märkte m place
forest forests Wald Wälder m place
library libraries Bibliothek Bibliotheken f place
office offices Büro Büros n place,room
village villages Dorf Dörfer n place
room rooms Zimmer Zimmer n place,room
shop shops Laden Läden m place
museum museums Museum Museen n place
church churches Kirche Kirchen f place
hotel hotels Hotel Hotels n place
restaurant restaurants Restaurant Restaurants n place
hospital hospitals Krankenhaus Krankenhäuser n place
bakery bakeries Bäckerei Bäckereien f place
castle castles Schloss Schlösser n place
cinema cinemas Kino Kinos n place
theatre theatres Theater Theater n place
harbour harbours Hafen Häfen m place
"""


def _parse_nouns(table: str) -> tuple[Noun, ...]:
    nouns = []
    for line in table.strip().splitlines():
        en_sg, en_pl, de_sg, de_pl, gender, tags, *flags = line.split()
        nouns.append(
            Noun(
                en_sg=en_sg,
                en_pl=None if en_pl == "-" else en_pl,
                de_sg=de_sg,
                de_pl=None if de_pl == "-" else de_pl,
                gender=gender,
                tags=frozenset(tags.split(",")),
                weak="weak" in flags,
            )
        )
    return tuple(nouns)


NOUNS = _parse_nouns(_NOUN_TABLE)
NAMES = ("Anna", "Maria", "Peter", "Thomas", "Paul", "Lisa", "Jonas", "Laura", "Felix", "Clara")
ANIMATE = frozenset({"person", "animal"})
CONCRETE = frozenset({"portable", "thing", "vehicle", "food", "readable"})


@dataclass(frozen=True)
class Adjective:
    """An adjective: English form, German predicative form and attributive stem, allowed noun tags."""

    en: str
    de: str
    tags: frozenset[str]
    de_attr_stem: str = ""  # teuer → teur-e, dunkel → dunkl-e

    @property
    def stem(self) -> str:
        """Attributive stem that takes the inflection ending: müde → müd-e, teuer → teur-e."""
        if self.de_attr_stem:
            return self.de_attr_stem
        return self.de[:-1] if self.de.endswith("e") else self.de


# en de tags [attributive stem]
_ADJ_TABLE = """
big groß person,animal,portable,thing,vehicle,place,food
small klein person,animal,portable,thing,vehicle,place,food
old alt person,animal,portable,thing,vehicle,place,readable
young jung person,animal
new neu portable,thing,vehicle,place,readable
good gut person,animal,food,drink,readable,portable
bad schlecht food,drink,readable
beautiful schön person,animal,portable,thing,vehicle,place
happy glücklich person,animal
sad traurig person,animal,readable
tired müde person,animal
hungry hungrig person,animal
clever klug person,animal
friendly freundlich person,animal
lazy faul person,animal
brave mutig person,animal
loud laut person,animal,place
fast schnell animal,vehicle
red rot portable,thing,vehicle,food
blue blau portable,thing,vehicle
green grün portable,thing,vehicle,food
black schwarz animal,portable,thing,vehicle,drink
white weiß animal,portable,thing,vehicle
brown braun animal,portable,thing
expensive teuer portable,thing,vehicle,food,drink teur
cheap billig portable,thing,vehicle,food,drink
heavy schwer portable,thing
warm warm food,drink,place,portable
cold kalt food,drink,place
fresh frisch food,drink
sweet süß food,drink
long lang readable
short kurz readable
interesting interessant readable,person,place
boring langweilig readable,person,place
famous berühmt person,animal,place,readable
dark dunkel place,drink,animal dunkl
strange seltsam person,animal,readable,portable
dirty schmutzig portable,thing,vehicle,place,animal
clean sauber portable,thing,vehicle,place
empty leer portable,place
rich reich person
poor arm person
sick krank person,animal
angry wütend person,animal
proud stolz person
"""


def _parse_adjectives(table: str) -> tuple[Adjective, ...]:
    out = []
    for line in table.strip().splitlines():
        en, de, tags, *stem = line.split()
        out.append(Adjective(en, de, frozenset(tags.split(",")), stem[0] if stem else ""))
    return tuple(out)


ADJECTIVES = _parse_adjectives(_ADJ_TABLE)


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
        if self.en_3sg:
            return self.en_3sg
        return _en_add_s(self.en)

    def en_gerund(self) -> str:
        if self.en_ing:
            return self.en_ing
        base = self.en
        if base.endswith("ie"):
            return base[:-2] + "ying"
        if base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
            return base[:-1] + "ing"
        return base + "ing"


def _en_add_s(word: str) -> str:
    if word.endswith(("s", "sh", "ch", "x", "z", "o")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


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


def _weak(en: str, de_inf: str, frame: str, obj: str = "", subj: str = "person", *, en_past: str = "",
          en_particle: str = "", aux: str = "haben", inseparable: bool = False, en_3sg: str = "",
          en_ing: str = "") -> Verb:
    """A verb that is regular (weak) in German; English past/participle regular unless en_past."""
    past, pp = _weak_forms(de_inf, inseparable)
    if en_past:
        en_p = en_past
    elif en.endswith("e"):
        en_p = en + "d"
    elif en.endswith("y") and en[-2] not in "aeiou":
        en_p = en[:-1] + "ied"
    else:
        en_p = en + "ed"
    return Verb(en, en_p, en_p, de_inf, past, pp, frame, _tags(obj), _tags(subj), en_particle, de_aux=aux,
                en_3sg=en_3sg, en_ing=en_ing)


def _strong(en: str, en_past: str, en_pp: str, de_inf: str, de_past: str, de_pp: str, frame: str,
            obj: str = "", subj: str = "person", **kw: str) -> Verb:
    """A verb with explicitly given (irregular) forms; keyword arguments go to ``Verb``."""
    return Verb(en, en_past, en_pp, de_inf, de_past, de_pp, frame, _tags(obj), _tags(subj), **kw)


def _tags(spec: str) -> frozenset[str]:
    out: set[str] = set()
    for tag in spec.split(",") if spec else ():
        out |= ANIMATE if tag == "animate" else CONCRETE if tag == "concrete" else {tag}
    return frozenset(out)


def _sep(verb: Verb, prefix: str) -> Verb:
    """Mark a verb as carrying a separable German prefix (the participle already includes it)."""
    return replace(verb, de_prefix=prefix, de_pp=prefix + verb.de_pp)


VERBS: tuple[Verb, ...] = (
    # intransitive
    _strong("sleep", "slept", "slept", "schlafen", "schlief", "geschlafen", "intr", subj="animate",
            de_2sg="schläfst", de_3sg="schläft"),
    _weak("laugh", "lachen", "intr"),
    _weak("work", "arbeiten", "intr"),
    _weak("dance", "tanzen", "intr"),
    _strong("sing", "sang", "sung", "singen", "sang", "gesungen", "intr"),
    _weak("wait", "warten", "intr", subj="animate"),
    _weak("play", "spielen", "intr", subj="animate"),
    _weak("cry", "weinen", "intr"),
    _weak("live", "wohnen", "intr", subj="animate"),
    _strong("stay", "stayed", "stayed", "bleiben", "blieb", "geblieben", "intr", subj="animate",
            de_aux="sein"),
    _weak("travel", "reisen", "intr", aux="sein", en_past="traveled"),
    _sep(_strong("wake", "woke", "woken", "wachen", "wachte", "gewacht", "intr", subj="animate",
                 en_particle="up", de_aux="sein"), "auf"),
    _sep(_strong("fall", "fell", "fallen", "schlafen", "schlief", "geschlafen", "intr", subj="animate",
                 en_particle="asleep", de_aux="sein", de_2sg="schläfst", de_3sg="schläft"), "ein"),
    _sep(_strong("arrive", "arrived", "arrived", "kommen", "kam", "gekommen", "intr", subj="animate",
                 de_aux="sein"), "an"),
    # motion (take a directional phrase)
    _strong("go", "went", "gone", "gehen", "ging", "gegangen", "motion", subj="animate", de_aux="sein",
            en_3sg="goes"),
    _strong("run", "ran", "run", "laufen", "lief", "gelaufen", "motion", subj="animate", de_aux="sein",
            de_2sg="läufst", de_3sg="läuft", en_ing="running"),
    _strong("come", "came", "come", "kommen", "kam", "gekommen", "motion", subj="animate", de_aux="sein"),
    _strong("drive", "drove", "driven", "fahren", "fuhr", "gefahren", "motion", de_aux="sein",
            de_2sg="fährst", de_3sg="fährt"),
    _strong("fly", "flew", "flown", "fliegen", "flog", "geflogen", "motion", subj="animate", de_aux="sein"),
    _strong("swim", "swam", "swum", "schwimmen", "schwamm", "geschwommen", "motion", subj="animate",
            de_aux="sein", en_ing="swimming"),
    # transitive (accusative object)
    _strong("see", "saw", "seen", "sehen", "sah", "gesehen", "tr", "animate,concrete,place", "animate",
            de_2sg="siehst", de_3sg="sieht"),
    _strong("read", "read", "read", "lesen", "las", "gelesen", "tr", "readable", de_2sg="liest",
            de_3sg="liest"),
    _strong("write", "wrote", "written", "schreiben", "schrieb", "geschrieben", "tr", "readable"),
    _strong("eat", "ate", "eaten", "essen", "aß", "gegessen", "tr", "food", "animate", de_2sg="isst",
            de_3sg="isst"),
    _strong("drink", "drank", "drunk", "trinken", "trank", "getrunken", "tr", "drink", "animate"),
    _weak("buy", "kaufen", "tr", "portable,vehicle,food,drink,readable", en_past="bought"),
    _weak("sell", "verkaufen", "tr", "portable,vehicle,readable", en_past="sold", inseparable=True),
    _strong("find", "found", "found", "finden", "fand", "gefunden", "tr", "portable,animal", "animate"),
    _strong("lose", "lost", "lost", "verlieren", "verlor", "verloren", "tr", "portable"),
    _weak("need", "brauchen", "tr", "portable,vehicle,food,drink"),
    _weak("love", "lieben", "tr", "animate", "animate"),
    _strong("like", "liked", "liked", "mögen", "mochte", "gemocht", "tr", "animate,food,drink,readable",
            de_1sg="mag", de_2sg="magst", de_3sg="mag"),
    _weak("visit", "besuchen", "tr", "person,place", inseparable=True),
    _weak("open", "öffnen", "tr", "open"),
    _strong("close", "closed", "closed", "schließen", "schloss", "geschlossen", "tr", "open"),
    _strong("carry", "carried", "carried", "tragen", "trug", "getragen", "tr", "portable",
            de_2sg="trägst", de_3sg="trägt"),
    _strong("wash", "washed", "washed", "waschen", "wusch", "gewaschen", "tr", "animal,portable,vehicle",
            de_2sg="wäschst", de_3sg="wäscht"),
    _weak("cook", "kochen", "tr", "food"),
    _weak("paint", "malen", "tr", "animate,portable,thing,vehicle,place"),
    _strong("take", "took", "taken", "nehmen", "nahm", "genommen", "tr", "portable,food,readable",
            de_2sg="nimmst", de_3sg="nimmt"),
    _strong("meet", "met", "met", "treffen", "traf", "getroffen", "tr", "person", de_2sg="triffst",
            de_3sg="trifft"),
    _strong("forget", "forgot", "forgotten", "vergessen", "vergaß", "vergessen", "tr", "portable,person",
            de_2sg="vergisst", de_3sg="vergisst", en_ing="forgetting"),
    _weak("hear", "hören", "tr", "animate", "animate", en_past="heard"),
    _weak("ask", "fragen", "tr", "person"),
    _strong("know", "knew", "known", "kennen", "kannte", "gekannt", "tr", "person,place,readable"),
    _weak("repair", "reparieren", "tr", "fixable"),
    _strong("understand", "understood", "understood", "verstehen", "verstand", "verstanden", "tr",
            "person,readable"),
    _weak("look", "suchen", "tr", "portable,animate", "animate", en_particle="for"),
    _sep(_strong("call", "called", "called", "rufen", "rief", "gerufen", "tr", "person"), "an"),
    _sep(_weak("pick", "holen", "tr", "person,portable", en_particle="up"), "ab"),
    _sep(_strong("invite", "invited", "invited", "laden", "lud", "geladen", "tr", "person",
                 de_2sg="lädst", de_3sg="lädt"), "ein"),
    _sep(_weak("tidy", "räumen", "tr", "room", en_particle="up"), "auf"),
    _weak("clean", "putzen", "tr", "room,vehicle,portable"),
    Verb("feed", "fed", "fed", "füttern", "fütterte", "gefüttert", "tr", _tags("animal"), _tags("person"),
         de_1sg="füttere"),
    _strong("throw", "threw", "thrown", "werfen", "warf", "geworfen", "tr", "portable", de_2sg="wirfst",
            de_3sg="wirft"),
    _strong("catch", "caught", "caught", "fangen", "fing", "gefangen", "tr", "animal,toy", "animate",
            de_2sg="fängst", de_3sg="fängt"),
    _weak("draw", "zeichnen", "tr", "animate,portable,thing,vehicle,place", en_past="drew"),
    _weak("order", "bestellen", "tr", "food,drink", inseparable=True),
    _weak("watch", "beobachten", "tr", "animate", "animate", inseparable=True),
    # dative object
    _strong("help", "helped", "helped", "helfen", "half", "geholfen", "dat", "animate", de_2sg="hilfst",
            de_3sg="hilft"),
    _weak("thank", "danken", "dat", "person"),
    _weak("follow", "folgen", "dat", "animate", "animate", aux="sein"),
    _weak("answer", "antworten", "dat", "person"),
    # ditransitive: dative person + accusative thing
    _strong("give", "gave", "given", "geben", "gab", "gegeben", "ditr", "portable,food,drink,readable",
            de_2sg="gibst", de_3sg="gibt"),
    _weak("show", "zeigen", "ditr", "portable,readable,vehicle"),
    _weak("send", "schicken", "ditr", "portable,readable", en_past="sent"),
    _strong("bring", "brought", "brought", "bringen", "brachte", "gebracht", "ditr",
            "portable,food,drink,readable"),
    # verbs of saying/thinking with a dass-clause
    _weak("say", "sagen", "say", en_past="said", en_3sg="says"),
    _strong("think", "thought", "thought", "denken", "dachte", "gedacht", "say"),
    _strong("know", "knew", "known", "wissen", "wusste", "gewusst", "say", de_1sg="weiß", de_2sg="weißt",
            de_3sg="weiß"),
    _weak("hope", "hoffen", "say"),
    _weak("believe", "glauben", "say"),
)
# the one English participle that differs from an irregular simple past given to _weak:
VERBS = tuple(replace(v, en_pp="drawn") if v.en == "draw" else v for v in VERBS)
STATIVE = frozenset({"know", "like", "love", "need", "understand", "hear", "see", "think", "believe", "hope"})

VERBS_BY_FRAME: dict[str, tuple[Verb, ...]] = {}
for _v in VERBS:
    VERBS_BY_FRAME.setdefault(_v.frame, ())
    VERBS_BY_FRAME[_v.frame] += (_v,)

# auxiliaries and modals: present forms by person (1sg, 2sg, 3sg, 1pl, 3pl)
DE_AUX = {
    "haben": ("habe", "hast", "hat", "haben", "haben"),
    "sein": ("bin", "bist", "ist", "sind", "sind"),
    "werden": ("werde", "wirst", "wird", "werden", "werden"),
    "können": ("kann", "kannst", "kann", "können", "können"),
    "müssen": ("muss", "musst", "muss", "müssen", "müssen"),
    "dürfen": ("darf", "darfst", "darf", "dürfen", "dürfen"),
    "wollen": ("will", "willst", "will", "wollen", "wollen"),
}
DE_SEIN_PAST = ("war", "warst", "war", "waren", "waren")
EN_BE = {"1sg": "am", "2sg": "are", "3sg": "is", "1pl": "are", "3pl": "are"}
EN_BE_PAST = {"1sg": "was", "2sg": "were", "3sg": "was", "1pl": "were", "3pl": "were"}


def _aux(name: str, person: str) -> str:
    return DE_AUX[name][PERSONS.index(person)]


@dataclass(frozen=True)
class Adverb:
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
TENSE_WEIGHTS = {"pres": 30, "prog": 10, "past": 20, "perf": 15, "fut": 10, "can": 6, "must": 4, "want": 5}
SUBORDINATORS = (("because", "weil"), ("although", "obwohl"), ("while", "während"))
COORDINATORS = (("and", "und"), ("but", "aber"), ("or", "oder"))

# ----------------------------------------------------------------------------------------------------------
# German inflection tables
# ----------------------------------------------------------------------------------------------------------
_GN = ("m", "f", "n", "pl")
_DEF = {"m": ("der", "den", "dem"), "f": ("die", "die", "der"), "n": ("das", "das", "dem"),
        "pl": ("die", "die", "den")}
_DIES = {"m": ("er", "en", "em"), "f": ("e", "e", "er"), "n": ("es", "es", "em"), "pl": ("e", "e", "en")}
_EIN = {"m": ("", "en", "em"), "f": ("e", "e", "er"), "n": ("", "", "em"), "pl": ("e", "e", "en")}
_STRONG_ADJ = {"m": ("er", "en", "em"), "f": ("e", "e", "er"), "n": ("es", "es", "em"),
               "pl": ("e", "e", "en")}
_WEAK_ADJ = {"m": ("e", "en", "en"), "f": ("e", "e", "en"), "n": ("e", "e", "en"),
             "pl": ("en", "en", "en")}
_MIXED_ADJ = {"m": ("er", "en", "en"), "f": ("e", "e", "en"), "n": ("es", "es", "en"),
              "pl": ("en", "en", "en")}
_REL = {"m": ("der", "den", "dem"), "f": ("die", "die", "der"), "n": ("das", "das", "dem"),
        "pl": ("die", "die", "denen")}
_CONTRACT = {("in", "dem"): "im", ("in", "das"): "ins", ("zu", "dem"): "zum", ("zu", "der"): "zur",
             ("von", "dem"): "vom", ("an", "dem"): "am", ("bei", "dem"): "beim"}

# determiner kinds: English rendering and German (inflection class, stem)
POSSESSIVES = {"my": "mein", "your": "dein", "his": "sein", "her": "ihr", "our": "unser", "their": "ihr"}
NUMERALS = {"two": "zwei", "three": "drei", "four": "vier", "five": "fünf", "many": "viele", "some": "einige"}
PRONOUNS = {  # person key → (English subject, English object, German nom, acc, dat)
    "1sg": ("I", "me", "ich", "mich", "mir"),
    "2sg": ("you", "you", "du", "dich", "dir"),
    "3sg:m": ("he", "him", "er", "ihn", "ihm"),
    "3sg:f": ("she", "her", "sie", "sie", "ihr"),
    "1pl": ("we", "us", "wir", "uns", "uns"),
    "3pl": ("they", "them", "sie", "sie", "ihnen"),
}

# ----------------------------------------------------------------------------------------------------------
# Abstract syntax
# ----------------------------------------------------------------------------------------------------------


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
    pron: str = ""  # key of PRONOUNS
    parts: tuple[NounPhrase, ...] = ()
    rel: Clause | None = None  # relative clause
    rel_role: str = ""  # "subj" or "obj": the role of the head noun inside the relative clause

    @property
    def person(self) -> str:
        if self.kind == "pron":
            return self.pron.split(":")[0]
        if self.kind == "coord":
            return "3pl"
        return "3pl" if self.number == "pl" else "3sg"

    @property
    def indefinite(self) -> bool:
        return self.kind == "noun" and self.det in ("indef", "bare")


@dataclass
class PrepPhrase:
    en: str  # English preposition ("in", "into", "to", "with", ...), or "home"/"at home"
    de: str  # German preposition
    case: str  # case it governs
    np: NounPhrase | None


@dataclass
class Clause:
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
    extra: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------------------
# English rendering
# ----------------------------------------------------------------------------------------------------------


def _article_a(next_word: str) -> str:
    return "an" if next_word[0].lower() in "aeiou" else "a"


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
        words.insert(0, _article_a(words[0]))
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
    is_person = head.noun is not None and "person" in head.noun.tags
    if head.rel_role == "subj":
        return ["who" if is_person else "that", *en_clause(clause, "rel_subj")]
    return ["that", *en_clause(clause, "rel_obj")]


def en_pp(pp: PrepPhrase) -> list[str]:
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
        be = {"pres": EN_BE[person], "past": EN_BE_PAST[person]}.get(c.tense)
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
        return [EN_BE[person]], [*neg, v.en_gerund(), *particle]
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


# ----------------------------------------------------------------------------------------------------------
# German rendering
# ----------------------------------------------------------------------------------------------------------


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
        words.append(_DEF[gn][ci])
        adj_table = _WEAK_ADJ
    elif det == "dem":
        words.append("dies" + _DIES[gn][ci])
        adj_table = _WEAK_ADJ
    elif det in ("indef", "neg") or det.startswith("poss:"):
        if det == "indef" and np.number == "pl":
            adj_table = _STRONG_ADJ  # plural "a" is bare
        else:
            stem = {"indef": "ein", "neg": "kein"}.get(det) or POSSESSIVES[det[5:]]
            words.append(stem + _EIN[gn][ci])
            adj_table = _MIXED_ADJ
    elif det.startswith("num:"):
        words.append(NUMERALS[det[4:]])
        adj_table = _STRONG_ADJ
    else:  # bare plural or mass noun
        adj_table = _STRONG_ADJ
    if np.very:
        words.append("sehr")
    ending = adj_table[gn][ci]
    words += [a.stem + ending for a in np.adjs]
    words.append(noun.de_form(np.number, case))
    if np.rel is not None:
        words += de_relative(np, np.rel)
    return words


def de_relative(head: NounPhrase, clause: Clause) -> list[str]:
    assert head.noun is not None
    gn = "pl" if head.number == "pl" else head.noun.gender
    if head.rel_role == "subj":
        pron = _REL[gn][0]
        return [",", pron, *de_clause(clause, "sub", subject_gap=True), ","]
    case = "dat" if clause.verb is not None and clause.verb.frame == "dat" else "acc"
    pron = _REL[gn][CASES.index(case)]
    return [",", pron, *de_clause(clause, "sub", object_gap=True), ","]


def de_pp(pp: PrepPhrase) -> list[str]:
    if pp.np is None:
        return pp.de.split()
    words = de_np(pp.np, pp.case)
    key = (pp.de, words[0])
    if pp.np.kind == "noun" and pp.np.det == "def" and key in _CONTRACT:
        return [_CONTRACT[key], *words[1:]]
    return [pp.de, *words]


def de_verb_parts(c: Clause) -> tuple[str, list[str]]:
    """(finite verb, right-bracket words in main-clause order) for German."""
    person = c.subj.person
    v = c.verb
    t = c.tense
    if v is None:
        if t == "pres":
            return _aux("sein", person), []
        if t == "past":
            return DE_SEIN_PAST[PERSONS.index(person)], []
        if t == "perf":
            return _aux("sein", person), ["gewesen"]
        return _aux("werden", person), ["sein"]
    prefix = [v.de_prefix] if v.de_prefix else []
    if t in ("pres", "prog"):
        return v.de_present(person), prefix
    if t == "past":
        return v.de_preterite(person), prefix
    if t == "perf":
        return _aux(v.de_aux, person), [v.de_pp]
    modal = {"fut": "werden", "can": "können", "want": "wollen"}.get(t)
    if t == "must":
        modal = "dürfen" if c.neg else "müssen"
    if modal is None:
        raise ValueError(f"unknown tense {t}")
    return _aux(modal, person), [v.de_infinitive()]


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


# ----------------------------------------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------------------------------------


class Sampler:
    """Samples abstract clauses with a private ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: Sequence):  # type: ignore[no-untyped-def]
        return seq[self.rng.randrange(len(seq))]

    def noun_with(self, tags: frozenset[str]) -> Noun:
        candidates = [n for n in NOUNS if n.tags & tags]
        return self.pick(candidates)

    def noun_phrase(self, tags: frozenset[str], role: str, depth: int, allow_pron: bool = True,
                    allow_rel: bool = True) -> NounPhrase:
        """role: "subj", "obj" or "pp" (affects pronouns and coordination)."""
        if "person" in tags and allow_pron:
            r = self.rng.random()
            if r < 0.22:
                key = self.pick(tuple(PRONOUNS))
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
            det = self.pick(("def", "def", "bare", "bare", "dem", "poss:" + self.pick(tuple(POSSESSIVES))))
        else:
            number = "pl" if self.chance(0.3) else "sg"
            if number == "sg":
                det = self.pick(("def", "def", "def", "indef", "indef", "dem", "poss"))
            else:
                det = self.pick(("def", "def", "indef", "dem", "poss", "num"))
            if det == "poss":
                det = "poss:" + self.pick(tuple(POSSESSIVES))
            elif det == "num":
                det = "num:" + self.pick(tuple(NUMERALS))
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
        tenses = tuple(TENSE_WEIGHTS)
        return self.rng.choices(tenses, weights=[TENSE_WEIGHTS[t] for t in tenses])[0]

    def clause_for(self, verb: Verb | None, depth: int, tense: str | None = None,
                   subj: NounPhrase | None = None, simple: bool = False, question: bool = False) -> Clause:
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
        for _ in range(10):
            np = self.noun_phrase(tags, "obj", depth)
            if not (np.kind == "pron" and subj.kind == "pron" and np.person == subj.person):
                return np
        return self.noun_phrase(tags, "obj", depth, allow_pron=False)

    def prep_phrase(self, verb: Verb, depth: int, simple: bool) -> PrepPhrase | None:
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
            en_conj, de_conj = self.pick(SUBORDINATORS)
            main = self.clause_for(self.any_verb(), 1, simple=True)
            sub = self.clause_for(self.any_verb(), 1, simple=True)
            return ([*en_clause(main, "main"), en_conj, *en_clause(sub, "main"), "."],
                    [*de_clause(main, "main"), ",", de_conj, *de_clause(sub, "sub"), "."])
        if r < 0.88:
            tense = self.pick(("pres", "pres", "past"))
            sub = self.clause_for(self.any_verb(), 1, tense=tense, simple=True)
            main = self.clause_for(self.any_verb(), 1, tense="past" if tense == "past" else "pres",
                                   simple=True)
            en_conj = "when" if tense == "past" or self.chance(0.5) else "if"
            de_conj = "als" if tense == "past" else "wenn"
            return ([en_conj, *en_clause(sub, "main"), ",", *en_clause(main, "main"), "."],
                    [de_conj, *de_clause(sub, "sub"), ",", *de_clause(main, "inverted"), "."])
        en_conj, de_conj = self.pick(COORDINATORS)
        left = self.clause_for(self.any_verb(), 1, simple=True)
        right = self.clause_for(self.any_verb(), 1, simple=True)
        comma = [","] if en_conj == "but" else []
        return (en_clause(left, "main") + comma + [en_conj] + en_clause(right, "main") + ["."],
                de_clause(left, "main") + comma + [de_conj] + de_clause(right, "main") + ["."])


# ----------------------------------------------------------------------------------------------------------
# Surface text
# ----------------------------------------------------------------------------------------------------------


def detokenize(words: Iterable[str]) -> str:
    """Join words into a sentence: punctuation attaches left, duplicate commas and commas before final
    punctuation are dropped, the first letter is capitalised."""
    out: list[str] = []
    for w in words:
        if w in (",", ".", "?"):
            if not out:
                continue
            if out[-1] == "," and w != ",":
                out[-1] = w
                continue
            if out[-1] == "," and w == ",":
                continue
        out.append(w)
    text = ""
    for w in out:
        if not text:
            text = w
        elif w in (",", ".", "?"):
            text += w
        else:
            text += " " + w
    return text[:1].upper() + text[1:]


def word_count(words: Iterable[str]) -> int:
    return sum(1 for w in words if w not in (",", ".", "?"))


def generate_pairs(n: int, seed: int, split: str, seen: set[str]) -> list[tuple[str, str]]:
    """n unique (English, German) pairs for one split; ``seen`` holds English sentences already used."""
    rng = random.Random(f"{seed}:{split}")
    sampler = Sampler(rng)
    pairs: list[tuple[str, str]] = []
    attempts = 0
    while len(pairs) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise RuntimeError(f"could not sample {n} unique sentences for split {split!r}")
        en_words, de_words = sampler.sentence()
        if not MIN_WORDS <= word_count(en_words) <= MAX_WORDS:
            continue
        en, de = detokenize(en_words), detokenize(de_words)
        if en in seen:
            continue
        seen.add(en)
        pairs.append((en, de))
    return pairs


def generate_corpus(sizes: dict[str, int], seed: int) -> dict[str, list[tuple[str, str]]]:
    seen: set[str] = set()
    return {split: generate_pairs(sizes[split], seed, split, seen) for split in SPLIT_ORDER if split in sizes}


def write_corpus(dest: Path, corpus: dict[str, list[tuple[str, str]]], src: str = "en",
                 tgt: str = "de") -> None:
    """Write DEST/{split}.{src,tgt}; each file goes to a temporary name first and is renamed."""
    dest.mkdir(parents=True, exist_ok=True)
    for split, pairs in corpus.items():
        for lang, column in ((src, 0), (tgt, 1)):
            path = dest / f"{split}.{lang}"
            tmp = path.with_name(path.name + f".tmp{os.getpid()}")
            tmp.write_text("".join(pair[column] + "\n" for pair in pairs), encoding="utf-8")
            tmp.replace(path)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m preprocess.synthetic_en_de",
        description="Write a synthetic English→German-like parallel corpus: DEST/{train,valid,test}.{en,de}.",
    )
    parser.add_argument("--dest", required=True, type=Path, help="output directory")
    parser.add_argument("--train", type=int, default=20000, help="training pairs (default 20000)")
    parser.add_argument("--valid", type=int, default=500, help="validation pairs (default 500)")
    parser.add_argument("--test", type=int, default=500, help="test pairs (default 500)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = parser.parse_args(argv)
    for split in ("train", "valid", "test"):
        if getattr(args, split) < 1:
            parser.error(f"--{split} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus = generate_corpus({"train": args.train, "valid": args.valid, "test": args.test}, args.seed)
    write_corpus(args.dest, corpus)
    total = sum(len(pairs) for pairs in corpus.values())
    size = sum((args.dest / f"{s}.{lang}").stat().st_size for s in corpus for lang in ("en", "de"))
    print(f"[synthetic_en_de] wrote {total} sentence pairs ({size / 1e6:.2f} MB) to {args.dest}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
