"""Layers: Macaron and vanilla encoder/decoder layers, the half-step FFN, relation-aware self-attention,
norm-free stripping."""

from macaron_fairseq.modules.half_step_ffn import ScaledLinear
from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer
from macaron_fairseq.modules.norm_free import strip_layer_norms
from macaron_fairseq.modules.relative_attention import RelativeMultiheadAttention
from macaron_fairseq.modules.vanilla_layer import VanillaDecoderLayer, VanillaEncoderLayer

__all__ = [
    "MacaronDecoderLayer",
    "MacaronEncoderLayer",
    "RelativeMultiheadAttention",
    "ScaledLinear",
    "VanillaDecoderLayer",
    "VanillaEncoderLayer",
    "strip_layer_norms",
]
