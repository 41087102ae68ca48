"""The registered fairseq model ``macaron``: fairseq's Transformer with Macaron layers.

Only the layer type changes: embeddings, positional encodings, output projection, every command-line
flag of fairseq's ``transformer`` model, incremental decoding and the hub interface are inherited.
"""

from __future__ import annotations

import argparse
from typing import Any

from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerEncoderBase,
    TransformerModel,
)
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from torch import nn

from macaron_fairseq.modules.macaron_layer import (
    DEFAULT_FFN_STEP,
    MacaronDecoderLayer,
    MacaronEncoderLayer,
    MacaronFFNMixin,
)


def wrap_layer(layer: nn.Module, cfg: TransformerConfig) -> nn.Module:
    """Apply fairseq's activation-checkpointing and FSDP wrappers exactly as its own layers get them."""
    if cfg.checkpoint_activations:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    # with checkpointing, FSDP must always wrap the checkpointed layer, whatever its size
    min_params_to_wrap = 0 if cfg.checkpoint_activations else cfg.min_params_to_wrap
    return fsdp_wrap(layer, min_num_params=min_params_to_wrap)


class MacaronEncoder(TransformerEncoderBase):
    def build_encoder_layer(self, cfg: TransformerConfig) -> nn.Module:
        return wrap_layer(MacaronEncoderLayer(cfg, return_fc=self.return_fc), cfg)


class MacaronDecoder(TransformerDecoderBase):
    def build_decoder_layer(self, cfg: TransformerConfig, no_encoder_attn: bool = False) -> nn.Module:
        return wrap_layer(MacaronDecoderLayer(cfg, no_encoder_attn=no_encoder_attn), cfg)


@register_model("macaron")
class MacaronModel(TransformerModel):
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
