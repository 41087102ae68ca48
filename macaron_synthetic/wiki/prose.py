"""The wikitext that pages are composed from: the templates of prose sentences (lead sentences by topic)
and of markup blocks (references, infoboxes, tables, lists, files, categories, external links, templates,
comments, galleries, definitions), and their pools — filled once per seed, so that a gigabyte is written at
tens of MB/s with bounded memory. ``$name`` is a slot of :class:`~macaron_synthetic.wiki.vocabulary.
Vocabulary`; ``$T`` is where a prose sentence holds its article's word, ``$M`` where a block holds its
marker (:mod:`~macaron_synthetic.wiki.markers`)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from macaron_synthetic.wiki import markers as mk
from macaron_synthetic.wiki.vocabulary import Vocabulary

# Encyclopedic prose: each template is one sentence (by the generator's count) with exactly one $T.
SENTENCES = (
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
SIMPLE_STUB_LEADS = (
    "'''$title''' is a $adj $noun near the $T $noun in $LP, $country.",
    "'''$title''' was a $adj $noun on the $T $noun of $LP.",
    "'''$title''' is a $nationality $occupation known for the $T $noun.",
    "'''$title''' is a small village beside the $T $noun in the district of $LP.",
)
LEADS = {
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
REFS = (
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
INFOBOXES = (
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
INFOBOX_OF_TOPIC = {"person": 0, "place": 1, "building": 2, "species": 3, "work": 4, "org": 2, "event": 1}
TABLE_HEAD = '{| class="wikitable sortable"\n|+ $M $Adj $nouns\n|-\n! $M Year !! $M Title !! $M Notes\n'
TABLE_ROWS = (
    "|-\n| $M $year || $M ''$Adj $Noun'' || $M $adj $noun\n",
    '|-\n| style="text-align:center" | $M $year || $M [[$place]] || $M $int&nbsp;km\n',
    "|-\n| $M $year\n| $M $person\n| $M {{sort|$int|$int}} $nouns\n",
)
LIST_ITEMS = (
    "* $M $Adj $nouns of [[$place]] ($year)",
    "* [[$person]] ($yrange), $M $occupation",
    "* $M ''$Adj $Noun'' ($year)",
    "** $M $adj $noun",
    "# $M $Adj $noun $verbed in $year",
    "* [[$place]] &ndash; $M $adj $noun",
    "* $M {{lang|fr|$Noun}} $noun",
)
FILES = (
    "[[File:$place $noun $year.jpg|thumb|$M The $adj $noun of [[$place]] in $year]]",
    "[[File:$Noun at $place.JPG|thumb|upright=1.2|left|$M $Adj $nouns near [[$place|the town]]]]",
    "[[Image:$surname $noun.png|thumb|250px|$M $person with the $noun ({{circa|$year}})]]",
    "[[File:$Noun map.svg|thumb|$M Map of the $adj [[$noun]]s<ref>$M_REF $surname $year.</ref>]]",
)
CATEGORIES = (
    "[[Category:$M $year births]]",
    "[[Category:$M People from $place]]",
    "[[Category:$M $nationality $occupation|$surname, $first]]",
    "[[Category:$M Buildings and structures in $place]]",
    "[[Category:$M $Adj $nouns]]",
    "[[Category:$M $decade establishments in $country]]",
)
EXTERNAL = (
    "* [https://www.$site/$noun $M Official website]",
    "* [http://$site/$noun/$int $M $Adj $nouns] at $site",
    "* {{Official website|https://www.$site/}} $M",
    "* {{Commons category|$M $place}}",
)
TEMPLATES = (
    "{{Main|$M $Adj $Noun}}",
    "{{See also|$M $Noun of $place}}",
    "{{About|$M the $adj $noun|the $noun|$Noun (disambiguation)}}",
    "{{Quote|text=$M $Adj $nouns were $verbed.|author=$person|source=''$Noun'' ($year)}}",
    "{{Navbox\n| name = $M $Noun\n| title = $M $Adj $nouns of $place\n| list1 = [[$place]] • [[$place]]\n}}",
    "{{Portal|$M $topic}}",
    "{{Clarify|reason=$M $adj $noun|date=$month $year}}",
)
COMMENTS = (
    "<!-- $M Please do not change the $noun without discussion -->",
    "<!-- $M $Adj $nouns: see talk page -->",
    "<!--\n$M Do not add $nouns here.\n-->",
)
GALLERY = "<gallery>\n" + "File:$place $noun.jpg|$M $Adj $noun of [[$place]]\n" * 3 + "</gallery>"
DEFINITIONS = ("; $M $Adj $noun\n: $M $adj $nouns of $place", ": $M The $noun was $verbed in $year.")


@dataclass
class Pools:
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


def _marked(vocab: Vocabulary, templates: Sequence[str], marker: str, count: int) -> list[str]:
    rng = vocab.rng
    return [
        vocab.fill(rng.choice(templates).replace("$M_REF", mk.MARK_REF).replace("$M", marker))
        for _ in range(count)
    ]


def _heading(vocab: Vocabulary) -> str:
    words = vocab.pick("heading").split()
    words.insert(vocab.rng.randint(0, len(words)), mk.MARK_HEADING)
    return " ".join(words)


@lru_cache(maxsize=4)
def pools(seed: int) -> Pools:
    rng = random.Random(seed * 7919 + 18)
    v = Vocabulary(seed, rng)
    sentences = []
    for _ in range(12000):
        s = v.fill_prose(rng.choice(SENTENCES))
        r = rng.random()
        if r < 0.2:
            s += v.fill(rng.choice(REFS).replace("$M", mk.MARK_REF))
        elif r < 0.24:
            s += v.fill("{{sfn|$surname|$year|p=$int}}")
        elif r < 0.26:
            s += "{{citation needed|date=" + v.fill("$month $year") + "}}"
        elif r < 0.28:
            s = s[:-1] + v.fill(rng.choice(REFS).replace("$M", mk.MARK_REF)) + s[-1]  # ref, then the stop
        sentences.append(s)
    tables = []
    for _ in range(300):
        rows = "".join(_marked(v, TABLE_ROWS, mk.MARK_TABLE, rng.randint(2, 8)))
        tables.append(v.fill(TABLE_HEAD.replace("$M", mk.MARK_TABLE)) + rows + "|}")
    lists = []
    for _ in range(400):
        items = _marked(v, LIST_ITEMS, mk.MARK_LIST, rng.randint(3, 9))
        if items[0].startswith("**"):
            items[0] = items[0][1:]
        lists.append("\n".join(items))
    return Pools(
        sentences=sentences,
        refs=_marked(v, REFS, mk.MARK_REF, 400),
        infoboxes={
            topic: _marked(v, (INFOBOXES[i],), mk.MARK_INFOBOX, 60) for topic, i in INFOBOX_OF_TOPIC.items()
        },
        tables=tables,
        lists=lists,
        files=_marked(v, FILES, mk.MARK_CAPTION, 300),
        categories=_marked(v, CATEGORIES, mk.MARK_CATEGORY, 600),
        externals=_marked(v, EXTERNAL, mk.MARK_LIST, 300),
        templates=_marked(v, TEMPLATES, mk.MARK_TEMPLATE, 300),
        comments=_marked(v, COMMENTS, mk.MARK_COMMENT, 100),
        galleries=_marked(v, (GALLERY,), mk.MARK_CAPTION, 100),
        definitions=_marked(v, DEFINITIONS, mk.MARK_LIST, 200),
        headings=[_heading(v) for _ in range(600)],
        short_descriptions=[
            v.fill(f"{{{{Short description|{mk.MARK_TEMPLATE} $Adj $noun in $place}}}}") for _ in range(300)
        ],
    )
