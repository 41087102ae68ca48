"""The pools of a seed: the prose sentences and markup blocks that pages are composed from, drawn once per
seed (so a gigabyte is written at tens of MB/s with bounded memory)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from macaron_synthetic.wiki import markers as mk
from macaron_synthetic.wiki import templates as tpl
from macaron_synthetic.wiki.vocabulary import Vocabulary


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
        s = v.fill_prose(rng.choice(tpl.SENTENCES))
        r = rng.random()
        if r < 0.2:
            s += v.fill(rng.choice(tpl.REFS).replace("$M", mk.MARK_REF))
        elif r < 0.24:
            s += v.fill("{{sfn|$surname|$year|p=$int}}")
        elif r < 0.26:
            s += "{{citation needed|date=" + v.fill("$month $year") + "}}"
        elif r < 0.28:
            s = s[:-1] + v.fill(rng.choice(tpl.REFS).replace("$M", mk.MARK_REF)) + s[-1]  # ref, then the stop
        sentences.append(s)
    tables = []
    for _ in range(300):
        rows = "".join(
            v.fill(rng.choice(tpl.TABLE_ROWS).replace("$M", mk.MARK_TABLE)) for _ in range(rng.randint(2, 8))
        )
        tables.append(v.fill(tpl.TABLE_HEAD.replace("$M", mk.MARK_TABLE)) + rows + "|}")
    lists = []
    for _ in range(400):
        items = _marked(v, tpl.LIST_ITEMS, mk.MARK_LIST, rng.randint(3, 9))
        if items[0].startswith("**"):
            items[0] = items[0][1:]
        lists.append("\n".join(items))
    return Pools(
        sentences=sentences,
        refs=_marked(v, tpl.REFS, mk.MARK_REF, 400),
        infoboxes={topic: _marked(v, (tpl.INFOBOXES[i],), mk.MARK_INFOBOX, 60)
                   for topic, i in tpl.INFOBOX_OF_TOPIC.items()},
        tables=tables,
        lists=lists,
        files=_marked(v, tpl.FILES, mk.MARK_CAPTION, 300),
        categories=_marked(v, tpl.CATEGORIES, mk.MARK_CATEGORY, 600),
        externals=_marked(v, tpl.EXTERNAL, mk.MARK_LIST, 300),
        templates=_marked(v, tpl.TEMPLATES, mk.MARK_TEMPLATE, 300),
        comments=_marked(v, tpl.COMMENTS, mk.MARK_COMMENT, 100),
        galleries=_marked(v, (tpl.GALLERY,), mk.MARK_CAPTION, 100),
        definitions=_marked(v, tpl.DEFINITIONS, mk.MARK_LIST, 200),
        headings=[_heading(v) for _ in range(600)],
        short_descriptions=[
            v.fill(f"{{{{Short description|{mk.MARK_TEMPLATE} $Adj $noun in $place}}}}") for _ in range(300)
        ],
    )

