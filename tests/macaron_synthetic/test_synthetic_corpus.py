"""Tests of the synthetic English→German-like corpus (macaron_synthetic.en_de) and its command
line (python -m macaron_synthetic.en_de)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from macaron_synthetic.en_de import __main__ as cli
from macaron_synthetic.en_de.corpus import MAX_WORDS, MIN_WORDS, generate_corpus
from macaron_synthetic.en_de.english import en_clause, en_np
from macaron_synthetic.en_de.german import de_clause, de_np, de_pp
from macaron_synthetic.en_de.sampler import Sampler
from macaron_synthetic.en_de.surface import detokenize
from macaron_synthetic.en_de.syntax import Clause, NounPhrase, PrepPhrase
from macaron_synthetic.lexicon.adjectives import ADJECTIVES
from macaron_synthetic.lexicon.adverbs import Adverb
from macaron_synthetic.lexicon.nouns import NOUNS
from macaron_synthetic.lexicon.verbs import VERBS, Verb

NOUN = {n.en_sg: n for n in NOUNS}
ADJ = {a.en: a for a in ADJECTIVES}


def verb(en: str, frame: str | None = None) -> Verb:
    return next(v for v in VERBS if v.en == en and (frame is None or v.frame == frame))


def np_(noun: str, det: str = "def", number: str = "sg", adjs: tuple[str, ...] = ()) -> NounPhrase:
    return NounPhrase("noun", noun=NOUN[noun], number=number, det=det, adjs=tuple(ADJ[a] for a in adjs))


def pron(key: str) -> NounPhrase:
    return NounPhrase("pron", pron=key)


def both(clause: Clause, mode: str = "main") -> tuple[str, str]:
    en_mode = "question" if mode == "question" else "main"
    end = "?" if mode == "question" else "."
    return (detokenize([*en_clause(clause, en_mode), end]), detokenize([*de_clause(clause, mode), end]))


# --- determinism, sizes, files ----------------------------------------------------------------------------


def test_same_seed_gives_identical_corpus() -> None:
    sizes = {"train": 300, "valid": 50, "test": 50}
    assert generate_corpus(sizes, seed=7) == generate_corpus(sizes, seed=7)


def test_different_seed_gives_different_corpus() -> None:
    sizes = {"train": 100, "valid": 20, "test": 20}
    assert generate_corpus(sizes, seed=1)["train"] != generate_corpus(sizes, seed=2)["train"]


def test_test_split_does_not_depend_on_training_size() -> None:
    small = generate_corpus({"train": 50, "valid": 30, "test": 40}, seed=3)
    large = generate_corpus({"train": 500, "valid": 30, "test": 40}, seed=3)
    assert small["test"] == large["test"]
    assert small["valid"] == large["valid"]


def test_sizes_uniqueness_and_lengths() -> None:
    corpus = generate_corpus({"train": 1000, "valid": 100, "test": 100}, seed=1)
    assert {k: len(v) for k, v in corpus.items()} == {"train": 1000, "valid": 100, "test": 100}
    english = [en for pairs in corpus.values() for en, _ in pairs]
    assert len(set(english)) == len(english), "a sentence appears twice (within or across splits)"
    for en, de in corpus["train"]:
        assert MIN_WORDS <= len(en.split()) <= MAX_WORDS
        assert en[0].isupper() and de[0].isupper()
        assert en[-1] in ".?" and de[-1] == en[-1]
    # neither a copy nor a reversal of the source
    copies = sum(en == de for en, de in corpus["train"])
    reversals = sum(en.split() == de.split()[::-1] for en, de in corpus["train"])
    assert copies + reversals < 5


def test_structure_is_rich() -> None:
    corpus = generate_corpus({"train": 3000}, seed=1)
    german = "\n".join(de for _, de in corpus["train"])
    for marker in (
        ", weil ",
        ", dass ",
        "Wenn ",
        "Als ",
        " kein",
        " im ",
        " zur ",
        " ins ",
        " hat ",
        " ist ",
        " wird ",
        " darf ",
        "?",
        ", die ",
        ", der ",
        " an.",
        " auf.",
    ):
        assert marker in german, marker
    vocabulary = {w for _, de in corpus["train"] for w in de.split()}
    assert len(vocabulary) > 800


def test_cli_writes_aligned_files_under_5mb(tmp_path: Path) -> None:
    assert cli.main(["--dest", str(tmp_path), "--train", "200", "--valid", "20", "--test", "30"]) == 0
    for split, n in (("train", 200), ("valid", 20), ("test", 30)):
        en = (tmp_path / f"{split}.en").read_text(encoding="utf-8").splitlines()
        de = (tmp_path / f"{split}.de").read_text(encoding="utf-8").splitlines()
        assert len(en) == len(de) == n
    assert not list(tmp_path.glob("*.tmp*"))


def split_sizes(dest: Path) -> tuple[dict[str, int], int]:
    """Lines per file (``{split}.{lang}`` → count) and the total bytes of the six files."""
    lines = {f.name: len(f.read_bytes().splitlines()) for f in sorted(dest.glob("*.??"))}
    return lines, sum(f.stat().st_size for f in dest.glob("*.??"))


def test_quickstart_corpus_has_the_documented_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/quickstart.md: 12000/400/400 pairs, 1.4 MB — with the sizes
    and seed the quickstart passes to this command by default."""
    from macaron_pipelines.quickstart.options import INTEGER_OPTIONS

    defaults = {option: default for option, default, _ in INTEGER_OPTIONS}
    quickstart = [defaults[f"--{x}"] for x in ("train-size", "valid-size", "test-size", "seed")]
    assert quickstart == [12000, 400, 400, 1]
    assert (
        cli.main(
            ["--dest", str(tmp_path), "--train", "12000", "--valid", "400", "--test", "400", "--seed", "1"]
        )
        == 0
    )
    lines, size = split_sizes(tmp_path)
    assert lines == {
        f"{split}.{lang}": n
        for split, n in (("test", 400), ("train", 12000), ("valid", 400))
        for lang in ("de", "en")
    }
    assert round(size / 1e6, 1) == 1.4, size  # 1,400,058 bytes when measured
    assert "wrote 12800 sentence pairs (1.40 MB)" in capsys.readouterr().err


