"""A GLUE distribution in miniature with every quirk of the real files, for the offline tests.

* :func:`write_glue_dir`: the unpacked layout of ``download_glue_data.py`` (``CoLA/ ... diagnostic/``);
* :func:`upstream_files`: what that layout is made from, at its paths under https://dl.fbaipublicfiles.com
  (the per-task zips, the MSR paraphrase files, MRPC's dev ids, AX.tsv);
* :data:`EXAMPLES`: what each split must read as, written out by hand from the rows below (not by the
  reader under test).

The quirks: CoLA's train/dev without header (4 columns, the mark column empty or ``*``); MRPC's train/dev
starting with a byte-order mark, built from ``msr_paraphrase_train.txt`` (CRLF lines, a BOM, surrounding
whitespace stripped by the script) and the dev ids; MRPC's test index = row number; STS-B's float scores;
QQP's train with two malformed lines (a question broken over two lines: 5 then 3 columns); MNLI's 12/16/10
columns and string labels; QNLI/RTE's ``entailment``/``not_entailment``; unbalanced double quotes in
sentences; trailing spaces kept (SST-2); AX as ``diagnostic/diagnostic.tsv``.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from macaron_preprocess.sources.glue import GlueExample

BOM = "\ufeff"
Row = Sequence[str]


def tsv(header: Row | None, rows: Iterable[Row], newline: str = "\n") -> str:
    lines = ([] if header is None else ["\t".join(header)]) + ["\t".join(row) for row in rows]
    return "".join(line + newline for line in lines)


# --- the rows ----------------------------------------------------------------------------------------------

COLA_TRAIN = [
    ("gj04", "1", "", "Our friends won't buy this analysis, let alone the next one we propose."),
    ("gj04", "0", "*", "One more pseudo generalization and I'm giving up."),
    ("bc01", "1", "", 'He said "hello.'),
    ("sgww85", "0", "*", '"Who do you believe that left?'),
]
COLA_DEV = [("bc01", "1", "", "He could not have been working."), ("c_13", "0", "*", 'The "book was read.')]
COLA_TEST = [("0", "Bill whistled past the house."), ("1", '"Mary ran.'), ("2", "The car honked its way.")]

SST_TRAIN = [
    ("hide new secretions from the parental units ", "0"),
    ('the " greatest movie ever ', "1"),
    ("it 's a charming and often affecting journey . ", "1"),
]
SST_DEV = [("unflinchingly bleak and desperate ", "0"), ('a " wonderful " ride . ', "1")]
SST_TEST = [("0", "uneasy mishmash of styles and genres ."), ("1", "this \" film 's a gem ")]

MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")
MRPC_MSR_TRAIN = [
    (
        "1",
        "702876",
        "702977",
        'Amrozi accused his brother , whom he called " the witness " , of distorting his evidence .',
        'Referring to him as only " the witness " , Amrozi accused his brother of deliberately distorting .',
    ),
    (
        "0",
        "2108705",
        "2108831",
        "Yucaipa owned Dominick 's before selling the chain to Safeway in 1998 for $ 2.5 billion .",
        "Yucaipa bought Dominick 's in 1995 for $ 693 million and sold it to Safeway .",
    ),
    (
        "1",
        "1330381",
        "1330521",
        "They had published an advertisement .",
        "On June 10 , \" the ship 's owners .",
    ),
    ("0", "3344667", "3344648", "Around 0335 GMT , Tab shares were up .", "Tab shares jumped 20 cents ."),
    (
        "1",
        "1236820",
        "1236712",
        "The stock rose $ 2.11 , or about 11 percent .",
        "PG & E Corp. shares rose .",
    ),
]
MRPC_DEV_IDS = [("1330381", "1330521"), ("3344667", "3344648")]
MRPC_MSR_TEST = [
    (
        "1",
        "1089874",
        "1089925",
        "PCCW 's chief operating officer .",
        'Current Chief Operating Officer " Mike .',
    ),
    ("0", "3019446", "3019327", "The world 's two largest automakers said .", "Domestic sales at both GM ."),
]

STSB_HEADER = (
    "index",
    "genre",
    "filename",
    "year",
    "old_index",
    "source1",
    "source2",
    "sentence1",
    "sentence2",
)
STSB_HEADER += ("score",)


def stsb_row(index: str, genre: str, s1: str, s2: str, score: str | None = None) -> tuple[str, ...]:
    """A STS-B row: index, genre, source file, year, old index, two empty sources, the pair, the score."""
    filename = {"main-captions": "MSRvid", "main-news": "headlines", "main-forums": "answers-forums"}[genre]
    return (index, genre, filename, "2012test", f"{int(index) + 1:04d}", "none", "none", s1, s2) + (
        () if score is None else (score,)
    )


STSB_TRAIN = [
    stsb_row("0", "main-captions", "A plane is taking off.", "An air plane is taking off.", "5.000"),
    stsb_row("1", "main-news", 'He said "no.', '"Yes, he said.', "0.750"),
    stsb_row("2", "main-forums", "A man is playing a flute.", "A man is playing a bamboo flute.", "3.800"),
]
STSB_DEV = [
    stsb_row(
        "0", "main-captions", "A man with a hard hat is dancing.", "A man in a hard hat dances.", "5.000"
    ),
    stsb_row("1", "main-captions", "A young child is riding a horse.", "A child is riding a horse.", "4.750"),
]
STSB_TEST = [
    stsb_row("0", "main-captions", "A girl is styling her hair.", "A girl is brushing her hair."),
    stsb_row("1", "main-news", '"Obama signs', "Obama signs the bill."),
]

QQP_HEADER = ("id", "qid1", "qid2", "question1", "question2", "is_duplicate")
QQP_TRAIN_LINES = [
    "\t".join(QQP_HEADER),
    "133273\t213221\t213222\tHow is the life of a math student?\tWhich level of preparation is enough?\t0",
    '201359\t303345\t303346\tWhy are African-Americans so beautiful?\tWhy are "hispanics so',  # broken ...
    "\tWas Muhammad a real historical figure? What is the evidence for his existence?\t0",  # ... in two
    '402555\t536040\t536041\tHow do I control my "horny emotions?\tHow do you control your horniness?\t1',
]
QQP_DROPPED_LINES = [3, 4]
QQP_DEV = [
    ("201359", "303345", "303346", "Why are African-Americans so beautiful?", "Why are hispanics so?", "0"),
    ("263843", "69383", "380476", "I want to pursue PhD in Computer Science?", "I handle a PhD?", "1"),
]
QQP_TEST = [
    ("0", "How does the Surface Pro himself 4 compare?", 'Why did "Microsoft choose core m3?'),
    ("1", "Should I have a hair transplant at age 24?", "How much cost does hair transplant require?"),
]

MNLI_BASE = (
    "index",
    "promptID",
    "pairID",
    "genre",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
)


def mnli_row(index: str, genre: str, s1: str, s2: str, labels: Sequence[str]) -> tuple[str, ...]:
    """A MNLI row: ids, genre, the (fake but well-formed) parses, the sentences, then ``labels``."""
    words1, words2 = s1.rstrip(" .").split(), s2.rstrip(" .").split()
    binary1, binary2 = "( " + " ".join(words1) + " )", "( " + " ".join(words2) + " )"
    parse1 = "(ROOT (S " + " ".join(f"(NN {w})" for w in words1) + "))"
    parse2 = "(ROOT (S " + " ".join(f"(NN {w})" for w in words2) + "))"
    prompt = str(31193 + int(index))
    return (index, prompt, prompt + "n", genre, binary1, binary2, parse1, parse2, s1, s2, *labels)


MNLI_TRAIN = [
    mnli_row(
        "0",
        "government",
        "Conceptually cream skimming has two basic dimensions.",
        "Product and geography are what make cream skimming work. ",
        ["neutral", "neutral"],
    ),
    mnli_row(
        "1",
        "telephone",
        'you know during the season and i guess " at at your level',
        "You lose the things to the following level.",
        ["entailment", "entailment"],
    ),
    mnli_row(
        "2",
        "fiction",
        "One of our number will carry out your instructions.",
        "A member of my team will execute your orders.",
        ["contradiction", "contradiction"],
    ),
]
MNLI_DEV_MATCHED = [
    mnli_row(
        "0",
        "fiction",
        "The new rights are nice enough",
        "Everyone really likes the newest benefits",
        ["neutral", "entailment", "neutral", "neutral", "neutral", "neutral"],
    ),
    mnli_row(
        "1",
        "government",
        'This site includes a list of "all award winners.',
        "The Government Executive articles housed on the website are not able to be searched.",
        ["contradiction"] * 6,
    ),
]
MNLI_DEV_MISMATCHED = [
    mnli_row(
        "0",
        "letters",
        "Your contribution helped make it possible.",
        "Your contributions were of no help.",
        ["contradiction"] * 6,
    ),
    mnli_row(
        "1",
        "verbatim",
        "The answer has nothing to do with their cause.",
        "Their cause is unrelated.",
        ["entailment", "entailment", "entailment", "neutral", "entailment", "entailment"],
    ),
]
MNLI_TEST_MATCHED = [
    mnli_row("0", "government", "Hierbas, ans seco, ans dulce, and frigola.", "Hierbas is a name.", []),
    mnli_row("1", "telephone", "The extent of the behavior.", 'The behavior " is widespread.', []),
]
MNLI_TEST_MISMATCHED = [mnli_row("0", "nineeleven", "What have you decided?", "What are you doing?", [])]

QNLI_TRAIN = [
    (
        "0",
        "When did the third Digimon series begin?",
        "Unlike the two seasons before it, it began.",
        "not_entailment",
    ),
    ("1", 'What is the "name of the church?', "The church is called St. Mary's.", "entailment"),
]
QNLI_DEV = [
    (
        "0",
        "What came into force after the new constitution?",
        "The Constitution came into force.",
        "entailment",
    )
]
QNLI_TEST = [
    ("0", "What organization is devoted to Jihad?", "For some decades prior to the First Palestine.")
]

RTE_TRAIN = [
    (
        "0",
        "No Weapons of Mass Destruction Found in Iraq Yet.",
        "Weapons of Mass Destruction Found in Iraq.",
        "not_entailment",
    ),
    (
        "1",
        'A place of "sorrow, after Pope John Paul II died.',
        "Pope Benedict XVI is the new leader.",
        "entailment",
    ),
]
RTE_DEV = [
    ("0", "Dana Reeve, the widow of the actor.", "Christopher Reeve had an accident.", "not_entailment")
]
RTE_TEST = [
    ("0", "Mangla was summoned after Madhumita's sister.", "Shukla is accused."),
    ("1", 'Authorities in "Brazil say.', "Brazil is a country."),
]

WNLI_TRAIN = [
    (
        "0",
        "I stuck a pin through a carrot. When I pulled the pin out, it had a hole.",
        "The carrot had a hole.",
        "1",
    ),
    (
        "1",
        "John couldn't see the stage with Billy in front of him because he is so short.",
        "John is so short.",
        "1",
    ),
    (
        "2",
        'The police arrested all of the "gang members.',
        "The police were trying to stop the drug trade.",
        "0",
    ),
]
WNLI_DEV = [
    ("0", "The drain is clogged with hair. It has to be cleaned.", "The hair has to be cleaned.", "0")
]
WNLI_TEST = [
    ("0", "Maria took out her notebook.", "Maria said it."),
    ("1", "The trophy doesn't fit.", "It is big."),
]
WNLI_MAJORITY = "1"

AX_ROWS = [
    ("0", "The cat sat on the mat.", "The cat did not sit on the mat."),
    ("1", 'The "cat sat on the mat.', "The cat sat on the mat."),
    ("2", "When you've got no snow, it's really hard to learn a snow sport.", "Snow sports are hard."),
]

PAIR_HEADER = ("index", "sentence1", "sentence2", "label")


# --- the files ---------------------------------------------------------------------------------------------


def mrpc_msr_files() -> dict[str, bytes]:
    """The upstream MRPC files: the MSR paraphrase train (BOM, CRLF, a trailing space) and test files, and
    GLUE's dev ids."""
    train_rows = [list(row) for row in MRPC_MSR_TRAIN]
    train_rows[0][4] += " "  # stripped by download_glue_data.py
    train = BOM + tsv(MRPC_HEADER, train_rows, newline="\r\n")
    return {
        "msr_paraphrase_train.txt": train.encode(),
        "msr_paraphrase_test.txt": tsv(MRPC_HEADER, MRPC_MSR_TEST, newline="\r\n").encode(),
        "dev_ids.tsv": tsv(None, MRPC_DEV_IDS).encode(),
    }


