"""``python -m macaron_fairseq.pretrain`` (2 CPU ranks under ``torchrun``) across an epoch boundary, on short
epochs (large micro-batches, an odd number of them): an epoch whose batches do not divide among the ranks
is crossed; the second epoch reads a new sentence pairing (``--nsp-pairings``, default 10); a run stopped in
the middle of epoch 2 and resumed logs the losses of an uninterrupted one: the restored run asks the task
for epoch 2's pairs, not epoch 1's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_pretrain_e2e import TINY_CONFIG, pretrain, records, train_pairs

from macaron_fairseq.data.bert_pairs import pairing_seed

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class ShortEpochs:
    """The uninterrupted run on short epochs, and what it was run with."""

    whole: Path
    config: Path
    cache: Path
    micro: int
    pairs_in_epoch: int
    steps_in_epoch: int
    steps: int

    def options(self) -> tuple[str, ...]:
        return ("--no-validation", "--pair-cache", str(self.cache))


@pytest.fixture(scope="module")
def short_epochs(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> ShortEpochs:
    """Micro-batches of 64 or a little more (about 21 steps of 2 ranks an epoch on the shared corpus), as
    many as gives an odd number of batches in epoch 1 (pairing 0 = the seed's pairs): one rank's shard of
    the epoch is one batch short; the run goes 4 steps into epoch 2."""
    root = tmp_path_factory.mktemp("short_epochs")
    pairs_in_epoch = train_pairs(corpus, seed=3)
    micro = next(b for b in range(64, 96) if -(-pairs_in_epoch // b) % 2 == 1)
    steps_in_epoch = (-(-pairs_in_epoch // micro) + 1) // 2
    steps = steps_in_epoch + 4
    config = json.loads(TINY_CONFIG.read_text())
    config["train_micro_batch_size_per_gpu"] = micro
    config["scheduler"]["params"]["total_num_steps"] = steps  # a longer run is refused
    path = root / "short_epochs.json"
    path.write_text(json.dumps(config))
    cache = root / "pairs"  # this run's own cache (other tests of the session cache their pairings too)
    cache.mkdir()
    run = ShortEpochs(root / "whole", path, cache, micro, pairs_in_epoch, steps_in_epoch, steps)
    pretrain(corpus, run.whole, "--max-update", str(steps), *run.options(), config=path)
    return run


def test_an_epoch_whose_batches_do_not_divide_among_the_ranks(short_epochs: ShortEpochs) -> None:
    """The rank one batch short runs a zero-weighted filler batch, so the step's collectives still match:
    the run crosses the epoch boundary, that step counts one batch of pairs (or fewer), and epoch 1's steps
    count each of its pairs once."""
    run = short_epochs
    log = records(run.whole)
    assert [r["step"] for r in log] == list(range(1, run.steps + 1))
    assert log[run.steps_in_epoch - 1]["pairs"] <= run.micro
    assert sum(r["pairs"] for r in log[: run.steps_in_epoch]) == run.pairs_in_epoch


def test_a_run_resumed_in_the_middle_of_epoch_2_logs_the_losses_of_an_uninterrupted_one(
    corpus: Path, short_epochs: ShortEpochs, tmp_path: Path
) -> None:
    run = short_epochs
    # epoch 2 read pairing 1, built (and cached) when the run reached it; no pairing 2 yet
    assert [
        len(list(run.cache.glob(f"train.pairs-block128-seed{pairing_seed(3, p)}-*.npy"))) for p in range(3)
    ] == [1, 1, 0]
    stop = run.steps_in_epoch + 2
    pretrain(corpus, tmp_path / "split", "--max-update", str(stop), *run.options(), config=run.config)
    resumed = pretrain(
        corpus, tmp_path / "split", "--max-update", str(run.steps), *run.options(), config=run.config
    )
    assert f"at step {stop}" in resumed.stderr
    whole, split = records(run.whole), records(tmp_path / "split")
    assert [r["step"] for r in split] == list(range(1, run.steps + 1))
    for a, b in zip(whole, split, strict=True):
        for key in ("mlm_loss", "nsp_loss", "tokens", "pairs"):
            assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-9), (a["step"], key)
