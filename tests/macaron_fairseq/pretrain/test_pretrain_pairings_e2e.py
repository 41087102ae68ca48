"""``python -m macaron_fairseq.pretrain`` (2 CPU ranks under ``torchrun``) reads a new sentence pairing in
its second epoch (``--nsp-pairings``, default 10), and a run stopped in the middle of epoch 2 and resumed
logs the losses of an uninterrupted one: the restored run asks the task for epoch 2's pairs, not epoch 1's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_pretrain_e2e import TINY_CONFIG, pretrain, records, train_pairs

from macaron_fairseq.data.bert_pairs import pairing_seed

pytestmark = pytest.mark.slow
MICRO = 64  # large micro-batches: a short epoch (about 21 steps of 2 ranks on the shared corpus)


def test_a_run_resumed_in_the_middle_of_epoch_2_logs_the_losses_of_an_uninterrupted_one(
    corpus: Path, tmp_path: Path
) -> None:
    batches = -(-train_pairs(corpus, seed=3) // MICRO)  # epoch 1 (pairing 0 = the seed's pairs)
    steps_in_epoch = -(-batches // 2)
    stop, steps = steps_in_epoch + 2, steps_in_epoch + 4
    config = json.loads(TINY_CONFIG.read_text())
    config["train_micro_batch_size_per_gpu"] = MICRO
    config["scheduler"]["params"]["total_num_steps"] = steps
    path = tmp_path / "short_epochs.json"
    path.write_text(json.dumps(config))
    cache = tmp_path / "pairs"  # this test's own cache (other tests of the session cache their pairings too)
    cache.mkdir()
    options = ("--no-validation", "--pair-cache", str(cache))
    pretrain(corpus, tmp_path / "whole", "--max-update", str(steps), *options, config=path)
    # epoch 2 read pairing 1, built (and cached) when the run reached it; no pairing 2 yet
    assert [
        len(list(cache.glob(f"train.pairs-block128-seed{pairing_seed(3, p)}-*.npy"))) for p in range(3)
    ] == [1, 1, 0]
    pretrain(corpus, tmp_path / "split", "--max-update", str(stop), *options, config=path)
    resumed = pretrain(corpus, tmp_path / "split", "--max-update", str(steps), *options, config=path)
    assert f"at step {stop}" in resumed.stderr
    whole, split = records(tmp_path / "whole"), records(tmp_path / "split")
    assert [r["step"] for r in split] == list(range(1, steps + 1))
    for a, b in zip(whole, split, strict=True):
        for key in ("mlm_loss", "nsp_loss", "tokens", "pairs"):
            assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-9), (a["step"], key)
