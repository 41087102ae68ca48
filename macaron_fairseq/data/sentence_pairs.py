"""The tokens of the pairs of a :class:`~macaron_fairseq.data.pair_index.PairIndex`: items
``(a, b, is_next)`` as fairseq's ``BlockPairDataset`` gives them (its ``_fetch_block``, same tensors)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from fairseq.data import FairseqDataset

from macaron_fairseq.data.pair_index import PairIndex


class SentencePairDataset(FairseqDataset):
    """``(a, b, is_next)`` of pair ``index`` over the sentence items of ``sentences`` (without ``</s>``);
    ``is_next`` in fairseq's convention (1 = B follows A in its document)."""

    def __init__(self, sentences: Any, index: PairIndex) -> None:
        super().__init__()
        self.sentences = sentences
        self.index = index

    def _side(self, row: np.void, side: str) -> torch.Tensor:
        first, last = int(row[f"{side}_first"]), int(row[f"{side}_last"])
        offset, length = int(row[f"{side}_offset"]), int(row[f"{side}_length"])
        tokens = torch.cat([self.sentences[i] for i in range(first, last + 1)])
        return tokens[offset : offset + length]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        row = self.index.pairs[index]
        return self._side(row, "a"), self._side(row, "b"), int(row["is_next"])

    def __len__(self) -> int:
        return len(self.index)
