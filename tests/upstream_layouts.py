"""Archives in the exact upstream layouts (IWSLT14 ``de-en.tgz``, the five WMT14 archives), built from
given content, for the offline tests of the downloaders/extractors and the pipelines."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

IWSLT_TEST_SETS = (
    "IWSLT14.TED.dev2010",
    "IWSLT14.TEDX.dev2012",
    "IWSLT14.TED.tst2010",
    "IWSLT14.TED.tst2011",
    "IWSLT14.TED.tst2012",
)


def talk_header(talk_id: int, lang: str) -> list[str]:
    """The metadata lines WIT3 puts before each talk of train.tags.de-en.{de,en}."""
    return [
        f"<url>http://www.ted.com/talks/lang/{lang}/speaker_{talk_id}.html</url>",
        f"<keywords>talks, science, number{talk_id}</keywords>",
        f"<speaker>Speaker {talk_id}</speaker>",
        f"<talkid>{talk_id}</talkid>",
        f"<title>Talk {talk_id} title {lang}</title>",
        f"<description>TED Talk Subtitles and Transcript: talk {talk_id} in {lang}</description>",
    ]


def iwslt_train_tags(talks: list[list[tuple[str, str]]]) -> tuple[list[str], list[str]]:
    """train.tags lines (de, en) for talks given as lists of (de, en) content pairs."""
    de_lines, en_lines = [], []
    for talk_id, pairs in enumerate(talks, start=1):
        de_lines += talk_header(talk_id, "de") + [de for de, _ in pairs]
        en_lines += talk_header(talk_id, "en") + [en for _, en in pairs]
    return de_lines, en_lines


def iwslt_xml(set_name: str, lang: str, segments: list[str]) -> str:
    """An IWSLT14 evaluation file in the WIT3 XML layout (one <seg> per line)."""
    kind = "srcset" if lang == "de" else "refset"
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<mteval>",
        f'<{kind} setid="{set_name}" srclang="german" trglang="english">',
        '<doc docid="535" genre="lectures">',
        "<url>http://www.ted.com/talks/some_talk.html</url>",
        "<description>TED Talk Subtitles and Transcript: a talk</description>",
        "<keywords>talks, science</keywords>",
        "<talkid>535</talkid>",
        "<title>A talk</title>",
        *(f'<seg id="{i}"> {text} </seg>' for i, text in enumerate(segments, start=1)),
        "</doc>",
        f"</{kind}>",
        "</mteval>",
    ]
    return "\n".join(lines) + "\n"


def add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    archive.addfile(info, io.BytesIO(data))


def write_tgz(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            add_bytes(archive, name, data)
    return path


def iwslt_members(
    talks: list[list[tuple[str, str]]], test_segments: dict[str, list[tuple[str, str]]]
) -> dict[str, bytes]:
    """All members of de-en.tgz (paths as in the real archive) for the given content."""
    de_lines, en_lines = iwslt_train_tags(talks)
    members = {
        "de-en/train.tags.de-en.de": ("\n".join(de_lines) + "\n").encode(),
        "de-en/train.tags.de-en.en": ("\n".join(en_lines) + "\n").encode(),
        "de-en/README": b"IWSLT 2014 de-en\n",
    }
    for name in IWSLT_TEST_SETS:
        pairs = test_segments[name]
        members[f"de-en/{name}.de-en.de.xml"] = iwslt_xml(name, "de", [de for de, _ in pairs]).encode()
        members[f"de-en/{name}.de-en.en.xml"] = iwslt_xml(name, "en", [en for _, en in pairs]).encode()
    return members


def wmt_sgm(lang: str, kind: str, segments: list[str]) -> str:
    """A newstest2014 .sgm file in the WMT layout."""
    head = (
        f'<srcset setid="newstest2014" srclang="{lang}">'
        if kind == "src"
        else f'<refset setid="newstest2014" srclang="any" trglang="{lang}">'
    )
    lines = [head, '<doc sysid="ref" docid="1012-bbc" genre="news" origlang="en">', "<p>"]
    lines += [f'<seg id="{i}">{text}</seg>' for i, text in enumerate(segments, start=1)]
    lines += ["</p>", "</doc>", "</srcset>" if kind == "src" else "</refset>"]
    return "\n".join(lines) + "\n"


def wmt_archives(
    directory: Path,
    corpora: dict[str, list[tuple[str, str]]],
    dev: list[tuple[str, str]],
    test: list[tuple[str, str]],
) -> dict[str, Path]:
    """The WMT14 archives (names and member paths as on statmt.org), content as (en, de) pairs: the five of
    each recipe (news-commentary v9 and v12 hold the same pairs)."""

    def pair_members(prefix: str, pairs: list[tuple[str, str]]) -> dict[str, bytes]:
        return {
            f"{prefix}.en": "".join(en + "\n" for en, _ in pairs).encode(),
            f"{prefix}.de": "".join(de + "\n" for _, de in pairs).encode(),
        }

    europarl = pair_members("training/europarl-v7.de-en", corpora["europarl"])
    europarl.update(pair_members("training/europarl-v7.fr-en", corpora["europarl"][:3]))  # other pairs exist
    commoncrawl = pair_members("commoncrawl.de-en", corpora["commoncrawl"])
    commoncrawl["commoncrawl.de-en.annotation"] = b"".join(b"x\n" for _ in corpora["commoncrawl"])
    test_members = {
        "test-full/newstest2014-deen-src.en.sgm": wmt_sgm("en", "src", [en for en, _ in test]).encode(),
        "test-full/newstest2014-deen-ref.de.sgm": wmt_sgm("de", "ref", [de for _, de in test]).encode(),
        "test-full/newstest2014-deen-src.de.sgm": wmt_sgm("de", "src", [de for _, de in test]).encode(),
        "test-full/newstest2014-deen-ref.en.sgm": wmt_sgm("en", "ref", [en for en, _ in test]).encode(),
    }
    return {
        "training-parallel-europarl-v7.tgz": write_tgz(
            directory / "training-parallel-europarl-v7.tgz", europarl
        ),
        "training-parallel-commoncrawl.tgz": write_tgz(
            directory / "training-parallel-commoncrawl.tgz", commoncrawl
        ),
        "training-parallel-nc-v9.tgz": write_tgz(
            directory / "training-parallel-nc-v9.tgz",
            pair_members("training/news-commentary-v9.de-en", corpora["news-commentary"]),
        ),
        # data.statmt.org/wmt17's archive: training/news-commentary-v12.{cs,de,ru,zh}-en.*
        "training-parallel-nc-v12.tgz": write_tgz(
            directory / "training-parallel-nc-v12.tgz",
            {
                **pair_members("training/news-commentary-v12.de-en", corpora["news-commentary"]),
                "training/news-commentary-v12.cs-en.en": b"other pair\n",
                "training/news-commentary-v12.cs-en.cs": b"jiny par\n",
            },
        ),
        "dev.tgz": write_tgz(directory / "dev.tgz", pair_members("dev/newstest2013", dev)),
        "test-full.tgz": write_tgz(directory / "test-full.tgz", test_members),
    }
