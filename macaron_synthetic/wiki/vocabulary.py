"""What a slot of a wikitext template draws: ``$name`` in a template is replaced by a draw of the named slot,
words with Zipf-like frequencies (their rank order shuffled per seed) from the lexicon, numbers, dates,
links and templates; and the value lists only the encyclopedia uses (units, foreign phrases, publishers,
web sites, section headings, WikiProject topics)."""

from __future__ import annotations

import functools
import itertools
import random
import re
import unicodedata
from collections.abc import Callable

from macaron_synthetic.lexicon import names
from macaron_synthetic.lexicon.adjectives import ENCYCLOPEDIC_ADJECTIVES, HYPHENATED_ADJECTIVES
from macaron_synthetic.lexicon.adverbs import ENCYCLOPEDIC_ADVERBS
from macaron_synthetic.lexicon.english import articles_before_vowels, plural
from macaron_synthetic.lexicon.function_words import CENTURIES, MONTHS, ORDINALS
from macaron_synthetic.lexicon.nouns import ENCYCLOPEDIC_NOUNS, OCCUPATIONS
from macaron_synthetic.lexicon.tables import pairs, phrases, words
from macaron_synthetic.lexicon.verbs import ENCYCLOPEDIC_VERBS, PARTICIPLES

UNITS = (("km", "mi"), ("m", "ft"), ("kg", "lb"), ("ha", "acre"), ("km2", "sqmi"), ("cm", "in"))
_LANG_PHRASE_TABLE = """
fr:la vieille ville|fr:le pont neuf|fr:église Saint-Étienne|fr:rue des Écoles|de:Großer Markt|
de:Schloss am See|de:Alte Brücke|es:la ciudad vieja|es:puente de piedra|it:il castello|
it:piazza del Duomo|pt:a ponte velha|nl:de oude haven|sv:gamla staden|pl:Stare Miasto|la:terra incognita
"""
#: (language code, phrase) of ``{{lang|code|phrase}}``
LANG_PHRASES = pairs(phrases(_LANG_PHRASE_TABLE))
OLD_WORDS = words("burh ford hām tūn lēah wīc dūn byrig stān feld mere brycg")
PUBLISHERS = phrases("""
Oxford University Press|Cambridge University Press|Penguin|Routledge|HarperCollins|Faber and Faber|
Macmillan|Yale University Press|Springer|Éditions Gallimard|Thames & Hudson|Batsford
""")
SITES = words("""
bbc.co.uk theguardian.com nytimes.com britannica.com historicengland.org.uk ons.gov.uk nature.com
jstor.org archive.org lemonde.fr
""")
HEADINGS = phrases("""
History|Early life|Career|Geography|Climate|Demographics|Economy|Culture|Architecture|Description|
Taxonomy|Distribution and habitat|Reception|Legacy|Personal life|Plot|Production|Track listing|
Background|Notable people|Transport|Education|Sport|Governance|Etymology|Origins|Later years|Death|
Design|Construction|Operations|Decline|Restoration|Awards and honours|Works|Ecology|Behaviour|Diet|
Conservation|Structure|Development|Release|Critical response|Aftermath|Administration|Religion|Media
""")
TOPICS = phrases("""
Biography|Football|Music|Film|Architecture|Rivers|Birds|Military history|Trains|Geography|Politics
""")


