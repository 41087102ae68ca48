""":func:`build_pair_index` gives exactly fairseq's ``BlockPairDataset`` pairs (``break_mode="doc"``): the
same ``sent_pairs`` blocks, labels and sizes, and the same draws from the global NumPy generator (the state
after building is the same), on random size layouts with the awkward cases — one-sentence documents,
consecutive breaks, a break first, sentences after the last break, sentences longer than the block,
``short_seq_prob`` 0 and 1, blocks from the smallest (5) to 512 — and the same errors where fairseq fails."""

from __future__ import annotations

import numpy as np
import pytest
from fairseq.data import data_utils
from fairseq.data.legacy.block_pair_dataset import BlockPairDataset

from macaron_fairseq.data import pair_index
from macaron_fairseq.data.pair_index import (
    PairIndex,
    _truncation,
    build_pair_index,
    document_ranges,
    pair_dtype,
)


class _Sizes:
    """What ``BlockPairDataset`` reads of its dataset: ``len`` and ``sizes``."""

    def __init__(self, sizes: np.ndarray) -> None:
        self.sizes = sizes

    def __len__(self) -> int:
        return len(self.sizes)


class _Symbols:
    def pad(self) -> int:
        return 1

    eos = cls = mask = sep = pad


def fairseq_pairs(sizes: np.ndarray, block: int, prob: float, seed: int, doc_break: int = 0) -> tuple:
    """(sent_pairs, sizes, the generator's next draw) of fairseq, or ("error", type) when it raises."""
    with data_utils.numpy_seed(seed):
        try:
            pairs = BlockPairDataset(
                _Sizes(sizes), _Symbols(), sizes, block, "doc", short_seq_prob=prob, doc_break_size=doc_break
            )
        except (ValueError, AssertionError):
            return "error", None, None
        sent_pairs = [
            (tuple(map(int, a)), tuple(map(int, b)), int(label)) for a, b, label in pairs.sent_pairs
        ]
        return sent_pairs, [int(s) for s in pairs.sizes], np.random.random()


def sent_pair(index: PairIndex, i: int) -> tuple:
    """Pair ``i`` as an entry of fairseq's ``BlockPairDataset.sent_pairs``."""
    return index.block(i, "a"), index.block(i, "b"), int(index.is_next[i])


def our_pairs(sizes: np.ndarray, block: int, prob: float, seed: int, doc_break: int = 0) -> tuple:
    with data_utils.numpy_seed(seed):
        try:
            index = build_pair_index(sizes, block, prob, doc_break_size=doc_break)
        except ValueError:
            return "error", None, None
        return [sent_pair(index, i) for i in range(len(index))], index.sizes.tolist(), np.random.random()


def random_layout(rng: np.random.Generator, doc_break: int = 0) -> np.ndarray:
    """Sentence sizes with document breaks (items of size ``doc_break``), awkward cases included."""
    parts: list[list[int]] = []
    low = 1 if doc_break == 0 else 2
    if rng.random() < 0.2:
        parts.append([doc_break])  # a break before any sentence
    for _ in range(int(rng.integers(2, 25))):
        kind = rng.random()
        if kind < 0.1:
            parts.append([doc_break])  # consecutive breaks: no empty document
            continue
        count = int(rng.integers(1, 3)) if kind < 0.35 else int(rng.integers(1, 40))
        longest = int(rng.choice([4, 30, 100, 700]))  # 700: sentences longer than any block
        parts.append([*rng.integers(low, longest, count).tolist(), doc_break])
    if rng.random() < 0.3:
        parts.append(rng.integers(low, 20, 3).tolist())  # after the last break: in no document
    return np.array([size for part in parts for size in part], dtype=np.int64)


LAYOUTS = 400


