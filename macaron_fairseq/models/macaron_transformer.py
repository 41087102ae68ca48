"""The registered fairseq model ``macaron``: fairseq's Transformer with Macaron layers.

Only the layer type changes: embeddings, positional encodings, output projection, every command-line
flag of fairseq's ``transformer`` model, incremental decoding and the hub interface are inherited. The
DT-Fixup/T-Fixup flags (``--init-scheme`` …, :mod:`macaron_fairseq.models.fixup_model`) and
relation-aware self-attention (``--max-relative-positions``) apply as to every model of the plugin.
"""

from __future__ import annotations

import argparse
from typing import Any

from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig, TransformerModel
from torch import nn

from macaron_fairseq.models.fixup_model import FixupModelMixin, add_fixup_args
from macaron_fairseq.models.plugin_transformer import PluginDecoder, PluginEncoder, wrap_layer
from macaron_fairseq.modules.macaron_layer import DEFAULT_FFN_STEP, MacaronFFNMixin

__all__ = ["MacaronDecoder", "MacaronEncoder", "MacaronModel", "wrap_layer"]


class MacaronEncoder(PluginEncoder):
    LAYER_KIND = "macaron"


class MacaronDecoder(PluginDecoder):
    LAYER_KIND = "macaron"


@register_model("macaron")
class MacaronModel(FixupModelMixin, TransformerModel):
    """Transformer whose layers are Macaron layers (Lu et al.; see ``macaron_fairseq.modules``)."""

    @classmethod
    def hub_models(cls) -> dict[str, Any]:
        return {}  # no released checkpoints: load your own with from_pretrained(path, ...)

    @staticmethod
    def add_args(parser: argparse.ArgumentParser) -> None:
        TransformerModel.add_args(parser)
        parser.add_argument(
            "--macaron-ffn-step",
            type=float,
            metavar="GAMMA",
            help=f"step size γ of each FFN half step, x + γ·FFN(x) (default {DEFAULT_FFN_STEP}: "
            "Strang–Marchuk splitting)",
        )
        add_fixup_args(parser)

    @classmethod
    def build_model(cls, args: argparse.Namespace, task: Any) -> MacaronModel:
        step = getattr(args, "macaron_ffn_step", None)
        args.macaron_ffn_step = DEFAULT_FFN_STEP if step is None else step
        model = super().build_model(args, task)
        model.set_macaron_ffn_step(args.macaron_ffn_step)
        return model

    def set_macaron_ffn_step(self, step: float) -> None:
        for module in self.modules():
            if isinstance(module, MacaronFFNMixin):
                module.set_ffn_step(step)

    @classmethod
    def build_encoder(cls, args: Any, src_dict: Any, embed_tokens: nn.Module) -> MacaronEncoder:
        return MacaronEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args: Any, tgt_dict: Any, embed_tokens: nn.Module) -> MacaronDecoder:
        return MacaronDecoder(
            TransformerConfig.from_namespace(args),
            tgt_dict,
            embed_tokens,
            no_encoder_attn=getattr(args, "no_cross_attention", False),
        )
