"""Nouns of the synthetic corpus: English and German forms, grammatical gender, semantic tags.

The semantic tags (``person``, ``animal``, ``place``, ``food``, ...) decide which verbs and adjectives a
noun combines with; :data:`ANIMATE` and :data:`CONCRETE` name the two tag groups the grammar uses most.
"""

from __future__ import annotations

from dataclasses import dataclass


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
