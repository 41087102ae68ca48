"""Keep every example when fairseq batches a dataset (fairseq issue #5036).

``fairseq.data.data_utils.batch_by_size`` drops its last batch whenever that batch's size is not a
multiple of ``--required-batch-size-multiple`` (default 8)::

    if bsz_mult > 1 and len(b[-1]) % bsz_mult != 0:
        b = b[:-1]

so ``fairseq-generate`` silently translates and scores only part of a test set (e.g. 24 of 30
sentences), and validation skips examples. The batches fairseq's batcher builds are consecutive slices
of ``indices``; the dropped one is exactly the uncovered tail, itself a valid batch under
``--max-tokens`` / ``--batch-size``. :func:`install` wraps ``batch_by_size`` to append it again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from fairseq.data import data_utils


def keep_tail(batch_by_size: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    @functools.wraps(batch_by_size)
    def batch_by_size_keeping_every_index(indices: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if not isinstance(indices, np.ndarray):
            indices = np.fromiter(indices, dtype=np.int64, count=-1)
        batches = batch_by_size(indices, *args, **kwargs)
        covered = sum(len(b) for b in batches)
        if covered < len(indices):
            batches = [*batches, indices[covered:]]
        return batches

    batch_by_size_keeping_every_index.__macaron_keeps_tail__ = True  # type: ignore[attr-defined]
    return batch_by_size_keeping_every_index


def install() -> None:
    """Patch ``fairseq.data.data_utils.batch_by_size`` (idempotent)."""
    if not getattr(data_utils.batch_by_size, "__macaron_keeps_tail__", False):
        data_utils.batch_by_size = keep_tail(data_utils.batch_by_size)
