"""DT-Fixup over "new stacks": a list of from-scratch layers plus something that yields their inputs.

This is the generic hook. A translation model from scratch has two stacks (encoder: input = source
embeddings; decoder: input = target embeddings, cross input = encoder output), the mixed setup has the new
encoder layers on top of a pre-trained encoder (input = the pre-trained encoder's output) plus the decoder,
and a classifier with extra layers on a pre-trained encoder has one stack. Stacks are processed in order,
one streamed pass each, so that a later stack's probe (the decoder's cross input) sees the already-scaled
earlier stack (the encoder).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from torch import nn

from macaron_fairseq.init.mu import MaxNormEstimate, Probe, estimate_max_norms
from macaron_fairseq.init.scaling import StackScaling, apply_dt_fixup

logger = logging.getLogger(__name__)

BatchesFactory = Callable[[str], Iterable[dict]]  # stack name -> a fresh pass over the training batches


@dataclass
class NewStack:
    """From-scratch layers and the probes yielding the vectors they read."""

    name: str
    layers: Sequence[nn.Module]
    input_probe: Probe  # the vectors x entering the stack (μ)
    cross_probe: Probe | None = None  # the vectors its cross-attentions attend to (μ_cross), if any


@dataclass(frozen=True)
class StackResult:
    scaling: StackScaling
    estimate: MaxNormEstimate | None  # None when μ was given (--dt-fixup-mu)


def dt_fixup_stack(
    stack: NewStack,
    batches: BatchesFactory,
    module: nn.Module,
    mu: float | None = None,
    group: object | None = None,
    split: str = "train",
) -> StackResult:
    """Estimate μ (and μ_cross) for one stack in one streamed pass unless ``mu`` is given, then scale."""
    estimate = None
    mu_cross = mu if stack.cross_probe is not None else None
    if mu is None:
        probes = {"input": stack.input_probe}
        if stack.cross_probe is not None:
            probes["cross"] = stack.cross_probe
        estimate = estimate_max_norms(batches(stack.name), probes, module, group=group, split=split)
        mu = estimate.max_norms["input"]
        mu_cross = estimate.max_norms.get("cross")
        logger.info("DT-Fixup μ pass (%s): %s", stack.name, estimate.describe())
    scaling = apply_dt_fixup(stack.layers, mu, mu_cross, name=stack.name)
    logger.info("DT-Fixup applied to %s", scaling.describe())
    return StackResult(scaling, estimate)


def dt_fixup_stacks(
    stacks: Sequence[NewStack],
    batches: BatchesFactory,
    module: nn.Module,
    mu: float | None = None,
    group: object | None = None,
    split: str = "train",
) -> list[StackResult]:
    """DT-Fixup for every stack, in order."""
    return [dt_fixup_stack(s, batches, module, mu=mu, group=group, split=split) for s in stacks]
