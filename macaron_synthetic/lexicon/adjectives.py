"""Adjectives: the quickstart's bilingual ones (English form, German predicative form and attributive stem,
the nouns they fit) and the English adjectives of the Wikipedia generator."""

from __future__ import annotations

from dataclasses import dataclass

from macaron_synthetic.lexicon.tables import words


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

ENCYCLOPEDIC_ADJECTIVES = words("""
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
""")
HYPHENATED_ADJECTIVES = words("""
long-term well-known twenty-five nineteenth-century so-called large-scale full-time two-storey
middle-aged short-lived high-speed left-wing right-wing self-taught world-famous English-language
state-owned non-profit post-war pre-war anti-war year-round three-day half-timbered red-brick
""")
