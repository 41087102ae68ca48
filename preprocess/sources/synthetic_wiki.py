"""Generated English-Wikipedia-style MediaWiki XML export dumps (and a BookCorpus-style books directory),
for the tests of the Wikipedia/BookCorpus preprocessing and for its throughput benchmark.

A dump is written exactly in the layout of Wikimedia's ``enwiki-*-pages-articles*.xml*`` files (export
schema 0.11, the element order and indentation of MediaWiki's ``XmlDumpWriter``), in three flavours chosen
by the output name (or ``flavour=``):

* ``*.xml`` — plain XML;
* ``*.xml.bz2`` and part files ``*.xml-p1p41242.bz2`` — one bz2 stream of the whole file;
* ``*multistream*.bz2`` — Wikimedia's multistream layout: a first bz2 stream with only the header
  (``<mediawiki ...>`` + ``<siteinfo>``), one stream per ``pages_per_stream`` ``<page>`` elements, a last
  stream with only ``</mediawiki>\\n``, all concatenated; plus the index
  ``*-multistream-index.txt.bz2`` (``OFFSET:PAGEID:TITLE`` per page, OFFSET the byte offset in the dump
  of the stream holding the page, the title unescaped).

The wikitext is realistic (infoboxes with nested templates, refs and named refs, links, files, galleries,
tables, lists, headings, comments, entities, categories, interlanguage links, redirects, disambiguation
pages, pages of other namespaces) and is composed from pools of sentences and blocks built once per seed,
so a gigabyte is written at tens of MB/s with bounded memory.

Test oracles:

* every prose sentence of an article contains the article's own word :func:`article_word` (``artword``
  + page id, once per sentence; match it as a whole word: ``artword12`` is a prefix of ``artword123``) —
  so the sentences kept from a document, and the split they landed in, can be traced;
* every non-prose element carries a marker word that never occurs in prose: headings
  (:data:`MARK_HEADING`), list items (:data:`MARK_LIST`), table cells (:data:`MARK_TABLE`), infobox
  values (:data:`MARK_INFOBOX`), file and gallery captions (:data:`MARK_CAPTION`), reference texts
  (:data:`MARK_REF`), category names (:data:`MARK_CATEGORY`), templates with visible text
  (:data:`MARK_TEMPLATE`), comments (:data:`MARK_COMMENT`), interlanguage links (:data:`MARK_INTERWIKI`);
  and the bodies of pages that must be dropped carry :data:`MARK_REDIRECT`, :data:`MARK_DISAMBIGUATION`,
  :data:`MARK_TALK` (Talk and User talk pages) or :data:`MARK_NAMESPACE` (the other namespaces) — their
  prose sentences carry the marker where an article's carry its word. :data:`MARKERS` lists them all;
  none of them survives a correct extraction. Exceptions, on purpose as in real articles: the standard
  section headings (:data:`STANDARD_HEADINGS`: "References", "External links", ...) carry no marker, nor
  do templates inside prose sentences (``{{convert}}``, ``{{lang}}``, ``{{IPA}}``, ``{{snd}}``,
  ``{{sfn}}``, ``{{citation needed}}``: a cleaner may drop or expand them) and templates without
  visible text (``{{Reflist}}``, ``{{Use dmy dates}}``, ``{{DEFAULTSORT:...}}``, ...).

Page kinds (:data:`KINDS`): ``article`` (≥ 2 prose sentences), ``stub`` (exactly one prose sentence),
``empty`` (an article with no prose at all: templates, tables, lists, categories), ``redirect``,
``other_namespace``, ``disambiguation``. :func:`write_dump` returns a :class:`DumpManifest` naming the pages
of each kind. Command line::

    python -m preprocess.sources.synthetic_wiki --out enwiki-pages-articles-multistream.xml.bz2 --mb 200
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import itertools
import queue
import random
import re
import sys
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import escape

# ---------------------------------------------------------------------------------------------------------
# oracle markers

MARK_HEADING = "Zqheading"
MARK_LIST = "Zqlistitem"
MARK_TABLE = "Zqtable"
MARK_INFOBOX = "Zqinfobox"
MARK_CAPTION = "Zqcaption"
MARK_REF = "Zqref"
MARK_CATEGORY = "Zqcategory"
MARK_TEMPLATE = "Zqtemplate"
MARK_COMMENT = "Zqcomment"
MARK_INTERWIKI = "Zqinterwiki"
MARK_REDIRECT = "Zqredirect"
MARK_DISAMBIGUATION = "Zqdisamb"
MARK_TALK = "Zqtalk"
MARK_NAMESPACE = "Zqnamespace"
#: Markup markers: none may survive the extraction of an article.
MARKUP_MARKERS = (
    MARK_HEADING,
    MARK_LIST,
    MARK_TABLE,
    MARK_INFOBOX,
    MARK_CAPTION,
    MARK_REF,
    MARK_CATEGORY,
    MARK_TEMPLATE,
    MARK_COMMENT,
    MARK_INTERWIKI,
)
#: Markers of the bodies of pages that must be dropped whole.
DROPPED_PAGE_MARKERS = (MARK_REDIRECT, MARK_DISAMBIGUATION, MARK_TALK, MARK_NAMESPACE)
MARKERS = MARKUP_MARKERS + DROPPED_PAGE_MARKERS
#: Section headings that real articles share, left without a marker (a cleaner may key on them).
STANDARD_HEADINGS = ("See also", "Notes", "References", "Further reading", "External links")

ARTICLE_WORD_PREFIX = "artword"
BOOK_WORD_PREFIX = "bookword"


def article_word(page_id: int) -> str:
    """The word that every prose sentence of article ``page_id`` contains (``artword<id>``)."""
    return f"{ARTICLE_WORD_PREFIX}{page_id}"


def book_word(book_id: int) -> str:
    """The word that every narrative sentence of book ``book_id`` contains (``bookword<id>``)."""
    return f"{BOOK_WORD_PREFIX}{book_id}"


def book_id(path: Path) -> int:
    """The id of a book written by :func:`write_books`, from its file name ``<id>__<slug>.txt``."""
    return int(Path(path).name.split("__", 1)[0])


KINDS = ("article", "stub", "empty", "redirect", "other_namespace", "disambiguation")
#: Kind proportions of a dump drawn by size or page count (roughly those of enwiki pages-articles).
DEFAULT_PROPORTIONS = {
    "article": 0.50,
    "stub": 0.04,
    "empty": 0.01,
    "redirect": 0.30,
    "other_namespace": 0.12,
    "disambiguation": 0.03,
}

# ---------------------------------------------------------------------------------------------------------
# the export format

NAMESPACES = (
    (-2, "Media"),
    (-1, "Special"),
    (0, ""),
    (1, "Talk"),
    (2, "User"),
    (3, "User talk"),
    (4, "Wikipedia"),
    (5, "Wikipedia talk"),
    (6, "File"),
    (7, "File talk"),
    (8, "MediaWiki"),
    (9, "MediaWiki talk"),
    (10, "Template"),
    (11, "Template talk"),
    (12, "Help"),
    (13, "Help talk"),
    (14, "Category"),
    (15, "Category talk"),
    (100, "Portal"),
    (101, "Portal talk"),
    (118, "Draft"),
    (119, "Draft talk"),
    (710, "TimedText"),
    (711, "TimedText talk"),
    (828, "Module"),
    (829, "Module talk"),
)
_NS_KEY = {name: key for key, name in NAMESPACES}


def _namespace_line(key: int, name: str) -> str:
    if not name:
        return f'      <namespace key="{key}" case="first-letter" />\n'
    return f'      <namespace key="{key}" case="first-letter">{name}</namespace>\n'


#: Everything before the first ``<page>`` (the first stream of a multistream dump).
HEADER = (
    '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:schemaLocation="http://www.mediawiki.org/xml/export-0.11/ '
    'http://www.mediawiki.org/xml/export-0.11.xsd" version="0.11" xml:lang="en">\n'
    "  <siteinfo>\n"
    "    <sitename>Wikipedia</sitename>\n"
    "    <dbname>enwiki</dbname>\n"
    "    <base>https://en.wikipedia.org/wiki/Main_Page</base>\n"
    "    <generator>MediaWiki 1.45.0-wmf.5</generator>\n"
    "    <case>first-letter</case>\n"
    "    <namespaces>\n"
    + "".join(_namespace_line(key, name) for key, name in NAMESPACES)
    + "    </namespaces>\n"
    "  </siteinfo>\n"
)
#: What follows the last ``</page>`` (MediaWiki's ``XmlDumpWriter::closeStream``; the last stream).
FOOTER = "</mediawiki>\n"


def xml_escape(text: str) -> str:
    """Escape text content as MediaWiki's dumps do (``& < > "``; apostrophes stay)."""
    return escape(text, {'"': "&quot;"})


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def sha1_base36(text: str) -> str:
    """MediaWiki's revision sha1: the SHA-1 of the UTF-8 text in base 36, zero-padded to 31 digits."""
    n = int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest(), "big")
    digits = []
    while n:
        n, r = divmod(n, 36)
        digits.append(_B36[r])
    return "".join(reversed(digits)).rjust(31, "0")


# ---------------------------------------------------------------------------------------------------------
# vocabulary

