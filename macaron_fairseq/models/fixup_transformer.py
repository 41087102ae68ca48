"""The registered fairseq model ``fixup_transformer``: fairseq's (vanilla) Transformer with the plugin's
options — DT-Fixup/T-Fixup (``--init-scheme``), norm-free layers, relation-aware self-attention
(``--max-relative-positions``) and the pre-trained-encoder setup.

With ``--init-scheme default`` and K = 0 it is fairseq's ``transformer`` (same layers and parameters).

| arch                                  | same dimensions as                 |
|---------------------------------------|------------------------------------|
| fixup_transformer_iwslt_de_en         | transformer_iwslt_de_en            |
| fixup_transformer (…_wmt_en_de)       | transformer_wmt_en_de              |
| fixup_transformer_vaswani_wmt_en_de_big | transformer_vaswani_wmt_en_de_big |
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel
from fairseq.models.transformer.transformer_legacy import (
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
    transformer_wmt_en_de,
)
from torch import nn

from macaron_fairseq.models.fixup_model import FixupModelMixin, add_fixup_args
from macaron_fairseq.models.plugin_transformer import PluginDecoder, PluginEncoder

ArchFn = Callable[[argparse.Namespace], None]


class VanillaEncoder(PluginEncoder):
    LAYER_KIND = "vanilla"


class VanillaDecoder(PluginDecoder):
    LAYER_KIND = "vanilla"


@register_model("fixup_transformer")
class FixupTransformerModel(FixupModelMixin, TransformerModel):
    """Vanilla Transformer layers (Vaswani et al. 2017) trainable with DT-Fixup / T-Fixup."""

    @classmethod
    def hub_models(cls) -> dict[str, Any]:
        return {}

    @staticmethod
    def add_args(parser: argparse.ArgumentParser) -> None:
        TransformerModel.add_args(parser)
        add_fixup_args(parser)

    @classmethod
    def build_encoder(cls, args: Any, src_dict: Any, embed_tokens: nn.Module) -> VanillaEncoder:
        return VanillaEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args: Any, tgt_dict: Any, embed_tokens: nn.Module) -> VanillaDecoder:
        return VanillaDecoder(
            TransformerConfig.from_namespace(args),
            tgt_dict,
            embed_tokens,
            no_encoder_attn=getattr(args, "no_cross_attention", False),
        )


def _register(*names: str) -> Callable[[ArchFn], ArchFn]:
    def decorate(fn: ArchFn) -> ArchFn:
        for name in names:
            register_model_architecture("fixup_transformer", name)(fn)
        return fn

    return decorate


@_register("fixup_transformer_iwslt_de_en")
def fixup_transformer_iwslt_de_en(args: argparse.Namespace) -> None:
    transformer_iwslt_de_en(args)


@_register("fixup_transformer", "fixup_transformer_wmt_en_de")
def fixup_transformer_wmt_en_de(args: argparse.Namespace) -> None:
    transformer_wmt_en_de(args)


@_register("fixup_transformer_vaswani_wmt_en_de_big")
def fixup_transformer_vaswani_wmt_en_de_big(args: argparse.Namespace) -> None:
    transformer_vaswani_wmt_en_de_big(args)
