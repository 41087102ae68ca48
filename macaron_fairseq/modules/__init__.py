"""Layers: Macaron encoder/decoder layers and the half-step FFN."""

from macaron_fairseq.modules.half_step_ffn import ScaledLinear
from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer

__all__ = ["MacaronDecoderLayer", "MacaronEncoderLayer", "ScaledLinear"]