_NOUNS = """
building church river bridge castle village town city station railway road school college university museum
library company club team album song film novel series species genus family plant tree forest lake island
mountain valley hill coast harbour port ship vessel aircraft engine car locomotive line route canal tower
hall house palace temple monastery abbey cathedral chapel parish district county province region state
kingdom empire republic army regiment battalion battle war treaty election party government council
parliament court law act bill policy reform economy market industry factory mill mine farm crop harvest
trade merchant bank coin currency tax census population language dialect script alphabet word name title
book journal newspaper magazine article edition volume chapter poem play opera symphony painting sculpture
statue portrait exhibition gallery collection archive manuscript record label band singer guitarist
composer conductor actor director producer writer poet painter architect engineer scientist physicist
chemist biologist mathematician historian philosopher teacher bishop priest monk saint king queen prince
princess duke earl lord general admiral captain soldier officer sailor pilot farmer miner worker student
player coach manager striker goalkeeper season match tournament league championship cup medal stadium
arena ground track race event festival ceremony tradition custom religion faith doctrine theory method
model system network device machine instrument tool weapon sword shield helmet uniform flag emblem seal
motto anthem border frontier boundary territory colony settlement climate weather rainfall temperature
soil rock mineral fossil volcano glacier desert plain plateau marsh wetland meadow garden park reserve
habitat animal bird fish insect beetle butterfly moth snake lizard frog mammal bat deer wolf fox bear
horse sheep goat pig whale dolphin shark coral flower leaf seed fruit root branch stem bark wood timber
stone brick marble granite iron steel copper gold silver bronze glass paper cloth wool cotton silk leather
grain wheat rice maize barley wine beer tea coffee sugar salt spice bread cheese recipe dish meal kitchen
restaurant hotel inn tavern shop store warehouse office headquarters department ministry agency committee
commission board union association society federation alliance coalition movement campaign protest
strike revolt rebellion revolution siege invasion occupation expedition voyage journey mission discovery
invention patent experiment study survey report analysis review critic reception audience broadcast
episode channel programme website software computer algorithm database protocol satellite rocket
telescope observatory planet star galaxy comet asteroid moon orbit crater eclipse hospital clinic disease
treatment vaccine prison fortress wall gate square market courtyard cemetery tomb monument memorial
lighthouse dam reservoir aqueduct tunnel viaduct junction terminus platform carriage tram bus ferry
airport runway hangar fleet convoy squadron brigade division garrison outpost camp village hamlet suburb
estate manor cottage barn granary brewery distillery foundry quarry workshop studio theatre cinema concert
choir orchestra ensemble melody rhythm chorus lyric verse stanza novelist essay pamphlet sermon lecture
thesis dictionary encyclopedia atlas map chart calendar clock bell organ piano violin guitar drum trumpet
"""
_IRREGULAR_PLURALS = {
    "species": "species",
    "series": "series",
    "genus": "genera",
    "sheep": "sheep",
    "fish": "fish",
    "deer": "deer",
    "analysis": "analyses",
    "thesis": "theses",
    "leaf": "leaves",
    "wolf": "wolves",
    "volcano": "volcanoes",
    "headquarters": "headquarters",
    "aircraft": "aircraft",
    "cloth": "cloths",
    "monastery": "monasteries",
}
_ADJECTIVES = """
ancient modern early late northern southern eastern western central local national regional royal public
private large small major minor important famous notable historic traditional popular rare common wide
narrow deep shallow high low long short old new young first last final main principal original former
current annual daily military naval civil religious political economic social cultural industrial
agricultural commercial financial academic scientific medical musical literary artistic architectural
Gothic Baroque Romanesque Victorian Georgian medieval colonial imperial republican democratic liberal
conservative radical moderate independent official successful controversial influential prominent
distinguished remarkable unusual typical distinctive complex simple elaborate ornate plain massive tiny
enormous vast dense sparse fertile barren dry wet humid arid tropical temperate coastal rural urban
suburban remote isolated nearby adjacent surrounding various several numerous different similar separate
distinct additional subsequent previous earlier recent contemporary permanent temporary brief lengthy
gradual sudden rapid slow steady severe mild heavy light dark bright red green blue white black yellow
brown grey golden wooden sacred secular fortified ruined restored surviving extinct endangered endemic
native invasive migratory nocturnal aquatic marine alpine volcanic sandy rocky wooded fictional
"""
_HYPHENATED = """
long-term well-known twenty-five nineteenth-century so-called large-scale full-time two-storey
middle-aged short-lived high-speed left-wing right-wing self-taught world-famous English-language
state-owned non-profit post-war pre-war anti-war year-round three-day half-timbered red-brick
""".split()
_VERBED = """
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
_VERBS = """
remain serve include contain attract support require produce feature cover dominate surround border
""".split()
_ADVERBS = """
largely mostly partly briefly gradually rapidly slowly quickly eventually finally initially originally
formerly later subsequently previously recently currently officially formally widely commonly rarely
frequently occasionally regularly annually primarily mainly chiefly entirely completely extensively
heavily severely successfully effectively reportedly allegedly apparently probably possibly certainly
notably particularly especially significantly considerably substantially slightly relatively
""".split()
_OCCUPATIONS = """
politician footballer cricketer actor singer songwriter novelist poet painter architect engineer
physicist chemist botanist zoologist mathematician historian philosopher journalist broadcaster
businessman diplomat judge lawyer bishop priest soldier sculptor composer conductor pianist violinist
guitarist drummer photographer screenwriter cyclist rower sprinter swimmer boxer wrestler jockey
astronomer geologist economist sociologist anthropologist archaeologist explorer missionary inventor
entrepreneur activist
""".split()
_FIRST_NAMES = """
John William James George Charles Thomas Henry Robert Edward Richard Joseph David Michael Peter Paul Mark
Andrew Stephen Christopher Daniel Matthew Anthony Frederick Albert Arthur Walter Harold Francis Samuel
Benjamin Hugh Patrick Liam Owen Rhys Gareth Ian Alan Brian Keith Kevin Mary Elizabeth Anne Margaret Sarah
Jane Catherine Emily Charlotte Alice Helen Susan Ruth Rachel Laura Emma Sophie Grace Clara Eleanor Isabel
Louise Julia Maria Rosa Ingrid Astrid Greta Heidi Jürgen Björn Søren Günter Jörg Zoë Chloé Amélie Hélène
Céline René André François Jérôme José Ramón Inés Sofía João Łukasz Małgorzata Ömer Hiroshi Yuki Kenji
Aiko Wei Mei Arjun Priya Ravi Anika Kwame Amara Chidi Olusegun Fatima Omar Ahmed Layla Yusuf Nikolai
Sergei Olga Natalia Dmitri Ivan Pavel Milan Zoran Ana Petra Eva Lucía Matteo Giulia Luca Giovanni
Francesca Pierre Jean Marie Claude Luc Anders Lars Nils Erik Karin Ole Sven Aoife Siobhán Niamh Ciarán
Seán Dafydd Gwen
""".split()
_SURNAMES = """
Smith Jones Taylor Brown Williams Wilson Johnson Davies Robinson Wright Thompson Evans Walker White Roberts
Green Hall Wood Jackson Clarke Harris Lewis Martin Cooper Hill Ward Morris Moore Clark Lee King Baker
Harrison Morgan Allen Scott Phillips Watson Davis Parker Price Bennett Young Griffiths Mitchell Kelly Cook
Carter Richardson Bailey Collins Bell Shaw Murphy Miller Cox Richards Khan Marshall Anderson Simpson Ellis
Adams Singh Wilkinson Foster Chapman Powell Webb Rogers Gray Mason Ali Hunt Hussain Campbell Matthews Owen
Palmer Holmes Mills Barnes Knight Lloyd Butler Russell Barker Fisher Stevens Jenkins Murray Dixon Harvey
Graham Pearson Fletcher Walsh Gibson Howard Andrews Stewart Elliott Reynolds Saunders Payne Fox Ford
Pearce Brooks West Lawrence Cole Atkinson Bradley Spencer Dawson Burton O'Brien O'Connor O'Neill McDonald
MacLeod Müller Schmidt Schneider Fischer Weber Meyer Wagner Becker Schulz Hoffmann Dubois Lefèvre Moreau
Laurent Fournier Girard García Fernández López Martínez González Rodríguez Pérez Sánchez Rossi Russo
Ferrari Esposito Bianchi Romano Colombo Ricci Novák Dvořák Kowalski Wiśniewski Nowak Jansen Bakker
Andersson Johansson Karlsson Nilsson Larsen Hansen Nielsen Ivanov Petrov Popescu Nagy Kovács Tanaka
Suzuki Watanabe Kim Park Chen Wang Zhang Liu Nguyen Tran Patel Sharma Gupta Okafor Mensah Haddad Yılmaz
Öztürk
""".split()
_NAME_HEADS = """
Ash Brad Carr Dun Ell Fair Gold Hart Kings Lang Marsh North Oak Pen Ross Stan Thorn Wal West Whit Brook
Hol Mor Red Stock Sut Tre Ald Bar Crom Elm Frank Gran Hay Kel Lind Mid New Ply Rock Shel Tam Ux Wex
""".split()
_NAME_TAILS = """
worth ley ton ford field wood by ham well more stone bury don wick combe ridge dale shaw hurst land cliffe
sey ington stead thorpe gate mouth port bridge mere
""".split()
_FOREIGN_PLACES = """
Zürich|Köln|Malmö|São Paulo|Kraków|Montréal|Besançon|Córdoba|Reykjavík|Göteborg|Łódź|Bogotá|Curaçao|
Düsseldorf|Orléans|Plzeň|Tromsø|Škofja Loka|Ağrı|Nuuk|Fès|Coimbra|Ljubljana|Tartu|Brno|Gdańsk|Aarhus|
Bergen|Lyon|Toulouse|Bologna|Trieste|Salzburg|Graz|Ghent|Utrecht|Porto|Sevilla|Valparaíso|Kyoto|Pune
""".replace("\n", "").split("|")
_COUNTRIES = """
England|Scotland|Wales|Ireland|France|Germany|Italy|Spain|Portugal|the Netherlands|Belgium|Switzerland|
Austria|Sweden|Norway|Denmark|Finland|Poland|Czechia|Hungary|Romania|Greece|Turkey|Russia|Ukraine|
Canada|the United States|Mexico|Brazil|Argentina|Chile|Peru|Colombia|Australia|New Zealand|India|
Pakistan|China|Japan|South Korea|Vietnam|Indonesia|Nigeria|Ghana|Kenya|South Africa|Egypt|Morocco|Iran|
Israel|Côte d'Ivoire|São Tomé and Príncipe
""".replace("\n", "").split("|")
_NATIONALITIES = """
English|Scottish|Welsh|Irish|French|German|Italian|Spanish|Portuguese|Dutch|Belgian|Swiss|Austrian|
Swedish|Norwegian|Danish|Finnish|Polish|Czech|Hungarian|Romanian|Greek|Turkish|Russian|Ukrainian|
Canadian|American|Mexican|Brazilian|Argentine|Chilean|Australian|New Zealand|Indian|Pakistani|Chinese|
Japanese|Korean|Vietnamese|Nigerian|Ghanaian|Kenyan|South African|Egyptian|Moroccan
""".replace("\n", "").split("|")
_MONTHS = "January February March April May June July August September October November December".split()
_ORDINAL_WORDS = "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
_CENTURIES = (
    "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split()
)
_UNITS = (("km", "mi"), ("m", "ft"), ("kg", "lb"), ("ha", "acre"), ("km2", "sqmi"), ("cm", "in"))
_LANG_PHRASES = (
    ("fr", "la vieille ville"),
    ("fr", "le pont neuf"),
    ("fr", "église Saint-Étienne"),
    ("fr", "rue des Écoles"),
    ("de", "Großer Markt"),
    ("de", "Schloss am See"),
    ("de", "Alte Brücke"),
    ("es", "la ciudad vieja"),
    ("es", "puente de piedra"),
    ("it", "il castello"),
    ("it", "piazza del Duomo"),
    ("pt", "a ponte velha"),
    ("nl", "de oude haven"),
    ("sv", "gamla staden"),
    ("pl", "Stare Miasto"),
    ("la", "terra incognita"),
)
_OLD_WORDS = "burh|ford|hām|tūn|lēah|wīc|dūn|byrig|stān|feld|mere|brycg".split("|")
_PUBLISHERS = """
Oxford University Press|Cambridge University Press|Penguin|Routledge|HarperCollins|Faber and Faber|
Macmillan|Yale University Press|Springer|Éditions Gallimard|Thames & Hudson|Batsford
""".replace("\n", "").split("|")
_SITES = (
    "bbc.co.uk theguardian.com nytimes.com britannica.com historicengland.org.uk ons.gov.uk nature.com "
    "jstor.org archive.org lemonde.fr"
).split()
_HEADINGS = """
History|Early life|Career|Geography|Climate|Demographics|Economy|Culture|Architecture|Description|
Taxonomy|Distribution and habitat|Reception|Legacy|Personal life|Plot|Production|Track listing|
Background|Notable people|Transport|Education|Sport|Governance|Etymology|Origins|Later years|Death|
Design|Construction|Operations|Decline|Restoration|Awards and honours|Works|Ecology|Behaviour|Diet|
Conservation|Structure|Development|Release|Critical response|Aftermath|Administration|Religion|Media
""".replace("\n", "").split("|")
_TOPICS = (
    "Biography|Football|Music|Film|Architecture|Rivers|Birds|Military history|Trains|Geography|Politics"
).split("|")


def _plural(noun: str) -> str:
    if noun in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


# ---------------------------------------------------------------------------------------------------------
# slot filling: "$name" in a template is replaced by a draw of the named slot

_SLOT = re.compile(r"\$([A-Za-z_]\w*)")
_A_AN = re.compile(r"\b([Aa]) (?=[AEIOUaeiou])")


class _Vocab:
    """Seeded word draws with Zipf-like frequencies (rank order shuffled per seed)."""

    def __init__(self, seed: int, rng: random.Random) -> None:
        """Word lists ranked by ``seed``; draws from ``rng``."""
        self.rng = rng
        lists_rng = random.Random(seed * 7919 + 17)
        places = [h + t for h in _NAME_HEADS for t in _NAME_TAILS]
        lists_rng.shuffle(places)
        self.places = places[:900] + _FOREIGN_PLACES
        self.surnames = _SURNAMES + places[900:]
        self._lists: dict[str, tuple[list[str], list[float]]] = {}
        for name, words in (
            ("noun", _NOUNS.split()),
            ("adj", _ADJECTIVES.split()),
            ("verbed", _VERBED),
            ("verb", _VERBS),
            ("adv", _ADVERBS),
            ("occupation", _OCCUPATIONS),
            ("first", _FIRST_NAMES),
            ("surname", self.surnames),
            ("place", self.places),
            ("country", _COUNTRIES),
            ("nationality", _NATIONALITIES),
            ("hyph", _HYPHENATED),
            ("heading", _HEADINGS),
        ):
            words = list(words)
            lists_rng.shuffle(words)
            # Zipf-Mandelbrot ranks: frequent words recur, none dominates
            weights = (1 / (rank + 8) for rank in range(len(words)))
            self._lists[name] = (words, list(itertools.accumulate(weights)))
        r = rng
        self.slots: dict[str, Callable[[], str]] = {
            "T": lambda: "\x00",
            "noun": lambda: self.pick("noun"),
            "nouns": lambda: _plural(self.pick("noun")),
            "Noun": lambda: self.pick("noun").capitalize(),
            "Nouns": lambda: _plural(self.pick("noun")).capitalize(),
            "adj": lambda: self.pick("adj"),
            "Adj": lambda: self.pick("adj").capitalize(),
            "adv": lambda: self.pick("adv"),
            "verbed": lambda: self.pick("verbed"),
            "verb": lambda: self.pick("verb"),
            "occupation": lambda: self.pick("occupation"),
            "first": lambda: self.pick("first"),
            "surname": lambda: self.pick("surname"),
            "person": self.person,
            "place": lambda: self.pick("place"),
            "country": lambda: self.pick("country"),
            "nationality": lambda: self.pick("nationality"),
            "hyph": lambda: self.pick("hyph"),
            "year": lambda: str(r.randint(1450, 2024)),
            "yrange": self.year_range,
            "decade": lambda: f"{r.randint(180, 202)}0s",
            "century": lambda: r.choice(_CENTURIES),
            "ordinal": lambda: r.choice(_ORDINAL_WORDS),
            "int": lambda: str(r.randint(2, 99)),
            "big": lambda: f"{r.randint(1, 950)},{r.randint(0, 999):03d}",
            "dec": lambda: f"{r.randint(0, 99)}.{r.randint(1, 99)}",
            "month": lambda: r.choice(_MONTHS),
            "pp": self.pages,
            "date": self.date,
            "usd": lambda: f"${r.randint(1, 99)}.{r.randint(1, 9)} million",
            "gbp": lambda: f"£{r.randint(2, 950)},000",
            "L": self.link,
            "LP": self.place_link,
            "lang": self.lang,
            "convert": self.convert,
            "work": self.work_title,
            "oldword": lambda: r.choice(_OLD_WORDS),
            "publisher": lambda: r.choice(_PUBLISHERS),
            "site": lambda: r.choice(_SITES),
            "topic": lambda: r.choice(_TOPICS),
        }

    def pick(self, name: str) -> str:
        words, cum = self._lists[name]
        return self.rng.choices(words, cum_weights=cum)[0]

    def fill(self, template: str) -> str:
        slots = self.slots
        return _SLOT.sub(lambda m: slots[m.group(1)](), template)

    def fill_prose(self, template: str) -> str:
        """:meth:`fill`, then "a" before a vowel becomes "an"."""
        return _A_AN.sub(r"\1n ", self.fill(template))

    def person(self) -> str:
        if self.rng.random() < 0.1:
            return f"{self.pick('first')} {chr(65 + self.rng.randrange(26))}. {self.pick('surname')}"
        return f"{self.pick('first')} {self.pick('surname')}"

    def year_range(self) -> str:
        a = self.rng.randint(1450, 2000)
        dash = self.rng.choice(("–", "–", "&ndash;", "-"))
        return f"{a}{dash}{a + self.rng.randint(1, 60)}"

    def pages(self) -> str:
        first = self.rng.randint(1, 400)
        return f"pp. {first}–{first + self.rng.randint(1, 30)}"

    def date(self) -> str:
        return f"{self.rng.randint(1, 28)} {self.rng.choice(_MONTHS)} {self.rng.randint(1500, 2024)}"

    def link(self) -> str:
        noun, r = self.pick("noun"), self.rng.random()
        if r < 0.5:
            return f"[[{noun}]]"
        if r < 0.7:
            return f"[[{_plural(noun).capitalize()}|{_plural(noun)}]]"
        if r < 0.85:
            return f"[[{noun}]]s" if not noun.endswith(("s", "y", "x", "h")) else f"[[{noun}]]"
        return f"[[{noun.capitalize()} ({self.pick('adj')} {noun})|{noun}]]"

    def place_link(self) -> str:
        place = self.pick("place")
        if self.rng.random() < 0.2:
            return f"[[{place}, {self.pick('country')}|{place}]]"
        return f"[[{place}]]"

    def lang(self) -> str:
        code, phrase = self.rng.choice(_LANG_PHRASES)
        return f"{{{{lang|{code}|{phrase}}}}}"

    def convert(self) -> str:
        a, b = self.rng.choice(_UNITS)
        return f"{{{{convert|{self.rng.randint(2, 950)}|{a}|{b}}}}}"

    def work_title(self) -> str:
        return f"''The {self.pick('adj').capitalize()} {self.pick('noun').capitalize()}''"


# Encyclopedic prose: each template is one sentence (by the generator's count) with exactly one $T.
_SENTENCES = (
    "In $year, the $T $noun was $verbed by $person of $LP.",
    "$person ($yrange) was a $nationality $occupation who $verbed the $T $noun in $place.",
    "Dr. $surname $verbed that the $T $nouns were $adv $adj.",
    "The $noun measured $dec m and the $T $noun weighed $convert.",
    'According to Mr. $surname, the $T $noun was "the most $adj $noun in the region".',
    "Several $nouns, e.g. the $T $noun and the $noun, were $verbed during the $decade.",
    "The $T $noun (i.e. the $adj $noun) was $verbed in $month $year.",
    "It was moved to St. $first's Church in $place, close to the $T $noun, in $year.",
    "The $T $noun was listed as No. $int on the U.S. $noun chart.",
    "Why the $T $nouns were $verbed so $adv remains unclear.",
    "“$Adj $nouns were never $verbed here,” $person wrote about the $T $noun in $year.",
    "The $T $noun grew by $dec% between $year and $year; its $noun was $adv $verbed.",
    "\"We have $verbed the $T $noun!\" $surname told the ''$place Gazette''.",
    "The $T $noun is located $int&nbsp;km north of $LP, near the $adj $noun.",
    "The $hyph $T $noun was $verbed in the late $century century&mdash;a period of $adj change.",
    "A $hyph $noun known as the $T $noun opened on $date.",
    "It had a population of $big at the $year census, and the $T $noun covers $dec square kilometres.",
    "The $T $noun cost approximately $usd, roughly $int times the $adj estimate.",
    "Between $year and $year, $person served as $ordinal secretary of the $T $noun.",
    "The village of $place ($lang) lies on the $T $noun.",
    "$person played $int matches for the $T $noun, scoring $int goals.",
    "The $T $noun covers $dec ha, i.e. about $int acres.",
    "Its name derives from the Old English ''$oldword'', meaning \"$adj $noun\", like the $T $noun.",
    "The $T $noun was $verbed by the $L council in $year, and $verbed again in $year.",
    "Some historians (notably $person) argue that the $T $noun was never $verbed.",
    "The $T $noun remained $adj until $year, when it was $verbed; today it serves as a $L.",
    "She was born in $LP, $country, on $date, the daughter of a $occupation from the $T $noun.",
    "Prof. $surname and Mrs. $surname described the $T $noun in vol. $int, $pp.",
    "The $T $noun reached a speed of $dec km/h (c. $int mph) in $year.",
    "The $T $noun includes the $nouns of $place, $place and $place.",
    "In the $decade, the $T $noun was home to $big people.",
    "Was the $T $noun really $verbed in $year?",
    "The $T $noun won the $work award for $adj $nouns!",
    "Its $nouns are $adj, $adj and $adj; the $T $noun, however, is $adj.",
    "The $T $noun is named after $person, a $nationality $occupation.",
    "Results were $adv $adj (p < 0.05), as the $T $noun showed.",
    "The $surname & $surname company $verbed the $T $noun in $year.",
    "$work was a $adj $noun of the $T fleet, launched in $year.",
    "$person ($yrange) described the $T $noun as “$adj and $adj”.",
    "The $T $noun is $dec m (or $int ft) tall, with a $adj $noun at its top.",
    "The $T $noun's $noun was restored in $year at a cost of $gbp.",
    "During World War II, the $T $noun was used as a $noun by the U.S. Army.",
    "The $T $noun was featured in $work ($year), directed by $person.",
    "The H<sub>2</sub>O content of the $T $noun is about $dec per cent.",
    "The $adj $T $noun, which $person had $verbed in $year, $adv $verb the $nouns of the $L.",
    "At $int&nbsp;°C, the $T $noun freezes; at $int °F it does not.",
    "Today the $T $noun and its $nouns $verb a $adj $L of $place.",
    "It is $adv $verbed as one of the $adj $nouns of the $T $noun.",
    "Approx. $int per cent of the $T $nouns were $verbed by $year.",
    "The $T $noun lies at an elevation of $convert above sea level.",
    "The $adj $nouns of the $T $noun were $verbed by the Rev. $first $surname in $year.",
    "Many $nouns — including the $T $noun — were $verbed after the $adj $noun of $year.",
    "The $T $noun was $adv $verbed in the $ordinal half of the $century century.",
    "In $month $year the council $verbed a plan to $verb the $T $noun with a $adj $L.",
    "$person, the $adj $occupation, $verbed the $T $noun at the age of $int.",
    "The $T $noun (pictured) has $int $nouns and a $adj $noun.",
    "Unlike the $adj $nouns of $country, the $T $noun was $verbed from local $noun.",
    "The $T $noun appears on the coat of arms of $LP as a $adj $noun.",
    "A $adj $noun, the $T $noun was $verbed in $year and $verbed in $year.",
    "The $T $noun is $adv associated with the [[wikt:$noun|$noun]] of $place.",
    "The $T $noun follows the rule <math>E = mc^2</math> only approximately.",
    "The $T $noun was $verbed in $year{{snd}}a year after the $adj $noun opened.",
)
_SIMPLE_STUB_LEADS = (
    "'''$title''' is a $adj $noun near the $T $noun in $LP, $country.",
    "'''$title''' was a $adj $noun on the $T $noun of $LP.",
    "'''$title''' is a $nationality $occupation known for the $T $noun.",
    "'''$title''' is a small village beside the $T $noun in the district of $LP.",
)
_LEADS = {
    "person": (
        "'''$title''' (born $date) is a $nationality $occupation and the $T $noun of $LP.",
        "'''$title''' ({{IPA|en|ˈ$first|lang=y}}; born $date) is a $nationality $occupation "
        "from the $T $noun.",
        "'''$title''' ($date&nbsp;– $date) was a $nationality $occupation who $verbed the $T $noun.",
        "'''$title''' (c. $year – $year) was a $adj $occupation of the $T $noun.",
    ),
    "place": (
        "'''$title''' ($lang) is a town in the $T district of $LP, [[$country]].",
        "'''$title''' ({{IPA|en|ˈ$place|}}) is a market town on the $T $noun in $LP.",
        "'''$title''' is a $adj village and civil parish near the $T $noun, $int&nbsp;km from $LP.",
    ),
    "building": (
        "'''$title''' is a $adj $noun in $LP, $country, near the $T $noun.",
        "'''$title''' is a $hyph [[Grade II listed building|listed]] $noun by the $T $noun.",
    ),
    "species": (
        "'''''$title''''' is a species of $adj $noun in the family [[$Noun]], "
        "native to the $T $noun of [[$country]].",
    ),
    "work": (
        "'''''$title''''' is a $year $nationality $noun by $person about the $T $noun.",
        "'''$title''' is the $ordinal studio album by $person, named after the $T $noun.",
    ),
    "org": ("'''$title''' was a $adj company founded in $year to serve the $T $noun.",),
    "event": ("The '''$title''' was fought on $date between the $T $nouns of $LP and $LP.",),
}

# non-prose blocks ("$M" is replaced by the block's marker)
_REFS = (
    "<ref>{{cite web |url=https://www.$site/$noun/$int |title=$M $Adj $nouns of $place "
    "|website=$site |access-date=$date}}</ref>",
    "<ref>{{cite book |last=$surname |first=$first |title=$M The $Adj $Noun |publisher=$publisher "
    "|location=$place |year=$year |page=$int |isbn=978-0-19-$int$int$int-2}}</ref>",
    "<ref>{{cite news |title=$M $Adj $noun $verbed in $place |work=''The $place Times'' |date=$date}}</ref>",
    "<ref>$surname, $first ($year). ''$M The $Adj $Noun''. $place: $publisher. p.&nbsp;$int.</ref>",
    "<ref>$M $Adj $nouns, $year, $pp.</ref>",
    '<ref group="note">$M The $noun was $verbed in $year.</ref>',
    "<ref>{{cite journal |last1=$surname |title=$M On the $adj $noun |journal=''$Noun'' |volume=$int "
    "|issue=$int |pages=$int–$int |year=$year |doi=10.1000/$int$int}}</ref>",
)
_INFOBOXES = (
    "{{Infobox person\n| name        = $M $person\n| image       = $M $surname $year.jpg\n"
    "| caption     = $M $surname in $year\n| birth_date  = {{birth date|$year|$int|$int|df=y}} $M\n"
    "| birth_place = [[$place]], $country $M\n| death_date  = {{death date and age|$year|5|1|1901|2|3}} $M\n"
    "| occupation  = {{hlist|$M $occupation|$M $occupation}}\n| years_active = $yrange $M\n"
    "| spouse      = {{marriage|$M $person|$year}}\n"
    "| known_for   = $M $Adj $nouns<ref>$M_REF $surname $year.</ref>\n}}",
    "{{Infobox settlement\n| name = $M $place\n| settlement_type = $M Town\n"
    "| image_skyline = $M $place view.jpg\n"
    "| coordinates = {{coord|$int|$int|N|$int|$int|W|display=inline,title}} $M\n"
    "| subdivision_type = Country\n| subdivision_name = $M [[$country]]\n"
    "| population_total = {{formatnum:$int$int$int}} $M\n| area_total_km2 = $dec $M\n"
    "| population_as_of = $year $M<br />($M estimate)\n| website = {{URL|$site}} $M\n}}",
    "{{Infobox building\n| name = $M $Adj $Noun\n| architectural_style = $M [[$adj architecture|$Adj]]\n"
    "| location = $M [[$place]]\n| completion_date = $year $M\n| architect = $M [[$person]]\n"
    "| floor_count = $int $M\n| height = {{convert|$int|m|ft}} $M\n}}",
    "{{Speciesbox\n| image = $M $Noun $noun.jpg\n| status = LC $M\n| status_system = IUCN3.1 $M\n"
    "| genus = $M $Noun\n| species = $M $noun\n| authority = ($surname, $year) $M\n"
    "| range_map = $M $place range.png\n}}",
    "{{Infobox album\n| name = $M $Adj $Noun\n| type = studio $M\n| artist = $M [[$person]]\n"
    "| released = {{Start date|$year|$int|$int|df=y}} $M\n"
    "| genre = {{flatlist|\n* $M [[$adj music]]\n* $M $noun\n}}\n"
    "| length = $int:$int $M\n| label = $M $Adj Records\n| producer = $M $person\n}}",
)
_INFOBOX_OF_TOPIC = {"person": 0, "place": 1, "building": 2, "species": 3, "work": 4, "org": 2, "event": 1}
_TABLE_HEAD = '{| class="wikitable sortable"\n|+ $M $Adj $nouns\n|-\n! $M Year !! $M Title !! $M Notes\n'
_TABLE_ROWS = (
    "|-\n| $M $year || $M ''$Adj $Noun'' || $M $adj $noun\n",
    '|-\n| style="text-align:center" | $M $year || $M [[$place]] || $M $int&nbsp;km\n',
    "|-\n| $M $year\n| $M $person\n| $M {{sort|$int|$int}} $nouns\n",
)
_LIST_ITEMS = (
    "* $M $Adj $nouns of [[$place]] ($year)",
    "* [[$person]] ($yrange), $M $occupation",
    "* $M ''$Adj $Noun'' ($year)",
    "** $M $adj $noun",
    "# $M $Adj $noun $verbed in $year",
    "* [[$place]] &ndash; $M $adj $noun",
    "* $M {{lang|fr|$Noun}} $noun",
)
_FILES = (
    "[[File:$place $noun $year.jpg|thumb|$M The $adj $noun of [[$place]] in $year]]",
    "[[File:$Noun at $place.JPG|thumb|upright=1.2|left|$M $Adj $nouns near [[$place|the town]]]]",
    "[[Image:$surname $noun.png|thumb|250px|$M $person with the $noun ({{circa|$year}})]]",
    "[[File:$Noun map.svg|thumb|$M Map of the $adj [[$noun]]s<ref>$M_REF $surname $year.</ref>]]",
)
_CATEGORIES = (
    "[[Category:$M $year births]]",
    "[[Category:$M People from $place]]",
    "[[Category:$M $nationality $occupation|$surname, $first]]",
    "[[Category:$M Buildings and structures in $place]]",
    "[[Category:$M $Adj $nouns]]",
    "[[Category:$M $decade establishments in $country]]",
)
_EXTERNAL = (
    "* [https://www.$site/$noun $M Official website]",
    "* [http://$site/$noun/$int $M $Adj $nouns] at $site",
    "* {{Official website|https://www.$site/}} $M",
    "* {{Commons category|$M $place}}",
)
_TEMPLATES = (
    "{{Main|$M $Adj $Noun}}",
    "{{See also|$M $Noun of $place}}",
    "{{About|$M the $adj $noun|the $noun|$Noun (disambiguation)}}",
    "{{Quote|text=$M $Adj $nouns were $verbed.|author=$person|source=''$Noun'' ($year)}}",
    "{{Navbox\n| name = $M $Noun\n| title = $M $Adj $nouns of $place\n| list1 = [[$place]] • [[$place]]\n}}",
    "{{Portal|$M $topic}}",
    "{{Clarify|reason=$M $adj $noun|date=$month $year}}",
)
_COMMENTS = (
    "<!-- $M Please do not change the $noun without discussion -->",
    "<!-- $M $Adj $nouns: see talk page -->",
    "<!--\n$M Do not add $nouns here.\n-->",
)
_GALLERY = "<gallery>\n" + "File:$place $noun.jpg|$M $Adj $noun of [[$place]]\n" * 3 + "</gallery>"
_DEFINITIONS = ("; $M $Adj $noun\n: $M $adj $nouns of $place", ": $M The $noun was $verbed in $year.")


@dataclass
class _Pools:
    """Pools of prose sentences and markup blocks drawn once per seed."""

    sentences: list[str]
    refs: list[str]
    infoboxes: dict[str, list[str]]  # by article topic
    tables: list[str]
    lists: list[str]
    files: list[str]
    categories: list[str]
    externals: list[str]
    templates: list[str]
    comments: list[str]
    galleries: list[str]
    definitions: list[str]
    headings: list[str]
    short_descriptions: list[str]


def _marked(vocab: _Vocab, templates: Sequence[str], marker: str, count: int) -> list[str]:
    rng = vocab.rng
    return [
        vocab.fill(rng.choice(templates).replace("$M_REF", MARK_REF).replace("$M", marker))
        for _ in range(count)
    ]


def _heading(vocab: _Vocab) -> str:
    words = vocab.pick("heading").split()
    words.insert(vocab.rng.randint(0, len(words)), MARK_HEADING)
    return " ".join(words)


@lru_cache(maxsize=4)
def _pools(seed: int) -> _Pools:
    rng = random.Random(seed * 7919 + 18)
    v = _Vocab(seed, rng)
    sentences = []
    for _ in range(12000):
        s = v.fill_prose(rng.choice(_SENTENCES))
        r = rng.random()
        if r < 0.2:
            s += v.fill(rng.choice(_REFS).replace("$M", MARK_REF))
        elif r < 0.24:
            s += v.fill("{{sfn|$surname|$year|p=$int}}")
        elif r < 0.26:
            s += "{{citation needed|date=" + v.fill("$month $year") + "}}"
        elif r < 0.28:
            s = s[:-1] + v.fill(rng.choice(_REFS).replace("$M", MARK_REF)) + s[-1]  # ref before the stop
        sentences.append(s)
    tables = []
    for _ in range(300):
        rows = "".join(
            v.fill(rng.choice(_TABLE_ROWS).replace("$M", MARK_TABLE)) for _ in range(rng.randint(2, 8))
        )
        tables.append(v.fill(_TABLE_HEAD.replace("$M", MARK_TABLE)) + rows + "|}")
    lists = []
    for _ in range(400):
        items = _marked(v, _LIST_ITEMS, MARK_LIST, rng.randint(3, 9))
        if items[0].startswith("**"):
            items[0] = items[0][1:]
        lists.append("\n".join(items))
    return _Pools(
        sentences=sentences,
        refs=_marked(v, _REFS, MARK_REF, 400),
        infoboxes={
            topic: _marked(v, (_INFOBOXES[i],), MARK_INFOBOX, 60) for topic, i in _INFOBOX_OF_TOPIC.items()
        },
        tables=tables,
        lists=lists,
        files=_marked(v, _FILES, MARK_CAPTION, 300),
        categories=_marked(v, _CATEGORIES, MARK_CATEGORY, 600),
        externals=_marked(v, _EXTERNAL, MARK_LIST, 300),
        templates=_marked(v, _TEMPLATES, MARK_TEMPLATE, 300),
        comments=_marked(v, _COMMENTS, MARK_COMMENT, 100),
        galleries=_marked(v, (_GALLERY,), MARK_CAPTION, 100),
        definitions=_marked(v, _DEFINITIONS, MARK_LIST, 200),
        headings=[_heading(v) for _ in range(600)],
        short_descriptions=[
            v.fill(f"{{{{Short description|{MARK_TEMPLATE} $Adj $noun in $place}}}}") for _ in range(300)
        ],
    )


# ---------------------------------------------------------------------------------------------------------
# pages


@dataclass
class _Page:
    kind: str
    page_id: int
    title: str
    ns: int
    text: str
    redirect: str | None = None
    sentences: int = 0
    model: str = "wikitext"
    fmt: str = "text/x-wiki"


_OTHER_NAMESPACES = (
    ("Category", 30),
    ("Template", 22),
    ("File", 15),
    ("Wikipedia", 8),
    ("Talk", 6),
    ("Draft", 5),
    ("Portal", 4),
    ("User", 3),
    ("Module", 3),
    ("User talk", 2),
    ("Help", 2),
)
_EDIT_COMMENTS = (
    "/* History */ copyedit",
    "fixed typo",
    "Reverted edits by [[Special:Contribs/203.0.113.7|203.0.113.7]] ([[User talk:203.0.113.7|talk]]) "
    "to last version by $user",
    "Undid revision $rev by [[Special:Contributions/$user|$user]] ([[User talk:$user|talk]])",
    "[[WP:AWB|AWB]] general fixes & cleanup",
    'Added {{convert}} and "citation needed" tags',
    "/* References */ rm dead link",
    'Importing Wikidata [[Wikipedia:Short description|short description]]: "$Adj $noun"',
)


class _Generator:
    """Draws the pages of one dump from the pools of its seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.p = _pools(seed)
        self.v = _Vocab(seed, self.rng)
        self.titles: set[str] = set()
        self.recent: deque[str] = deque(maxlen=2000)
        users = [f"{self.v.pick('first')}{self.v.pick('surname')}" for _ in range(300)]
        users += ["Tom&Jerry", "Citation bot", "Monkbot", "InternetArchiveBot", "Ser Amantio di Nicolao"]
        self.users = users
        self._ns_names = [n for n, _ in _OTHER_NAMESPACES]
        self._ns_cum = list(itertools.accumulate(w for _, w in _OTHER_NAMESPACES))

    # ---- titles
    def _unique(self, make: Callable[[], str]) -> str:
        title = make()
        for attempt in range(20):
            if title not in self.titles:
                break
            title = make() if attempt < 10 else f"{title} ({self.v.fill('$adj $noun')})"
        else:
            title = f"{title} ({len(self.titles)})"
        self.titles.add(title)
        return title

    def _article_title(self, kind: str) -> str:
        v, r = self.v, self.rng
        if kind == "person":
            return v.person()
        if kind == "place":
            place = v.pick("place")
            return place if r.random() < 0.6 else f"{place}, {v.pick('country')}"
        if kind == "building":
            place = v.pick("place")
            return r.choice(
                (
                    f"St. {v.pick('first')}'s Church, {place}",
                    f"{place} railway station",
                    f"{place} Castle",
                    f"{place} Bridge",
                )
            )
        if kind == "species":
            genus = _strip_accents(v.pick("surname")).replace("'", "").replace(" ", "").capitalize()
            return f"{genus}ia {v.pick('noun')}ensis"
        if kind == "work":
            return v.fill("The $Adj $Noun") + r.choice(
                ("", " (film)", " (novel)", f" ({r.randint(1950, 2024)} film)")
            )
        if kind == "org":
            return f"{v.pick('place')} & {v.pick('place')} Railway"
        return f"Battle of {v.pick('place')}"

    # ---- the pieces of an article
    def _prose(self, n: int) -> str:
        return " ".join(self.rng.choices(self.p.sentences, k=n))

    def _categories(self) -> str:
        cats = self.rng.sample(self.p.categories, self.rng.randint(1, 6))
        return "\n".join(cats)

    def _lead(self, title: str, topic: str, simple: bool = False) -> str:
        templates = _SIMPLE_STUB_LEADS if simple else _LEADS[topic]
        return self.v.fill_prose(self.rng.choice(templates).replace("$title", title))

    def article(self, page_id: int) -> _Page:
        r, p = self.rng, self.p
        topic = r.choice(tuple(_LEADS))
        title = self._unique(lambda: self._article_title(topic))
        self.recent.append(title)
        parts: list[str] = []
        if r.random() < 0.9:
            parts.append(r.choice(p.short_descriptions))
        if r.random() < 0.4:
            parts.append(f"{{{{Use dmy dates|date={r.choice(_MONTHS)} {r.randint(2010, 2025)}}}}}")
        if r.random() < 0.15:
            parts.append(r.choice(p.templates))
        if r.random() < 0.6:
            parts.append(r.choice(p.infoboxes[topic]))
        if r.random() < 0.05:
            parts.append("__NOTOC__")
        n_lead = r.randint(1, 6)
        sentences = 1 + n_lead
        ref_name = f"{_strip_accents(self.v.pick('surname'))}{r.randint(1900, 2024)}".replace("'", "")
        if r.random() < 0.6:
            ref_name = f'"{ref_name}"'  # quoted or not, as editors write them
        named = r.random() < 0.5
        lead = self._lead(title, topic) + " " + self._prose(n_lead)
        if named:
            ref = r.choice(p.refs)
            lead += f"<ref name={ref_name}>{ref[ref.index('>') + 1 :]}"
        parts.append(lead)
        if r.random() < 0.3:
            n = r.randint(2, 5)
            sentences += n
            parts.append(self._prose(n))
        for _ in range(min(int(r.expovariate(0.35)) + 1, 12)):
            parts.append(f"== {r.choice(p.headings)} ==")
            if r.random() < 0.3:
                parts.append(r.choice(p.templates))
            if r.random() < 0.3:
                parts.append(r.choice(p.files))
            for _ in range(r.randint(1, 4)):
                n = r.randint(2, 8)
                sentences += n
                para = self._prose(n)
                x = r.random()
                if named and x < 0.3:
                    para += f"<ref name={ref_name} />"
                elif x < 0.4:
                    para += " " + r.choice(p.comments)
                parts.append(para)
            x = r.random()
            if x < 0.25:
                parts.append(r.choice(p.lists))
            elif x < 0.38:
                parts.append(r.choice(p.tables))
            elif x < 0.46:
                parts.append(r.choice(p.definitions))
            elif x < 0.5:
                parts.append(r.choice(p.galleries))
            elif x < 0.58:
                parts.append(r.choice(p.comments))
            if r.random() < 0.25:
                parts.append(f"=== {r.choice(p.headings)} ===")
                n = r.randint(2, 6)
                sentences += n
                parts.append(self._prose(n))
        parts.extend(self._appendix())
        text = "\n\n".join(parts).replace("\x00", article_word(page_id))
        return _Page("article", page_id, title, 0, text, sentences=sentences)

    def _appendix(self) -> list[str]:
        r, p = self.rng, self.p
        parts = []
        if r.random() < 0.3:
            see_also = r.choice(p.lists)
            if r.random() < 0.3:
                see_also = "{{div col|colwidth=22em}}\n" + see_also + "\n{{div col end}}"
            parts.append("== See also ==\n" + see_also)
        if r.random() < 0.1:
            parts.append("== Notes ==\n{{notelist}}")
        x = r.random()
        if x < 0.75:
            parts.append(
                "== References ==\n" + r.choice(("{{Reflist}}", "<references />", "{{Reflist|30em}}"))
            )
        elif x < 0.85:  # list-defined references
            defined = "\n".join(
                f'<ref name="{_strip_accents(self.v.pick("surname"))}{r.randint(1900, 2024)}">'
                + ref[ref.index(">") + 1 :]
                for ref in r.sample(p.refs, 2)
            )
            opener, closer = r.choice((("{{Reflist|refs=", "}}"), ("<references>", "</references>")))
            parts.append(f"== References ==\n{opener}\n{defined}\n{closer}")
        if r.random() < 0.1:
            parts.append("== Further reading ==\n" + r.choice(p.lists))
        if r.random() < 0.6:
            parts.append("== External links ==\n" + "\n".join(r.sample(p.externals, r.randint(1, 3))))
        tail = []
        if r.random() < 0.3:
            tail.append(r.choice(p.templates))
        if r.random() < 0.3:
            tail.append("{{Authority control}}")
        if r.random() < 0.2:
            tail.append(self.v.fill("{{DEFAULTSORT:$surname, $first}}"))
        tail.append(self._categories())
        if r.random() < 0.05:
            tail.append(f"[[fr:{MARK_INTERWIKI} {self.v.fill('$Noun $place')}]]")
        parts.append("\n".join(tail))
        return parts

    def stub(self, page_id: int) -> _Page:
        r, v = self.rng, self.v
        topic = r.choice(("person", "place"))
        title = self._unique(lambda: self._article_title(topic).replace(".", ""))
        self.recent.append(title)
        parts = []
        if r.random() < 0.5:
            parts.append(r.choice(self.p.infoboxes[topic]))
        lead = self._lead(title, topic, simple=True)
        if r.random() < 0.5:
            lead += r.choice(self.p.refs)
        parts.append(lead)
        parts.append("== References ==\n{{Reflist}}")
        parts.append(
            self._categories()
            + "\n\n"
            + v.fill(r.choice(("{{$country-geo-stub}}", "{{$nationality-bio-stub}}")))
        )
        text = "\n\n".join(parts).replace("\x00", article_word(page_id))
        return _Page("stub", page_id, title, 0, text, sentences=1)

    def empty(self, page_id: int) -> _Page:
        r, p = self.rng, self.p
        title = self._unique(lambda: self.v.fill("List of $nouns in $place"))
        parts = [r.choice(p.short_descriptions), r.choice(p.infoboxes[r.choice(("place", "building"))])]
        for _ in range(r.randint(1, 3)):
            parts.append(f"== {r.choice(p.headings)} ==")
            parts.append(r.choice(p.tables) if r.random() < 0.5 else r.choice(p.lists))
        parts.append("== References ==\n{{Reflist}}")
        parts.append(r.choice(p.templates) + "\n" + self._categories())
        return _Page("empty", page_id, title, 0, "\n\n".join(parts))

    def redirect(self, page_id: int) -> _Page:
        r, v = self.rng, self.v
        target = r.choice(self.recent) if self.recent else self._article_title("place")

        def variant() -> str:
            x = r.random()
            if x < 0.25:
                return _strip_accents(target) if _strip_accents(target) != target else target.upper()
            if x < 0.5:
                return target[:1] + target[1:].lower()
            if x < 0.6:
                return "The " + target
            return self._article_title(r.choice(tuple(_LEADS)))

        title = self._unique(variant)
        link = target if r.random() < 0.8 else f"{target}#{v.pick('heading')}"
        keyword = r.choice(("#REDIRECT [[", "#REDIRECT [[", "#REDIRECT[[", "#redirect [["))
        rcat = r.choice(
            (
                "{{Rcat shell|\n{{R from move}}\n}}",
                "{{R from alternative spelling}}",
                "{{Redirect category shell|\n{{R from other capitalisation}}\n{{R printworthy}}\n}}",
            )
        )
        text = f"{keyword}{link}]]\n\n{rcat}\n{MARK_REDIRECT} note: {v.fill('$adj $noun of $place')}."
        return _Page("redirect", page_id, title, 0, text, redirect=target)

    def disambiguation(self, page_id: int) -> _Page:
        r, v, m = self.rng, self.v, MARK_DISAMBIGUATION
        style = r.choice(("plain", "plain", "surname", "hndis", "geodis"))
        if style == "hndis":
            base = v.person()
        elif style == "geodis":
            base = v.pick("place")
        elif style == "surname":
            base = v.pick("surname")
        else:
            base = v.fill("$Noun $place")
        title = self._unique(lambda: base if base not in self.titles else f"{base} (disambiguation)")
        lines = [f"'''{base}''' may refer to the following {m} topics:", ""]
        if style in ("plain", "geodis"):
            lines.append(f"== {m} Places ==")
            for _ in range(r.randint(2, 5)):
                lines.append(v.fill(f"* [[{base}, $country]], a $adj town {m}"))
        if style in ("plain", "surname", "hndis"):
            lines.append(f"== {m} People ==")
            for _ in range(r.randint(2, 5)):
                lines.append(
                    v.fill(f"* [[$first {base.split()[-1]}]] ($yrange), $nationality $occupation {m}")
                )
        if style == "plain":
            lines.append(f"== {m} Arts ==")
            lines.append(v.fill(f"* ''[[{base} (film)]]'', a $year $nationality film {m}"))
            lines.append(v.fill(f"* ''[[{base} (album)|{base}]]'' (album), by [[$person]] {m}"))
        lines += ["", "== See also ==", f"* {{{{lookfrom|{base}}}}} {m}", f"* {{{{intitle|{base}}}}} {m}", ""]

        lines.append(
            {
                "plain": "{{Disambiguation}}",
                "surname": "{{Disambiguation|surname}}",
                "hndis": f"{{{{hndis|{base.split()[-1]}, {base.split()[0]}}}}}",
                "geodis": "{{geodis}}",
            }[style]
        )
        return _Page("disambiguation", page_id, title, 0, "\n".join(lines))

    def other_namespace(self, page_id: int) -> _Page:
        r, v, p = self.rng, self.v, self.p
        ns_name = r.choices(self._ns_names, cum_weights=self._ns_cum)[0]
        mark = MARK_TALK if "alk" in ns_name else MARK_NAMESPACE
        model, fmt = "wikitext", "text/x-wiki"

        def prose(n: int) -> str:
            return " ".join(r.choices(p.sentences, k=n)).replace("\x00", mark)

        if ns_name in ("Talk", "User talk"):
            base = r.choice(self.recent) if ns_name == "Talk" and self.recent else r.choice(self.users)
            user = r.choice(self.users)
            when = time.gmtime(r.randint(1_080_000_000, 1_790_000_000))
            stamp = time.strftime(f"%H:%M, {when.tm_mday} %B %Y", when)
            sig = f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) {stamp} (UTC)"
            text = (
                v.fill(
                    "{{WikiProject banner shell|class=Start|\n{{WikiProject $topic|importance=low}}\n}}\n\n"
                )
                + f"== {MARK_TALK} {v.fill('$Adj $noun')} ==\n{prose(r.randint(2, 5))} {sig}\n"
                + f":{prose(r.randint(1, 3))} ~~~~\n::{MARK_TALK} {v.fill('Agreed, the $noun is $adj.')} ~~~~"
            )
        elif ns_name == "User":
            base = r.choice(self.users)
            text = (
                "{{User en}}\n{{User en-N}}\n"
                + f"Hello! I am a {MARK_NAMESPACE} editor interested in {v.fill('$nouns and $nouns')}.\n\n"
                + f"== {MARK_NAMESPACE} Articles I have started ==\n"
                + f"* [[{r.choice(self.recent) if self.recent else 'Sandbox'}]] {MARK_NAMESPACE}"
            )
        elif ns_name == "Template":
            base = v.fill("$Noun $place navbox")
            text = (
                "{{Navbox\n| name = {{subst:PAGENAME}}\n"
                + f"| title = {MARK_NAMESPACE} [[{v.pick('place')}]]\n"
                + f"| list1 = {{{{{{1|}}}}}} [[{v.pick('place')}]]\n}}}}<noinclude>\n{{{{Documentation}}}}\n"
                + f"[[Category:{MARK_NAMESPACE} Navigational boxes]]\n</noinclude>"
            )
        elif ns_name == "Category":
            base = v.fill("$Adj $nouns in $place")
            text = (
                f"{{{{Commons category|{base}}}}}\n{{{{Cat main|{v.pick('place')}}}}}\n"
                + f"This category contains {MARK_NAMESPACE} articles about {v.fill('$adj $nouns')}.\n\n"
                + f"[[Category:{MARK_NAMESPACE} {v.fill('$Nouns by country')}]]"
            )
        elif ns_name == "File":
            base = v.fill("$place $noun $year.jpg")
            text = (
                "== Summary ==\n{{Information\n"
                + f"|description={{{{en|1={MARK_NAMESPACE} {v.fill('The $adj $noun of $place.')}}}}}\n"
                + f"|date={v.date()}\n|source={{{{own}}}}\n|author=[[User:{r.choice(self.users)}]]\n}}}}\n\n"
                + "== Licensing ==\n{{self|cc-by-sa-4.0}}"
            )
        elif ns_name == "Module":
            base = v.fill("$Noun")
            model, fmt = "Scribunto", "text/plain"
            text = (
                f"-- {MARK_NAMESPACE}: helpers for the {{{{{base.lower()}}}}} template\n"
                + "local p = {}\n\nfunction p.main(frame)\n\tlocal args = frame.args\n"
                + '\tif args[1] == nil or #args[1] < 1 then\n\t\treturn "<span class=\\"error\\">'
                + f'{MARK_NAMESPACE} & no input</span>"\n\tend\n'
                + '\treturn args[1] .. " &gt; " .. (args[2] or "")\n'
                + "end\n\nreturn p\n"
            )
        elif ns_name == "Draft":
            base = v.fill("$Adj $Noun of $place")
            text = (
                "{{AfC submission|||ts=20240101000000|u="
                + r.choice(self.users)
                + "|ns=118}}\n"
                + f"'''{base}''' is a {MARK_NAMESPACE} draft. {prose(r.randint(2, 6))}\n\n"
                + f"== {MARK_NAMESPACE} History ==\n{prose(r.randint(2, 6))}\n\n"
                + "== References ==\n{{Reflist}}"
            )
        else:  # Wikipedia, Portal, Help
            base = v.fill("$Adj $nouns") if ns_name != "Portal" else v.pick("place")
            text = (
                "{{Wikipedia how-to|WP:"
                + base.upper()[:6].replace(" ", "")
                + "}}\n"
                + f"{prose(r.randint(2, 5))}\n\n== {MARK_NAMESPACE} {v.fill('$Adj $nouns')} ==\n"
                + "\n".join(f"* {MARK_NAMESPACE} {v.fill('$adj $noun')}" for _ in range(3))
            )
        title = self._unique(lambda: f"{ns_name}:{base}" if base else f"{ns_name}:{v.fill('$Noun')}")
        return _Page("other_namespace", page_id, title, _NS_KEY[ns_name], text, model=model, fmt=fmt)

    # ---- the XML of a page
    def page_xml(self, page: _Page) -> str:
        r = self.rng
        rev = r.randint(900_000_000, 1_320_000_000)
        parent = f"      <parentid>{rev - r.randint(1, 5_000_000)}</parentid>\n" if r.random() < 0.93 else ""
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.randint(1_100_000_000, 1_790_000_000)))
        if r.random() < 0.1:
            contributor = f"        <ip>203.0.113.{r.randint(1, 254)}</ip>\n"
        else:
            contributor = (
                f"        <username>{xml_escape(r.choice(self.users))}</username>\n"
                f"        <id>{r.randint(1, 48_000_000)}</id>\n"
            )
        minor = "      <minor/>\n" if r.random() < 0.25 else ""
        comment = ""
        if r.random() < 0.85:
            c = r.choice(_EDIT_COMMENTS).replace("$user", r.choice(self.users)).replace("$rev", str(rev - 7))
            comment = f"      <comment>{xml_escape(self.v.fill(c))}</comment>\n"
        redirect = (
            f'    <redirect title="{xml_escape(page.redirect)}" />\n' if page.redirect is not None else ""
        )
        text = page.text
        sha1 = sha1_base36(text)
        return (
            f"  <page>\n    <title>{xml_escape(page.title)}</title>\n    <ns>{page.ns}</ns>\n"
            f"    <id>{page.page_id}</id>\n{redirect}    <revision>\n      <id>{rev}</id>\n{parent}"
            f"      <timestamp>{ts}</timestamp>\n      <contributor>\n{contributor}      </contributor>\n"
            f"{minor}{comment}      <origin>{rev}</origin>\n      <model>{page.model}</model>\n"
            f"      <format>{page.fmt}</format>\n"
            f'      <text bytes="{len(text.encode("utf-8"))}" sha1="{sha1}" xml:space="preserve">'
            f"{xml_escape(text)}</text>\n      <sha1>{sha1}</sha1>\n    </revision>\n  </page>\n"
        )

    def page(self, kind: str, page_id: int) -> _Page:
        return getattr(self, "empty" if kind == "empty" else kind)(page_id)


