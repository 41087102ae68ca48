"""Unit tests of the shared preprocessing modules (in-process, no fairseq)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from preprocess.text.bitext import BitextFiles, check_bitext_counts
from preprocess.text.cleaning import CleanConfig, keep_pair
from preprocess.text.holdout import split_every_nth
from preprocess.text.moses import MosesConfig, MosesPipeline
from preprocess.text.tokenize_stage import TokenizeJob, tokenize_split
from workflow.atomic import temporary_path
from workflow.errors import UserError
from workflow.files import count_lines, iter_lines
from workflow.stages import StageRunner
from workflow.workers import chunked, ordered_map


# ------------------------------------------------------------------------------------------- files
def test_count_lines_matches_line_iteration(tmp_path: Path) -> None:
    cases = {
        "plain": b"a\nb\n",
        "no-final-newline": b"a\nb",
        "empty": b"",
        "crlf": b"a\r\nb\r\n",
        "unicode-separators": "x\u2028y\x85z\n".encode(),  # one line for fairseq, three for splitlines()
    }
    expected = {"plain": 2, "no-final-newline": 2, "empty": 0, "crlf": 2, "unicode-separators": 1}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert count_lines(path) == expected[name] == len(list(iter_lines(path))), name
    assert list(iter_lines(tmp_path / "crlf")) == [b"a", b"b"]


def test_count_mismatch_names_both_files_and_counts(tmp_path: Path) -> None:
    (tmp_path / "x.en").write_text("1\n2\n3\n")
    (tmp_path / "x.de").write_text("1\n2\n")
    with pytest.raises(UserError) as info:
        check_bitext_counts(BitextFiles.from_prefix(tmp_path / "x", "en", "de"), "in the input")
    message = str(info.value)
    assert f"{tmp_path / 'x.en'} has 3 lines" in message and f"{tmp_path / 'x.de'} has 2 lines" in message


# ---------------------------------------------------------------------------------------- cleaning
@pytest.mark.parametrize(
    ("src", "tgt", "kept"),
    [
        ("a b c", "x y z", True),
        ("a b c", "x y", True),  # ratio 1.5 exactly is allowed
        ("a b c d", "x y", False),  # ratio 2
        ("a", "x y", False),  # ratio 2 the other way
        (" ".join(["w"] * 6), " ".join(["v"] * 6), False),  # longer than max_len=5
        ("a", "x", True),
        ("a " + "b" * 11, "x y", False),  # a token longer than max_word_len=10
    ],
)
def test_keep_pair_follows_clean_corpus_n(src: str, tgt: str, kept: bool) -> None:
    assert keep_pair(src, tgt, CleanConfig(min_len=1, max_len=5, ratio=1.5, max_word_len=10)) is kept


# ----------------------------------------------------------------------------------- tokenization
def test_moses_tokenization_on_known_sentences() -> None:
    plain = MosesPipeline(MosesConfig("en"))
    assert plain("Hello, world! It's a well-known fact.") == "Hello , world ! It 's a well-known fact ."
    escaped_lower = MosesPipeline(MosesConfig("en", escape=True, lowercase=True, aggressive_dash_splits=True))
    assert escaped_lower("It's a Well-Known <fact> & more.") == (
        "it &apos;s a well @-@ known &lt; fact &gt; &amp; more ."
    )
    german = MosesPipeline(MosesConfig("de", lowercase=True))
    assert german("Das Ärgernis „Übermorgen“ kommt.") == "das ärgernis „ übermorgen “ kommt ."


def test_wmt_normalization_and_non_printing_removal() -> None:
    pipeline = MosesPipeline(MosesConfig("en", normalize_punctuation=True, remove_non_printing=True))
    assert pipeline("He said «hello»\u200b , ok") == 'He said " hello " , ok'
    assert MosesPipeline(MosesConfig("en", right_quote_to_apostrophe=True))("It’s") == "It 's"
    assert MosesPipeline(MosesConfig("en"))("It’s") == "It ’ s"


def test_sentencepiece_marker_in_text_cannot_break_the_round_trip() -> None:
    assert MosesPipeline(MosesConfig("en"))("a\u2581b") == "a _ b"  # the symbol is split off, then mapped


# ------------------------------------------------------------------------------------- parallelism
def _square(chunk: list[int]) -> list[int]:
    return [x * x for x in chunk]


def _fail_on_seven(chunk: list[int]) -> list[int]:
    if 7 in chunk:
        raise ValueError("seven")
    return chunk


def test_ordered_map_preserves_order_across_workers() -> None:
    chunks = chunked(range(1000), 7)
    results = [x for chunk in ordered_map(_square, chunks, workers=2, window=3) for x in chunk]
    assert results == [x * x for x in range(1000)]


def test_ordered_map_reraises_worker_errors() -> None:
    with pytest.raises(ValueError, match="seven"):
        list(ordered_map(_fail_on_seven, chunked(range(20), 3), workers=2))


# ----------------------------------------------------------------------------------------- stages
def test_stage_runner_skips_redoes_and_never_trusts_a_crashed_stage(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path / ".stages")
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("hello\n")
    calls = []

    def build(temps: dict[Path, Path]) -> dict:
        calls.append(1)
        temps[out].write_text(source.read_text().upper())
        return {"lines": 1}

    runner.run("upper", [source], [out], {"p": 1}, build)
    runner.run("upper", [source], [out], {"p": 1}, build)
    assert len(calls) == 1 and out.read_text() == "HELLO\n"
    runner.run("upper", [source], [out], {"p": 2}, build)  # new parameters
    assert len(calls) == 2
    StageRunner(tmp_path / ".stages", force=True).run("upper", [source], [out], {"p": 2}, build)
    assert len(calls) == 3

    def crash(temps: dict[Path, Path]) -> dict:
        temps[out].write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        StageRunner(tmp_path / ".stages", force=True).run("upper", [source], [out], {"p": 2}, crash)
    assert not temporary_path(out).exists()
    assert not (tmp_path / ".stages" / "upper.json").exists()  # the old output is no longer trusted
    runner.run("upper", [source], [out], {"p": 2}, build)
    assert len(calls) == 4 and out.read_text() == "HELLO\n"


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    stale = tmp_path / ".out.txt.tmp-999999999"
    stale.write_text("left by kill -9")
    StageRunner(tmp_path / ".stages").run("s", [], [out], {}, lambda t: t[out].write_text("x") and {})
    assert not stale.exists() and out.read_text() == "x"


# ------------------------------------------------------------------------------ tokenize stage
def test_tokenize_stage_drops_bad_pairs_pairwise_and_reports(tmp_path: Path) -> None:
    raw = BitextFiles.from_prefix(tmp_path / "in", "en", "de")
    raw.src.write_bytes(b"Good morning.\r\nBad \xff byte.\n   \nToo long for the other side , really .\nOk.")
    raw.tgt.write_bytes(b"Guten Morgen.\r\nSchlecht.\nNicht leer.\nKurz.\nGut.")
    job = TokenizeJob(
        "train", (raw,), BitextFiles.from_prefix(tmp_path / "raw", "en", "de"),
        BitextFiles.from_prefix(tmp_path / "tok", "en", "de"), MosesConfig("en"), MosesConfig("de"),
        CleanConfig(1, 250, 1.5),
    )  # fmt: skip
    report = tokenize_split(StageRunner(tmp_path / ".stages"), job, workers=2, chunk_lines=2)
    assert report["dropped_invalid_utf8"] == 1 and report["dropped_empty"] == 1
    assert report["dropped_length_ratio"] == 1 and report["kept_pairs"] == 2
    assert f"{raw.src}:2: invalid UTF-8" in report["invalid_utf8_examples"][0]
    assert (tmp_path / "raw.en").read_text() == "Good morning.\nOk.\n"
    assert (tmp_path / "raw.de").read_text() == "Guten Morgen.\nGut.\n"
    assert (tmp_path / "tok.de").read_text() == "Guten Morgen .\nGut .\n"


def test_tokenize_stage_refuses_mismatched_sides_and_writes_nothing(tmp_path: Path) -> None:
    raw = BitextFiles.from_prefix(tmp_path / "in", "en", "de")
    raw.src.write_text("a\nb\nc\n")
    raw.tgt.write_text("a\nb\n")
    out_raw = BitextFiles.from_prefix(tmp_path / "raw", "en", "de")
    job = TokenizeJob(
        "valid", (raw,), out_raw, BitextFiles.from_prefix(tmp_path / "tok", "en", "de"),
        MosesConfig("en"), MosesConfig("de"),
    )  # fmt: skip
    with pytest.raises(UserError, match=r"in\.en has 3 lines but .*in\.de has 2 lines"):
        tokenize_split(StageRunner(tmp_path / ".stages"), job, workers=1)
    assert sorted(os.listdir(tmp_path)) == [".stages", "in.de", "in.en"]


# ------------------------------------------------------------------------------------- holdout
def test_every_23rd_line_is_held_out_in_lockstep(tmp_path: Path) -> None:
    sources = [tmp_path / "a", tmp_path / "b"]
    for path, tag in zip(sources, "ab", strict=True):
        path.write_text("".join(f"{tag}{i}\n" for i in range(1, 101)))
    kept, held = [tmp_path / "ka", tmp_path / "kb"], [tmp_path / "ha", tmp_path / "hb"]
    assert split_every_nth(sources, kept, held, every=23) == (96, 4)
    assert held[0].read_text().split() == ["a23", "a46", "a69", "a92"]
    assert held[1].read_text().split() == ["b23", "b46", "b69", "b92"]
    assert kept[1].read_text().split()[21:23] == ["b22", "b24"]
