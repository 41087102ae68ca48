"""The position-wise FFN sub-step of a Macaron layer, with its step size.

Macaron Net (Lu et al., "Understanding and Improving Transformer From a Multi-Particle Dynamic System
Point of View") reads a Transformer layer as one Lie–Trotter splitting step of a convection–diffusion
ODE and replaces it by the Strang–Marchuk splitting (paper Eq. 17–19):

    x̃ = x + ½·F(x)            (half step of the FFN / "convection")
    x̂ = x̃ + G(x̃)              (full step of self-attention / "diffusion")
    x' = x̂ + ½·F(x̂)            (half step of the FFN)

The ½ multiplies the FFN *branch*, never the skip path. We implement it as a scale on the output of
the FFN's second linear map: because dropout is linear in its input, ``dropout(γ·W h + γ·b) =
γ·dropout(W h + b)``, so ``x + dropout(scaled_fc2(h))`` is exactly ``x + γ·dropout(FFN(x))``.
Keeping the scale inside an ``nn.Linear`` subclass leaves the parameter names (``fc2.weight``,
``fc2.bias``) and quant-noise support of fairseq's layers unchanged. Where γ is applied is chosen for speed
only: on the weight when a backward will follow and the batch has more rows than the layer has outputs
(the extra work is then on the out × in weight instead of the rows × in activations), inside the GEMM
otherwise. FFN₁ of a Macaron layer folds γ into its dropout mask instead
(:mod:`macaron_fairseq.modules.fused_half_step`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ScaledLinear(nn.Linear):
    """``nn.Linear`` whose output is multiplied by a fixed ``step`` (the splitting step size γ)."""

    def __init__(self, in_features: int, out_features: int, step: float, bias: bool = True) -> None:
        super().__init__(in_features, out_features, bias=bias)
        self.step = float(step)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.step == 1.0:
            return F.linear(input, self.weight, self.bias)
        rows = input.numel() // max(input.size(-1), 1)
        if torch.is_grad_enabled() and self.weight.requires_grad and rows > self.out_features:
            # training: γ on the weight, (γW)x + γb. Its backward multiplies an out × in matrix by γ; with γ
            # on the output (below) the backward multiplies the rows × in input gradient by γ instead
            bias = None if self.bias is None else self.bias * self.step
            return F.linear(input, self.weight * self.step, bias)
        if self.bias is None:
            return F.linear(input, self.weight) * self.step
        # γ·(x Wᵀ + b) inside the GEMM (addmm's alpha/beta): no extra pass over the output in the forward
        flat = input.reshape(-1, input.size(-1))
        out = torch.addmm(self.bias, flat, self.weight.t(), beta=self.step, alpha=self.step)
        return out.view(*input.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, step={self.step}"