# ---------------------------------------------------------------------------------------------------------
# writing a dump


@dataclass
class DumpManifest:
    """What :func:`write_dump` wrote: the page ids of each kind (in dump order), titles, sizes, paths.

    ``prose_sentences`` maps each article and stub id to its number of prose sentences as generated (every
    one contains :func:`article_word` of the id exactly once; a sentence splitter may split some of the
    hard cases — "Dr.", "No. 5", quotes — differently).
    """

    articles: list[int] = field(default_factory=list)
    stubs: list[int] = field(default_factory=list)
    empty_articles: list[int] = field(default_factory=list)
    redirects: list[int] = field(default_factory=list)
    other_namespace: list[int] = field(default_factory=list)
    disambiguation: list[int] = field(default_factory=list)
    titles: dict[int, str] = field(default_factory=dict)
    redirect_targets: dict[int, str] = field(default_factory=dict)
    namespaces: dict[int, int] = field(default_factory=dict)
    prose_sentences: dict[int, int] = field(default_factory=dict)
    xml_bytes: int = 0
    compressed_bytes: int = 0
    streams: int = 0
    seconds: float = 0.0
    path: Path | None = None
    index_path: Path | None = None
    flavour: str = "plain"

    @property
    def paths(self) -> tuple[Path | None, Path | None]:
        """(dump file, multistream index file or None)."""
        return self.path, self.index_path

    @property
    def pages(self) -> int:
        return len(self.titles)

    def ids(self, kind: str) -> list[int]:
        """The page ids of one of :data:`KINDS`."""
        return getattr(self, _MANIFEST_FIELD[kind])

    def counts(self) -> dict[str, int]:
        return {kind: len(self.ids(kind)) for kind in KINDS}


