"""Norm-free layers: DT-Fixup and T-Fixup train their new layers without any LayerNorm.

A norm-free layer computes ``x + branch(x)`` for each residual block, with nothing before or after the
sum (T-Fixup §3 / DT-Fixup §3.3). fairseq's layers call their norms unconditionally
(``self.self_attn_layer_norm(x)`` …), so we replace every LayerNorm attribute with ``nn.Identity``; the
layer's parameters and state-dict keys then simply have no norm entries.
"""

from __future__ import annotations

from torch import nn

#: every LayerNorm attribute of fairseq's and our layers (FFN₁'s norm is Macaron-only)
LAYER_NORM_ATTRIBUTES = (
    "self_attn_layer_norm",
    "encoder_attn_layer_norm",
    "final_layer_norm",
    "ffn1_layer_norm",
    "ffn_layernorm",
    "attn_ln",
)


def is_layer_norm(module: nn.Module) -> bool:
    return isinstance(module, nn.LayerNorm) or "LayerNorm" in type(module).__name__


def strip_layer_norms(layer: nn.Module) -> nn.Module:
    """Replace the layer's LayerNorms by identities in place and mark it ``norm_free``; returns it."""
    for name in LAYER_NORM_ATTRIBUTES:
        if getattr(layer, name, None) is not None:
            setattr(layer, name, nn.Identity())
    remaining = [n for n, m in layer.named_modules() if is_layer_norm(m)]
    if remaining:
        raise ValueError(f"{type(layer).__name__} still has LayerNorms after stripping: {remaining}")
    layer.norm_free = True
    return layer
