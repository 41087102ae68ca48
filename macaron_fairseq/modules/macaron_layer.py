"""Macaron encoder and decoder layers (Lu et al., Macaron Net, Eq. 17–19).

Encoder layer (Strang–Marchuk splitting of one layer):

    x ← x + γ·FFN₁(x)          (γ = ½ by default, ``--macaron-ffn-step``)
    x ← x + SelfAttn(x)
    x ← x + γ·FFN₂(x)

Decoder layer: γ·FFN₁ → masked self-attention → encoder–decoder attention → γ·FFN₂.

Both layers subclass fairseq's ``TransformerEncoderLayerBase`` / ``TransformerDecoderLayerBase``: the
attention sub-layers and FFN₂ (fairseq's ``fc1``/``fc2``/``final_layer_norm``) are fairseq's own code,
run by the parent ``forward``; we add FFN₁ (``ffn1_fc1``/``ffn1_fc2``/``ffn1_layer_norm``, its own
weights and LayerNorm) in front of it and put the step γ on the output of both second linear maps
(:class:`ScaledLinear`). Each FFN's inner size is the configured ``ffn_embed_dim``; the Macaron
architectures set it to half of their Transformer counterpart's, so the parameter counts match.

Normalisation follows fairseq: post-norm (``LN(x + branch)``, the paper's setting) by default,
pre-norm (``x + branch(LN(x))``) with ``--encoder/decoder-normalize-before``; norm-free layers (DT-Fixup,
T-Fixup) have their norms replaced by identities (:mod:`macaron_fairseq.modules.norm_free`). With
``--max-relative-positions K`` the self-attention is relation-aware
(:mod:`macaron_fairseq.modules.relative_attention`). Dropout on the FFN₁
output and activation dropout inside it are the layer's ``dropout_module`` /
``activation_dropout_module``, as for FFN₂. FFN₁ is position-wise, so incremental decoding needs no
state beyond what the parent's attention modules cache.
"""

from __future__ import annotations

from typing import Any

from fairseq.modules import LayerNorm
from fairseq.modules.quant_noise import quant_noise
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase
from torch import Tensor, nn

from macaron_fairseq.modules.fused_half_step import (
    COMPILED,
    DEFAULT_IMPLEMENTATION,
    IMPLEMENTATIONS,
    HalfStepSettings,
    half_step_ffn,
    is_fusable_norm,
    is_plain_linear,
    norm_parameters,
)
from macaron_fairseq.modules.half_step_ffn import ScaledLinear
from macaron_fairseq.modules.relative_attention import RelativeSelfAttentionMixin

DEFAULT_FFN_STEP = 0.5
FAIRSEQ_RESIDUAL_CONNECTIONS = (
    TransformerEncoderLayerBase.residual_connection,
    TransformerDecoderLayerBase.residual_connection,
)


class MacaronFFNMixin:
    """FFN₁, the half-step FFN a Macaron layer runs before its attention sub-layers.

    Mixed into a fairseq layer *before* its base class: it provides the scaled ``build_fc2`` (used for
    FFN₂ by the fairseq constructor) and builds/applies FFN₁ from the layer's own settings.
    """

    ffn_step: float
    ffn_impl: str = DEFAULT_IMPLEMENTATION
    embed_dim: int
    normalize_before: bool
    quant_noise: float
    quant_noise_block_size: int

    def build_fc2(self, input_dim: int, output_dim: int, q_noise: float, qn_block_size: int) -> nn.Module:
        return quant_noise(ScaledLinear(input_dim, output_dim, step=self.ffn_step), q_noise, qn_block_size)

    def _build_first_ffn(self, ffn_dim: int, export: bool) -> None:
        self.ffn1_layer_norm = LayerNorm(self.embed_dim, export=export)
        self.ffn1_fc1 = self.build_fc1(self.embed_dim, ffn_dim, self.quant_noise, self.quant_noise_block_size)
        self.ffn1_fc2 = self.build_fc2(ffn_dim, self.embed_dim, self.quant_noise, self.quant_noise_block_size)

    def set_ffn_step(self, step: float) -> None:
        """Set γ of both FFN half steps (``x + γ·FFN(x)``)."""
        self.ffn_step = float(step)
        for fc in (self.ffn1_fc2, self.fc2):
            fc.step = self.ffn_step

    def set_ffn_impl(self, impl: str) -> None:
        """How FFN₁ is computed (:mod:`macaron_fairseq.modules.fused_half_step`): fused, compile or plain."""
        if impl not in IMPLEMENTATIONS:
            raise ValueError(f"--macaron-ffn-impl {impl!r}: choose from {', '.join(IMPLEMENTATIONS)}")
        self.ffn_impl = impl

    def first_ffn_is_fusable(self) -> bool:
        """Whether FFN₁ is made of what the fused function computes (no quant-noise, torch LayerNorm)."""
        return (
            is_plain_linear(self.ffn1_fc1)
            and is_plain_linear(self.ffn1_fc2)
            and is_fusable_norm(self.ffn1_layer_norm)
            and type(self).residual_connection in FAIRSEQ_RESIDUAL_CONNECTIONS  # x + residual
        )

    def first_ffn(self, x: Tensor) -> Tensor:
        """``x + γ·dropout(FFN₁(x))`` with fairseq's pre-/post-norm placement."""
        if self.ffn_impl == "plain" or not self.first_ffn_is_fusable():
            return self.first_ffn_plain(x)
        weight, bias, eps = norm_parameters(self.ffn1_layer_norm)
        out, act = self.dropout_module, self.activation_dropout_module
        fc1, fc2 = self.ffn1_fc1, self.ffn1_fc2
        settings = HalfStepSettings(
            step=float(getattr(fc2, "step", 1.0)),
            dropout=float(out.p),
            dropout_active=bool(out.training or out.apply_during_inference),
            activation_dropout=float(act.p),
            activation_dropout_active=bool(act.training or act.apply_during_inference),
            normalize_before=bool(self.normalize_before),
            layer_norm_eps=eps,
        )
        fn = COMPILED if self.ffn_impl == "compile" else half_step_ffn
        return fn(x, weight, bias, fc1.weight, fc1.bias, fc2.weight, fc2.bias, self.activation_fn, settings)

    def first_ffn_plain(self, x: Tensor) -> Tensor:
        """FFN₁ with fairseq's modules: the reference the fused implementations are tested against."""
        residual = x
        if self.normalize_before:
            x = self.ffn1_layer_norm(x)
        x = self.activation_fn(self.ffn1_fc1(x))
        x = self.activation_dropout_module(x)
        x = self.ffn1_fc2(x)
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.ffn1_layer_norm(x)
        return x