_MANIFEST_FIELD = {
    "article": "articles",
    "stub": "stubs",
    "empty": "empty_articles",
    "redirect": "redirects",
    "other_namespace": "other_namespace",
    "disambiguation": "disambiguation",
}
_MULTISTREAM_NAME = re.compile(r"^(?P<stem>.*multistream)(?P<num>\d*)\.xml(?P<range>-p\d+p\d+)?\.bz2$")


def flavour_of(path: Path) -> str:
    """``plain``, ``bz2`` (one stream) or ``multistream``, from a dump file's name."""
    name = Path(path).name
    if name.endswith(".xml"):
        return "plain"
    if name.endswith(".bz2"):
        return "multistream" if "multistream" in name else "bz2"
    raise ValueError(f"cannot tell the dump flavour of {name!r} (.xml, .xml.bz2, .xml-pNpM.bz2)")


def index_path_for(path: Path) -> Path:
    """The multistream index's name, as Wikimedia names it:
    ``X-multistream.xml.bz2`` → ``X-multistream-index.txt.bz2``, part files
    ``X-multistream3.xml-p1p41242.bz2`` → ``X-multistream-index3.txt-p1p41242.bz2``."""
    path = Path(path)
    m = _MULTISTREAM_NAME.match(path.name)
    if m:
        return path.with_name(f"{m['stem']}-index{m['num']}.txt{m['range'] or ''}.bz2")
    return path.with_name(path.name.removesuffix(".bz2").removesuffix(".xml") + "-index.txt.bz2")


