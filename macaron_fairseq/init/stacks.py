"""DT-Fixup / T-Fixup over "new stacks": a list of from-scratch layers plus something that yields their
inputs. A model of this plugin describes itself as a list of stacks (``model.new_stacks()``); everything
below works over that list, whatever the model is.

A translation model from scratch has two stacks (encoder: input = source embeddings; decoder: input =
target embeddings, cross input = encoder output), the mixed setup has the new encoder layers on top of a
pre-trained encoder (input = the pre-trained encoder's output) plus the decoder, an encoder-only model
(BERT) has one stack, and a classifier with extra layers on a pre-trained encoder has one stack. Stacks
are processed in order, one streamed pass each, so that a later stack's probe (the decoder's cross input)
sees the already-scaled earlier stack (the encoder).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from torch import nn

from macaron_fairseq.init.errors import NoNewLayersError
from macaron_fairseq.init.mu import MaxNormEstimate, Probe, estimate_max_norms
from macaron_fairseq.init.scaling import (
    StackScaling,
    apply_dt_fixup,
    apply_t_fixup,
    t_fixup_embedding_init_,
    t_fixup_init_,
    xavier_init_,
)

logger = logging.getLogger(__name__)

BatchesFactory = Callable[[str], Iterable[dict]]  # stack name -> a fresh pass over the training batches


@dataclass
class NewStack:
    """From-scratch layers, the probes yielding the vectors they read, and what T-Fixup needs."""

    name: str
    layers: Sequence[nn.Module]
    input_probe: Probe  # the vectors x entering the stack (μ)
    cross_probe: Probe | None = None  # the vectors its cross-attentions attend to (μ_cross), if any
    t_fixup_side: Literal["encoder", "decoder"] = "encoder"  # which T-Fixup formula applies
    embeddings: nn.Embedding | None = None  # new token embeddings T-Fixup scales with this stack, if any
    #: other new learned embeddings summed into the stack's input (BERT: positions, segments); T-Fixup
    #: treats them as input embeddings too (same N(0, d^-½) and factor as the token embeddings)
    extra_embeddings: Sequence[nn.Embedding] = ()
    #: the layers (and embeddings) hold fairseq's initialisation, T-Fixup's starting point: Xavier attention
    #: (q, k, v gain 1/√2), N(0, d^-½) embeddings. False for a model that initialised them otherwise (BERT's
    #: N(0, 0.02)): T-Fixup then re-draws attention and embeddings before scaling
    fairseq_init: bool = True


@dataclass(frozen=True)
class StackResult:
    scaling: StackScaling
    estimate: MaxNormEstimate | None  # None when μ was given (--dt-fixup-mu) or for T-Fixup


def check_stacks(stacks: Sequence[NewStack], scheme: str) -> None:
    if not stacks or not any(len(s.layers) for s in stacks):
        raise NoNewLayersError(f"--init-scheme {scheme}: the model has no new layers to initialise")


def initialise_new_layers(stacks: Sequence[NewStack], scheme: str) -> None:
    """The scheme's initialisation before any scaling: Xavier (DT-Fixup) or T-Fixup's own (its step 1:
    Xavier layers, N(0, d^-½) input embeddings; re-drawn where the model initialised them otherwise)."""
    check_stacks(stacks, scheme)
    if scheme == "dt-fixup":
        xavier_init_([layer for stack in stacks for layer in stack.layers])
    elif scheme == "t-fixup":
        for stack in stacks:
            t_fixup_init_(stack.layers, reset_attention=not stack.fairseq_init)
            if not stack.fairseq_init:
                owned = [stack.embeddings] if stack.embeddings is not None else []
                t_fixup_embedding_init_([*owned, *stack.extra_embeddings])
    else:
        raise ValueError(f"no initialisation for scheme {scheme!r}")


def dt_fixup_stack(
    stack: NewStack,
    batches: BatchesFactory | None,
    module: nn.Module,
    mu: float | None = None,
    group: object | None = None,
    split: str = "train",
) -> StackResult:
    """Estimate μ (and μ_cross) for one stack in one streamed pass unless ``mu`` is given, then scale."""
    estimate = None
    mu_cross = mu if stack.cross_probe is not None else None
    if mu is None:
        if batches is None:
            raise ValueError("DT-Fixup: neither μ nor training batches to estimate it on")
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
    batches: BatchesFactory | None,
    module: nn.Module,
    mu: float | None = None,
    group: object | None = None,
    split: str = "train",
) -> list[StackResult]:
    """DT-Fixup for every stack, in order."""
    return [dt_fixup_stack(s, batches, module, mu=mu, group=group, split=split) for s in stacks if s.layers]


def t_fixup_stacks(stacks: Sequence[NewStack]) -> list[StackResult]:
    """T-Fixup for every stack (its layers and, where it owns new embeddings, those)."""
    results = []
    for s in stacks:
        if s.layers:
            scaling = apply_t_fixup(
                s.layers, s.t_fixup_side, s.embeddings, name=s.name, extra_embeddings=s.extra_embeddings
            )
            logger.info("T-Fixup applied to %s", scaling.describe())
            results.append(StackResult(scaling, None))
    return results
