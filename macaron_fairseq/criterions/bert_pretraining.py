"""``--criterion macaron_bert_loss``: BERT's pre-training objective, masked-LM cross-entropy over the
masked positions + next-sentence-prediction cross-entropy.

BERT minimises ``mean_MLM + mean_NSP`` per batch (mean over the predicted tokens, mean over the pairs).
fairseq sums losses over a batch and divides the gradients by the summed ``sample_size``; here
``sample_size`` is the number of masked tokens (as in fairseq's ``masked_lm`` criterion: the MLM loss
is the bulk of the objective and its natural unit), and the NSP sum is weighted by
``masked / pairs`` of its batch, so that ``loss / sample_size`` is exactly BERT's
``mean_MLM + w · mean_NSP`` for one batch (``w`` = ``--nsp-loss-weight``, 1). With gradient accumulation
or several workers, fairseq's division by the total ``sample_size`` makes that a masked-token-weighted
average of the batches' objectives. Unweighted (NSP loss summed per pair, divided by the ~20 masked
tokens per pair) NSP would count about 20 times less than in BERT.

Logged (base 2, like fairseq): ``loss`` (the objective above), ``mlm_loss`` (per masked token; ``ppl`` is
its perplexity), ``nsp_loss`` (per pair), ``mlm_accuracy``, ``nsp_accuracy`` (%).

For trainers outside fairseq (DeepSpeed): :func:`bert_losses` gives the sums and counts of one batch,
``BertLosses.objective(w)`` BERT's mean objective of that batch as a differentiable scalar.
"""

# no ``from __future__ import annotations``: fairseq reads the config's field types at run time
import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from torch import Tensor


@dataclass
class BertLossConfig(FairseqDataclass):
    nsp_loss_weight: float = field(
        default=1.0, metadata={"help": "weight of the mean NSP loss next to the mean MLM loss (BERT: 1)"}
    )


@dataclass
class BertLosses:
    """Sums and counts of one batch (losses in nats)."""

    mlm_loss: Tensor  # summed over the masked tokens
    nsp_loss: Tensor  # summed over the pairs
    masked: int
    pairs: int
    mlm_correct: int
    nsp_correct: int

    def objective(self, nsp_loss_weight: float = 1.0) -> Tensor:
        """BERT's ``mean_MLM + w · mean_NSP`` of the batch."""
        return self.mlm_loss / max(self.masked, 1) + nsp_loss_weight * self.nsp_loss / max(self.pairs, 1)


def bert_losses(model: Any, sample: dict[str, Any], padding_idx: int) -> BertLosses:
    """Run ``model`` on a batch of :class:`~macaron_fairseq.data.bert_pairs.BertPretrainingDataset` with the
    MLM head on the masked positions only (``sample["target"] != padding_idx``), and return the losses."""
    target = sample["target"]
    masked_tokens = target.ne(padding_idx)
    mlm_logits, nsp_logits = model(**sample["net_input"], masked_tokens=masked_tokens)
    mlm_target = target[masked_tokens]
    mlm_lprobs = F.log_softmax(mlm_logits, dim=-1, dtype=torch.float32)
    nsp_lprobs = F.log_softmax(nsp_logits, dim=-1, dtype=torch.float32)
    nsp_target = sample["nsp_target"]
    return BertLosses(
        mlm_loss=F.nll_loss(mlm_lprobs, mlm_target, reduction="sum"),
        nsp_loss=F.nll_loss(nsp_lprobs, nsp_target, reduction="sum"),
        masked=int(mlm_target.numel()),
        pairs=int(nsp_target.numel()),
        mlm_correct=int((mlm_lprobs.argmax(-1) == mlm_target).sum()),
        nsp_correct=int((nsp_lprobs.argmax(-1) == nsp_target).sum()),
    )


@register_criterion("macaron_bert_loss", dataclass=BertLossConfig)
class BertPretrainingLoss(FairseqCriterion):
    def __init__(self, task: Any, nsp_loss_weight: float = 1.0) -> None:
        super().__init__(task)
        self.nsp_loss_weight = nsp_loss_weight
        self.padding_idx = task.source_dictionary.pad()

    def forward(self, model: Any, sample: dict[str, Any], reduce: bool = True):
        losses = bert_losses(model, sample, self.padding_idx)
        sample_size = max(losses.masked, 1)
        nsp_scale = self.nsp_loss_weight * sample_size / max(losses.pairs, 1)
        loss = losses.mlm_loss + nsp_scale * losses.nsp_loss
        logging_output = {
            "loss": loss.data,
            "mlm_loss": losses.mlm_loss.data,
            "nsp_loss": losses.nsp_loss.data,
            "masked": losses.masked,
            "mlm_correct": losses.mlm_correct,
            "nsp_correct": losses.nsp_correct,
            "ntokens": sample["ntokens"],
            "nsentences": losses.pairs,
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs: list[dict[str, Any]]) -> None:
        def total(key: str) -> float:
            return float(sum(log.get(key, 0) for log in logging_outputs))

        sample_size, masked, pairs = total("sample_size"), total("masked"), total("nsentences")
        ln2 = math.log(2)
        if sample_size > 0:
            metrics.log_scalar("loss", total("loss") / sample_size / ln2, sample_size, round=3)
        if masked > 0:
            metrics.log_scalar("mlm_loss", total("mlm_loss") / masked / ln2, masked, round=3)
            metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["mlm_loss"].avg))
            metrics.log_scalar("mlm_accuracy", 100 * total("mlm_correct") / masked, masked, round=2)
        if pairs > 0:
            metrics.log_scalar("nsp_loss", total("nsp_loss") / pairs / ln2, pairs, round=3)
            metrics.log_scalar("nsp_accuracy", 100 * total("nsp_correct") / pairs, pairs, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
