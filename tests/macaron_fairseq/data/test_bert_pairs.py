""":class:`BertPretrainingDataset` gives the pairs fairseq's ``BlockPairDataset`` gave it before the pair
index replaced it: the same ``(a, b, is_next)`` tensors, sizes, A lengths and NSP targets — built, and
loaded from the cache — and the same examples (masking included) either way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, data_utils
from fairseq.data.legacy.block_pair_dataset import BlockPairDataset

from macaron_fairseq.data.bert_pairs import (
    MASK_SYMBOL,
    BertPretrainingDataset,
    PairSymbols,
    SentencesWithoutEos,
)


class Sentences:
    """An indexed dataset in memory: sentences + ``</s>``, an item holding only ``</s>`` after a document."""

    def __init__(self, items: list[torch.Tensor]) -> None:
        self.items = items
        self.sizes = np.array([len(item) for item in items], dtype=np.int32)

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)


def corpus(seed: int, dictionary: Dictionary, symbols: int) -> Sentences:
    rng = np.random.default_rng(seed)
    eos = torch.tensor([dictionary.eos()])
    items = []
    for _ in range(int(rng.integers(3, 30))):
        for _ in range(int(rng.integers(1, 25))):
            length = int(rng.choice([rng.integers(1, 12), rng.integers(1, 200)], p=[0.9, 0.1]))
            pieces = rng.integers(dictionary.nspecial, dictionary.nspecial + symbols, length)
            items.append(torch.cat([torch.from_numpy(pieces), eos]))
        items.append(eos.clone())
    return Sentences(items)


@pytest.fixture(scope="module")
def dictionary() -> Dictionary:
    d = Dictionary()
    for i in range(200):
        d.add_symbol(f"w{i}", n=1000 - i)
    d.add_symbol(MASK_SYMBOL)
    return d


@pytest.mark.parametrize("trial", range(6))
def test_the_pairs_of_block_pair_dataset(trial: int, dictionary: Dictionary, tmp_path: Path) -> None:
    sentences = corpus(trial, dictionary, 200)
    block, prob, seed = [(16, 0.1, 1), (32, 0.0, 2), (64, 1.0, 3), (128, 0.1, 4), (9, 0.5, 5), (512, 0.1, 6)][
        trial
    ]
    text = SentencesWithoutEos(sentences, dictionary.eos(), "corpus")
    with data_utils.numpy_seed(seed):
        reference = BlockPairDataset(
            text, PairSymbols(dictionary), text.sizes, block, "doc", short_seq_prob=prob, doc_break_size=0
        )
    options = dict(block_size=block, seed=seed, short_seq_prob=prob)
    built = BertPretrainingDataset(sentences, dictionary, **options, pair_cache=tmp_path / "train")
    loaded = BertPretrainingDataset(sentences, dictionary, **options, pair_cache=tmp_path / "train")
    uncached = BertPretrainingDataset(sentences, dictionary, **options)
    assert isinstance(loaded.index.pairs, np.memmap)
    assert len(reference) > 0
    for ds in (built, loaded, uncached):
        assert ds.sizes.tolist() == [int(s) for s in reference.sizes]
        assert ds.len_a.tolist() == [a[3] for a, _, _ in reference.sent_pairs]
        assert ds.nsp_targets.tolist() == [1 - label for _, _, label in reference.sent_pairs]
        for i in range(len(reference)):
            a, b, label = ds.pairs[i]
            ref_a, ref_b, ref_label = reference[i]
            assert torch.equal(a, ref_a) and torch.equal(b, ref_b) and label == ref_label
    for i in range(len(built)):
        for ds in (loaded, uncached):
            for name, value in built[i].items():
                other = ds[i][name]
                assert torch.equal(value, other) if torch.is_tensor(value) else value == other
