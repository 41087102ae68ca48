"""The registered translation models of the plugin: one base, keyed by the kind of its new layers.

* ``macaron`` (:class:`MacaronModel`): fairseq's Transformer with Macaron layers (Lu et al.);
* ``fixup_transformer`` (:class:`FixupTransformerModel`): fairseq's Transformer with vanilla layers; with
  ``--init-scheme default`` and no new-layer options it is fairseq's ``transformer`` (same layers and
  parameters).

Only the layers change: embeddings, positional encodings, output projection, every command-line flag of
fairseq's ``transformer`` model, incremental decoding and the hub interface are inherited. Both take the
DT-Fixup/T-Fixup flags (:mod:`macaron_fairseq.init.config`), relation-aware self-attention
(``--max-relative-positions``) and the pre-trained-encoder setup. The architectures are registered in
:mod:`macaron_fairseq.models.architectures`.
"""

from __future__ import annotations

import argparse
from typing import Any

from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig, TransformerModel
from torch import nn

from macaron_fairseq.init.config import add_fixup_args
from macaron_fairseq.init.stacks import NewStack
from macaron_fairseq.init.targets import has_cross_attention
from macaron_fairseq.models.encoder_decoder import PluginDecoder, PluginEncoder, encoder_output
from macaron_fairseq.models.fixup_support import FixupModelMixin
from macaron_fairseq.models.layer_plan import LayerKind
from macaron_fairseq.models.macaron_options import MacaronModelMixin


class PluginTransformerModel(FixupModelMixin, TransformerModel):
    """fairseq's Transformer whose new layers are of kind ``LAYER_KIND``; encoder and decoder stacks."""

    LAYER_KIND: LayerKind

    @classmethod
    def hub_models(cls) -> dict[str, Any]:
        return {}  # no released checkpoints: load your own with from_pretrained(path, ...)

    @staticmethod
    def add_args(parser: argparse.ArgumentParser) -> None:
        TransformerModel.add_args(parser)
        add_fixup_args(parser)

    @classmethod
    def build_encoder(cls, args: Any, src_dict: Any, embed_tokens: nn.Module) -> PluginEncoder:
        return PluginEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens, cls.LAYER_KIND)

    @classmethod
    def build_decoder(cls, args: Any, tgt_dict: Any, embed_tokens: nn.Module) -> PluginDecoder:
        return PluginDecoder(
            TransformerConfig.from_namespace(args),
            tgt_dict,
            embed_tokens,
            cls.LAYER_KIND,
            no_encoder_attn=getattr(args, "no_cross_attention", False),
        )

    def new_stacks(self) -> list[NewStack]:
        """Encoder stack (input: embeddings, or the pre-trained encoder's output) then decoder stack
        (input: target embeddings; cross input: the encoder output)."""
        enc, dec = self.encoder, self.decoder
        stacks = []
        if enc.new_layers():
            stacks.append(
                NewStack(
                    "encoder",
                    enc.new_layers(),
                    lambda s: enc.stack_input(s["net_input"]["src_tokens"]),
                    t_fixup_side="encoder",
                    embeddings=enc.embed_tokens if enc.first_new_layer == 0 else None,
                )
            )
        if dec.new_layers():
            cross = None
            if any(has_cross_attention(layer) for layer in dec.new_layers()):

                def cross(s: dict) -> tuple:
                    return encoder_output(enc, s["net_input"]["src_tokens"], s["net_input"]["src_lengths"])

            stacks.append(
                NewStack(
                    "decoder",
                    dec.new_layers(),
                    lambda s: dec.stack_input(s["net_input"]["prev_output_tokens"]),
                    cross,
                    t_fixup_side="decoder",
                    # shared embeddings are scaled with the encoder stack (or belong to a pre-trained one)
                    embeddings=None if dec.embed_tokens is enc.embed_tokens else dec.embed_tokens,
                )
            )
        return stacks


@register_model("macaron")
class MacaronModel(MacaronModelMixin, PluginTransformerModel):
    """Transformer whose layers are Macaron layers (Lu et al.; see ``macaron_fairseq.modules``)."""


@register_model("fixup_transformer")
class FixupTransformerModel(PluginTransformerModel):
    """Vanilla Transformer layers (Vaswani et al. 2017) trainable with DT-Fixup / T-Fixup."""

    LAYER_KIND = "vanilla"
