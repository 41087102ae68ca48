"""Encoder and decoder of the plugin's models: fairseq's ``TransformerEncoderBase`` /
``TransformerDecoderBase`` whose layers follow a :mod:`layer_plan` (Macaron or vanilla by ``layer_kind``,
new or pre-trained, norm-free or not), plus the "stack input" probes DT-Fixup measures μ on.
"""

from __future__ import annotations

from typing import Any

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerConfig, TransformerDecoderBase, TransformerEncoderBase
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from torch import Tensor, nn

from macaron_fairseq.models.layer_plan import (
    LayerKind,
    LayerSpec,
    build_decoder_layer,
    build_encoder_layer,
    decoder_plan,
    encoder_plan,
)


def wrap_layer(layer: nn.Module, cfg: TransformerConfig) -> nn.Module:
    """Apply fairseq's activation-checkpointing and FSDP wrappers exactly as its own layers get them."""
    if cfg.checkpoint_activations:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    # with checkpointing, FSDP must always wrap the checkpointed layer, whatever its size
    min_params_to_wrap = 0 if cfg.checkpoint_activations else cfg.min_params_to_wrap
    return fsdp_wrap(layer, min_num_params=min_params_to_wrap)


class PluginEncoder(TransformerEncoderBase):
    """Transformer encoder whose i-th layer is built from ``plan[i]`` (new layers of ``layer_kind``)."""

    def __init__(
        self,
        cfg: TransformerConfig,
        dictionary: Any,
        embed_tokens: nn.Module,
        layer_kind: LayerKind,
        return_fc: bool = False,
    ):
        self._plan: list[LayerSpec] = encoder_plan(cfg, layer_kind)
        self._next_layer = 0
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        self.first_new_layer = next((i for i, s in enumerate(self._plan) if s.new), len(self._plan))
        if all(s.norm_free and s.new for s in self._plan):  # a new norm-free stack has no norm at all
            self.layer_norm = None
            self.layernorm_embedding = None

    def build_encoder_layer(self, cfg: TransformerConfig) -> nn.Module:
        spec = self._plan[self._next_layer]
        self._next_layer += 1
        return wrap_layer(build_encoder_layer(spec, cfg, return_fc=self.return_fc), cfg)

    def new_layers(self) -> list[nn.Module]:
        return list(self.layers[self.first_new_layer :])

    def stack_input(
        self, src_tokens: Tensor, upto: int | None = None, token_embeddings: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """The vectors entering layer ``upto`` (default: the first new layer), T × B × C, and the
        non-padding mask T × B — the same computation as ``forward_scriptable`` up to that layer (with
        ``token_embeddings`` in place of the token lookup, as ``forward`` takes them)."""
        upto = self.first_new_layer if upto is None else upto
        padding_mask = src_tokens.eq(self.padding_idx)
        has_pads = padding_mask.any()
        x, _ = self.forward_embedding(src_tokens, token_embeddings)
        x = x * (1 - padding_mask.unsqueeze(-1).type_as(x) * has_pads.type_as(x))
        x = x.transpose(0, 1)
        for layer in self.layers[:upto]:
            out = layer(x, encoder_padding_mask=padding_mask if has_pads else None)
            x = out[0] if isinstance(out, tuple) else out
        return x, ~padding_mask.transpose(0, 1)


class PluginDecoder(TransformerDecoderBase):
    """Transformer decoder whose layers are built from the decoder plan (all new, of ``layer_kind``)."""

    def __init__(
        self,
        cfg: TransformerConfig,
        dictionary: Any,
        embed_tokens: nn.Module,
        layer_kind: LayerKind,
        no_encoder_attn: bool = False,
        output_projection: nn.Module | None = None,
    ):
        self._plan: list[LayerSpec] = decoder_plan(cfg, layer_kind)
        self._next_layer = 0
        super().__init__(
            cfg,
            dictionary,
            embed_tokens,
            no_encoder_attn=no_encoder_attn,
            output_projection=output_projection,
        )
        if all(s.norm_free for s in self._plan):
            self.layer_norm = None
            self.layernorm_embedding = None

    def build_decoder_layer(self, cfg: TransformerConfig, no_encoder_attn: bool = False) -> nn.Module:
        spec = self._plan[self._next_layer]
        self._next_layer += 1
        return wrap_layer(build_decoder_layer(spec, cfg, no_encoder_attn=no_encoder_attn), cfg)

    def new_layers(self) -> list[nn.Module]:
        return list(self.layers)

    def stack_input(self, prev_output_tokens: Tensor) -> tuple[Tensor, Tensor]:
        """The vectors entering the first decoder layer (T × B × C) and the non-padding mask (T × B),
        as in ``extract_features_scriptable`` without incremental state."""
        positions = self.embed_positions(prev_output_tokens) if self.embed_positions is not None else None
        x = self.embed_scale * self.embed_tokens(prev_output_tokens.contiguous())
        if self.quant_noise is not None:
            x = self.quant_noise(x)
        if self.project_in_dim is not None:
            x = self.project_in_dim(x)
        if positions is not None:
            x = x + positions
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x)
        keep = prev_output_tokens.ne(self.padding_idx)
        return x.transpose(0, 1), keep.transpose(0, 1)


def encoder_output(
    encoder: TransformerEncoderBase, src_tokens: Tensor, src_lengths: Tensor
) -> tuple[Tensor, Tensor]:
    """The encoder output a decoder's cross-attention reads (T × B × C) and its non-padding mask."""
    out = encoder(src_tokens, src_lengths=src_lengths)
    x = out["encoder_out"][0]
    pad = out["encoder_padding_mask"][0] if len(out["encoder_padding_mask"]) > 0 else None
    keep = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device) if pad is None else ~pad.transpose(0, 1)
    return x, keep
