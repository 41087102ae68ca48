"""``--pretrained-encoder PATH``: the encoder of a fairseq checkpoint under K new layers (DT-Fixup's
mixed setting: new layers on a pre-trained encoder whose output scale we do not control).

Loaded inside ``build_model`` (the ``transformer_from_pretrained_xlm`` pattern), so the weights are in
place before the init hook measures μ on the pre-trained encoder's outputs. The pre-trained layers keep
their own kind (Macaron/vanilla, detected from the weights), relative-position setting and LayerNorms; the
new layers are the model's kind. Embedding options of the encoder are taken from the checkpoint.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from macaron_fairseq.checkpoint_reader import read_checkpoint
from macaron_fairseq.init.config import DEFAULT_PRETRAINED_LR_MULTIPLIER

logger = logging.getLogger(__name__)

#: encoder embedding options copied from the pre-trained checkpoint's model config
EMBEDDING_OPTIONS = (
    "encoder_learned_pos",
    "no_scale_embedding",
    "layernorm_embedding",
    "max_source_positions",
    "no_token_positional_embeddings",
    "encoder_attention_heads",
)


@dataclass
class PretrainedEncoder:
    path: str
    state: dict[str, Tensor]  # encoder state dict (keys without the "encoder." prefix)
    options: dict[str, Any]
    n_layers: int
    layer_type: str
    max_relative_positions: int
    norm_free: bool
    embed_dim: int
    ffn_dim: int

    @classmethod
    def read(cls, path: str) -> PretrainedEncoder:
        ckpt, info = read_checkpoint(path, "--pretrained-encoder")  # allow-listed, memory-mapped
        model_cfg = info.model_config
        if model_cfg is None or not isinstance(ckpt.get("model"), dict):
            raise ValueError(
                f"--pretrained-encoder {path}: not a fairseq checkpoint (no model config or weights)"
            )
        state = {k[len("encoder.") :]: v for k, v in ckpt["model"].items() if k.startswith("encoder.")}
        layer_ids = {int(k.split(".")[1]) for k in state if k.startswith("layers.")}
        if not layer_ids:
            raise ValueError(f"--pretrained-encoder {path}: the checkpoint has no encoder layers")
        if bool(getattr(model_cfg, "encoder_normalize_before", False)):
            raise ValueError(
                f"--pretrained-encoder {path}: pre-norm encoders are not supported (their final LayerNorm "
                "belongs between the pre-trained and the new layers); use a post-norm checkpoint"
            )
        rel = state.get("layers.0.self_attn.relative_keys.weight")
        options = {
            k: getattr(model_cfg, k) for k in EMBEDDING_OPTIONS if getattr(model_cfg, k, None) is not None
        }
        return cls(
            path=path,
            state=state,
            options=options,
            n_layers=max(layer_ids) + 1,
            layer_type="macaron" if "layers.0.ffn1_fc1.weight" in state else "vanilla",
            max_relative_positions=0 if rel is None else (rel.shape[0] - 1) // 2,
            norm_free="layers.0.self_attn_layer_norm.weight" not in state,
            embed_dim=int(state["embed_tokens.weight"].shape[1]),
            ffn_dim=int(state["layers.0.fc1.weight"].shape[0]),
        )

    #: the options ``configure`` derives from the checkpoint (no flag sets them)
    DERIVED_OPTIONS = (
        "pretrained_encoder_layers",
        "pretrained_encoder_layer_type",
        "pretrained_encoder_max_relative_positions",
        "pretrained_encoder_norm_free",
    )

    def configure(self, args: Any) -> None:
        """Set the model args so that the encoder is these N layers + ``--new-encoder-layers`` K."""
        new = int(getattr(args, "new_encoder_layers", None) or 0)
        if new < 1:
            raise ValueError("--pretrained-encoder needs --new-encoder-layers K >= 1 (the new layers on top)")
        for key, value in self.options.items():
            setattr(args, key, value)
        args.encoder_embed_dim = self.embed_dim
        args.encoder_ffn_embed_dim = self.ffn_dim
        args.encoder_layers = self.n_layers + new
        args.pretrained_encoder_layers = self.n_layers
        args.pretrained_encoder_layer_type = self.layer_type
        args.pretrained_encoder_max_relative_positions = self.max_relative_positions
        args.pretrained_encoder_norm_free = self.norm_free
        logger.info(
            "pre-trained encoder %s: %d %s layers (d=%d, ffn=%d%s) + %d new layers",
            self.path,
            self.n_layers,
            self.layer_type,
            self.embed_dim,
            self.ffn_dim,
            f", relative K={self.max_relative_positions}" if self.max_relative_positions else "",
            new,
        )

    def load_into(self, encoder: nn.Module, args: Any) -> None:
        """Load the pre-trained weights; every encoder key must come from the checkpoint except those of
        the new layers (and vice versa). Then mark the pre-trained parameters with their learning-rate
        multiplier (``--pretrained-lr-multiplier``)."""
        missing, unexpected = encoder.load_state_dict(self.state, strict=False)
        first_new = self.n_layers
        bad_missing = [
            k for k in missing if not (k.startswith("layers.") and int(k.split(".")[1]) >= first_new)
        ]
        if unexpected or bad_missing:
            raise ValueError(
                f"--pretrained-encoder {self.path} does not fit the encoder: unexpected keys "
                f"{unexpected[:8]}, missing keys {bad_missing[:8]}"
            )
        set_pretrained_lr_multiplier(encoder, args)


def pretrained_parameters(encoder: nn.Module) -> list[nn.Parameter]:
    """Encoder parameters outside its new layers (none when every layer is new)."""
    if encoder.first_new_layer == 0:
        return []
    new = {id(p) for layer in encoder.new_layers() for p in layer.parameters()}
    return [p for p in encoder.parameters() if id(p) not in new]


def optimizer_flattens_parameters(args: Any) -> bool:
    """Whether fairseq's trainer will train one flat fp32 copy of all parameters (``FP16Optimizer`` with
    ``--fp16``, unless ``--fp16-no-flatten-grads``, a memory-efficient variant, ``--amp`` or fully-sharded
    data parallel): no per-parameter learning rate can hold there. ``--bf16`` never flattens."""
    if not getattr(args, "fp16", False) or getattr(args, "bf16", False):
        return False
    if getattr(args, "ddp_backend", None) == "fully_sharded":  # fairseq uses the memory-efficient wrapper
        return False
    keep = ("fp16_no_flatten_grads", "memory_efficient_fp16", "memory_efficient_bf16", "amp")
    return not any(getattr(args, flag, False) for flag in keep)


def set_pretrained_lr_multiplier(encoder: nn.Module, args: Any) -> None:
    """Tag the pre-trained parameters with ``lr_multiplier`` (read by ``--optimizer adam_lr_groups``);
    warn when another optimizer would silently train them at the full rate.

    fairseq's ``FP16Optimizer`` (``--fp16``/``--bf16``) trains fp32 copies of the parameters that keep only
    ``param_group`` and ``optim_overrides`` of their attributes, so for ``adam_lr_groups`` the multiplier is
    also written where fairseq's own convention puts a per-parameter learning-rate scale,
    ``optim_overrides = {"optimizer": {"lr_scale": M}}`` (what ``--optimizer composite`` reads; set for
    ``adam_lr_groups`` only, since ``composite`` would also demand it of every parameter of the group). The
    flat copy of ``--fp16`` keeps nothing per parameter: refused, naming the ways out.
    """
    multiplier = args.pretrained_lr_multiplier
    multiplier = DEFAULT_PRETRAINED_LR_MULTIPLIER if multiplier is None else float(multiplier)
    pretrained = pretrained_parameters(encoder)
    if multiplier != 1.0 and pretrained and optimizer_flattens_parameters(args):
        raise ValueError(
            f"--pretrained-lr-multiplier {multiplier:g} with --fp16: fairseq's FP16Optimizer trains one flat "
            "fp32 copy of all parameters, so the pre-trained encoder would train at the full learning rate. "
            "Add --fp16-no-flatten-grads, or use --memory-efficient-fp16, --amp or --bf16 (they keep a "
            "per-parameter multiplier), or --pretrained-lr-multiplier 1"
        )
    optimizer = getattr(args, "optimizer", None)
    for p in pretrained:
        p.lr_multiplier = multiplier
        if optimizer == "adam_lr_groups":
            p.optim_overrides = {"optimizer": {"lr_scale": multiplier}}
    if multiplier != 1.0 and optimizer is not None and optimizer != "adam_lr_groups":
        logger.warning(
            "--pretrained-lr-multiplier %g is only honoured by --optimizer adam_lr_groups (got %s): "
            "the pre-trained encoder will train at the full learning rate",
            multiplier,
            optimizer,
        )


def prepare_pretrained_encoder(args: Any) -> PretrainedEncoder | None:
    """Read the checkpoint and configure ``args``; None when there is no pre-trained encoder, or when a
    model saved with one is rebuilt for loading and the file is gone (its weights are in the checkpoint)."""
    path = getattr(args, "pretrained_encoder", None)
    if not path:
        return None
    if not os.path.exists(path):
        if getattr(args, "pretrained_encoder_layers", None):
            logger.warning("--pretrained-encoder %s not found; building the stored layout without it", path)
            return None
        raise FileNotFoundError(f"--pretrained-encoder {path}: no such file")
    pre = PretrainedEncoder.read(path)
    pre.configure(args)
    return pre