class MacaronEncoderLayer(MacaronFFNMixin, RelativeSelfAttentionMixin, TransformerEncoderLayerBase):
    """γ·FFN₁ → self-attention → γ·FFN₂ (paper Eq. 17–19)."""

    def __init__(self, cfg: Any, return_fc: bool = False, ffn_step: float = DEFAULT_FFN_STEP) -> None:
        self.ffn_step = float(ffn_step)  # read by build_fc2 inside the parent constructor
        super().__init__(cfg, return_fc=return_fc)
        self._build_first_ffn(cfg.encoder.ffn_embed_dim, cfg.export)

    def forward(self, x: Tensor, encoder_padding_mask: Tensor | None, attn_mask: Tensor | None = None):
        return super().forward(self.first_ffn(x), encoder_padding_mask, attn_mask=attn_mask)


class MacaronDecoderLayer(MacaronFFNMixin, RelativeSelfAttentionMixin, TransformerDecoderLayerBase):
    """γ·FFN₁ → masked self-attention → encoder–decoder attention → γ·FFN₂.

    FFN₁ uses the *decoder*'s FFN size (the original Macaron code used the encoder's).
    """

    def __init__(
        self,
        cfg: Any,
        no_encoder_attn: bool = False,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        ffn_step: float = DEFAULT_FFN_STEP,
    ) -> None:
        self.ffn_step = float(ffn_step)
        super().__init__(
            cfg, no_encoder_attn=no_encoder_attn, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn
        )
        self._build_first_ffn(cfg.decoder.ffn_embed_dim, cfg.export)

    def forward(self, x: Tensor, *args: Any, **kwargs: Any):
        return super().forward(self.first_ffn(x), *args, **kwargs)


def add_macaron_layer_args(parser: Any) -> None:
    """``--macaron-ffn-step`` and ``--macaron-ffn-impl``, the options of every model with Macaron layers."""
    parser.add_argument(
        "--macaron-ffn-step",
        type=float,
        metavar="GAMMA",
        help=f"step size γ of each FFN half step, x + γ·FFN(x) (default {DEFAULT_FFN_STEP}: "
        "Strang–Marchuk splitting)",
    )
    parser.add_argument(
        "--macaron-ffn-impl",
        choices=IMPLEMENTATIONS,
        help=f"how the extra half-step FFN is computed (default {DEFAULT_IMPLEMENTATION}): fused (dropout "
        "mask, γ and residual sum in one pass), compile (the same through torch.compile, falling back to "
        "fused if compilation fails) or plain (fairseq's modules); the same mathematics",
    )


def configure_macaron_layers(model: nn.Module, args: Any) -> None:
    """Apply ``args.macaron_ffn_step`` / ``args.macaron_ffn_impl`` (defaults filled in on ``args``, so that
    checkpoints store them) to every Macaron layer of ``model``."""
    if getattr(args, "macaron_ffn_step", None) is None:
        args.macaron_ffn_step = DEFAULT_FFN_STEP
    if getattr(args, "macaron_ffn_impl", None) is None:
        args.macaron_ffn_impl = DEFAULT_IMPLEMENTATION
    for module in model.modules():
        if isinstance(module, MacaronFFNMixin):
            module.set_ffn_step(args.macaron_ffn_step)
            module.set_ffn_impl(args.macaron_ffn_impl)
