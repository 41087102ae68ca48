"""Training on data binarized by fairseq ≤ 0.8 (the Macaron authors' released data-bins): fairseq's
``IndexedCachedDataset`` reads an item only after ``prefetch``.

A data-bin written in fairseq's original indexed format (``.idx`` starting with ``TNTIDX``; fairseq 0.6's
``preprocess.py``, today's ``--dataset-impl lazy/cached``) is opened as ``IndexedCachedDataset`` when
``--dataset-impl`` is not given (``infer_dataset_impl``). Its ``__getitem__`` reads from a cache that only
``prefetch`` fills, but the trainer builds its dummy batch from the first batch before anything is
prefetched (``EpochBatchIterator.first_batch``), so ``fairseq-train`` on such data — fine-tuning the authors'
released models on their data included — dies with ``KeyError: np.int64(225)`` in
``indexed_dataset.py``. :func:`install` makes an item that is not in the cache be read from the file, as
``IndexedDataset`` (``--dataset-impl lazy``) reads it; cached items are read from the cache as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fairseq.data import indexed_dataset


def read_uncached(cached_getitem: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    """``__getitem__`` of ``IndexedCachedDataset`` that reads an item outside the cache from the file."""
    read_from_file = indexed_dataset.IndexedDataset.__getitem__.__wrapped__  # without its lru_cache

    @functools.wraps(cached_getitem)
    def getitem(self: Any, i: int) -> Any:
        if i in self.cache_index:
            return cached_getitem(self, i)
        item = read_from_file(self, i)
        if self.data_file is not None:  # closed again, as prefetch leaves it (the dataset must pickle)
            self.data_file.close()
            self.data_file = None
        return item

    getitem.__macaron_read_uncached__ = True  # type: ignore[attr-defined]
    return getitem


def install() -> None:
    """Patch ``IndexedCachedDataset.__getitem__`` (idempotent)."""
    cls = indexed_dataset.IndexedCachedDataset
    if not getattr(cls.__getitem__, "__macaron_read_uncached__", False):
        cls.__getitem__ = read_uncached(cls.__getitem__)