def strip_accents(text: str) -> str:
    """``text`` without its diacritics (é → e)."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


SLOT = re.compile(r"\$([A-Za-z_]\w*)")


class Vocabulary:
    """Seeded word draws with Zipf-like frequencies (rank order shuffled per seed)."""

    def __init__(self, seed: int, rng: random.Random) -> None:
        """Word lists ranked by ``seed``; draws from ``rng``."""
        self.rng = rng
        lists_rng = random.Random(seed * 7919 + 17)
        places = [h + t for h in names.PLACE_NAME_HEADS for t in names.PLACE_NAME_TAILS]
        lists_rng.shuffle(places)
        self.places = [*places[:900], *names.FOREIGN_PLACES]
        self.surnames = [*names.SURNAMES, *places[900:]]
        self._lists: dict[str, tuple[list[str], list[float]]] = {}
        for name, pool in (
            ("noun", ENCYCLOPEDIC_NOUNS),
            ("adj", ENCYCLOPEDIC_ADJECTIVES),
            ("verbed", PARTICIPLES),
            ("verb", ENCYCLOPEDIC_VERBS),
            ("adv", ENCYCLOPEDIC_ADVERBS),
            ("occupation", OCCUPATIONS),
            ("first", names.FIRST_NAMES),
            ("surname", self.surnames),
            ("place", self.places),
            ("country", names.COUNTRIES),
            ("nationality", names.NATIONALITIES),
            ("hyph", HYPHENATED_ADJECTIVES),
            ("heading", HEADINGS),
        ):
            ranked = list(pool)
            lists_rng.shuffle(ranked)
            # Zipf-Mandelbrot ranks: frequent words recur, none dominates
            weights = (1 / (rank + 8) for rank in range(len(ranked)))
            self._lists[name] = (ranked, list(itertools.accumulate(weights)))
        r = rng
        uniform = {
            "century": CENTURIES,
            "ordinal": ORDINALS,
            "month": MONTHS,
            "oldword": OLD_WORDS,
            "publisher": PUBLISHERS,
            "site": SITES,
            "topic": TOPICS,
        }
        self.slots: dict[str, Callable[[], str]] = {
            **{name: functools.partial(self.pick, name) for name in self._lists},  # $noun, $adj, $place, ...
            **{name: functools.partial(r.choice, pool) for name, pool in uniform.items()},
            "T": lambda: "\x00",
            "nouns": lambda: plural(self.pick("noun")),
            "Noun": lambda: self.pick("noun").capitalize(),
            "Nouns": lambda: plural(self.pick("noun")).capitalize(),
            "Adj": lambda: self.pick("adj").capitalize(),
            "person": self.person,
            "year": lambda: str(r.randint(1450, 2024)),
            "yrange": self.year_range,
            "decade": lambda: f"{r.randint(180, 202)}0s",
            "int": lambda: str(r.randint(2, 99)),
            "big": lambda: f"{r.randint(1, 950)},{r.randint(0, 999):03d}",
            "dec": lambda: f"{r.randint(0, 99)}.{r.randint(1, 99)}",
            "pp": self.pages,
            "date": self.date,
            "usd": lambda: f"${r.randint(1, 99)}.{r.randint(1, 9)} million",
            "gbp": lambda: f"£{r.randint(2, 950)},000",
            "L": self.link,
            "LP": self.place_link,
            "lang": self.lang,
            "convert": self.convert,
            "work": self.work_title,
        }

    def pick(self, name: str) -> str:
        pool, cum = self._lists[name]
        return self.rng.choices(pool, cum_weights=cum)[0]

    def fill(self, template: str) -> str:
        slots = self.slots
        return SLOT.sub(lambda m: slots[m.group(1)](), template)

    def fill_prose(self, template: str) -> str:
        """:meth:`fill`, then "a" before a vowel becomes "an"."""
        return articles_before_vowels(self.fill(template))

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
        return f"{self.rng.randint(1, 28)} {self.rng.choice(MONTHS)} {self.rng.randint(1500, 2024)}"

    def link(self) -> str:
        noun, r = self.pick("noun"), self.rng.random()
        if r < 0.5:
            return f"[[{noun}]]"
        if r < 0.7:
            return f"[[{plural(noun).capitalize()}|{plural(noun)}]]"
        if r < 0.85:
            return f"[[{noun}]]s" if not noun.endswith(("s", "y", "x", "h")) else f"[[{noun}]]"
        return f"[[{noun.capitalize()} ({self.pick('adj')} {noun})|{noun}]]"

    def place_link(self) -> str:
        place = self.pick("place")
        if self.rng.random() < 0.2:
            return f"[[{place}, {self.pick('country')}|{place}]]"
        return f"[[{place}]]"

    def lang(self) -> str:
        code, phrase = self.rng.choice(LANG_PHRASES)
        return f"{{{{lang|{code}|{phrase}}}}}"

    def convert(self) -> str:
        a, b = self.rng.choice(UNITS)
        return f"{{{{convert|{self.rng.randint(2, 950)}|{a}|{b}}}}}"

    def work_title(self) -> str:
        return f"''The {self.pick('adj').capitalize()} {self.pick('noun').capitalize()}''"
