"""Nouns: the quickstart's bilingual nouns (English and German forms, gender, semantic tags) and the
English nouns of the Wikipedia generator (its things and its occupations).

The semantic tags (``person``, ``animal``, ``place``, ``food``, ...) decide which verbs and adjectives a
noun combines with; :data:`ANIMATE` and :data:`CONCRETE` name the two tag groups the grammar uses most.
"""

from __future__ import annotations

from dataclasses import dataclass

from macaron_synthetic.lexicon.english import plural
from macaron_synthetic.lexicon.tables import words


@dataclass(frozen=True)
class Noun:
    """A noun lemma: English singular/plural, German singular/plural, gender, semantic tags (the English
    plural is :func:`~macaron_synthetic.lexicon.english.plural`'s; None for a mass noun)."""

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


# en_sg de_sg de_pl gender tags [weak]   ("-" = no plural: mass noun)
_NOUN_TABLE = """
man Mann Männer m person
woman Frau Frauen f person
child Kind Kinder n person
boy Junge Jungen m person weak
girl Mädchen Mädchen n person
teacher Lehrer Lehrer m person
student Student Studenten m person weak
doctor Arzt Ärzte m person
neighbour Nachbar Nachbarn m person weak
friend Freund Freunde m person
cook Koch Köche m person
farmer Bauer Bauern m person weak
king König Könige m person
queen Königin Königinnen f person
baker Bäcker Bäcker m person
driver Fahrer Fahrer m person
brother Bruder Brüder m person
sister Schwester Schwestern f person
mother Mutter Mütter f person
father Vater Väter m person
soldier Soldat Soldaten m person weak
singer Sänger Sänger m person
guest Gast Gäste m person
customer Kunde Kunden m person weak
lawyer Anwalt Anwälte m person
artist Künstler Künstler m person
dog Hund Hunde m animal
cat Katze Katzen f animal
horse Pferd Pferde n animal
bird Vogel Vögel m animal
mouse Maus Mäuse f animal
cow Kuh Kühe f animal
fish Fisch Fische m animal
sheep Schaf Schafe n animal
bear Bär Bären m animal weak
fox Fuchs Füchse m animal
rabbit Hase Hasen m animal weak
duck Ente Enten f animal
pig Schwein Schweine n animal
wolf Wolf Wölfe m animal
monkey Affe Affen m animal weak
lion Löwe Löwen m animal weak
apple Apfel Äpfel m food,portable
cake Kuchen Kuchen m food,portable
egg Ei Eier n food,portable
soup Suppe Suppen f food
sausage Wurst Würste f food,portable
pear Birne Birnen f food,portable
banana Banane Bananen f food,portable
cookie Keks Kekse m food,portable
pizza Pizza Pizzen f food,portable
potato Kartoffel Kartoffeln f food,portable
tomato Tomate Tomaten f food,portable
coffee Kaffee - m drink
tea Tee - m drink
milk Milch - f drink
water Wasser - n drink
juice Saft - m drink
beer Bier - n drink
wine Wein - m drink
book Buch Bücher n readable,portable,open
letter Brief Briefe m readable,portable,open
newspaper Zeitung Zeitungen f readable,portable
story Geschichte Geschichten f readable
poem Gedicht Gedichte n readable
map Karte Karten f readable,portable
magazine Zeitschrift Zeitschriften f readable,portable
message Nachricht Nachrichten f readable
key Schlüssel Schlüssel m portable
ball Ball Bälle m portable,toy
bag Tasche Taschen f portable,open
cup Tasse Tassen f portable
bottle Flasche Flaschen f portable,open
chair Stuhl Stühle m thing,fixable
table Tisch Tische m thing,fixable
lamp Lampe Lampen f portable,fixable
clock Uhr Uhren f portable,fixable
phone Telefon Telefone n portable,fixable
computer Computer Computer m portable,fixable
picture Bild Bilder n portable
flower Blume Blumen f portable
box Kiste Kisten f portable,open
shoe Schuh Schuhe m portable
hat Hut Hüte m portable
coat Mantel Mäntel m portable
glass Glas Gläser n portable
plate Teller Teller m portable
knife Messer Messer n portable
pen Stift Stifte m portable
gift Geschenk Geschenke n portable,open
umbrella Regenschirm Regenschirme m portable,open
ring Ring Ringe m portable
candle Kerze Kerzen f portable
guitar Gitarre Gitarren f portable,fixable
window Fenster Fenster n thing,open,fixable
door Tür Türen f thing,open,fixable
bicycle Fahrrad Fahrräder n vehicle,fixable
car Auto Autos n vehicle,fixable
bus Bus Busse m vehicle,fixable
train Zug Züge m vehicle
boat Boot Boote n vehicle,fixable
garden Garten Gärten m place
kitchen Küche Küchen f place,room
house Haus Häuser n place,room
school Schule Schulen f place
park Park Parks m place
city Stadt Städte f place
station Bahnhof Bahnhöfe m place
market Markt Märkte m place
forest Wald Wälder m place
library Bibliothek Bibliotheken f place
office Büro Büros n place,room
village Dorf Dörfer n place
room Zimmer Zimmer n place,room
shop Laden Läden m place
museum Museum Museen n place
church Kirche Kirchen f place
hotel Hotel Hotels n place
restaurant Restaurant Restaurants n place
hospital Krankenhaus Krankenhäuser n place
bakery Bäckerei Bäckereien f place
castle Schloss Schlösser n place
cinema Kino Kinos n place
theatre Theater Theater n place
harbour Hafen Häfen m place
"""


def _parse_nouns(table: str) -> tuple[Noun, ...]:
    """The nouns of a table laid out as :data:`_NOUN_TABLE` (the comment above it names the columns)."""
    nouns = []
    for line in table.strip().splitlines():
        en_sg, de_sg, de_pl, gender, tags, *flags = line.split()
        mass = de_pl == "-"
        en_pl = None if mass else plural(en_sg)
        tag_set = frozenset(tags.split(","))
        nouns.append(Noun(en_sg, en_pl, de_sg, None if mass else de_pl, gender, tag_set, "weak" in flags))
    return tuple(nouns)


NOUNS = _parse_nouns(_NOUN_TABLE)
ANIMATE = frozenset({"person", "animal"})
CONCRETE = frozenset({"portable", "thing", "vehicle", "food", "readable"})

ENCYCLOPEDIC_NOUNS = words("""
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
""")
OCCUPATIONS = words("""
politician footballer cricketer actor singer songwriter novelist poet painter architect engineer
physicist chemist botanist zoologist mathematician historian philosopher journalist broadcaster
businessman diplomat judge lawyer bishop priest soldier sculptor composer conductor pianist violinist
guitarist drummer photographer screenwriter cyclist rower sprinter swimmer boxer wrestler jockey
astronomer geologist economist sociologist anthropologist archaeologist explorer missionary inventor
entrepreneur activist
""")
