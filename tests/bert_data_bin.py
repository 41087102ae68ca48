"""A BERT data-bin in the layout of ``python -m macaron_preprocess.bert_corpus``, written with fairseq's own
mmap builder; every token is a distinct symbol, so each symbol tells which document it comes from and where it
stands in it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from fairseq.data import Dictionary, indexed_dataset


def write_data_bin(
    dest: Path,
    documents: int = 40,
    sentences: int = 8,
    seed: int = 0,
    boundaries: bool = True,
    dict_symbols: int | None = None,
) -> dict[int, tuple[int, int]]:
    """A data-bin as macaron_preprocess.bert_corpus writes it (sentences + </s>, an item holding only </s>
    after every document); returns symbol id → (document, position in the document's token stream)."""
    rng = np.random.default_rng(seed)
    lengths = [[int(rng.integers(3, 8)) for _ in range(sentences)] for _ in range(documents)]
    total = sum(map(sum, lengths))
    dictionary = Dictionary()
    for i in range(total if dict_symbols is None else dict_symbols):
        dictionary.add_symbol(f"t{i}", n=total - i)
    dest.mkdir(parents=True, exist_ok=True)
    dictionary.save(str(dest / "dict.txt"))
    where: dict[int, tuple[int, int]] = {}
    eos, next_id = dictionary.eos(), dictionary.nspecial
    for split in ("train", "valid"):
        builder = indexed_dataset.make_builder(str(dest / f"{split}.bin"), impl="mmap", vocab_size=total + 10)
        next_id = dictionary.nspecial
        for doc, doc_lengths in enumerate(lengths):
            position = 0
            for n in doc_lengths:
                ids = list(range(next_id, next_id + n))
                for i in ids:
                    where[i] = (doc, position)
                    position += 1
                next_id += n
                builder.add_item(torch.tensor([*ids, eos], dtype=torch.int64))
            if boundaries:
                builder.add_item(torch.tensor([eos], dtype=torch.int64))
        builder.finalize(str(dest / f"{split}.idx"))
    return where