#: the first quarter of the layouts in the quick tests, all of them in CI (3 s a quarter)
@pytest.mark.parametrize("batch", [0, *(pytest.param(b, marks=pytest.mark.slow) for b in range(1, 4))])
def test_same_pairs_and_draws_as_fairseq_on_random_layouts(batch: int) -> None:
    compared = pairs = 0
    for trial in range(batch * LAYOUTS // 4, (batch + 1) * LAYOUTS // 4):
        rng = np.random.default_rng(trial)
        sizes = random_layout(rng)
        block = int(rng.choice([5, 6, 7, 12, 32, 128, 512]))
        prob = 0.0 if block == 5 else float(rng.choice([0.0, 0.1, 0.5, 1.0]))
        seed = int(rng.integers(0, 10_000))
        expected = fairseq_pairs(sizes, block, prob, seed)
        assert our_pairs(sizes, block, prob, seed) == expected, (trial, block, prob, seed, sizes.tolist())
        compared += expected[0] != "error"
        pairs += 0 if expected[0] == "error" else len(expected[0])
    assert compared > 0.9 * LAYOUTS // 4 and pairs > 10 * compared  # the comparison is not vacuous


def test_truncation_and_both_labels_occur_in_the_compared_layouts() -> None:
    rng = np.random.default_rng(5)
    sizes = random_layout(rng)
    while len(document_ranges(sizes)[0]) < 10:
        sizes = random_layout(rng)
    pairs, _, _ = our_pairs(sizes, 32, 0.1, 3)
    assert {label for _, _, label in pairs} == {0, 1}
    assert any(a[1] > 0 or b[1] > 0 for a, b, _ in pairs)  # front cuts
    assert any(a[3] < 10 for a, _, _ in pairs)
    assert pairs == fairseq_pairs(sizes, 32, 0.1, 3)[0]


@pytest.mark.parametrize("prob", [0.0, 1.0])
def test_one_long_book_among_short_documents(prob: float) -> None:
    rng = np.random.default_rng(11)
    book = rng.integers(1, 100, 5000).tolist()
    sizes = np.array([*book, 0, 5, 0, 3, 9, 0, 700, 0], dtype=np.int64)
    for block in (128, 512):
        assert our_pairs(sizes, block, prob, 1) == fairseq_pairs(sizes, block, prob, 1)


def test_pairs_moved_in_many_small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The integer buffer is moved into the packed array block by block (64 Ki pairs; 3 here)."""
    monkeypatch.setattr(pair_index, "_FLUSH_PAIRS", 3)
    for trial in range(20):
        sizes = random_layout(np.random.default_rng(2000 + trial))
        assert our_pairs(sizes, 16, 0.1, trial) == fairseq_pairs(sizes, 16, 0.1, trial)


def test_documents_separated_by_eos_items() -> None:
    """``doc_break_size=1`` (sentences keep their ``</s>``, a break is an item holding only ``</s>``)."""
    for trial in range(60):
        rng = np.random.default_rng(1000 + trial)
        sizes = random_layout(rng, doc_break=1)
        block = int(rng.choice([6, 32, 128]))
        assert our_pairs(sizes, block, 0.1, trial, 1) == fairseq_pairs(sizes, block, 0.1, trial, 1)


@pytest.mark.parametrize(
    ("sizes", "block", "prob"),
    [
        ([3, 0, 0], 6, 0.0),  # one document: a random B has no other document to come from
        ([3, 4, 0, 5, 0, 2, 0], 5, 1.0),  # block 5: randint(2, 2) for a shorter target
    ],
)
def test_fails_where_fairseq_fails(sizes: list[int], block: int, prob: float) -> None:
    array = np.array(sizes, dtype=np.int64)
    assert fairseq_pairs(array, block, prob, 0)[0] == "error"
    assert our_pairs(array, block, prob, 0)[0] == "error"


def test_no_document_gives_no_pair() -> None:
    sizes = np.array([3, 4, 5], dtype=np.int64)  # no break: fairseq closes no document
    assert our_pairs(sizes, 32, 0.1, 0) == fairseq_pairs(sizes, 32, 0.1, 0)
    assert our_pairs(sizes, 32, 0.1, 0)[0] == []


def test_document_ranges() -> None:
    starts, ends = document_ranges(np.array([0, 3, 4, 0, 0, 5, 0, 6]))
    assert starts.tolist() == [1, 5] and ends.tolist() == [3, 6]


def test_truncation_closed_form_is_fairseqs_loop() -> None:
    rng = np.random.default_rng(0)
    for _ in range(3000):
        len_a, len_b = (int(x) for x in rng.integers(1, 60, 2))
        if len_a + len_b < 3:
            continue
        cut = int(rng.integers(1, len_a + len_b - 1))  # at least two tokens left (the block holds ≥ 2)
        draws = rng.random(cut).tolist()
        cuts = [0, 0, 0, 0]  # front_a, end_a, front_b, end_b as _truncate_sentences counts them
        for draw in draws:
            side = 0 if len_a - cuts[0] - cuts[1] > len_b - cuts[2] - cuts[3] else 2
            cuts[side + (0 if draw < 0.5 else 1)] += 1
        assert _truncation(cut, len_a, len_b, draws) == tuple(cuts), (len_a, len_b, cut)


def test_the_pairs_are_packed() -> None:
    assert pair_dtype(10).itemsize == 33 and pair_dtype(2**31).itemsize == 49
    with data_utils.numpy_seed(0):
        index = build_pair_index(np.array([3, 4, 0, 5, 6, 7, 0], dtype=np.int64), 8, 0.0)
    assert index.pairs.dtype == pair_dtype(7) and index.sizes.dtype == np.int64