@pytest.mark.slow  # generates the default 20,000-pair corpus: ~3 s (out of --quick)
def test_cli_default_corpus_has_the_documented_size(tmp_path: Path) -> None:
    """docs/quickstart.md: "The default 20000/500/500 corpus is 2.3 MB" (below 5 MB)."""
    assert cli.main(["--dest", str(tmp_path)]) == 0
    lines, size = split_sizes(tmp_path)
    assert lines == {
        f"{split}.{lang}": n
        for split, n in (("test", 500), ("train", 20000), ("valid", 500))
        for lang in ("de", "en")
    }
    assert round(size / 1e6, 1) == 2.3, size  # 2,297,116 bytes when measured


def test_cli_rejects_non_positive_sizes(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--dest", str(tmp_path), "--train", "0"])


# --- morphology ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "case", "expected"),
    [
        (np_("dog"), "nom", "der Hund"),
        (np_("dog"), "acc", "den Hund"),
        (np_("dog"), "dat", "dem Hund"),
        (np_("woman", "indef"), "dat", "einer Frau"),
        (np_("child", "indef", adjs=("small",)), "nom", "ein kleines Kind"),
        (np_("child", "def", adjs=("small",)), "nom", "das kleine Kind"),
        (np_("dog", "indef", adjs=("big",)), "acc", "einen großen Hund"),
        (np_("dog", "indef", adjs=("big",)), "nom", "ein großer Hund"),
        (np_("car", "poss:my", adjs=("expensive",)), "acc", "mein teures Auto"),
        (np_("dog", "def", "pl", ("black",)), "dat", "den schwarzen Hunden"),
        (np_("dog", "bare", "pl", ("black",)), "nom", "schwarze Hunde"),
        (np_("dog", "num:two", "pl", ("black",)), "dat", "zwei schwarzen Hunden"),
        (np_("milk", "bare", adjs=("cold",)), "dat", "kalter Milch"),
        (np_("coffee", "bare", adjs=("cold",)), "acc", "kalten Kaffee"),
        (np_("boy"), "acc", "den Jungen"),
        (np_("neighbour", "dem"), "dat", "diesem Nachbarn"),
        (np_("student", "poss:our"), "nom", "unser Student"),
        (np_("cat", "poss:her", "pl"), "acc", "ihre Katzen"),
        (np_("child", "def", "pl"), "dat", "den Kindern"),
        (np_("cat", "def", adjs=("tired",)), "nom", "die müde Katze"),
        (pron("3sg:m"), "dat", "ihm"),
        (pron("3pl"), "dat", "ihnen"),
    ],
)
def test_german_noun_phrase_agreement(phrase: NounPhrase, case: str, expected: str) -> None:
    assert " ".join(de_np(phrase, case)) == expected


