"""The batches a run reads: this rank's shard of the training data, epoch after epoch, from a position a
checkpoint restores; the filler batch of a rank whose shard ran out; this rank's shard of the validation set;
each moved to this rank's GPU when there is one. fairseq's ``--num-workers`` processes collate the batches
(masking is seeded by seed, epoch and index, so the batches do not depend on how many)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from macaron_fairseq.pretrain.distributed import Placement


class Batches:
    """Micro-batches of ``micro_batch`` pairs from the task's datasets, sharded among the ranks."""

    def __init__(
        self, task: Any, seed: int, micro_batch: int, where: Placement, num_workers: int = 0
    ) -> None:
        self.task, self.seed, self.micro_batch, self.where = task, seed, micro_batch, where
        self.num_workers = num_workers
        self.epoch_itr = self._epoch_iterator(epoch=1)

    def _iterator(self, split: str, epoch: int) -> Any:
        """fairseq's epoch iterator over this rank's shard of ``split``'s batches."""
        return self.task.get_batch_iterator(
            dataset=self.task.dataset(split),
            max_sentences=self.micro_batch,
            max_positions=self.task.max_positions(),
            seed=self.seed,
            num_shards=self.where.world_size,
            shard_id=self.where.rank,
            epoch=epoch,
            num_workers=self.num_workers,
        )

    def _epoch_iterator(self, epoch: int) -> Any:
        """The batches of ``epoch``, from that epoch's training data: the task's sentence pairs change with
        the epoch (``--nsp-pairings``), so it is asked for the epoch's dataset first — here, at an epoch
        boundary and when a checkpoint is restored alike, which keeps a resumed run exact."""
        self.task.load_dataset("train", epoch=epoch)
        return self._iterator("train", epoch)

    def state_dict(self) -> dict[str, Any]:
        """The data position (fairseq's epoch iterator state), saved in a checkpoint."""
        return self.epoch_itr.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch_itr = self._epoch_iterator(state["epoch"])
        with torch.random.fork_rng(devices=[]):  # it may start the epoch's DataLoader: see __iter__
            self.epoch_itr.load_state_dict(state)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Training micro-batches forever, epoch after epoch, resuming inside an epoch after a restore."""
        while True:
            # starting a DataLoader draws its workers' base seed from torch's generator: not from the stream
            # the model's dropout reads, so that a resumed run (which starts it elsewhere) stays exact
            with torch.random.fork_rng(devices=[]):
                epoch = self.epoch_itr.next_epoch_itr(shuffle=True)
            yield from epoch
            self.epoch_itr = self._epoch_iterator(self.epoch_itr.next_epoch_idx)

    def filler(self) -> dict[str, Any]:
        """A batch for a rank whose shard of the epoch has run out: fairseq pads the shorter shards with empty
        batches when the batches do not divide among the ranks, but every rank must run the step's forward,
        backward and gradient all-reduce. Its loss is weighted 0 (as fairseq's trainer does with its dummy
        batch); the same steps get it in a resumed run, so the RNG streams stay aligned."""
        dataset = self.task.dataset("train")
        return dataset.collater([dataset[0]])

    def validation(self) -> Iterator[dict[str, Any]]:
        """This rank's share of the validation set, once, in order (a rank with fewer batches gets empty
        ones)."""
        if "valid" not in self.task.datasets:
            self.task.load_dataset("valid", epoch=1)
        return self._iterator("valid", epoch=1).next_epoch_itr(shuffle=False)

    def to_device(self, sample: dict[str, Any]) -> dict[str, Any]:
        if torch.cuda.is_available():
            from fairseq import utils

            return utils.move_to_cuda(sample, device=torch.device("cuda", self.where.local_rank))
        return sample
