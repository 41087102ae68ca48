"""The one toy-corpus generator: what each style promises, and determinism by seed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import read_lines

from macaron_synthetic.toy_bitext import (
    Lexicon,
    SentenceStyle,
    SymbolTask,
    sentence_pair,
    sentence_pairs,
    symbol_pair,
    zipf_weights,
)


def test_symbol_pair_target_is_the_rotated_translation() -> None:
    lexicon = Lexicon.symbols(20, "w", "v")
    rng = random.Random(3)
    for _ in range(50):
        src, tgt = symbol_pair(rng, lexicon, 3, 8)
        words = src.split()
        assert 3 <= len(words) <= 8
        translated = ["v" + w[1:] for w in words]
        assert tgt.split() == translated[1:] + translated[:1]


def test_sentence_pairs_are_aligned_word_for_word_and_seeded() -> None:
    pairs = sentence_pairs(40, seed=7)
    assert pairs == sentence_pairs(40, seed=7) and pairs != sentence_pairs(40, seed=8)
    en_index = {w: i for i, w in enumerate(Lexicon.words().src)}
    de_words = Lexicon.words().tgt
    for en, de in pairs:
        assert en.endswith(", isn't it?") and de.endswith(", nicht wahr?")
        en_words = en.removesuffix(", isn't it?").lower().split()
        assert [de_words[en_index[w]] for w in en_words] == de.removesuffix(", nicht wahr?").lower().split()


def test_zipf_style_prefers_frequent_words_and_decorates() -> None:
    rng = random.Random(0)
    lexicon = Lexicon.pseudo_words(1000, rng)
    style = SentenceStyle(3, 40, zipf_weights(len(lexicon)), decorate=True)
    pairs = [sentence_pair(rng, lexicon, style) for _ in range(400)]
    text = " ".join(src for src, _ in pairs).lower()
    top, rare = lexicon.src[0], lexicon.src[900]
    assert text.count(f" {top} ") > 10 * max(1, text.count(f" {rare} "))
    assert any("'s" in src for src, _ in pairs) and any(src[-1] in "?!" for src, _ in pairs)


@pytest.mark.slow  # runs fairseq-preprocess on the splits (about 9 s)
def test_symbol_task_writes_splits_and_a_reusable_data_bin(tmp_path: Path) -> None:
    task = SymbolTask({"train": 50, "valid": 5}, vocab=10, max_words=5)
    data_bin = task.data_bin(tmp_path)
    assert len(read_lines(tmp_path / "train.src")) == 50 and len(read_lines(tmp_path / "valid.tgt")) == 5
    assert (data_bin / "dict.src.txt").read_text() == (data_bin / "dict.tgt.txt").read_text()  # joined
    stamp = (data_bin / "train.src-tgt.src.bin").stat().st_mtime_ns
    assert task.data_bin(tmp_path) == data_bin
    assert (data_bin / "train.src-tgt.src.bin").stat().st_mtime_ns == stamp  # reused, not rebuilt
