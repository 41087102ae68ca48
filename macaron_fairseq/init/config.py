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

SCHEMES = ("default", "dt-fixup", "t-fixup")
NORM_FREE_SCHEMES = ("dt-fixup", "t-fixup")
#: what ``--init-scheme dt-fixup`` does to a model with no pre-trained part (``--dt-fixup-from-scratch``)
FROM_SCRATCH_CHOICES = ("t-fixup", "dt-fixup")
DEFAULT_PRETRAINED_LR_MULTIPLIER = 8e-3  # DT-Fixup paper / BorealisAI bert_lr_factor


@dataclass
class FixupConfig(FairseqDataclass):
    init_scheme: ChoiceEnum(SCHEMES) = field(  # type: ignore[valid-type]
        default="default",
        metadata={
            "help": "dt-fixup (Xu et al. 2021) or t-fixup (Huang et al. 2020): norm-free new layers, "
            "rescaled before the first update (no warm-up needed); default: fairseq's initialisation"
        },
    )
    dt_fixup_mu: Optional[float] = field(  # noqa: UP045
        default=None,
        metadata={"help": "use this μ (max input-vector norm) for every new stack instead of estimating it"},
    )
    dt_fixup_from_scratch: ChoiceEnum(FROM_SCRATCH_CHOICES) = field(  # type: ignore[valid-type]
        default="t-fixup",
        metadata={
            "help": "what --init-scheme dt-fixup does to a model with no pre-trained part (no "
            "--pretrained-encoder): t-fixup (default; its stacks read only their own from-scratch "
            "embeddings, the case T-Fixup is derived for, and it trained better at every depth, "
            "docs/dt_fixup.md 4.2) or dt-fixup (the data-dependent factors, μ measured on the embeddings)"
        },
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
    if args.dt_fixup_mu is not None and scheme != "dt-fixup":
        raise ValueError("--dt-fixup-mu only applies with --init-scheme dt-fixup")
    if args.dt_fixup_from_scratch not in FROM_SCRATCH_CHOICES:
        raise ValueError(
            f"--dt-fixup-from-scratch {args.dt_fixup_from_scratch!r}: choose from {FROM_SCRATCH_CHOICES}"
        )
    if args.dt_fixup_from_scratch == "dt-fixup" and scheme != "dt-fixup":
        raise ValueError("--dt-fixup-from-scratch dt-fixup only applies with --init-scheme dt-fixup")
    if args.dt_fixup_mu is not None and resolved_init_scheme(args) == "t-fixup":
        raise ValueError(
            "--dt-fixup-mu: this model has no pre-trained part (no --pretrained-encoder), so --init-scheme "
            "dt-fixup applies T-Fixup, which has no μ; add --dt-fixup-from-scratch dt-fixup for DT-Fixup's "
            "data-dependent factors"
        )
    if args.new_encoder_layers is not None and not args.pretrained_encoder:
        raise ValueError("--new-encoder-layers only applies with --pretrained-encoder")
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


def resolved_init_scheme(args: Any) -> str:
    """The scheme the new layers get: ``--init-scheme``, except that ``dt-fixup`` on a model with no
    pre-trained part (no ``--pretrained-encoder``) is T-Fixup unless ``--dt-fixup-from-scratch dt-fixup``.

    DT-Fixup's factor N^-½/(2μ) bounds the update for inputs it does not control, of norm ≤ μ (a pre-trained
    encoder's output, paper §3). When every stack reads only the model's own new embeddings, their scale is
    part of the initialisation, which is T-Fixup's derivation (embeddings × (9N)^-¼); on that case the
    data-dependent factor (μ ≈ 12 at d = 64 with √d-scaled embeddings) left DT-Fixup on the unigram plateau
    at the rates post-LN is tuned for, where T-Fixup was better than post-LN at every depth
    (docs/dt_fixup.md §4.2)."""
    scheme = args.init_scheme
    if scheme == "dt-fixup" and not args.pretrained_encoder and args.dt_fixup_from_scratch == "t-fixup":
        return "t-fixup"
    return scheme


def prepare_fixup_args(args: Any) -> None:
    fill_fixup_defaults(args)
    check_fixup_args(args)