def _kind_sequence(
    rng: random.Random, pages: int | None, target_bytes: int | None, kinds: dict[str, int] | None
):
    if kinds is not None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown page kinds {sorted(unknown)}; known: {KINDS}")
        seq = [k for k in KINDS for _ in range(kinds.get(k, 0))]
        rng.shuffle(seq)
        yield from seq
        return
    names = list(DEFAULT_PROPORTIONS)
    cum = list(itertools.accumulate(DEFAULT_PROPORTIONS.values()))
    count = itertools.count() if pages is None else range(pages)
    for _ in count:
        yield rng.choices(names, cum_weights=cum)[0]


class _PlainSink:
    """A plain or single-stream bz2 file; with ``threads`` a background thread compresses (bz2 releases the
    GIL), overlapping generation."""

    def __init__(self, path: Path, compresslevel: int, compressed: bool, threads: int) -> None:
        self.f = bz2.open(path, "wb", compresslevel=compresslevel) if compressed else open(path, "wb")
        self.streams = 1 if compressed else 0
        self.chunk: list[bytes] = []
        self.chunk_bytes = 0
        self.queue: queue.Queue[bytes | None] | None = None
        self.error: BaseException | None = None
        if compressed and threads > 0:
            self.queue = queue.Queue(maxsize=8)
            self.thread = threading.Thread(target=self._writer, daemon=True)
            self.thread.start()

    def _writer(self) -> None:
        assert self.queue is not None
        while (data := self.queue.get()) is not None:
            if self.error is None:
                try:
                    self.f.write(data)
                except BaseException as e:  # re-raised by close()
                    self.error = e

    def _write(self, data: bytes) -> None:
        if self.queue is None:
            self.f.write(data)
            return
        self.chunk.append(data)
        self.chunk_bytes += len(data)
        if self.chunk_bytes >= 1 << 20:
            self.queue.put(b"".join(self.chunk))
            self.chunk, self.chunk_bytes = [], 0

    def header(self, data: bytes) -> None:
        self._write(data)

    def page(self, page_id: int, title: str, data: bytes) -> None:
        self._write(data)

    def close(self, footer: bytes) -> None:
        self._write(footer)
        if self.queue is not None:
            self.queue.put(b"".join(self.chunk))
            self.queue.put(None)
            self.thread.join()
        self.f.close()
        if self.error is not None:
            raise self.error