def test_english_noun_phrases() -> None:
    assert en_np(np_("umbrella", "indef")) == ["an", "umbrella"]
    assert en_np(np_("dog", "indef", adjs=("old",))) == ["an", "old", "dog"]
    assert en_np(np_("child", "dem", "pl")) == ["these", "children"]
    assert en_np(pron("3sg:f"), "obj") == ["her"]


@pytest.mark.parametrize(
    ("en", "person", "expected"),
    [
        ("work", "3sg", "arbeitet"),
        ("work", "2sg", "arbeitest"),
        ("see", "3sg", "sieht"),
        ("dance", "2sg", "tanzt"),
        ("open", "3sg", "öffnet"),
        ("live", "3sg", "wohnt"),
        ("draw", "2sg", "zeichnest"),
        ("come", "3sg", "kommt"),
        ("like", "1sg", "mag"),
        ("feed", "1sg", "füttere"),
        ("read", "1pl", "lesen"),
    ],
)
def test_present_tense(en: str, person: str, expected: str) -> None:
    frame = "motion" if en == "come" else None
    assert verb(en, frame).de_present(person) == expected


def test_preterite_and_participles() -> None:
    assert verb("work").de_preterite("3pl") == "arbeiteten"
    assert verb("see").de_preterite("2sg") == "sahst"
    assert verb("find").de_preterite("2sg") == "fandest"
    assert verb("find").de_preterite("1pl") == "fanden"
    assert verb("visit").de_pp == "besucht"
    assert verb("repair").de_pp == "repariert"
    assert verb("call").de_pp == "angerufen"
    assert verb("tidy").de_pp == "aufgeräumt"
    assert verb("go").de_aux == "sein"


# --- word order and clause-level rules -----------------------------------------------------------------


def test_v2_with_fronted_time_adverb() -> None:
    c = Clause(
        subj=np_("man"),
        verb=verb("see"),
        tense="pres",
        acc=np_("dog"),
        time=Adverb("today", "heute"),
        time_front=True,
    )
    assert both(c) == ("Today the man sees the dog.", "Heute sieht der Mann den Hund.")


def test_perfect_puts_participle_last_and_picks_auxiliary() -> None:
    c = Clause(subj=np_("man"), verb=verb("see"), tense="perf", acc=np_("dog"))
    assert both(c) == ("The man has seen the dog.", "Der Mann hat den Hund gesehen.")
    c = Clause(
        subj=pron("1pl"), verb=verb("go"), tense="perf", pp=PrepPhrase("to", "zu", "dat", np_("station"))
    )
    assert both(c) == ("We have gone to the station.", "Wir sind zum Bahnhof gegangen.")


def test_separable_prefix_main_and_subordinate() -> None:
    c = Clause(subj=np_("woman"), verb=verb("call"), tense="pres", acc=pron("3sg:m"))
    assert both(c) == ("The woman calls him.", "Die Frau ruft ihn an.")
    assert " ".join(de_clause(c, "sub")) == "die Frau ihn anruft"