def mrpc_split_files() -> dict[str, str]:
    """MRPC's train/dev/test.tsv as download_glue_data.py writes them (by hand here)."""
    dev = [row for row in MRPC_MSR_TRAIN if (row[1], row[2]) in MRPC_DEV_IDS]
    train = [row for row in MRPC_MSR_TRAIN if (row[1], row[2]) not in MRPC_DEV_IDS]
    test = [(str(i), *row[1:]) for i, row in enumerate(MRPC_MSR_TEST)]
    return {
        "train.tsv": BOM + tsv(MRPC_HEADER, train),
        "dev.tsv": BOM + tsv(MRPC_HEADER, dev),
        "test.tsv": tsv(("index", *MRPC_HEADER[1:]), test),
    }


def task_files() -> dict[str, dict[str, bytes]]:
    """Folder -> file name (a path inside the folder) -> content: the unpacked distribution."""
    text: dict[str, dict[str, str]] = {
        "CoLA": {
            "train.tsv": tsv(None, COLA_TRAIN),
            "dev.tsv": tsv(None, COLA_DEV),
            "test.tsv": tsv(("index", "sentence"), COLA_TEST),
            "original/raw/in_domain_train.tsv": tsv(None, COLA_TRAIN),
        },
        "SST-2": {
            "train.tsv": tsv(("sentence", "label"), SST_TRAIN),
            "dev.tsv": tsv(("sentence", "label"), SST_DEV),
            "test.tsv": tsv(("index", "sentence"), SST_TEST),
        },
        "MRPC": mrpc_split_files(),
        "STS-B": {
            "train.tsv": tsv(STSB_HEADER, STSB_TRAIN),
            "dev.tsv": tsv(STSB_HEADER, STSB_DEV),
            "test.tsv": tsv(STSB_HEADER[:-1], STSB_TEST),
            "LICENSE.txt": "Licensed as the STS benchmark.\n",
        },
        "QQP": {
            "train.tsv": "\n".join(QQP_TRAIN_LINES) + "\n",
            "dev.tsv": tsv(QQP_HEADER, QQP_DEV),
            "test.tsv": tsv(("id", "question1", "question2"), QQP_TEST),
        },
        "MNLI": {
            "train.tsv": tsv((*MNLI_BASE, "label1", "gold_label"), MNLI_TRAIN),
            "dev_matched.tsv": tsv(MNLI_DEV_HEADER, MNLI_DEV_MATCHED),
            "dev_mismatched.tsv": tsv(MNLI_DEV_HEADER, MNLI_DEV_MISMATCHED),
            "test_matched.tsv": tsv(MNLI_BASE, MNLI_TEST_MATCHED),
            "test_mismatched.tsv": tsv(MNLI_BASE, MNLI_TEST_MISMATCHED),
            "README.txt": "MultiNLI 1.0 as distributed with GLUE.\n",
        },
        "QNLI": {
            "train.tsv": tsv(("index", "question", "sentence", "label"), QNLI_TRAIN),
            "dev.tsv": tsv(("index", "question", "sentence", "label"), QNLI_DEV),
            "test.tsv": tsv(("index", "question", "sentence"), QNLI_TEST),
        },
        "RTE": {
            "train.tsv": tsv(PAIR_HEADER, RTE_TRAIN),
            "dev.tsv": tsv(PAIR_HEADER, RTE_DEV),
            "test.tsv": tsv(PAIR_HEADER[:-1], RTE_TEST),
        },
        "WNLI": {
            "train.tsv": tsv(PAIR_HEADER, WNLI_TRAIN),
            "dev.tsv": tsv(PAIR_HEADER, WNLI_DEV),
            "test.tsv": tsv(PAIR_HEADER[:-1], WNLI_TEST),
        },
        "diagnostic": {"diagnostic.tsv": tsv(PAIR_HEADER[:-1], AX_ROWS)},
    }
    files = {
        folder: {name: data.encode() for name, data in content.items()} for folder, content in text.items()
    }
    files["MRPC"].update(mrpc_msr_files())
    return files