class _MultistreamSink:
    """Concatenated bz2 streams (header, blocks of pages, footer) and the index; with ``threads`` the blocks
    are compressed by a thread pool while the next ones are generated, and written in order."""

    def __init__(
        self, path: Path, index: Path, compresslevel: int, pages_per_stream: int, threads: int
    ) -> None:
        if pages_per_stream < 1:
            raise ValueError(f"pages_per_stream must be positive, got {pages_per_stream}")
        self.f = open(path, "wb")
        self.index = bz2.open(index, "wt", encoding="utf-8", compresslevel=compresslevel)
        self.level = compresslevel
        self.per_stream = pages_per_stream
        self.block: list[bytes] = []
        self.block_pages: list[tuple[int, str]] = []
        self.offset = 0
        self.streams = 0
        self.pool = ThreadPoolExecutor(threads) if threads > 0 else None
        self.max_pending = 2 * threads + 2
        self.pending: deque[tuple[Future[bytes], list[tuple[int, str]]]] = deque()

    def _stream(self, data: bytes, pages: list[tuple[int, str]]) -> None:
        if self.pool is None:
            self._write(bz2.compress(data, self.level), pages)
            return
        self.pending.append((self.pool.submit(bz2.compress, data, self.level), pages))
        while len(self.pending) > self.max_pending:
            self._drain()

    def _drain(self) -> None:
        future, pages = self.pending.popleft()
        self._write(future.result(), pages)

    def _write(self, compressed: bytes, pages: list[tuple[int, str]]) -> None:
        if pages:
            offset = self.offset
            self.index.write("".join(f"{offset}:{pid}:{title}\n" for pid, title in pages))
        self.f.write(compressed)
        self.offset += len(compressed)
        self.streams += 1

    def header(self, data: bytes) -> None:
        self._stream(data, [])

    def page(self, page_id: int, title: str, data: bytes) -> None:
        self.block.append(data)
        self.block_pages.append((page_id, title))
        if len(self.block) >= self.per_stream:
            self._flush()

    def _flush(self) -> None:
        if self.block:
            self._stream(b"".join(self.block), self.block_pages)
            self.block, self.block_pages = [], []

    def close(self, footer: bytes) -> None:
        self._flush()
        self._stream(footer, [])
        while self.pending:
            self._drain()
        if self.pool is not None:
            self.pool.shutdown()
        self.f.close()
        self.index.close()


