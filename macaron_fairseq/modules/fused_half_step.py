"""The half-step FFN sub-layer of a Macaron layer with its memory-bound work fused.

Macaron Net (Lu et al., Eq. 17–19) adds one sub-layer per layer, ``x ← LN(x + γ·dropout(FFN(x)))`` (post-norm;
pre-norm: ``x ← x + γ·dropout(FFN(LN(x)))``). Its matrix products are paid for by the halved FFN sizes, but
its element-wise work is not: one more LayerNorm, dropout mask, residual add and, when γ sits on the second
linear map, one more pass over the activations in the backward. This module computes the same function with
fewer passes (``--macaron-ffn-impl``):

* ``plain``: the sub-layer written with fairseq's modules (the reference).
* ``fused`` (default): γ and dropout's 1/(1−p) are folded into one scalar applied with the keep mask
  ``k = 1[U ≥ p]``, U ~ Uniform[0, 1) (a Bernoulli(1−p) keep mask: P(U ≥ p) = 1−p): the residual sum is one
  ``addcmul(x, FFN(x), k, value=γ/(1−p))``; its backward is one multiplication by ``k·γ/(1−p)``. The
  scalar stays a float (PyTorch computes ``addcmul`` in float32 for half-precision tensors and rounds the sum
  once), so the branch scale is exact in every precision — a mask tensor holding γ/(1−p) would round it in
  bfloat16 (0.5/0.9 = 0.5556 → 0.5547, −0.16 %). The uniform draw is cheaper
  than ``F.dropout``'s Bernoulli sampler on the CPU (measured in ``docs/reports/macaron_speed.md``).
* ``compile``: the same function through ``torch.compile`` (Inductor fuses the mask, the residual sum and
  the LayerNorm into one loop per direction); if compilation fails the layer falls back to ``fused`` and
  logs why, once.

All three are the same mathematics: the same parameters, the same function in eval mode (float rounding
apart), and in train mode the same distribution of dropout masks (not the same random draws as
``F.dropout`` for a given seed). Tests: ``tests/macaron_fairseq/modules/test_fused_half_step.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger(__name__)

IMPLEMENTATIONS = ("fused", "compile", "plain")
DEFAULT_IMPLEMENTATION = "fused"


WIDE = (torch.float32, torch.float64)


def keep_mask(like: Tensor, p: float) -> Tensor:
    """``1[U ≥ p]`` with U ~ Uniform[0, 1), shaped like ``like`` and in its dtype (0 and 1 are exact in every
    dtype): dropout's keep mask, keep probability 1−p. The uniform variates are drawn in float32 for
    half-precision inputs (a bfloat16 uniform has 8 bits: P(U ≥ 0.1) would be 0.898)."""
    wide = like.dtype if like.dtype in WIDE else torch.float32
    u = torch.rand(like.shape, dtype=wide, device=like.device)
    return u.ge_(p).to(like.dtype)


def scaled_keep_mask(like: Tensor, p: float, scale: float) -> Tensor:
    """``scale · 1[U ≥ p]`` (U as in :func:`keep_mask`), in ``like``'s dtype if that is float32/float64 and
    in float32 otherwise: a half-precision type would round the scale (bfloat16: 1/0.9 = 1.1111 → 1.1094)."""
    wide = like.dtype if like.dtype in WIDE else torch.float32
    return keep_mask(like, p).to(wide).mul_(scale)


def half_step_residual(
    residual: Tensor, branch: Tensor, step: float, p: float, dropout_active: bool
) -> Tensor:
    """``residual + step · dropout_p(branch)`` in one pass: one 0/1 mask tensor, one ``addcmul`` whose scalar
    ``step/(1−p)`` is applied in float32 even for half-precision tensors (exact branch scale)."""
    if not dropout_active or p <= 0.0:
        return torch.add(residual, branch, alpha=step)
    if p >= 1.0:
        return residual + branch * 0.0
    with torch.no_grad():
        keep = keep_mask(branch, p)
    return torch.addcmul(residual, branch, keep, value=step / (1.0 - p))


def dropout(x: Tensor, p: float, active: bool) -> Tensor:
    """Dropout with the mask of :func:`keep_mask` (used for the activation dropout inside the FFN); the
    scale 1/(1−p) is exact in every precision (half precision: the 0/1 product, then the scalar in float32
    with one rounding)."""
    if not active or p <= 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    with torch.no_grad():
        if x.dtype in WIDE:
            mask = scaled_keep_mask(x, p, 1.0 / (1.0 - p))
        else:
            keep = keep_mask(x, p)
    if x.dtype in WIDE:
        return x * mask
    return torch.mul(x * keep, 1.0 / (1.0 - p))


@dataclass(frozen=True)
class HalfStepSettings:
    """What the sub-layer does besides its weights (hashable: ``torch.compile`` guards on it)."""

    step: float
    dropout: float
    dropout_active: bool
    activation_dropout: float
    activation_dropout_active: bool
    normalize_before: bool
    layer_norm_eps: float | None  # None: norm-free (DT-Fixup / T-Fixup layers)


def half_step_ffn(
    x: Tensor,
    norm_weight: Tensor | None,
    norm_bias: Tensor | None,
    fc1_weight: Tensor,
    fc1_bias: Tensor | None,
    fc2_weight: Tensor,
    fc2_bias: Tensor | None,
    activation: Callable[[Tensor], Tensor],
    s: HalfStepSettings,
) -> Tensor:
    """The half-step sub-layer as a function of its tensors (Macaron Eq. 17; fairseq's norm placement)."""
    residual = x
    shape = (x.size(-1),)
    if s.normalize_before and s.layer_norm_eps is not None:
        x = F.layer_norm(x, shape, norm_weight, norm_bias, s.layer_norm_eps)
    h = activation(F.linear(x, fc1_weight, fc1_bias))
    h = dropout(h, s.activation_dropout, s.activation_dropout_active)
    x = half_step_residual(residual, F.linear(h, fc2_weight, fc2_bias), s.step, s.dropout, s.dropout_active)
    if not s.normalize_before and s.layer_norm_eps is not None:
        x = F.layer_norm(x, shape, norm_weight, norm_bias, s.layer_norm_eps)
    return x


class CompiledHalfStep:
    """:func:`half_step_ffn` through ``torch.compile`` (one compiled function shared by every layer, dynamic
    shapes), falling back to the eager function for good if compilation fails."""

    def __init__(self) -> None:
        self._compiled: Callable[..., Tensor] | None = None
        self.failed: str | None = None
        self.error: Exception | None = None  # the whole failure, for a test's report

    def __call__(self, x: Tensor, *args: object) -> Tensor:
        if self.failed is None:
            try:
                if self._compiled is None:
                    self._compiled = torch.compile(half_step_ffn, dynamic=True)
                # one memory layout: a first layer's input is fairseq's transposed (B, T, C) view, the other
                # layers' a contiguous (T, B, C); each layout would be a graph of its own (recompile limit 8)
                return self._compiled(x.contiguous(), *args)
            except Exception as error:  # any compiler failure: fall back, and say why
                self.error = error
                self.failed = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                logger.warning(
                    "--macaron-ffn-impl compile: torch.compile failed (%s); using the eager fused sub-layer",
                    self.failed,
                )
        return half_step_ffn(x, *args)  # type: ignore[arg-type]


COMPILED = CompiledHalfStep()


def norm_parameters(norm: nn.Module) -> tuple[Tensor | None, Tensor | None, float | None]:
    """(weight, bias, eps) of a LayerNorm; (None, None, None) for the identity of a norm-free layer."""
    if isinstance(norm, nn.Identity):
        return None, None, None
    return norm.weight, norm.bias, float(norm.eps)


def is_plain_linear(module: nn.Module) -> bool:
    """True for an ``nn.Linear`` without quant-noise hooks (whose forward the fused path may bypass)."""
    return isinstance(module, nn.Linear) and not module._forward_pre_hooks and not module._forward_hooks


def is_fusable_norm(norm: nn.Module) -> bool:
    return isinstance(norm, nn.Identity) or (
        isinstance(norm, nn.LayerNorm) and norm.elementwise_affine and len(norm.normalized_shape) == 1
    )
