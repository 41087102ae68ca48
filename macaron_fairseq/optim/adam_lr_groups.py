"""``--optimizer adam_lr_groups``: fairseq's Adam with a per-parameter learning-rate multiplier.

The mixed setup trains the pre-trained encoder at ``--pretrained-lr-multiplier`` × η (DT-Fixup paper:
8e-3 × η; BorealisAI ``BOTOptimizer``'s ``bert_lr_factor``). Parameters carrying an ``lr_multiplier``
attribute (set by the model) go to their own Adam parameter group, and every learning-rate update of
the scheduler sets ``lr_group = multiplier × lr``. Parameters without the attribute form the first group,
whose learning rate is what fairseq logs.

Under ``--fp16``/``--bf16`` fairseq's ``FP16Optimizer`` hands this optimizer fp32 copies of the parameters,
which keep ``optim_overrides`` but no other attribute: there the multiplier is read from fairseq's
per-parameter learning-rate scale, ``optim_overrides["optimizer"]["lr_scale"]`` (set next to
``lr_multiplier`` by the model). The memory-efficient wrappers and ``--amp`` pass the parameters themselves.

``--no-decay-bias-and-norm``: no weight decay on parameters with fewer than two dimensions — the biases and
the LayerNorm weights — as BERT (Google's ``optimization.py`` excludes ``bias``, ``LayerNorm``) and the
pre-trainer (:func:`macaron_fairseq.pretrain.ds_config.no_weight_decay`) do. It needs the parameters'
shapes: under ``--fp16`` add ``--fp16-no-flatten-grads`` (a flat fp32 copy has one dimension).
"""

from __future__ import annotations

from collections.abc import Iterable

from fairseq.optim import register_optimizer
from fairseq.optim.adam import FairseqAdam
from torch import nn

from macaron_fairseq.optim.adam_lr_groups_config import AdamLrGroupsConfig


def lr_multiplier(p: nn.Parameter) -> float:
    """``p.lr_multiplier``, else fairseq's ``p.optim_overrides["optimizer"]["lr_scale"]``, else 1."""
    if hasattr(p, "lr_multiplier"):
        return float(p.lr_multiplier)
    overrides = getattr(p, "optim_overrides", None) or {}
    return float((overrides.get("optimizer") or {}).get("lr_scale", 1.0))


def group_by_multiplier(params: Iterable[nn.Parameter], no_decay_vectors: bool = False) -> list[dict]:
    """Parameter groups by learning-rate multiplier (multiplier 1 first); with ``no_decay_vectors`` the
    parameters of fewer than two dimensions (biases, LayerNorm weights) in groups of weight decay 0."""
    groups: dict[tuple[float, bool], list[nn.Parameter]] = {}
    for p in params:
        decayed = not (no_decay_vectors and p.dim() < 2)
        groups.setdefault((lr_multiplier(p), decayed), []).append(p)
    ordered = sorted(groups.items(), key=lambda item: (item[0][0] != 1.0, not item[0][1]))
    return [
        {"params": ps, "lr_multiplier": m, **({} if decayed else {"weight_decay": 0.0})}
        for (m, decayed), ps in ordered
    ]


@register_optimizer("adam_lr_groups", dataclass=AdamLrGroupsConfig)
class AdamWithLrMultipliers(FairseqAdam):
    """Adam (fairseq's AdamW-style decay) whose parameter groups run at ``lr_multiplier`` × lr."""

    def __init__(self, cfg: AdamLrGroupsConfig, params: Iterable) -> None:
        params = list(params)
        if params and not isinstance(params[0], dict):
            params = group_by_multiplier(params, bool(getattr(cfg, "no_decay_bias_and_norm", False)))
        super().__init__(cfg, params)
        self.set_lr(self.get_lr())

    def set_lr(self, lr: float) -> None:
        for group in self.param_groups:
            group["lr"] = lr * group.get("lr_multiplier", 1.0)

    def get_lr(self) -> float:
        return self.param_groups[0]["lr"] / self.param_groups[0].get("lr_multiplier", 1.0)