def write_dump(
    path: Path,
    *,
    pages: int | None = None,
    target_bytes: int | None = None,
    seed: int = 0,
    pages_per_stream: int = 100,
    compresslevel: int = 9,
    kinds: dict[str, int] | None = None,
    start_id: int = 1,
    flavour: str | None = None,
    threads: int = 2,
) -> DumpManifest:
    """Write a generated pages-articles dump to ``path`` and return what it holds.

    Exactly one of ``pages`` (that many pages, kinds drawn in :data:`DEFAULT_PROPORTIONS`),
    ``target_bytes`` (pages until the uncompressed XML reaches about that size; it stops at the first page
    that reaches it, so it overshoots by less than one page) and ``kinds`` (exact counts per kind of
    :data:`KINDS`, in a seeded shuffled order) sizes the dump. ``flavour`` (``plain``, ``bz2``,
    ``multistream``) defaults to :func:`flavour_of` the name; a multistream dump also writes its index at
    :func:`index_path_for`. Page ids increase from ``start_id`` with small gaps. The XML is the same for
    every flavour (a seed fixes it), and is written page by page: memory stays bounded at any size.
    ``threads`` bz2 compression threads run beside the generating one (0: compress inline); each
    multistream block is compressed on its own with ``compresslevel`` (9, like Wikimedia's).
    """
    if sum(x is not None for x in (pages, target_bytes, kinds)) != 1:
        raise ValueError("give exactly one of pages=, target_bytes=, kinds=")
    path = Path(path)
    flavour = flavour or flavour_of(path)
    if flavour not in ("plain", "bz2", "multistream"):
        raise ValueError(f"unknown flavour {flavour!r}")
    start = time.perf_counter()
    manifest = DumpManifest(path=path, flavour=flavour)
    if flavour == "multistream":
        manifest.index_path = index_path_for(path)
        sink: _PlainSink | _MultistreamSink = _MultistreamSink(
            path, manifest.index_path, compresslevel, pages_per_stream, threads
        )
    else:
        sink = _PlainSink(path, compresslevel, flavour == "bz2", threads)
    gen = _Generator(seed)
    rng = gen.rng
    header, footer = HEADER.encode("utf-8"), FOOTER.encode("utf-8")
    sink.header(header)
    written = len(header) + len(footer)
    page_id = start_id
    for kind in _kind_sequence(random.Random(seed + 1_000_003), pages, target_bytes, kinds):
        if target_bytes is not None and written >= target_bytes:
            break
        page = gen.page(kind, page_id)
        data = gen.page_xml(page).encode("utf-8")
        sink.page(page_id, page.title, data)
        written += len(data)
        manifest.ids(kind).append(page_id)
        manifest.titles[page_id] = page.title
        if page.ns:
            manifest.namespaces[page_id] = page.ns
        if page.redirect is not None:
            manifest.redirect_targets[page_id] = page.redirect
        if kind in ("article", "stub"):
            manifest.prose_sentences[page_id] = page.sentences
        page_id += 1 if rng.random() < 0.6 else rng.randint(2, 9)
    sink.close(footer)
    manifest.xml_bytes = written
    manifest.streams = sink.streams
    manifest.compressed_bytes = path.stat().st_size
    manifest.seconds = time.perf_counter() - start
    return manifest


