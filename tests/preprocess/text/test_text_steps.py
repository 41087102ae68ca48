"""The text steps of preprocess/text: bitext checks, Moses, cleaning, the tokenize stage, holdout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from macaron_preprocess.text.bitext import BitextFiles, check_bitext_counts
from macaron_preprocess.text.bpe import BpeConfig, learn_bpe
from macaron_preprocess.text.cleaning import CleanConfig, keep_pair
from macaron_preprocess.text.holdout import split_every_nth
from macaron_preprocess.text.moses import MosesConfig, MosesPipeline
from macaron_preprocess.text.tokenize_stage import TokenizeJob, tokenize_split
from macaron_workflow.errors import UserError
from macaron_workflow.stages import StageRunner


def test_count_mismatch_names_both_files_and_counts(tmp_path: Path) -> None:
    (tmp_path / "x.en").write_text("1\n2\n3\n")
    (tmp_path / "x.de").write_text("1\n2\n")
    with pytest.raises(UserError) as info:
        check_bitext_counts(BitextFiles.from_prefix(tmp_path / "x", "en", "de"), "in the input")
    message = str(info.value)
    assert f"{tmp_path / 'x.en'} has 3 lines" in message and f"{tmp_path / 'x.de'} has 2 lines" in message


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


def test_tokenize_stage_drops_bad_pairs_pairwise_and_reports(tmp_path: Path) -> None:
    raw = BitextFiles.from_prefix(tmp_path / "in", "en", "de")
    raw.src.write_bytes(b"Good morning.\r\nBad \xff byte.\n   \nToo long for the other side , really .\nOk.")
    raw.tgt.write_bytes(b"Guten Morgen.\r\nSchlecht.\nNicht leer.\nKurz.\nGut.")
    job = TokenizeJob(
        "train",
        (raw,),
        BitextFiles.from_prefix(tmp_path / "raw", "en", "de"),
        BitextFiles.from_prefix(tmp_path / "tok", "en", "de"),
        MosesConfig("en"),
        MosesConfig("de"),
        CleanConfig(1, 250, 1.5),
    )
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
        "valid",
        (raw,),
        out_raw,
        BitextFiles.from_prefix(tmp_path / "tok", "en", "de"),
        MosesConfig("en"),
        MosesConfig("de"),
    )
    with pytest.raises(UserError, match=r"in\.en has 3 lines but .*in\.de has 2 lines"):
        tokenize_split(StageRunner(tmp_path / ".stages"), job, workers=1)
    assert sorted(os.listdir(tmp_path)) == [".stages", "in.de", "in.en"]


def test_every_23rd_line_is_held_out_in_lockstep(tmp_path: Path) -> None:
    sources = [tmp_path / "a", tmp_path / "b"]
    for path, tag in zip(sources, "ab", strict=True):
        path.write_text("".join(f"{tag}{i}\n" for i in range(1, 101)))
    kept, held = [tmp_path / "ka", tmp_path / "kb"], [tmp_path / "ha", tmp_path / "hb"]
    assert split_every_nth(sources, kept, held, every=23) == (96, 4)
    assert held[0].read_text().split() == ["a23", "a46", "a69", "a92"]
    assert held[1].read_text().split() == ["b23", "b46", "b69", "b92"]
    assert kept[1].read_text().split()[21:23] == ["b22", "b24"]


def test_learning_bpe_from_empty_training_text_is_a_clear_error(tmp_path: Path) -> None:
    training = BitextFiles.from_prefix(tmp_path / "train", "en", "de")
    training.src.write_bytes(b"")
    training.tgt.write_bytes(b"")
    runner = StageRunner(tmp_path / ".stages")
    with pytest.raises(UserError) as caught:  # not sentencepiece's "!sentences_.empty()" from a child
        learn_bpe(runner, training, tmp_path / "spm.model", tmp_path / "spm.vocab", BpeConfig())
    assert str(caught.value) == (
        f"no training sentence in {training.src} and {training.tgt}; nothing to learn BPE from"
    )
    assert not (tmp_path / "spm.model").exists()
