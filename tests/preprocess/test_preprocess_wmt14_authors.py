"""``macaron-preprocess-wmt14 --data authors`` (the default) is the Macaron authors' ``prepare-wmt14en2de.sh``
(zhuohan123/macaron-net, ``translation/macaron-scripts/data-preprocessing/``), run offline on small archives
in the statmt.org layout. What their script does, read from it:

* ``CORPORA``: europarl-v7, commoncrawl, ``training/news-commentary-v12.de-en``
  (training-parallel-nc-v12.tgz);
* training text: normalize-punctuation → remove-non-printing-char → ``tokenizer.perl -a``, then
  ``clean-corpus-n.perl ... 1 80`` (no ``-ratio``: clean-corpus-n's default maximum ratio is 9);
* valid (``dev/newstest2013``): the same normalisation and tokenizer, not cleaned;
* test: newstest2014 ``<seg>`` lines, ``’`` → ``'``, ``tokenizer.perl -a``;
* ``cat train.en train.de > TRAIN; learn_bpe.py -s 32764 < TRAIN > code``; ``apply_bpe.py -c code`` on every
  split; fairseq ``preprocess.py --joined-dictionary``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import mmap_index_length, read_lines, run_module
from upstream_layouts import wmt_archives

from macaron_preprocess import wmt14_en_de
from macaron_synthetic.toy_bitext import sentence_pairs

QUOTED = ("He said «state-of-the-art»\u200b today.", "Er sagte «auf dem neuesten Stand» heute.")
QUOTED_TOK = (
    "He said &quot; state @-@ of @-@ the @-@ art &quot; today .",
    "Er sagte &quot; auf dem neuesten Stand &quot; heute .",
)
RATIO_5 = ("Yes.", "Das ist eine sehr viel längere Antwort als das Englische.")  # 2 vs 11 tokens: kept
RATIO_10 = ("Yes", "eins zwei drei vier fünf sechs sieben acht neun zehn")  # 1 vs 10 tokens: removed
LONG_81 = (" ".join(["word"] * 81), " ".join(["Wort"] * 40))  # 81 tokens: removed
LONG_80 = (" ".join(["word"] * 80), " ".join(["Wort"] * 40))  # 80 tokens: kept
MERGES = 150


def corpora() -> dict[str, list[tuple[str, str]]]:
    europarl = sentence_pairs(300, seed=31)
    europarl[3:8] = [QUOTED, RATIO_5, RATIO_10, LONG_81, LONG_80]
    return {
        "europarl": europarl,
        "commoncrawl": sentence_pairs(200, seed=32),
        "news-commentary": sentence_pairs(100, seed=33),
    }


def valid_pairs() -> list[tuple[str, str]]:
    pairs = sentence_pairs(20, seed=34)
    pairs[0] = QUOTED
    return pairs


TEST = [("It’s a test-case.", "Es ist ein Test-Fall."), *sentence_pairs(24, seed=35)]


@pytest.fixture(scope="module")
def authors_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    raw = tmp_path_factory.mktemp("wmt_authors_raw")
    archives = wmt_archives(raw, corpora(), valid_pairs(), TEST)
    archives["training-parallel-nc-v9.tgz"].unlink()  # not one of their archives
    out = tmp_path_factory.mktemp("wmt_authors_out")
    run_module(
        "macaron_preprocess.wmt14_en_de",
        "--dest",
        str(out),
        "--raw-dir",
        str(raw),
        "--bpe-vocab-size",
        str(MERGES),
        "--workers",
        "1",
    )
    return raw, out


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_their_corpora_cleaned_1_80_with_ratio_9(authors_run: tuple[Path, Path]) -> None:
    _, out = authors_run
    tok_en, tok_de = read_lines(out / "tok" / "train.en"), read_lines(out / "tok" / "train.de")
    assert len(tok_en) == len(tok_de) == 300 + 200 + 100 - 2  # RATIO_10 and LONG_81 removed
    assert (tok_en[3], tok_de[3]) == QUOTED_TOK
    assert tok_en[4] == "Yes ." and tok_en[5] == LONG_80[0]
    assert read_lines(out / "raw" / "train.en")[-1] == corpora()["news-commentary"][-1][0]  # nc-v12 last


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_valid_is_normalised_like_the_training_text_and_test_is_not(authors_run: tuple[Path, Path]) -> None:
    _, out = authors_run
    assert read_lines(out / "tok" / "valid.en")[0] == QUOTED_TOK[0]
    assert read_lines(out / "tok" / "valid.de")[0] == QUOTED_TOK[1]
    assert len(read_lines(out / "tok" / "valid.en")) == 20
    assert read_lines(out / "tok" / "test.en")[0] == "It &apos;s a test @-@ case ."
    assert read_lines(out / "raw" / "test.de")[0] == TEST[0][1]


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_joint_subword_nmt_bpe_as_their_learn_and_apply(
    authors_run: tuple[Path, Path], tmp_path: Path
) -> None:
    from subword_nmt.apply_bpe import BPE
    from subword_nmt.learn_bpe import learn_bpe

    _, out = authors_run
    # their commands: cat train.en train.de > TRAIN; learn_bpe.py -s N < TRAIN > code
    train = tmp_path / "train.de-en"
    train.write_text((out / "tok" / "train.en").read_text() + (out / "tok" / "train.de").read_text())
    with open(train, encoding="utf-8") as infile, open(tmp_path / "code", "w", encoding="utf-8") as code:
        learn_bpe(infile, code, MERGES)
    assert (out / "subword_nmt.codes").read_text() == (tmp_path / "code").read_text()
    assert not (out / "spm.model").exists()
    with open(tmp_path / "code", encoding="utf-8") as code:
        bpe = BPE(code)
    for split, n in (("train", 598), ("valid", 20), ("test", 25)):
        for lang in ("en", "de"):
            tokenized = read_lines(out / "tok" / f"{split}.{lang}")
            assert read_lines(out / "bpe" / f"{split}.{lang}") == [bpe.process_line(t) for t in tokenized]
            assert mmap_index_length(out / f"{split}.en-de.{lang}.idx") == n
    assert any("@@ " in line for line in read_lines(out / "bpe" / "train.de"))
    assert (out / "dict.en.txt").read_bytes() == (out / "dict.de.txt").read_bytes()


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_their_released_test_reference_is_kept(authors_run: tuple[Path, Path], tmp_path: Path) -> None:
    raw, out = authors_run
    raw_test = tmp_path / "raw-test"  # their archive's data-bin/wmt14_en_de_joined_dict/raw-test
    raw_test.mkdir()
    (raw_test / "en-de.en.bpe").write_text("".join(f"s{i}\n" for i in range(25)))
    atat = "".join(f"Es ist ein Test ##AT##-##AT## Fall {i} .\n" for i in range(25))
    (raw_test / "en-de.de.tok.atat").write_text(atat)
    run_module(
        "macaron_preprocess.wmt14_en_de",
        "--dest",
        str(out),
        "--raw-dir",
        str(raw),
        "--bpe-vocab-size",
        str(MERGES),
        "--workers",
        "1",
        "--authors-test-dir",
        str(raw_test),
    )
    assert (out / "authors-test" / "en-de.de.tok.atat").read_text() == atat


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_a_released_reference_of_another_length_is_refused(authors_run, tmp_path: Path) -> None:
    raw, out = authors_run
    (tmp_path / "en-de.en.bpe").write_text("x\n")
    (tmp_path / "en-de.de.tok.atat").write_text("x\n" * 24)
    proc = run_module(
        "macaron_preprocess.wmt14_en_de",
        "--dest",
        str(out),
        "--raw-dir",
        str(raw),
        "--bpe-vocab-size",
        str(MERGES),
        "--authors-test-dir",
        str(tmp_path),
        check=False,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith(f": error: {tmp_path / 'en-de.de.tok.atat'}: 24 lines, but newstest2014 has 25 segments")
    )


def test_the_recipes_defaults_are_theirs() -> None:
    authors = wmt14_en_de.DATA["authors"]
    assert (authors.bpe, authors.bpe_size) == ("subword-nmt", 32764)
    assert (authors.clean.min_len, authors.clean.max_len, authors.clean.ratio) == (1, 80, 9)
    assert "training-parallel-nc-v12.tgz" in authors.archives
    assert "training-parallel-nc-v9.tgz" not in authors.archives
    assert wmt14_en_de.parser().parse_args(["--dest", "x"]).data == "authors"
