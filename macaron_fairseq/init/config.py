"""The options of DT-Fixup / T-Fixup and the plugin's new-layer setups — one dataclass, the one source of
their defaults (command-line flags are generated from it, as fairseq does for its own configs)."""

# no ``from __future__ import annotations``: fairseq reads the field types at run time, and it understands
# ``Optional[X]`` but not ``X | None``
import argparse
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass

logger = logging.getLogger(__name__)

#: the choices of ``--init-scheme`` (the record stores an index into this tuple: append only)
SCHEMES = ("default", "dt-fixup", "t-fixup", "auto")
NORM_FREE_SCHEMES = ("dt-fixup", "t-fixup", "auto")
#: where the measurement behind ``auto``'s from-scratch choice is documented
MEASUREMENT = "docs/dt_fixup.md §4.2 ('Depth ablation and the choice of scheme')"
DEFAULT_PRETRAINED_LR_MULTIPLIER = 8e-3  # DT-Fixup paper / BorealisAI bert_lr_factor


@dataclass
class FixupConfig(FairseqDataclass):
    init_scheme: ChoiceEnum(SCHEMES) = field(  # type: ignore[valid-type]
        default="default",
        metadata={
            "help": "dt-fixup (Xu et al. 2021: data-dependent factors a = (N·c)^-½, μ measured on the "
            "stack's inputs; the paper's c = 4μ² for vanilla and 4μ²+2μ+2 for relation-aware encoder "
            "layers; Macaron layers and decoders, which the paper does not cover, get this project's own "
            "derivation by the paper's argument: Macaron c = (2+4γ²)μ² (3μ² at γ = ½), decoder layers "
            "+2μ_y² for the cross-attention, μ_y measured on the encoder output; docs/dt_fixup.md §3.2) or "
            "t-fixup (Huang et al. 2020): norm-free new layers, rescaled before the first update (no warm-up "
            "needed); auto: DT-Fixup where the model has a pre-trained part (--pretrained-encoder) or "
            "relation-aware layers (--max-relative-positions), T-Fixup otherwise; default: fairseq's "
            "initialisation"
        },
    )
    dt_fixup_mu: Optional[float] = field(  # noqa: UP045
        default=None,
        metadata={"help": "use this μ (max input-vector norm) for every new stack instead of estimating it"},
    )
    dt_fixup_split: Optional[str] = field(  # noqa: UP045
        default=None, metadata={"help": "split μ is estimated on (default: --train-subset)"}
    )
    norm_free: bool = field(
        default=False,
        metadata={"help": "build the new layers without LayerNorm even with --init-scheme default"},
    )
    max_relative_positions: int = field(
        default=0,
        metadata={
            "help": "relation-aware self-attention with relative positions clipped at K (Shaw et al. 2018); "
            "0 = off"
        },
    )
    pretrained_encoder: Optional[str] = field(  # noqa: UP045
        default=None,
        metadata={
            "help": "load the encoder of this fairseq checkpoint and stack --new-encoder-layers new layers "
            "on top"
        },
    )
    new_encoder_layers: Optional[int] = field(  # noqa: UP045
        default=None, metadata={"help": "number of new encoder layers on top of --pretrained-encoder"}
    )
    pretrained_lr_multiplier: Optional[float] = field(  # noqa: UP045
        default=None,
        metadata={
            "help": "learning-rate multiplier of the pre-trained parameters (default "
            f"{DEFAULT_PRETRAINED_LR_MULTIPLIER}); honoured by --optimizer adam_lr_groups"
        },
    )


def add_fixup_args(parser: argparse.ArgumentParser) -> None:
    """The flags of :class:`FixupConfig`, in their own argument group."""
    group = parser.add_argument_group("initialisation schemes (DT-Fixup / T-Fixup)")
    gen_parser_from_dataclass(group, FixupConfig())


def fixup_fields() -> list[dataclasses.Field]:
    """The option fields of :class:`FixupConfig` (not fairseq's private ``_name``)."""
    return [fld for fld in dataclasses.fields(FixupConfig) if not fld.name.startswith("_")]


def fill_fixup_defaults(args: Any) -> None:
    """Set every :class:`FixupConfig` field ``args`` lacks (configs saved before a field existed)."""
    for fld in fixup_fields():
        if getattr(args, fld.name, None) is None:
            setattr(args, fld.name, fld.default)