# ---------------------------------------------------------------------------------------------------------
# books

_BOOK_SENTENCES = (
    "$first looked at the $T $noun and sighed.",
    "“Where are you going?” she asked, glancing at the $T $noun.",
    "“I don't know,” $first said, holding the $T $noun a little tighter.",
    "The $T $noun was $adj, and the rain had not stopped since Tuesday.",
    "He had never seen a $noun so $adj — not even the $T one in $place.",
    "“You can't be serious!” $first shouted across the $T $noun.",
    "Mr. $surname opened the door of the $T $noun at exactly 7.30 p.m.",
    "She walked $adv toward the $T $noun, counting her steps: one, two, three.",
    "It was the $ordinal time that week that the $T $noun had $verbed anything.",
    "“Is it true?” asked $first, staring at the $T $noun.",
    "“Did the $T $noun really burn down?”",
    "Dr. $surname's office smelled of coffee and the $T $noun's old $nouns.",
    "They drove $int miles before $first noticed the $T $noun was gone.",
    "Nobody in $place remembered the $T $noun (or so they claimed).",
    "“Well,” said $first, “the $T $noun isn't going to fix itself, is it?”",
    "The $T $noun's $nouns were $adj; hers were $adj.",
    "I wanted to tell her about the $T $noun, but the words wouldn't come.",
    "$first laughed, a short, $adj sound that echoed off the $T $noun.",
    "By midnight the $T $noun was quiet again, and $first was asleep.",
)
_BOOK_GENRES = ("Romance", "Fantasy", "Science fiction", "Thriller", "Mystery", "Young adult", "Historical")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", _strip_accents(text).lower()).strip("-")


def write_books(
    directory: Path, books: int, *, seed: int = 0, paragraphs: tuple[int, int] = (5, 40)
) -> list[Path]:
    """Write ``books`` BookCorpus-style plain-text books into ``directory`` and return their paths.

    Files are named as the public crawler (soskek/bookcorpus ``download_files.py``) names them in its flat
    output directory: ``<smashwords book id>__<epub name>.txt``, e.g. ``123456__the-silent-river.txt``.
    A book has Smashwords front matter (title, author, copyright, license notes; no book word), then
    chapters ("Chapter 1", "CHAPTER TWO", "* * *" breaks) of ``paragraphs`` (min, max) narrative
    paragraphs separated by blank lines; every narrative sentence contains :func:`book_word` of the book id
    (see :func:`book_id`).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed + 7)
    v = _Vocab(seed, rng)
    pool = [v.fill_prose(rng.choice(_BOOK_SENTENCES)) for _ in range(3000)]
    paths = []
    current = rng.randint(1000, 90000)
    for _ in range(books):
        current += rng.randint(1, 500)
        title = v.fill("The $Adj $Noun") if rng.random() < 0.7 else v.fill("$Noun of $place")
        author = v.person()
        out: list[str] = [
            title,
            f"by {author}",
            f"Copyright © {rng.randint(2008, 2016)} {author}",
            "Smashwords Edition",
            "License Notes\nThis ebook is licensed for your personal enjoyment only. This ebook may not be "
            "re-sold or given away to other people. Thank you for respecting the hard work of this author.",
        ]
        if rng.random() < 0.5:
            out.append(f"Genre: {rng.choice(_BOOK_GENRES)}")
        n_paragraphs = rng.randint(*paragraphs)
        chapter = 0
        for i in range(n_paragraphs):
            if i == 0 or rng.random() < 0.08:
                chapter += 1
                out.append(
                    rng.choice(
                        (
                            f"Chapter {chapter}",
                            f"CHAPTER {chapter}",
                            f"Chapter {_ORDINAL_WORDS[(chapter - 1) % 12].capitalize()}",
                        )
                    )
                )
            elif rng.random() < 0.04:
                out.append("* * *")
            out.append(" ".join(rng.choices(pool, k=rng.randint(1, 8))))
        if rng.random() < 0.5:
            out.append(f"About the Author\n{author} lives in {v.pick('place')} with two cats.")
        text = "\n\n".join(out).replace("\x00", book_word(current)) + "\n"
        path = directory / f"{current}__{_slug(title)}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------------------
# command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m preprocess.sources.synthetic_wiki",
        description="Write a generated English-Wikipedia pages-articles dump (and BookCorpus-style books).",
    )
    parser.add_argument("--out", type=Path, help="dump file: .xml, .xml.bz2, *multistream*.xml.bz2")
    parser.add_argument("--mb", type=float, default=200.0, help="uncompressed XML size in MB (default 200)")
    parser.add_argument("--pages", type=int, help="a page count instead of --mb")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-id", type=int, default=1)
    parser.add_argument("--pages-per-stream", type=int, default=100)
    parser.add_argument("--compresslevel", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2, help="bz2 compression threads (0: inline)")

    parser.add_argument("--books-dir", type=Path)
    parser.add_argument("--books", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out is None and not args.books_dir:
        parser.error("nothing to write: give --out and/or --books-dir")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        m = write_dump(
            args.out,
            pages=args.pages,
            target_bytes=None if args.pages else int(args.mb * 1e6),
            seed=args.seed,
            start_id=args.start_id,
            pages_per_stream=args.pages_per_stream,
            compresslevel=args.compresslevel,
            threads=args.threads,
        )
        size = m.compressed_bytes / 1e6
        print(f"wrote {m.path} ({m.flavour}, {size:.1f} MB on disk, {m.streams} bz2 streams)")
        if m.index_path:
            print(f"wrote {m.index_path} ({m.index_path.stat().st_size / 1e6:.2f} MB)")
        print(f"{m.pages} pages, " + ", ".join(f"{k} {n}" for k, n in m.counts().items()))
        mb = m.xml_bytes / 1e6
        print(f"{mb:.1f} MB of XML in {m.seconds:.1f} s: {mb / m.seconds:.1f} MB/s")

    if args.books_dir:
        start = time.perf_counter()
        paths = write_books(args.books_dir, args.books, seed=args.seed)
        size = sum(p.stat().st_size for p in paths)
        seconds = time.perf_counter() - start
        print(f"wrote {len(paths)} books to {args.books_dir} ({size / 1e6:.1f} MB in {seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
