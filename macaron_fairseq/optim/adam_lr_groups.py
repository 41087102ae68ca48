"""``--optimizer adam_lr_groups``: fairseq's Adam with a per-parameter learning-rate multiplier.

The mixed setup trains the pre-trained encoder at ``--pretrained-lr-multiplier`` × η (DT-Fixup paper:
8e-3 × η; BorealisAI ``BOTOptimizer``'s ``bert_lr_factor``). Parameters carrying an ``lr_multiplier``
attribute (set by the model) go to their own Adam parameter group, and every learning-rate update of
the scheduler sets ``lr_group = multiplier × lr``. Parameters without the attribute form the first group,
whose learning rate is what fairseq logs.
"""

from __future__ import annotations

from collections.abc import Iterable

from fairseq.optim import register_optimizer
from fairseq.optim.adam import FairseqAdam, FairseqAdamConfig
from torch import nn


def group_by_multiplier(params: Iterable[nn.Parameter]) -> list[dict]:
    groups: dict[float, list[nn.Parameter]] = {}
    for p in params:
        groups.setdefault(float(getattr(p, "lr_multiplier", 1.0)), []).append(p)
    ordered = sorted(groups.items(), key=lambda item: item[0] != 1.0)  # multiplier 1 first
    return [{"params": ps, "lr_multiplier": m} for m, ps in ordered]


@register_optimizer("adam_lr_groups", dataclass=FairseqAdamConfig)
class AdamWithLrMultipliers(FairseqAdam):
    """Adam (fairseq's AdamW-style decay) whose parameter groups run at ``lr_multiplier`` × lr."""

    def __init__(self, cfg: FairseqAdamConfig, params: Iterable) -> None:
        params = list(params)
        if params and not isinstance(params[0], dict):
            params = group_by_multiplier(params)
        super().__init__(cfg, params)
        self.set_lr(self.get_lr())

    def set_lr(self, lr: float) -> None:
        for group in self.param_groups:
            group["lr"] = lr * group.get("lr_multiplier", 1.0)

    def get_lr(self) -> float:
        return self.param_groups[0]["lr"] / self.param_groups[0].get("lr_multiplier", 1.0)
