"""The pre-trainer's DT-Fixup μ pass (#40 item 4) runs on the training device — the rank's GPU when there is
one, where DeepSpeed then keeps the model — in the engine's micro-batches, each rank over its shard, the
maxima and counts all-reduced: two ranks (gloo) together read every training pair once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from helpers import DT_FIXUP
from test_pretrain_e2e import pretrain

from macaron_fairseq.init.mu import estimate_max_norms
from macaron_fairseq.pretrain.distributed import Placement
from macaron_fairseq.pretrain.engine import training_device


def test_the_training_device(monkeypatch: pytest.MonkeyPatch) -> None:
    where = Placement(rank=3, world_size=4, local_rank=1, master_addr="h", master_port=1, launcher="srun")
    assert training_device(where) == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert training_device(where) == torch.device("cuda", 1)


def test_the_estimate_says_where_the_pass_ran() -> None:
    sample = {"net_input": {}, "x": torch.ones(2, 3, 4), "nsentences": 2, "ntokens": 6}
    estimate = estimate_max_norms([sample], {"x": lambda s: (s["x"], None)}, torch.nn.Linear(4, 4))
    assert estimate.device == "cpu" and "(1 batches, on cpu)" in estimate.describe()


@pytest.mark.slow
def test_two_ranks_read_every_pair_once_on_the_training_device(corpus: Path, tmp_path: Path) -> None:
    proc = pretrain(
        corpus, tmp_path / "run", "--max-update", "1", "--no-validation", *DT_FIXUP, "--batch-size", "8"
    )
    pairs = {int(m) for m in re.findall(r"(\d+) sentence pairs of pairing 0/", proc.stderr)}
    passes = re.findall(
        r"DT-Fixup μ pass \(encoder\): μ\[\w+\]=(\S+) over (\d+) sentences / \d+ tokens "
        r"of 'train' \((\d+) batches, on (\S+)\)",
        proc.stderr,
    )
    assert len(passes) == 2, proc.stderr[-3000:]  # one line per rank
    (mu, sentences, batches, device), other = passes
    assert other == passes[0]  # the same all-reduced figures on both ranks
    assert pairs == {int(sentences)}  # every pair of the epoch, once over both shards
    assert int(batches) == pytest.approx(int(sentences) / 8, abs=2)  # micro-batches of 8 pairs
    assert device == "cpu" and float(mu) > 0
