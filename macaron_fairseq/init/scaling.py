"""Apply DT-Fixup / T-Fixup to a list of new layers: generic over "the new layers" of any stack.

``xavier_init_`` and ``apply_dt_fixup`` are all a user of a new stack needs (the translation models of
this plugin, the mixed pre-trained setup, a classifier head of extra layers on a pre-trained encoder).

``apply_dt_fixup`` takes each layer's factor from ``formulas.dt_fixup_scale``: the paper's N^-½/(2μ) for
vanilla and (N(4μ²+2μ+2))^-½ for relation-aware encoder layers; for Macaron layers ((N(2+4γ²)μ²)^-½, i.e.
(3N)^-½/μ at γ = ½) and for decoder layers (their c plus 2μ_y² for the cross-attention, μ_y = ``mu_cross``)
this project's own derivation by the paper's argument — the paper covers neither (docs/dt_fixup.md §3.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from macaron_fairseq.init.errors import NoNewLayersError, ZeroMuError
from macaron_fairseq.init.formulas import (
    T_FIXUP_QKV_GAIN,
    T_FIXUP_VALUE_GAIN,
    dt_fixup_scale,
    t_fixup_decoder_scale,
    t_fixup_embedding_scale,
    t_fixup_encoder_scale,
)
from macaron_fairseq.init.targets import (
    attentions,
    dt_fixup_parameters,
    ffn_linears,
    has_cross_attention,
    residual_blocks,
    t_fixup_parameters,
)


@dataclass(frozen=True)
class StackScaling:
    """What DT-Fixup did to one stack."""

    name: str
    n_layers: int
    mu: float
    mu_cross: float | None
    factor: float  # a = (N·c)^-½ (identical for every layer of a homogeneous stack)
    n_tensors: int

    def describe(self) -> str:
        mu = "" if math.isnan(self.mu) else f", μ={self.mu:.4f}"  # T-Fixup does not use μ
        cross = f", μ_cross={self.mu_cross:.4f}" if self.mu_cross is not None else ""
        return (
            f"{self.name}: N={self.n_layers}{mu}{cross}, factor={self.factor:.6g} "
            f"({self.n_tensors} weight tensors scaled)"
        )


def check_mu(mu: float, what: str) -> float:
    mu = float(mu)
    if not math.isfinite(mu) or mu <= 0.0:
        raise ZeroMuError(
            f"DT-Fixup needs μ > 0 for {what}, got μ = {mu} (all input vectors are zero, or the value is "
            "not finite); check the data / pre-stack module, or pass --dt-fixup-mu"
        )
    return mu


def check_layers(layers: Sequence[nn.Module], what: str) -> None:
    if len(layers) == 0:
        raise NoNewLayersError(
            f"{what}: no new layers to initialise (DT-Fixup/T-Fixup only apply to from-scratch layers)"
        )


@torch.no_grad()
def xavier_init_(layers: Sequence[nn.Module]) -> int:
    """Xavier-initialise the new layers: every weight with dim > 1 ~ Xavier normal (gain 1; BorealisAI
    ``glorot_init``), every bias = 0 (Glorot & Bengio's init; the T-Fixup reference's ``Linear``).

    Zero biases are what makes the theorems' bias-free analysis hold at initialisation: with fairseq's
    default (uniform) biases, relu(W₁x + b₁) and Σα(v x + b_v) are dominated by b₁, b_v once W₁, v are
    scaled down, and the update size grows linearly with N (measured, docs/dt_fixup.md). The BorealisAI
    code leaves PyTorch's default biases. Returns the number of tensors re-initialised.
    """
    count = 0
    for layer in layers:
        for name, p in layer.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_normal_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                continue
            count += 1
    return count


@torch.no_grad()
def apply_dt_fixup(
    layers: Sequence[nn.Module], mu: float, mu_cross: float | None = None, name: str = "stack"
) -> StackScaling:
    """Scale v, w, rᵛ and the FFN weights of each new layer by a = (N·c)^-½ (see ``formulas``; the paper's
    factor for vanilla / relation-aware encoder layers, this project's for Macaron and decoder layers).

    ``mu`` bounds the stack's input vectors, ``mu_cross`` the vectors its cross-attentions attend to
    (decoders). Weights only (dim > 1); biases untouched; in place.
    """
    check_layers(layers, name)
    mu = check_mu(mu, f"the inputs of {name}")
    n = len(layers)
    if any(has_cross_attention(layer) for layer in layers):
        mu_cross = check_mu(mu_cross if mu_cross is not None else float("nan"), f"the cross inputs of {name}")
    factors, n_tensors = set(), 0
    for layer in layers:
        factor = dt_fixup_scale(residual_blocks(layer), n, mu, mu_cross)
        factors.add(round(factor, 15))
        for _, p in dt_fixup_parameters(layer):
            p.mul_(factor)
            n_tensors += 1
    if len(factors) != 1:
        raise ValueError(f"{name}: layers of different kinds in one stack give different factors {factors}")
    return StackScaling(name, n, mu, mu_cross, factors.pop(), n_tensors)


@torch.no_grad()
def t_fixup_init_(layers: Sequence[nn.Module], reset_attention: bool = False) -> None:
    """T-Fixup's own initialisation before scaling (its step 1, Xavier; the reference's fairseq layers):
    FFN linears Xavier-uniform with zero biases (the reference's ``Linear``). Attention: fairseq's
    ``MultiheadAttention`` already holds the reference's init (q, k, v Xavier-uniform with gain 1/√2,
    ``out_proj`` gain 1, its bias 0), which ``reset_attention`` re-draws for layers that were initialised
    otherwise (BERT's ``init_bert_params``: N(0, 0.02)); q, k, v biases are then 0 (the analysis is
    bias-free). The √2 :func:`apply_t_fixup` gives v presumes the 1/√2 gain (``T_FIXUP_VALUE_GAIN``)."""
    for layer in layers:
        for lin in ffn_linears(layer):
            nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)
        if not reset_attention:
            continue
        for attn in attentions(layer):
            for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
                nn.init.xavier_uniform_(proj.weight, gain=T_FIXUP_QKV_GAIN)
                if proj.bias is not None:
                    nn.init.zeros_(proj.bias)
            nn.init.xavier_uniform_(attn.out_proj.weight)
            if attn.out_proj.bias is not None:
                nn.init.zeros_(attn.out_proj.bias)


@torch.no_grad()
def t_fixup_embedding_init_(embeddings: Sequence[nn.Embedding]) -> None:
    """T-Fixup's input embeddings: N(0, d^-½) (its step 1; fairseq's ``Embedding``), the padding row 0."""
    for emb in embeddings:
        nn.init.normal_(emb.weight, mean=0.0, std=emb.embedding_dim**-0.5)
        if emb.padding_idx is not None:
            emb.weight[emb.padding_idx].zero_()


@torch.no_grad()
def apply_t_fixup(
    layers: Sequence[nn.Module],
    side: str,
    embeddings: nn.Embedding | None = None,
    name: str = "stack",
    extra_embeddings: Sequence[nn.Embedding] = (),
) -> StackScaling:
    """T-Fixup (layer6ai-labs ``fixup_initialization``): encoder layers × 0.67·N^-¼, decoder layers
    × (9M)^-¼, v_proj additionally × √2; the embedding (if given, i.e. new and not shared with an
    already-scaled encoder) × (9N)^-¼, and so every other learned embedding summed into the stack's input
    (``extra_embeddings``: BERT's positions and segments, see ``NewStack.extra_embeddings``)."""
    check_layers(layers, name)
    n = len(layers)
    if side == "encoder":
        factor = t_fixup_encoder_scale(n)
    elif side == "decoder":
        factor = t_fixup_decoder_scale(n)
    else:
        raise ValueError(f"side must be 'encoder' or 'decoder', got {side!r}")
    n_tensors = 0
    for layer in layers:
        for _, p, is_value in t_fixup_parameters(layer):
            p.mul_(factor * T_FIXUP_VALUE_GAIN if is_value else factor)
            n_tensors += 1
    for emb in ([embeddings] if embeddings is not None else []) + list(extra_embeddings):
        emb.weight.mul_(t_fixup_embedding_scale(n))
        n_tensors += 1
    return StackScaling(name, n, float("nan"), None, factor, n_tensors)
