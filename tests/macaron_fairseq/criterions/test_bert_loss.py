"""``--criterion macaron_bert_loss``: BERT's objective (mean MLM over masked tokens + mean NSP over pairs)
as ``loss / sample_size``, sample size = masked tokens, and the logged metrics (base 2)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from fairseq.logging import metrics

from macaron_fairseq.criterions.bert_pretraining import BertPretrainingLoss, bert_losses
from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model


@pytest.fixture(scope="module")
def model_and_task(tmp_path_factory: pytest.TempPathFactory):
    target = tmp_path_factory.mktemp("bert_loss_dict")
    with bert_dictionary_dir(60) as d:
        (target / "dict.txt").write_text((d / "dict.txt").read_text())
    torch.manual_seed(0)
    model, task = build_bert_model(Path(target), "vanilla_bert_tiny")
    return model.eval(), task


def sample(task, masked_positions: list[tuple[int, int]]) -> dict:
    d = task.source_dictionary
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(d.nspecial, len(d) - 1, (4, 10), generator=g)
    tokens[:, 0], tokens[:, 4], tokens[:, -1] = d.bos(), d.eos(), d.eos()
    tokens[3, 7:] = d.pad()
    tokens[3, 6] = d.eos()
    segments = (torch.arange(10) > 4).long().expand(4, 10).clone()
    segments[3, 7:] = 0
    target = torch.full_like(tokens, d.pad())
    for row, col in masked_positions:
        target[row, col] = tokens[row, col]
        tokens[row, col] = task.mask_idx
    return {
        "id": torch.arange(4),
        "nsentences": 4,
        "ntokens": int(tokens.ne(d.pad()).sum()),
        "net_input": {"src_tokens": tokens, "segment_labels": segments},
        "target": target,
        "nsp_target": torch.tensor([0, 1, 1, 0]),
    }


def reference(model, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean MLM cross-entropy over the masked tokens and mean NSP cross-entropy, from the full logits."""
    with torch.no_grad():
        mlm, nsp = model(**batch["net_input"])
    masked = batch["target"].ne(model.encoder.padding_idx)
    return F.cross_entropy(mlm[masked], batch["target"][masked]), F.cross_entropy(nsp, batch["nsp_target"])


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_loss_over_sample_size_is_berts_objective(model_and_task, weight: float) -> None:
    model, task = model_and_task
    batch = sample(task, [(0, 2), (0, 6), (1, 1), (2, 8), (3, 5)])
    criterion = BertPretrainingLoss(task, nsp_loss_weight=weight)
    with torch.no_grad():
        loss, sample_size, log = criterion(model, batch)
    mlm, nsp = reference(model, batch)
    assert sample_size == log["sample_size"] == 5
    torch.testing.assert_close(loss / sample_size, mlm + weight * nsp)
    torch.testing.assert_close(log["mlm_loss"] / 5, mlm)
    torch.testing.assert_close(log["nsp_loss"] / 4, nsp)
    losses = bert_losses(model, batch, task.source_dictionary.pad())
    torch.testing.assert_close(losses.objective(weight), mlm + weight * nsp)

    with metrics.aggregate() as agg:
        BertPretrainingLoss.reduce_metrics([log])
    values = agg.get_smoothed_values()
    assert values["mlm_loss"] == pytest.approx(mlm.item() / math.log(2), abs=1e-3)
    assert values["nsp_loss"] == pytest.approx(nsp.item() / math.log(2), abs=1e-3)
    assert values["loss"] == pytest.approx((mlm + weight * nsp).item() / math.log(2), abs=1e-3)
    assert values["ppl"] == pytest.approx(2 ** values["mlm_loss"], rel=1e-2)
    assert 0 <= values["nsp_accuracy"] <= 100 and 0 <= values["mlm_accuracy"] <= 100


def test_batch_without_masked_tokens_trains_nsp_only(model_and_task) -> None:
    model, task = model_and_task
    batch = sample(task, [])
    loss, sample_size, log = BertPretrainingLoss(task)(model, batch)
    _, nsp = reference(model, batch)
    assert sample_size == 1 and log["masked"] == 0
    torch.testing.assert_close(loss.detach(), nsp)
    loss.backward()
    assert model.nsp_classifier.weight.grad is not None
    model.zero_grad()
