"""Vanilla (non-Macaron) Transformer layers of the plugin: fairseq's own layers plus the optional
relation-aware self-attention (``--max-relative-positions``).

With K = 0 they are fairseq's ``TransformerEncoderLayerBase`` / ``TransformerDecoderLayerBase``
unchanged (same parameters, same forward).
"""

from __future__ import annotations

from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from macaron_fairseq.modules.relative_attention import RelativeSelfAttentionMixin


class VanillaEncoderLayer(RelativeSelfAttentionMixin, TransformerEncoderLayerBase):
    """Self-attention → FFN (Vaswani et al. 2017), optionally relation-aware (Shaw et al. 2018)."""


class VanillaDecoderLayer(RelativeSelfAttentionMixin, TransformerDecoderLayerBase):
    """Masked self-attention → encoder–decoder attention → FFN, optionally relation-aware self-attention."""
