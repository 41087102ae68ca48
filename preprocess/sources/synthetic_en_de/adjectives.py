"""Adjectives of the synthetic corpus: English form, German predicative form and attributive stem."""

from __future__ import annotations

from dataclasses import dataclass


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