MNLI_DEV_HEADER = (*MNLI_BASE, "label1", "label2", "label3", "label4", "label5", "gold_label")

FOLDERS = {
    "CoLA": "CoLA",
    "SST-2": "SST-2",
    "MRPC": "MRPC",
    "STS-B": "STS-B",
    "QQP": "QQP",
    "MNLI": "MNLI",
    "QNLI": "QNLI",
    "RTE": "RTE",
    "WNLI": "WNLI",
    "AX": "diagnostic",
}


def write_glue_dir(root: Path, tasks: Iterable[str] = FOLDERS) -> Path:
    """The unpacked distribution of ``tasks`` under ``root`` (created); returns ``root``."""
    files = task_files()
    for task in tasks:
        folder = FOLDERS[task]
        for name, data in files[folder].items():
            path = root / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return root


def zip_bytes(members: dict[str, bytes]) -> bytes:
    """A zip holding ``members`` (with their folder entries, as ``zip -r`` writes), fixed timestamps."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        folders = sorted({str(Path(name).parent) + "/" for name in members})
        for folder in folders:
            archive.writestr(zipfile.ZipInfo(folder, date_time=(2019, 4, 1, 0, 0, 0)), b"")
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2019, 4, 1, 0, 0, 0)), data)
    return buffer.getvalue()


#: the zips of download_glue_data.py: file name -> the folder inside it
ZIPS = {
    "CoLA.zip": "CoLA",
    "SST-2.zip": "SST-2",
    "STS-B.zip": "STS-B",
    "QQP-clean.zip": "QQP",
    "MNLI.zip": "MNLI",
    "QNLIv2.zip": "QNLI",
    "RTE.zip": "RTE",
    "WNLI.zip": "WNLI",
}


def upstream_files() -> dict[str, tuple[str, bytes]]:
    """File name -> (path under https://dl.fbaipublicfiles.com, content) of every upstream file."""
    files = task_files()
    out = {
        name: (f"glue/data/{name}", zip_bytes({f"{folder}/{n}": d for n, d in files[folder].items()}))
        for name, folder in ZIPS.items()
    }
    msr = mrpc_msr_files()
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"):
        out[name] = (f"senteval/senteval_data/{name}", msr[name])
    out["mrpc_dev_ids.tsv"] = ("glue/data/mrpc_dev_ids.tsv", msr["dev_ids.tsv"])
    out["AX.tsv"] = ("glue/data/AX.tsv", files["diagnostic"]["diagnostic.tsv"])
    return out


# --- what the splits read as -------------------------------------------------------------------------------


def _single(rows: Iterable[tuple[str, str | None, str | None]]) -> list[GlueExample]:
    return [GlueExample(index, sentence, None, label) for index, sentence, label in rows]


def _pairs(
    rows: Iterable[Row], s1: int, s2: int, label: int | None, index: int | None = 0
) -> list[GlueExample]:
    return [
        GlueExample(
            str(n) if index is None else row[index], row[s1], row[s2], None if label is None else row[label]
        )
        for n, row in enumerate(rows)
    ]


def _mrpc_split(split: str) -> list[GlueExample]:
    if split == "test":
        return [GlueExample(str(i), row[3], row[4], None) for i, row in enumerate(MRPC_MSR_TEST)]
    in_dev = split == "dev"
    rows = [row for row in MRPC_MSR_TRAIN if ((row[1], row[2]) in MRPC_DEV_IDS) == in_dev]
    return [GlueExample(str(i), row[3], row[4], row[0]) for i, row in enumerate(rows)]


def _stsb(rows: Iterable[Row]) -> list[GlueExample]:
    return [GlueExample(row[0], row[7], row[8], float(row[9]) if len(row) > 9 else None) for row in rows]


EXAMPLES: dict[tuple[str, str], list[GlueExample]] = {
    ("CoLA", "train"): _single((str(i), row[3], row[1]) for i, row in enumerate(COLA_TRAIN)),
    ("CoLA", "dev"): _single((str(i), row[3], row[1]) for i, row in enumerate(COLA_DEV)),
    ("CoLA", "test"): _single((index, sentence, None) for index, sentence in COLA_TEST),
    ("SST-2", "train"): _single((str(i), sentence, label) for i, (sentence, label) in enumerate(SST_TRAIN)),
    ("SST-2", "dev"): _single((str(i), sentence, label) for i, (sentence, label) in enumerate(SST_DEV)),
    ("SST-2", "test"): _single((index, sentence, None) for index, sentence in SST_TEST),
    ("MRPC", "train"): _mrpc_split("train"),
    ("MRPC", "dev"): _mrpc_split("dev"),
    ("MRPC", "test"): _mrpc_split("test"),
    ("STS-B", "train"): _stsb(STSB_TRAIN),
    ("STS-B", "dev"): _stsb(STSB_DEV),
    ("STS-B", "test"): _stsb(STSB_TEST),
    ("QQP", "train"): [
        GlueExample(
            "133273", "How is the life of a math student?", "Which level of preparation is enough?", "0"
        ),
        GlueExample(
            "402555", 'How do I control my "horny emotions?', "How do you control your horniness?", "1"
        ),
    ],
    ("QQP", "dev"): _pairs(QQP_DEV, 3, 4, 5),
    ("QQP", "test"): _pairs(QQP_TEST, 1, 2, None),
    ("MNLI", "train"): _pairs(MNLI_TRAIN, 8, 9, 11),
    ("MNLI", "dev_matched"): _pairs(MNLI_DEV_MATCHED, 8, 9, 15),
    ("MNLI", "dev_mismatched"): _pairs(MNLI_DEV_MISMATCHED, 8, 9, 15),
    ("MNLI", "test_matched"): _pairs(MNLI_TEST_MATCHED, 8, 9, None),
    ("MNLI", "test_mismatched"): _pairs(MNLI_TEST_MISMATCHED, 8, 9, None),
    ("QNLI", "train"): _pairs(QNLI_TRAIN, 1, 2, 3),
    ("QNLI", "dev"): _pairs(QNLI_DEV, 1, 2, 3),
    ("QNLI", "test"): _pairs(QNLI_TEST, 1, 2, None),
    ("RTE", "train"): _pairs(RTE_TRAIN, 1, 2, 3),
    ("RTE", "dev"): _pairs(RTE_DEV, 1, 2, 3),
    ("RTE", "test"): _pairs(RTE_TEST, 1, 2, None),
    ("WNLI", "train"): _pairs(WNLI_TRAIN, 1, 2, 3),
    ("WNLI", "dev"): _pairs(WNLI_DEV, 1, 2, 3),
    ("WNLI", "test"): _pairs(WNLI_TEST, 1, 2, None),
    ("AX", "test"): _pairs(AX_ROWS, 1, 2, None),
}
"""(task, split) -> the examples the reader must return, in file order."""
