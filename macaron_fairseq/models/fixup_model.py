"""What makes a model of this plugin trainable with DT-Fixup / T-Fixup: flags, norm-free new layers,
relation-aware attention, the pre-trained encoder option, the init record and the init hook.

Mixed into the registered models (``macaron``, ``fixup_transformer``) before fairseq's
``TransformerModel``.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import Any

from torch import nn

from macaron_fairseq.init.errors import NoNewLayersError
from macaron_fairseq.init.fairseq_hook import install_init_hook
from macaron_fairseq.init.record import SCHEMES, InitRecord
from macaron_fairseq.init.scaling import StackScaling, apply_t_fixup, t_fixup_init_, xavier_init_
from macaron_fairseq.init.stacks import NewStack, StackResult
from macaron_fairseq.init.targets import has_cross_attention
from macaron_fairseq.models.layer_plan import NORM_FREE_SCHEMES
from macaron_fairseq.models.plugin_transformer import encoder_output
from macaron_fairseq.models.pretrained_encoder import prepare_pretrained_encoder

logger = logging.getLogger(__name__)

DEFAULT_PRETRAINED_LR_MULTIPLIER = 8e-3  # DT-Fixup paper / BorealisAI bert_lr_factor


def add_fixup_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("initialisation schemes (DT-Fixup / T-Fixup)")
    group.add_argument(
        "--init-scheme",
        choices=SCHEMES,
        default="default",
        help="dt-fixup (Xu et al. 2021) or t-fixup (Huang et al. 2020): norm-free new layers, rescaled "
        "before "
        "the first update (no warm-up needed); default: fairseq's initialisation",
    )
    group.add_argument(
        "--dt-fixup-mu",
        type=float,
        metavar="MU",
        default=None,
        help="use this μ (max input-vector norm) for every new stack instead of estimating it on the data",
    )
    group.add_argument(
        "--dt-fixup-split",
        metavar="SPLIT",
        default=None,
        help="split μ is estimated on (default: --train-subset)",
    )
    group.add_argument(
        "--norm-free",
        action="store_true",
        default=False,
        help="build the new layers without LayerNorm even with --init-scheme default",
    )
    group.add_argument(
        "--max-relative-positions",
        type=int,
        metavar="K",
        default=0,
        help="relation-aware self-attention with relative positions clipped at K (Shaw et al. 2018); 0 = off",
    )
    group.add_argument(
        "--pretrained-encoder",
        metavar="PATH",
        default=None,
        help="load the encoder of this fairseq checkpoint and stack --new-encoder-layers new layers on top",
    )
    group.add_argument(
        "--new-encoder-layers",
        type=int,
        metavar="K",
        default=None,
        help="number of new encoder layers on top of --pretrained-encoder",
    )
    group.add_argument(
        "--pretrained-lr-multiplier", type=float, metavar="M", default=None,
        help="learning-rate multiplier of the pre-trained parameters "
        f"(default {DEFAULT_PRETRAINED_LR_MULTIPLIER}); "
        "honoured by --optimizer adam_lr_groups",
    )  # fmt: skip


def prepare_fixup_args(args: Any) -> None:
    """Fill defaults (older configs) and check combinations."""
    defaults = {
        "init_scheme": "default",
        "dt_fixup_mu": None,
        "dt_fixup_split": None,
        "norm_free": False,
        "max_relative_positions": 0,
        "pretrained_encoder": None,
        "new_encoder_layers": None,
        "pretrained_lr_multiplier": None,
    }
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    scheme = args.init_scheme
    if scheme not in SCHEMES:
        raise ValueError(f"--init-scheme {scheme!r}: choose from {SCHEMES}")
    if args.dt_fixup_mu is not None and scheme != "dt-fixup":
        raise ValueError("--dt-fixup-mu only applies with --init-scheme dt-fixup")
    if args.new_encoder_layers is not None and not args.pretrained_encoder:
        raise ValueError("--new-encoder-layers only applies with --pretrained-encoder")
    if scheme in NORM_FREE_SCHEMES:
        if (getattr(args, "fp16", False) or getattr(args, "bf16", False)) and not (
            getattr(args, "memory_efficient_fp16", False) or getattr(args, "memory_efficient_bf16", False)
        ):
            raise ValueError(
                f"--init-scheme {scheme} rescales weights in place after the optimizer is built; "
                "--fp16/--bf16 "
                "keep fp32 master copies made earlier — use --memory-efficient-fp16/--memory-efficient-bf16"
            )
        warmup = getattr(args, "warmup_updates", 0) or 0
        if warmup > 0:
            logger.warning(
                "--init-scheme %s is meant to train without learning-rate warm-up, but --warmup-updates=%d "
                "is set (use e.g. --lr-scheduler polynomial_decay --power 0.5 --warmup-updates 0)",
                scheme,
                warmup,
            )  # fmt: skip


class FixupModelMixin:
    """Model-side DT-Fixup/T-Fixup support; ``build_model`` wraps the TransformerModel one."""

    encoder: Any
    decoder: Any
    init_record: InitRecord

    @classmethod
    def build_model(cls, args: argparse.Namespace, task: Any) -> Any:
        prepare_fixup_args(args)
        pretrained = prepare_pretrained_encoder(args)
        model = super().build_model(args, task)  # type: ignore[misc]
        model.init_args = args
        if pretrained is not None:
            pretrained.load_into(model.encoder)
            multiplier = (
                args.pretrained_lr_multiplier
                if args.pretrained_lr_multiplier is not None
                else DEFAULT_PRETRAINED_LR_MULTIPLIER
            )
            model.set_pretrained_lr_multiplier(multiplier)
            optimizer = getattr(args, "optimizer", None)
            if multiplier != 1.0 and optimizer is not None and optimizer != "adam_lr_groups":
                logger.warning(
                    "--pretrained-lr-multiplier %g is only honoured by --optimizer adam_lr_groups (got %s): "
                    "the pre-trained encoder will train at the full learning rate",
                    multiplier,
                    optimizer,
                )
        scheme = args.init_scheme
        if scheme != "default":
            new = model.new_layers()
            if not new:
                raise NoNewLayersError(f"--init-scheme {scheme}: the model has no new layers to initialise")
            if scheme == "dt-fixup":
                xavier_init_(new)
            else:
                t_fixup_init_(new)
            model.init_record = InitRecord(scheme)
            install_init_hook(task)
        return model

    # --- structure -----------------------------------------------------------------------------------
    def new_layers(self) -> list[nn.Module]:
        return [*self.encoder.new_layers(), *self.decoder.new_layers()]

    def pretrained_parameters(self) -> list[nn.Parameter]:
        """Encoder parameters outside the new layers when the encoder is pre-trained (else none)."""
        if self.encoder.first_new_layer == 0:
            return []
        new = {id(p) for layer in self.encoder.new_layers() for p in layer.parameters()}
        return [p for p in self.encoder.parameters() if id(p) not in new]

    def set_pretrained_lr_multiplier(self, multiplier: float) -> None:
        for p in self.pretrained_parameters():
            p.lr_multiplier = float(multiplier)

    # --- DT-Fixup ------------------------------------------------------------------------------------
    def init_stacks(self) -> list[NewStack]:
        """Encoder stack (input: embeddings, or the pre-trained encoder's output) then decoder stack
        (input: target embeddings; cross input: the encoder output)."""
        enc, dec = self.encoder, self.decoder
        stacks = []
        if enc.new_layers():
            stacks.append(
                NewStack("encoder", enc.new_layers(), lambda s: enc.stack_input(s["net_input"]["src_tokens"]))
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
                )
            )
        if not stacks:
            raise NoNewLayersError("DT-Fixup: the model has no new layers")
        return stacks

    def store_dt_fixup_results(self, results: Sequence[StackResult]) -> None:
        record = self.init_record
        seconds = 0.0
        for r in results:
            s = r.scaling
            record.set(**{f"mu_{s.name}": s.mu, f"n_{s.name}": s.n_layers, f"factor_{s.name}": s.factor})
            if s.name == "decoder":
                record.set(mu_cross=s.mu_cross)
            if r.estimate is not None:
                seconds += r.estimate.seconds
                record.set(sentences=r.estimate.sentences, tokens=r.estimate.tokens)
        record.set(seconds=seconds)

    # --- T-Fixup -------------------------------------------------------------------------------------
    def apply_t_fixup_scheme(self) -> list[StackScaling]:
        enc, dec = self.encoder, self.decoder
        results = []
        encoder_embedding_new = enc.first_new_layer == 0
        if enc.new_layers():
            emb = enc.embed_tokens if encoder_embedding_new else None
            results.append(apply_t_fixup(enc.new_layers(), "encoder", embeddings=emb, name="encoder"))
        if dec.new_layers():
            shared = dec.embed_tokens is enc.embed_tokens
            emb = None if shared else dec.embed_tokens
            results.append(apply_t_fixup(dec.new_layers(), "decoder", embeddings=emb, name="decoder"))
        for r in results:
            self.init_record.set(**{f"n_{r.name}": r.n_layers, f"factor_{r.name}": r.factor})
        return results
