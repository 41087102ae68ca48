"""Per-layer plan of a stack: which kind of layer sits at each depth, and whether it is new / norm-free.

A stack from scratch is N new layers of the model's kind. The mixed setup (``--pretrained-encoder``) is
the pre-trained encoder's layers (their own kind, with their LayerNorms) followed by K new layers of the
model's kind (norm-free under DT-Fixup/T-Fixup).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

from torch import nn

from macaron_fairseq.init.config import NORM_FREE_SCHEMES, fixup_fields
from macaron_fairseq.models.hydra_config import require_plugin_fields
from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer
from macaron_fairseq.modules.norm_free import strip_layer_norms
from macaron_fairseq.modules.vanilla_layer import VanillaDecoderLayer, VanillaEncoderLayer

LayerKind = Literal["macaron", "vanilla"]


@dataclass(frozen=True)
class LayerSpec:
    kind: LayerKind
    new: bool = True
    norm_free: bool = False
    max_relative_positions: int = 0


def new_layers_norm_free(cfg: Any) -> bool:
    """DT-Fixup and T-Fixup imply norm-free new layers; ``--norm-free`` asks for them explicitly."""
    return getattr(cfg, "init_scheme", "default") in NORM_FREE_SCHEMES or bool(
        getattr(cfg, "norm_free", False)
    )


def encoder_plan(cfg: Any, kind: LayerKind) -> list[LayerSpec]:
    require_plugin_fields(cfg, [fld.name for fld in fixup_fields()])
    n_total = cfg.encoder.layers
    n_pre = (
        int(getattr(cfg, "pretrained_encoder_layers", 0) or 0)
        if getattr(cfg, "pretrained_encoder", None)
        else 0
    )
    if n_pre > n_total:
        raise ValueError(f"{n_pre} pre-trained encoder layers but only {n_total} encoder layers in total")
    pre = LayerSpec(
        kind=getattr(cfg, "pretrained_encoder_layer_type", kind),
        new=False,
        norm_free=bool(getattr(cfg, "pretrained_encoder_norm_free", False)),
        max_relative_positions=int(getattr(cfg, "pretrained_encoder_max_relative_positions", 0) or 0),
    )
    new = LayerSpec(
        kind, True, new_layers_norm_free(cfg), int(getattr(cfg, "max_relative_positions", 0) or 0)
    )
    return [pre] * n_pre + [new] * (n_total - n_pre)


def decoder_plan(cfg: Any, kind: LayerKind) -> list[LayerSpec]:
    require_plugin_fields(cfg, [fld.name for fld in fixup_fields()])
    new = LayerSpec(
        kind, True, new_layers_norm_free(cfg), int(getattr(cfg, "max_relative_positions", 0) or 0)
    )
    return [new] * cfg.decoder.layers


def _cfg_for(spec: LayerSpec, cfg: Any) -> Any:
    if int(getattr(cfg, "max_relative_positions", 0) or 0) == spec.max_relative_positions:
        return cfg
    layer_cfg = copy.copy(cfg)
    layer_cfg.max_relative_positions = spec.max_relative_positions
    return layer_cfg


def build_encoder_layer(spec: LayerSpec, cfg: Any, return_fc: bool = False) -> nn.Module:
    cls = MacaronEncoderLayer if spec.kind == "macaron" else VanillaEncoderLayer
    layer = cls(_cfg_for(spec, cfg), return_fc=return_fc)
    return strip_layer_norms(layer) if spec.norm_free else layer


def build_decoder_layer(spec: LayerSpec, cfg: Any, no_encoder_attn: bool = False) -> nn.Module:
    cls = MacaronDecoderLayer if spec.kind == "macaron" else VanillaDecoderLayer
    layer = cls(_cfg_for(spec, cfg), no_encoder_attn=no_encoder_attn)
    return strip_layer_norms(layer) if spec.norm_free else layer
