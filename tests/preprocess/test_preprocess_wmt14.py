"""``python -m macaron_preprocess.wmt14_en_de --data icml17`` on small archives in the statmt.org layout,
built here (the authors' recipe, ``--data authors``: ``test_preprocess_wmt14_authors.py``)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import mmap_index_length, read_lines, remove_bpe, run_module
from upstream_layouts import wmt_archives, write_tgz

from macaron_preprocess.wmt14_en_de import main as wmt_main
from macaron_synthetic.toy_bitext import sentence_pairs
from macaron_workflow.cli import run_cli

SPECIAL_TRAIN = (
    "He said «state-of-the-art»\u200b today.",
    "Er sagte «auf dem neuesten Stand der Technik» heute.",
)
SPECIAL_TEST = ("It’s a test-case.", "Es ist ein Test-Fall.")


def corpora() -> dict[str, list[tuple[str, str]]]:
    europarl = sentence_pairs(500, seed=21)
    europarl[10] = SPECIAL_TRAIN
    europarl[11] = ("Yes.", "Das ist eine sehr viel längere Antwort als das Englische.")  # ratio-filtered
    return {
        "europarl": europarl,
        "commoncrawl": sentence_pairs(300, seed=22),
        "news-commentary": sentence_pairs(200, seed=23),
    }


def newstest_pairs() -> list[tuple[str, str]]:
    pairs = sentence_pairs(40, seed=25)
    pairs[0] = SPECIAL_TEST
    return pairs


@pytest.fixture(scope="module")
def wmt_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    raw = tmp_path_factory.mktemp("wmt_raw")
    wmt_archives(raw, corpora(), sentence_pairs(30, seed=24), newstest_pairs())
    out = tmp_path_factory.mktemp("wmt_out")
    run_module(
        "macaron_preprocess.wmt14_en_de",
        "--dest",
        str(out),
        "--raw-dir",
        str(raw),
        "--bpe-vocab-size",
        "200",
        "--data",
        "icml17",
    )
    return raw, out


def run_wmt(*args: str) -> subprocess.CompletedProcess:
    return run_module("macaron_preprocess.wmt14_en_de", *args, "--data", "icml17", check=False)


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_counts_and_data_bin(wmt_run: tuple[Path, Path]) -> None:
    _, out = wmt_run
    counts = {"train": 500 + 300 + 200 - 1, "valid": 30, "test": 40}
    for split, n in counts.items():
        for lang in ("en", "de"):
            for folder in ("raw", "tok", "bpe"):
                assert len(read_lines(out / folder / f"{split}.{lang}")) == n, (folder, split, lang)
            assert mmap_index_length(out / f"{split}.en-de.{lang}.idx") == n
            assert (out / f"{split}.en-de.{lang}.bin").stat().st_size > 0  # --dest is the data-bin
            pieces = read_lines(out / "bpe" / f"{split}.{lang}")
            assert [remove_bpe(p) for p in pieces] == read_lines(out / "tok" / f"{split}.{lang}")
    assert (out / "dict.en.txt").read_bytes() == (out / "dict.de.txt").read_bytes()


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_training_text_is_normalized_and_split_aggressively(wmt_run: tuple[Path, Path]) -> None:
    _, out = wmt_run
    tok_en, tok_de = read_lines(out / "tok" / "train.en"), read_lines(out / "tok" / "train.de")
    # europarl first (in order), then commoncrawl, then news-commentary; the ratio-filtered pair is gone
    assert tok_en[10] == "He said &quot; state @-@ of @-@ the @-@ art &quot; today ."
    assert tok_de[10] == "Er sagte &quot; auf dem neuesten Stand der Technik &quot; heute ."
    raw_en = read_lines(out / "raw" / "train.en")
    assert raw_en[10] == SPECIAL_TRAIN[0] and raw_en[11] == corpora()["europarl"][12][0]
    assert raw_en[-1] == corpora()["news-commentary"][-1][0]


@pytest.mark.slow  # reads the module's whole macaron-preprocess-wmt14 run
def test_test_references_raw_and_tokenized(wmt_run: tuple[Path, Path]) -> None:
    _, out = wmt_run
    assert read_lines(out / "raw" / "test.en")[0] == SPECIAL_TEST[0]  # sacreBLEU reference: untouched
    assert read_lines(out / "raw" / "test.de") == [de for _, de in newstest_pairs()]
    assert read_lines(out / "tok" / "test.en")[0] == "It &apos;s a test @-@ case ."
    assert read_lines(out / "tok" / "test.de")[0] == "Es ist ein Test @-@ Fall ."


def test_missing_archives_are_all_listed(tmp_path: Path) -> None:
    archives = wmt_archives(tmp_path, corpora(), sentence_pairs(5, seed=1), sentence_pairs(5, seed=2))
    archives["dev.tgz"].unlink()
    archives["training-parallel-nc-v9.tgz"].unlink()
    result = run_wmt("--dest", str(tmp_path.parent / f"{tmp_path.name}-out"), "--raw-dir", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "neither dev.tgz" in result.stderr and "neither training-parallel-nc-v9.tgz" in result.stderr
    assert str(tmp_path / "dev" / "newstest2013.en") in result.stderr


def test_member_missing_from_archive(tmp_path: Path) -> None:
    wmt_archives(tmp_path, corpora(), sentence_pairs(5, seed=1), sentence_pairs(5, seed=2))
    write_tgz(
        tmp_path / "test-full.tgz", {"test-full/newstest2014-deen-src.en.sgm": b'<seg id="1">x</seg>\n'}
    )
    result = run_wmt("--dest", str(tmp_path.parent / f"{tmp_path.name}-out"), "--raw-dir", str(tmp_path))
    assert result.returncode == 2
    assert "lacks expected files: test-full/newstest2014-deen-ref.de.sgm" in result.stderr


def test_corpus_sides_of_different_length(tmp_path: Path) -> None:
    data = corpora()
    wmt_archives(tmp_path, data, sentence_pairs(5, seed=1), sentence_pairs(5, seed=2))
    pairs = data["commoncrawl"]
    write_tgz(
        tmp_path / "training-parallel-commoncrawl.tgz",
        {
            "commoncrawl.de-en.en": "".join(en + "\n" for en, _ in pairs).encode(),
            "commoncrawl.de-en.de": "".join(de + "\n" for _, de in pairs[:-2]).encode(),
        },
    )
    result = run_wmt(
        "--dest",
        str(tmp_path.parent / f"{tmp_path.name}-out"),
        "--raw-dir",
        str(tmp_path),
        "--bpe-vocab-size",
        "200",
    )
    assert result.returncode == 2
    assert "commoncrawl.de-en.en has 300 lines but" in result.stderr
    assert "commoncrawl.de-en.de has 298 lines" in result.stderr
    assert not (tmp_path.parent / f"{tmp_path.name}-out" / "tok" / "train.en").exists()


def test_sgm_segment_counts_must_match(tmp_path: Path) -> None:
    wmt_archives(tmp_path, corpora(), sentence_pairs(5, seed=1), sentence_pairs(5, seed=2))
    write_tgz(
        tmp_path / "test-full.tgz",
        {
            "test-full/newstest2014-deen-src.en.sgm": b'<seg id="1">a</seg>\n<seg id="2">b</seg>\n',
            "test-full/newstest2014-deen-ref.de.sgm": b'<seg id="1">a</seg>\n',
        },
    )
    result = run_wmt("--dest", str(tmp_path.parent / f"{tmp_path.name}-out"), "--raw-dir", str(tmp_path))
    assert result.returncode == 2
    assert "newstest2014-deen-src.en.sgm has 2 <seg> lines but" in result.stderr
    assert "newstest2014-deen-ref.de.sgm has 1" in result.stderr


def test_an_unreadable_archive_is_named_and_not_called_corrupt(
    tmp_path: Path, deny_reading: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    archives = wmt_archives(tmp_path, corpora(), sentence_pairs(5, seed=1), sentence_pairs(5, seed=2))
    deny_reading(archives["dev.tgz"])  # in-process: chmod 000 does not stop root, who runs the tests
    with pytest.raises(SystemExit) as caught:
        run_cli(
            lambda: wmt_main(
                ["--dest", str(tmp_path.parent / f"{tmp_path.name}-out"), "--raw-dir", str(tmp_path)]
            )
        )
    assert caught.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == f"error: cannot read {archives['dev.tgz']}: Permission denied (EACCES)"