def check_fixup_args(args: Any) -> None:
    """Refuse contradictory combinations; warn about a warm-up with a norm-free scheme."""
    scheme = args.init_scheme
    if scheme not in SCHEMES:
        raise ValueError(f"--init-scheme {scheme!r}: choose from {SCHEMES}")
    if args.new_encoder_layers is not None and not args.pretrained_encoder:
        raise ValueError("--new-encoder-layers only applies with --pretrained-encoder")
    applied, _ = resolve_init_scheme(args)
    if args.dt_fixup_mu is not None and applied != "dt-fixup":
        raise ValueError(
            "--dt-fixup-mu only applies when DT-Fixup is applied (--init-scheme dt-fixup, or auto on a "
            "model with a pre-trained part or relation-aware layers); "
            f"--init-scheme {scheme} applies {applied} here"
        )
    if applied == "t-fixup" and relation_aware(args):
        raise ValueError(
            f"--init-scheme t-fixup with --max-relative-positions {args.max_relative_positions}: T-Fixup's "
            "derivation (Huang et al. 2020) does not cover the relation-value embeddings rᵛ, the case "
            "DT-Fixup was derived for (Xu et al. 2021 §3.3); use --init-scheme dt-fixup (or auto)"
        )
    if scheme not in NORM_FREE_SCHEMES:
        return
    warmup = getattr(args, "warmup_updates", 0) or 0
    if warmup > 0:
        logger.warning(
            "--init-scheme %s is meant to train without learning-rate warm-up, but --warmup-updates=%d "
            "is set (use e.g. --lr-scheduler polynomial_decay --power 0.5 --warmup-updates 0)",
            scheme,
            warmup,
        )


def relation_aware(args: Any) -> bool:
    return int(getattr(args, "max_relative_positions", 0) or 0) > 0


def resolve_init_scheme(args: Any) -> tuple[str, str]:
    """(the scheme the new layers get, why). ``dt-fixup``, ``t-fixup`` and ``default`` are what they name;
    ``auto`` is DT-Fixup where the model has a pre-trained part (``--pretrained-encoder``: inputs the scheme
    cannot initialise, bounded by μ — DT-Fixup's case, paper §3) or relation-aware layers
    (``--max-relative-positions``: rᵛ, which T-Fixup's derivation does not cover, paper §3.3), and T-Fixup
    otherwise (a from-scratch model of vanilla or Macaron layers: T-Fixup trained better than DT-Fixup at
    every depth measured with each scheme at its own rate, docs/dt_fixup.md §4.2 — not at every rate: at
    N = 4, η = 1e-2 both exploded and T-Fixup's mean test nll was the higher, 2623.23 against 1658.51
    bits)."""
    scheme = args.init_scheme
    if scheme != "auto":
        return scheme, f"--init-scheme {scheme}"
    if args.pretrained_encoder:
        return "dt-fixup", (
            "the model has a pre-trained part (--pretrained-encoder): its output enters the new layers and "
            "cannot be initialised, DT-Fixup bounds it by the measured μ"
        )
    if relation_aware(args):
        return "dt-fixup", (
            f"the new layers are relation-aware (--max-relative-positions {args.max_relative_positions}): "
            "T-Fixup's derivation does not cover rᵛ, DT-Fixup's does"
        )
    return "t-fixup", (
        "the model has no pre-trained part and no relation-aware layers: its new stacks read only their own "
        f"from-scratch embeddings, where T-Fixup trained better than DT-Fixup ({MEASUREMENT})"
    )


def log_init_scheme(args: Any) -> str:
    """Resolve ``--init-scheme`` at build time and say so: ``auto``'s choice and its reason at WARNING;
    ``dt-fixup`` on a model where ``auto`` would choose T-Fixup at WARNING too, pointing to the measurement.
    Returns the applied scheme."""
    applied, reason = resolve_init_scheme(args)
    if args.init_scheme == "auto":
        logger.warning("--init-scheme auto applies %s: %s", applied, reason)
    elif args.init_scheme == "dt-fixup" and not args.pretrained_encoder and not relation_aware(args):
        logger.warning(
            "--init-scheme dt-fixup on a model with no pre-trained part and no relation-aware layers: "
            "DT-Fixup's data-dependent factors, μ measured on the from-scratch embeddings; on such models "
            "T-Fixup (--init-scheme t-fixup, or auto) trained better at every depth measured, each scheme at "
            "its own rate (%s)",
            MEASUREMENT,
        )
    return applied


def prepare_fixup_args(args: Any) -> None:
    fill_fixup_defaults(args)
    check_fixup_args(args)
