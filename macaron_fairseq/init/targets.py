"""Which parameters of a layer each scheme touches, and the residual blocks the DT-Fixup analysis sees.

Layers are inspected by attribute (fairseq's names), so fairseq's own layers, our vanilla layers and our
Macaron layers are all covered, wrapped by activation checkpointing or not:

- attention: ``self_attn`` / ``encoder_attn`` with ``v_proj`` (v) and ``out_proj`` (w); relation-aware
  self-attention also has ``relative_values`` (rᵛ) and ``relative_keys`` (rᵏ, not scaled);
- FFNs: ``fc1``/``fc2`` and, in Macaron layers, ``ffn1_fc1``/``ffn1_fc2`` with their step γ.
"""

from __future__ import annotations

from torch import nn

from macaron_fairseq.init.formulas import ResidualBlock
from macaron_fairseq.modules.macaron_layer import MacaronFFNMixin
from macaron_fairseq.modules.relative_attention import RelativeMultiheadAttention

Named = list[tuple[str, nn.Parameter]]


def is_relation_aware(layer: nn.Module) -> bool:
    return isinstance(getattr(layer, "self_attn", None), RelativeMultiheadAttention)


def ffn_pairs(layer: nn.Module) -> list[tuple[str, nn.Module, nn.Module, float]]:
    """(name, first linear, second linear, step γ) of each FFN block of the layer."""
    if isinstance(layer, MacaronFFNMixin):
        step = layer.ffn_step
        return [("ffn1", layer.ffn1_fc1, layer.ffn1_fc2, step), ("ffn", layer.fc1, layer.fc2, step)]
    return [("ffn", layer.fc1, layer.fc2, 1.0)]


def residual_blocks(layer: nn.Module) -> list[ResidualBlock]:
    """The layer's residual blocks in forward order (Macaron: ½FFN₁, attention(s), ½FFN₂)."""
    ffns = ffn_pairs(layer)
    blocks = [ResidualBlock("ffn", step=ffns[0][3])] if len(ffns) == 2 else []
    blocks.append(ResidualBlock("self_attention", relation_aware=is_relation_aware(layer)))
    if getattr(layer, "encoder_attn", None) is not None:
        blocks.append(ResidualBlock("cross_attention"))
    blocks.append(ResidualBlock("ffn", step=ffns[-1][3]))
    return blocks


def attentions(layer: nn.Module) -> list[nn.Module]:
    """The layer's self-attention and, in decoder layers, its cross-attention."""
    found = (getattr(layer, "self_attn", None), getattr(layer, "encoder_attn", None))
    return [a for a in found if a is not None]


def has_cross_attention(layer: nn.Module) -> bool:
    return getattr(layer, "encoder_attn", None) is not None


def _weight(prefix: str, module: nn.Module) -> Named:
    w = module.weight
    return [(f"{prefix}.weight", w)] if w.dim() > 1 else []


def dt_fixup_parameters(layer: nn.Module) -> Named:
    """v, w (self- and cross-attention), rᵛ and both FFN weight matrices — weights with dim > 1 only
    (the BorealisAI ``is_tfix_params`` selection: ``tovalues``, ``unifyheads``, ``ff``,
    ``relation_v_emb``)."""
    out: Named = []
    for attn_name in ("self_attn", "encoder_attn"):
        attn = getattr(layer, attn_name, None)
        if attn is None:
            continue
        out += _weight(f"{attn_name}.v_proj", attn.v_proj) + _weight(f"{attn_name}.out_proj", attn.out_proj)
        if isinstance(attn, RelativeMultiheadAttention):
            out += _weight(f"{attn_name}.relative_values", attn.relative_values)
    for name, fc1, fc2, _ in ffn_pairs(layer):
        prefix = "ffn1_" if name == "ffn1" else ""
        out += _weight(f"{prefix}fc1", fc1) + _weight(f"{prefix}fc2", fc2)
    return out


def t_fixup_parameters(layer: nn.Module) -> list[tuple[str, nn.Parameter, bool]]:
    """(name, weight, is_value_projection): fc1/fc2 (both FFNs), out_proj and v_proj of every attention."""
    out: list[tuple[str, nn.Parameter, bool]] = []
    for attn_name in ("self_attn", "encoder_attn"):
        attn = getattr(layer, attn_name, None)
        if attn is None:
            continue
        out.append((f"{attn_name}.out_proj.weight", attn.out_proj.weight, False))
        out.append((f"{attn_name}.v_proj.weight", attn.v_proj.weight, True))
    for name, fc1, fc2, _ in ffn_pairs(layer):
        prefix = "ffn1_" if name == "ffn1" else ""
        out.append((f"{prefix}fc1.weight", fc1.weight, False))
        out.append((f"{prefix}fc2.weight", fc2.weight, False))
    return out


def ffn_linears(layer: nn.Module) -> list[nn.Linear]:
    return [lin for _, fc1, fc2, _ in ffn_pairs(layer) for lin in (fc1, fc2)]