def test_subordinate_clause_is_verb_final() -> None:
    c = Clause(subj=np_("child"), verb=verb("read"), tense="perf", acc=np_("book", "indef"))
    assert " ".join(de_clause(c, "sub")) == "das Kind ein Buch gelesen hat"
    c = Clause(subj=np_("child"), verb=verb("read"), tense="can", acc=np_("book", "indef"))
    assert " ".join(de_clause(c, "sub")) == "das Kind ein Buch lesen kann"


def test_negation_kein_vs_nicht_and_must_not() -> None:
    c = Clause(subj=np_("man"), verb=verb("buy"), tense="pres", acc=np_("car", "indef"), neg=True)
    assert both(c) == ("The man does not buy a car.", "Der Mann kauft kein Auto.")
    c = Clause(subj=np_("man"), verb=verb("buy"), tense="pres", acc=np_("car"), neg=True)
    assert both(c)[1] == "Der Mann kauft das Auto nicht."
    c = Clause(subj=pron("2sg"), verb=verb("drink"), tense="must", acc=np_("wine", "bare"), neg=True)
    assert both(c) == ("You must not drink wine.", "Du darfst keinen Wein trinken.")


def test_question_is_verb_first_and_progressive_maps_to_present() -> None:
    c = Clause(subj=np_("girl"), verb=verb("help"), tense="pres", dat=np_("farmer"))
    assert both(c, "question") == ("Does the girl help the farmer?", "Hilft das Mädchen dem Bauern?")
    c = Clause(subj=np_("girl"), verb=verb("eat"), tense="prog", acc=np_("apple", "indef"))
    assert both(c) == ("The girl is eating an apple.", "Das Mädchen isst einen Apfel.")


def test_ditransitive_dative_before_accusative() -> None:
    c = Clause(
        subj=pron("1sg"),
        verb=verb("give"),
        tense="past",
        dat=np_("child"),
        acc=np_("ball", "indef"),
        en_to_dative=True,
    )
    assert both(c) == ("I gave a ball to the child.", "Ich gab dem Kind einen Ball.")


def test_prepositions_govern_case_and_contract() -> None:
    def pp(en: str, de: str, case: str, phrase: NounPhrase) -> str:
        return " ".join(de_pp(PrepPhrase(en, de, case, phrase)))

    assert pp("in", "in", "dat", np_("garden")) == "im Garten"
    assert pp("into", "in", "acc", np_("house")) == "ins Haus"
    assert pp("into", "in", "acc", np_("garden")) == "in den Garten"
    assert pp("to", "zu", "dat", np_("school")) == "zur Schule"
    assert pp("for", "für", "acc", np_("dog")) == "für den Hund"
    assert pp("with", "mit", "dat", np_("dog", "dem")) == "mit diesem Hund"


def test_relative_clause_agrees_with_head() -> None:
    head = np_("woman")
    head.rel = Clause(subj=head, verb=verb("read"), tense="pres", acc=np_("book", "indef"))
    head.rel_role = "subj"
    c = Clause(subj=head, verb=verb("sleep"), tense="pres")
    assert both(c) == ("The woman who reads a book sleeps.", "Die Frau, die ein Buch liest, schläft.")


def test_sampled_sentences_render_without_errors() -> None:
    sampler = Sampler(random.Random(0))
    for _ in range(2000):
        en, de = sampler.sentence()
        for tokens in (en, de):
            assert tokens and all(isinstance(t, str) and t and "".join(t.split()) == t for t in tokens)
            assert tokens[-1] in (".", "?") and not {".", "?"} & set(tokens[:-1]), tokens  # one end mark
        assert de[-1] == en[-1], (en, de)  # a question stays a question
        assert de.count(",") >= en.count(","), (en, de)  # German keeps every English comma and adds some:
        for i, word in enumerate(de[1:], 1):  # a comma before each subordinate clause inside the sentence
            assert word not in ("dass", "weil", "obwohl", "während") or de[i - 1] == ",", de
        assert 0.5 <= len(de) / len(en) <= 2, (en, de)  # a translation, not a fragment or a run-on
