"""The one table of architectures: every arch the plugin registers, and the ones it pairs them with.

A row names an architecture, the fairseq model it is registered on, the settings it starts from (``base``:
fairseq's or another row's arch function), the width of each FFN half for a Macaron row (half the base's
FFN, so that the parameter counts match the base: Lu et al. §4), its parameter-matched counterpart, its
aliases and its initialisation. Everything else is derived from :data:`ROWS`: the arch functions and their
registration (:mod:`macaron_fairseq.models.architectures`), the counterparts of the parameter tables
(``COUNTERPARTS``, ``BERT_COUNTERPARTS``), the archs built with the authors' initialisation
(:mod:`macaron_fairseq.models.authors_init`), and the architecture table of docs/translation.md
(:func:`markdown_table`, rendered by ``python -m benchmarks.doc_tables``). Adding an architecture is one row.

A Macaron arch is :func:`~macaron_fairseq.models.macaron_version.macaron_of` its base: the base's width,
heads and depth with two FFNs of ``ffn_per_half`` each (Eq. 17–19: FFN½ → attention → FFN½). Every default
is set with ``getattr(args, name, default)`` (inside fairseq's own arch functions too), so command-line
flags override them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from fairseq.models.transformer.transformer_legacy import (
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
    transformer_wmt_en_de,
)

from macaron_fairseq.models import authors, authors_bert, bert
from macaron_fairseq.models.macaron_version import ArchFn, macaron_of

#: the initialisations (:mod:`macaron_fairseq.models.authors_init` applies the authors')
FAIRSEQ_INIT = "fairseq 0.12"
AUTHORS_INIT = "authors' (fairseq 0.6)"
BERT_INIT = "BERT's (N(0, 0.02))"
#: the models whose architectures are BERT's (pre-training and GLUE), not translation
BERT_MODELS = frozenset({"macaron_bert", "vanilla_bert", "authors_bert"})


@dataclass(frozen=True)
class Arch:
    """One architecture (see the module docstring)."""

    name: str
    #: the fairseq model it is registered on; None: fairseq registers it itself
    model: str | None
    #: the settings it starts from; None: fairseq's own registration (``model`` None)
    base: ArchFn | None = None
    #: a Macaron arch: the width of each of its two FFNs; None: the base's FFN
    ffn_per_half: int | None = None
    #: the arch it is parameter-matched with (a Macaron row's Transformer)
    counterpart: str | None = None
    aliases: tuple[str, ...] = ()
    init: str = FAIRSEQ_INIT
    #: the authors' name for another row's settings (registered with that row's function)
    same_as: str | None = None
    #: who defined it, for the docs
    source: str = "plugin"

    @property
    def is_bert(self) -> bool:
        return self.model in BERT_MODELS


def vanilla_bert_small(args: argparse.Namespace) -> None:
    """4 layers, d 256, 4 heads, FFN 1024: BERT's recipe at a size a CPU pre-trains in hours
    (``benchmarks/macaron_real_bert.py``)."""
    bert.bert_defaults(args, layers=4, dim=256, heads=4, ffn=1024)


_AUTHORS = dict(init=AUTHORS_INIT, source="authors")

ROWS: tuple[Arch, ...] = (
    # the plugin's Macaron translation archs: fairseq's Transformer dimensions, post-LN (paper Eq. 17-19)
    Arch(
        "macaron_small",
        "macaron",
        transformer_iwslt_de_en,
        512,
        "transformer_iwslt_de_en",
        ("macaron_iwslt_de_en",),
    ),
    Arch(
        "macaron_base",
        "macaron",
        transformer_wmt_en_de,
        1024,
        "transformer_wmt_en_de",
        ("macaron", "macaron_wmt_en_de"),
    ),
    Arch(
        "macaron_big",
        "macaron",
        transformer_vaswani_wmt_en_de_big,
        2048,
        "transformer_vaswani_wmt_en_de_big",
        ("macaron_wmt_en_de_big",),
    ),
    # the authors' (zhuohan123/macaron-net): pre-LN *_v2 / *_big_t2t, their post-LN names, their baselines
    Arch(
        "transformer_iwslt_de_en_macaron_v2",
        "macaron",
        authors.transformer_iwslt_de_en_v2,
        512,
        "transformer_iwslt_de_en_v2",
        **_AUTHORS,
    ),
    Arch(
        "transformer_wmt_en_de_macaron_v2",
        "macaron",
        authors.transformer_wmt_en_de_v2,
        1024,
        "transformer_wmt_en_de_v2",
        **_AUTHORS,
    ),
    Arch(
        "transformer_wmt_en_de_big_t2t_macaron",
        "macaron",
        authors.transformer_wmt_en_de_big_t2t,
        2048,
        "transformer_wmt_en_de_big_t2t",
        **_AUTHORS,
    ),
    Arch(
        "transformer_iwslt_de_en_macaron",
        "macaron",
        counterpart="transformer_iwslt_de_en",
        same_as="macaron_small",
        **_AUTHORS,
    ),
    Arch(
        "transformer_wmt_en_de_macaron",
        "macaron",
        counterpart="transformer_wmt_en_de",
        same_as="macaron_base",
        **_AUTHORS,
    ),
    Arch("transformer_iwslt_de_en_v2", "transformer", authors.transformer_iwslt_de_en_v2, **_AUTHORS),
    Arch("transformer_wmt_en_de_v2", "transformer", authors.transformer_wmt_en_de_v2, **_AUTHORS),
    Arch("transformer_wmt_en_de_big_t2t", None, **_AUTHORS),
    # the plugin's vanilla (norm-free capable) model on fairseq's Transformer dimensions
    Arch("fixup_transformer_iwslt_de_en", "fixup_transformer", transformer_iwslt_de_en),
    Arch(
        "fixup_transformer_wmt_en_de",
        "fixup_transformer",
        transformer_wmt_en_de,
        aliases=("fixup_transformer",),
    ),
    Arch("fixup_transformer_vaswani_wmt_en_de_big", "fixup_transformer", transformer_vaswani_wmt_en_de_big),
    # BERT (MLM + NSP): BERT as published (Devlin et al.) and its Macaron versions (Lu et al. §5)
    Arch("vanilla_bert_tiny", "vanilla_bert", bert.vanilla_bert_tiny, init=BERT_INIT),
    Arch("vanilla_bert_small", "vanilla_bert", vanilla_bert_small, init=BERT_INIT),
    Arch("vanilla_bert_base", "vanilla_bert", bert.vanilla_bert_base, init=BERT_INIT),
    Arch("vanilla_bert_large", "vanilla_bert", bert.vanilla_bert_large, init=BERT_INIT),
    Arch(
        "macaron_bert_tiny", "macaron_bert", bert.vanilla_bert_tiny, 128, "vanilla_bert_tiny", init=BERT_INIT
    ),
    Arch("macaron_bert_small", "macaron_bert", vanilla_bert_small, 512, "vanilla_bert_small", init=BERT_INIT),
    Arch(
        "macaron_bert_base", "macaron_bert", bert.vanilla_bert_base, 1536, "vanilla_bert_base", init=BERT_INIT
    ),
    Arch(
        "macaron_bert_large",
        "macaron_bert",
        bert.vanilla_bert_large,
        2048,
        "vanilla_bert_large",
        init=BERT_INIT,
    ),
    # the authors' BERT (their bert/ fork): the pre-training model and the classifier their GLUE scripts tune
    Arch(
        "transformer_bert_base_macaron",
        "authors_bert",
        authors_bert.authors_bert_defaults,
        source="authors",
        init="their released weights (macaron-upgrade)",
    ),
    Arch(
        "transformer_classifier_base_macaron",
        "authors_bert",
        authors_bert.authors_bert_defaults,
        source="authors",
        init="their released weights (macaron-upgrade)",
    ),
)

BY_NAME: dict[str, Arch] = {row.name: row for row in ROWS}


def arch_function(row: Arch) -> ArchFn:
    """The function fairseq runs for ``--arch row.name``: the base's settings, for a Macaron row with each
    FFN half ``ffn_per_half`` wide; for an authors' name of another row, that row's function."""
    if row.same_as is not None:
        return arch_function(BY_NAME[row.same_as])
    assert row.base is not None, row.name
    if row.ffn_per_half is None:
        return row.base
    base, width = row.base, row.ffn_per_half

    def fn(args: argparse.Namespace) -> None:
        macaron_of(base, width, args)

    fn.__name__ = fn.__qualname__ = row.name
    fn.__doc__ = f"The Macaron version of ``{base.__name__}``: each FFN half {width} wide."
    return fn


def registered() -> list[Arch]:
    """The rows the plugin registers (fairseq's own registrations excluded)."""
    return [row for row in ROWS if row.model is not None]


def counterparts(bert_family: bool) -> dict[str, str]:
    """Macaron arch → its parameter-matched arch, for translation or BERT (authors' aliases of another row
    excluded: the same model twice)."""
    return {
        row.name: row.counterpart
        for row in ROWS
        if row.counterpart and row.same_as is None and row.is_bert == bert_family
    }


def archs_with_init(init: str) -> frozenset[str]:
    return frozenset(row.name for row in ROWS if row.init == init)


def settings(name: str) -> argparse.Namespace:
    """The settings ``--arch name`` gives when no flag overrides them (fairseq's registry: every arch,
    fairseq's own too)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    assert name in ARCH_MODEL_REGISTRY, name
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[name](args)
    return args


def markdown_table() -> str:
    """The translation architectures of docs/translation.md, every column computed from the arch settings."""
    lines = [
        "| arch (aliases) | defined by | d | heads | layers | FFN per half | norm | dropout / attn / ReLU | "
        "counterpart | initialisation |",
        "|---|---|---:|---:|---|---:|---|---|---|---|",
    ]
    for row in ROWS:
        if row.is_bert or (row.ffn_per_half is None and row.same_as is None):
            continue
        s = settings(row.name)
        names = [f"`{alias}`" for alias in row.aliases]
        if row.same_as:
            names.insert(0, f"= `{row.same_as}`")
        aliases = f" ({', '.join(names)})" if names else ""
        norm = "pre-LN" if getattr(s, "encoder_normalize_before", False) else "post-LN"
        assert row.counterpart is not None, row.name
        counterpart = BY_NAME.get(row.counterpart)
        counterpart_init = counterpart.init if counterpart else FAIRSEQ_INIT
        lines.append(
            f"| `{row.name}`{aliases} | {row.source} | {s.encoder_embed_dim} | {s.encoder_attention_heads} | "
            f"{s.encoder_layers}+{s.decoder_layers} | {s.encoder_ffn_embed_dim} | {norm} | "
            f"{s.dropout:g} / {s.attention_dropout:g} / {s.activation_dropout:g} | `{row.counterpart}` (FFN "
            f"{settings(row.counterpart).encoder_ffn_embed_dim}; {counterpart_init}) | {row.init} |"
        )
    return "\n".join(lines)
