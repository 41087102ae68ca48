"""The scaling factors of DT-Fixup (Xu et al., ACL 2021) and T-Fixup (Huang et al., ICML 2020): pure math.

DT-Fixup, derivation used here (docs/dt_fixup.md §3.2 has it in full). The paper derives the factors of
vanilla and relation-aware *encoder* layers only; it covers neither Macaron layers (two half-step FFNs)
nor decoder stacks (cross-attention). Their factors below are this project's derivation, by the paper's
argument applied block by block, not the paper's.

A norm-free stack computes f(x) = x + Σ_b γ_b·G_b(x_b) over its residual blocks b. One SGD step
Δθ = −η·∂L/∂θ moves the output by

    Δf ≈ Σ_b γ_b·(∂G_b/∂θ_b)·Δθ_b,   so  ‖Δf‖ = Θ(η·Σ_b γ_b²·‖∂G_b/∂θ_b‖²)         (paper Thm 3.1 / 3.2)

and ‖Δf‖ = Θ(η) independently of depth iff every layer contributes Θ(1/N). With the weights the
scheme scales (v, w, rᵛ, W₁, W₂) at norm a and the block inputs bounded by μ (‖x_b‖ ≤ μ, the
theorems' assumption), treating the softmax as an average (‖Σ_j α_ij x_j‖ ≤ μ):

    self-attention  w·Σα(v x):         ‖∂/∂w‖² + ‖∂/∂v‖²                 = 2a²μ²
    relation-aware  w·Σα(v x + rᵛ):    a²(μ+1)² + a²μ² + a²             = a²(2μ² + 2μ + 2)
    cross-attention on y (‖y‖ ≤ μ_y):  2a²μ_y²
    FFN W₂ φ(W₁ x), step γ:            γ²·(‖∂/∂W₁‖² + ‖∂/∂W₂‖²)          = γ²·2a²μ²

Summing a layer's blocks to c·a² and asking N·c·a² = 1 gives a = (N·c)^-½ (``dt_fixup_scale``):

    vanilla encoder layer      c = 4μ²               → a = N^-½ / (2μ)            (paper, vanilla)
    relation-aware encoder     c = 4μ² + 2μ + 2      → a = (N(4μ²+2μ+2))^-½       (paper §3.3; the
                                                                                 BorealisAI code)
    Macaron encoder (γ = ½)    c = 2μ² + 2·2γ²μ² = 3μ²           → a = (3N)^-½ / μ      (this project)
    relation-aware Macaron     c = 3μ² + 2μ + 2                                         (this project)
    vanilla decoder            c = 4μ² + 2μ_y²  (μ: target-embedding bound,             (this project)
                                                 μ_y: encoder-output bound)
    Macaron decoder            c = 3μ² + 2μ_y²                                          (this project)

(general step γ: a Macaron layer's c is (2 + 4γ²)μ², with the layer's own γ as ``targets.residual_blocks``
reads it, ``--macaron-ffn-step``;
relation-aware decoder layers add 2μ + 2 to their c.)

T-Fixup (layer6ai-labs/T-Fixup, fairseq ``fixup_initialization``): encoder FFN/out_proj/v_proj weights
× 0.67·N^-¼ (v additionally × √2, undoing fairseq's 1/√2 xavier gain), decoder ones × (9M)^-¼,
embeddings × (9N)^-¼ (encoder) / (9M)^-¼ (decoder, when not shared with the encoder).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

BlockKind = Literal["self_attention", "cross_attention", "ffn"]


@dataclass(frozen=True)
class ResidualBlock:
    """One residual block x + γ·G(x) of a layer, as the DT-Fixup analysis sees it."""

    kind: BlockKind
    step: float = 1.0  # γ: ½ for the Macaron half-step FFNs, 1 otherwise
    relation_aware: bool = False  # self-attention with relation-value embeddings rᵛ (Shaw et al.)


def block_coefficient(block: ResidualBlock, mu: float, mu_cross: float | None = None) -> float:
    """c_b in γ_b²·‖∂G_b/∂θ_b‖² = c_b·a² (see the module docstring)."""
    gamma2 = block.step**2
    if block.kind == "ffn":
        return gamma2 * 2.0 * mu**2
    if block.kind == "self_attention":
        extra = 2.0 * mu + 2.0 if block.relation_aware else 0.0
        return gamma2 * (2.0 * mu**2 + extra)
    if block.kind == "cross_attention":
        if mu_cross is None:
            raise ValueError("a cross-attention block needs μ of the attended vectors (mu_cross)")
        return gamma2 * 2.0 * mu_cross**2
    raise ValueError(f"unknown residual block kind {block.kind!r}")


def layer_coefficient(blocks: Sequence[ResidualBlock], mu: float, mu_cross: float | None = None) -> float:
    """c = Σ_b c_b of one layer."""
    return sum(block_coefficient(b, mu, mu_cross) for b in blocks)


def dt_fixup_scale(
    blocks: Sequence[ResidualBlock], n_layers: int, mu: float, mu_cross: float | None = None
) -> float:
    """a = (N·c)^-½: the factor DT-Fixup multiplies v, w, rᵛ and the FFN weights of each layer by (the
    paper's for vanilla / relation-aware encoder layers; for Macaron layers and decoder layers this project's
    extension of its derivation, see the module docstring)."""
    if n_layers < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    return (n_layers * layer_coefficient(blocks, mu, mu_cross)) ** -0.5


def vanilla_scale(n_layers: int, mu: float) -> float:
    """N^-½ / (2μ): DT-Fixup for vanilla Transformer encoder layers (paper §3.3)."""
    return n_layers**-0.5 / (2.0 * mu)


def relation_aware_scale(n_layers: int, mu: float) -> float:
    """(N·(4μ² + 2μ + 2))^-½: DT-Fixup for relation-aware layers (paper §3.3; BorealisAI ``dt_fixup``)."""
    return (n_layers * (4.0 * mu**2 + 2.0 * mu + 2.0)) ** -0.5


def t_fixup_encoder_scale(n_layers: int) -> float:
    """0.67·N^-¼ (T-Fixup, encoder layers)."""
    return 0.67 * n_layers**-0.25


def t_fixup_decoder_scale(n_layers: int) -> float:
    """(9M)^-¼ (T-Fixup, decoder layers)."""
    return (9.0 * n_layers) ** -0.25


def t_fixup_embedding_scale(n_layers: int) -> float:
    """(9N)^-¼ for encoder embeddings, (9M)^-¼ for decoder embeddings (T-Fixup)."""
    return (9.0 * n_layers) ** -0.25


#: the Xavier gain of q, k and v before T-Fixup: fairseq's ``MultiheadAttention.reset_parameters`` (q, k, v of
#: the same size), what the reference's layers start from; ``out_proj`` and the FFN linears have gain 1
T_FIXUP_QKV_GAIN = 1.0 / math.sqrt(2.0)
#: T-Fixup multiplies v_proj by √2 on top of the layer factor, undoing that 1/√2 gain: v then has the
#: Xavier scale of gain 1, as T-Fixup's analysis assumes (its step 1: Xavier for every weight)
T_FIXUP_VALUE_GAIN = 1.0 / T_FIXUP_QKV_GAIN
