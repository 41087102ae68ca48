"""The cached reader of fairseq's original indexed format (the Macaron authors' released data-bins) reads an
item that was never prefetched from the file — fairseq's own raises ``KeyError`` there, which is how
``fairseq-train`` on such data died building its dummy batch (the end-to-end run is
``tests/macaron_fairseq/upgrade/test_upgrade_cli.py::test_finetune_from_the_upgraded_model_with_the_authors_arch``)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch
from fairseq.data import indexed_dataset

import macaron_fairseq  # noqa: F401  (installs the repairs)


@pytest.fixture()
def old_format(tmp_path: Path) -> tuple[str, list[torch.Tensor]]:
    """A dataset in the TNTIDX format fairseq 0.6 wrote (ids stored + 1, read back with fix_lua_indexing,
    as fairseq's data loaders open it)."""
    items = [torch.tensor([5, 6, 7, 2]), torch.tensor([9, 2]), torch.tensor([4, 4, 4, 4, 4, 2])]
    prefix = str(tmp_path / "train.de-en.de")
    builder = indexed_dataset.IndexedDatasetBuilder(f"{prefix}.bin", dtype=indexed_dataset.np.int32)
    for item in items:
        builder.add_item(item)
    builder.finalize(f"{prefix}.idx")
    assert Path(f"{prefix}.idx").read_bytes()[:8] == b"TNTIDX\x00\x00"
    assert indexed_dataset.infer_dataset_impl(prefix) == "cached"  # what fairseq-train opens it as
    return prefix, items


def test_an_item_that_was_never_prefetched_is_read_from_the_file(old_format) -> None:
    prefix, items = old_format
    dataset = indexed_dataset.IndexedCachedDataset(prefix, fix_lua_indexing=True)
    assert torch.equal(dataset[2], items[2])
    assert dataset.data_file is None  # closed again: the dataset still pickles for DataLoader workers
    pickle.dumps(dataset)
    dataset.prefetch([0, 1])
    assert torch.equal(dataset[0], items[0]) and torch.equal(dataset[1], items[1])


def test_fairseq_alone_raises_key_error(old_format) -> None:
    prefix, _ = old_format
    dataset = indexed_dataset.IndexedCachedDataset(prefix, fix_lua_indexing=True)
    original = indexed_dataset.IndexedCachedDataset.__getitem__.__wrapped__
    with pytest.raises(KeyError):
        original(dataset, 2)
