"""Pairwise length/ratio filtering with the semantics of Moses ``clean-corpus-n.perl``.

A pair of tokenized lines is kept when both sides have between ``min_len`` and ``max_len`` tokens
(space-separated), neither side is more than ``ratio`` times longer than the other, and no token is
longer than ``max_word_len`` characters. Unlike the Perl script, ``|`` is not deleted (that only matters
for factored corpora; escaped Moses output never contains it anyway).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class CleanConfig:
    """Parameters of ``clean-corpus-n.perl -ratio RATIO CORPUS L1 L2 OUT MIN MAX``."""

    min_len: int = 1
    max_len: int = 250
    ratio: float = 1.5
    max_word_len: int = 1000

    def __post_init__(self) -> None:
        if self.min_len < 1 or self.max_len < self.min_len or self.ratio <= 0:
            raise ValueError(f"invalid cleaning parameters {self}")

    def as_params(self) -> dict[str, Any]:
        return asdict(self)


def keep_pair(src_tokenized: str, tgt_tokenized: str, config: CleanConfig) -> bool:
    """Whether ``clean-corpus-n.perl`` would keep this pair of tokenized lines."""
    src_tokens = src_tokenized.split()
    tgt_tokens = tgt_tokenized.split()
    n_src, n_tgt = len(src_tokens), len(tgt_tokens)
    if not (config.min_len <= n_src <= config.max_len and config.min_len <= n_tgt <= config.max_len):
        return False
    if n_src / n_tgt > config.ratio or n_tgt / n_src > config.ratio:
        return False
    longest = max(max(map(len, src_tokens)), max(map(len, tgt_tokens)))
    return longest <= config.max_word_len
