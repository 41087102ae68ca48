"""Every architecture the plugin registers, in one place.

Macaron architectures match a fairseq Transformer architecture in width, heads and depth, with each of
their two FFNs half as wide, so that the parameter counts match (paper §4); the ``fixup_transformer_*``
architectures are fairseq's Transformer dimensions on the plugin's vanilla model.

| arch (aliases)                                  | d    | heads | layers | FFN      | counterpart       |
|-------------------------------------------------|------|-------|--------|----------|-------------------|
| macaron_small (macaron_iwslt_de_en)             | 512  | 4     | 6+6    | 2 × 512  | …_iwslt_de_en     |
| macaron_base (macaron, macaron_wmt_en_de)       | 512  | 8     | 6+6    | 2 × 1024 | …_wmt_en_de       |
| macaron_big (macaron_wmt_en_de_big)             | 1024 | 16    | 6+6    | 2 × 2048 | …_wmt_en_de_big   |
| fixup_transformer_iwslt_de_en                   | 512  | 4     | 6+6    | 1024     | …_iwslt_de_en     |
| fixup_transformer_wmt_en_de (fixup_transformer) | 512  | 8     | 6+6    | 2048     | …_wmt_en_de       |
| fixup_transformer_vaswani_wmt_en_de_big         | 1024 | 16    | 6+6    | 4096     | …_wmt_en_de_big   |

(counterpart: fairseq's ``transformer_iwslt_de_en``, ``transformer_wmt_en_de``,
``transformer_vaswani_wmt_en_de_big``, the same dimensions.) These are **post-LN** with attention and ReLU
dropout 0, fairseq's defaults. The Macaron authors' own training scripts use their pre-LN ``*_v2`` /
``*_big_t2t`` architectures instead, registered here under their names with their Transformer baselines
(:mod:`macaron_fairseq.models.authors`): ``transformer_iwslt_de_en_macaron_v2``,
``transformer_wmt_en_de_macaron_v2``, ``transformer_wmt_en_de_big_t2t_macaron`` (model ``macaron``),
``transformer_iwslt_de_en_v2``, ``transformer_wmt_en_de_v2`` (fairseq's ``transformer``), and their post-LN
names ``transformer_iwslt_de_en_macaron`` / ``transformer_wmt_en_de_macaron`` as aliases of
``macaron_small`` / ``macaron_base``.

BERT pre-training (MLM + NSP, :mod:`macaron_fairseq.models.bert`): ``vanilla_bert_base``/``_large`` are
BERT as published (Devlin et al.), the ``macaron_bert_*`` their Macaron versions (Lu et al. §5).

| arch                 | d    | heads | layers | FFN      | counterpart         |
|----------------------|------|-------|--------|----------|---------------------|
| macaron_bert_tiny    | 64   | 4     | 2      | 2 × 128  | vanilla_bert_tiny   |
| macaron_bert_small   | 256  | 4     | 4      | 2 × 512  | vanilla_bert_small  |
| macaron_bert_base    | 768  | 12    | 12     | 2 × 1536 | vanilla_bert_base   |
| macaron_bert_large   | 1024 | 16    | 24     | 2 × 2048 | vanilla_bert_large  |
| vanilla_bert_tiny    | 64   | 4     | 2      | 256      | (CPU tests)         |
| vanilla_bert_small   | 256  | 4     | 4      | 1024     | (CPU benchmarks)    |
| vanilla_bert_base    | 768  | 12    | 12     | 3072     | BERT-base           |
| vanilla_bert_large   | 1024 | 16    | 24     | 4096     | BERT-large          |

(fairseq's own ``bert_base``/``bert_large`` archs of its legacy ``masked_lm`` model are not BERT as
published; see :mod:`macaron_fairseq.models.bert` for the differences.)

Defaults are set with ``getattr(args, name, default)`` (inside fairseq's own arch functions too) so that
every command-line flag overrides them.
"""

from __future__ import annotations

import argparse

from fairseq.models import register_model_architecture
from fairseq.models.transformer.transformer_legacy import (
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
    transformer_wmt_en_de,
)

from macaron_fairseq.models import (  # noqa: F401  (registers the models first)
    authors,
    authors_bert,
    authors_init,
    bert,
    plugin_model,
)
from macaron_fairseq.models.macaron_version import ArchFn, macaron_of


def macaron_small(args: argparse.Namespace) -> None:
    macaron_of(transformer_iwslt_de_en, 512, args)


def macaron_base(args: argparse.Namespace) -> None:
    macaron_of(transformer_wmt_en_de, 1024, args)


def macaron_big(args: argparse.Namespace) -> None:
    macaron_of(transformer_vaswani_wmt_en_de_big, 2048, args)


def macaron_bert_tiny(args: argparse.Namespace) -> None:
    macaron_of(bert.vanilla_bert_tiny, 128, args)


def vanilla_bert_small(args: argparse.Namespace) -> None:
    """4 layers, d 256, 4 heads, FFN 1024: BERT's recipe at a size a CPU pre-trains in hours
    (``benchmarks/macaron_real_bert.py``)."""
    bert.bert_defaults(args, layers=4, dim=256, heads=4, ffn=1024)


def macaron_bert_small(args: argparse.Namespace) -> None:
    macaron_of(vanilla_bert_small, 512, args)


def macaron_bert_base(args: argparse.Namespace) -> None:
    macaron_of(bert.vanilla_bert_base, 1536, args)


def macaron_bert_large(args: argparse.Namespace) -> None:
    macaron_of(bert.vanilla_bert_large, 2048, args)


#: model name -> {arch name: arch function}; the vanilla model uses fairseq's own arch functions
ARCHITECTURES: dict[str, dict[str, ArchFn]] = {
    "macaron": {
        "macaron_small": macaron_small,
        "macaron_base": macaron_base,
        "macaron_big": macaron_big,
        **authors.MACARON,
    },
    "transformer": authors.TRANSFORMER,  # fairseq's own model: the authors' baselines
    "fixup_transformer": {
        "fixup_transformer_iwslt_de_en": transformer_iwslt_de_en,
        "fixup_transformer_wmt_en_de": transformer_wmt_en_de,
        "fixup_transformer_vaswani_wmt_en_de_big": transformer_vaswani_wmt_en_de_big,
    },
    "macaron_bert": {
        "macaron_bert_tiny": macaron_bert_tiny,
        "macaron_bert_small": macaron_bert_small,
        "macaron_bert_base": macaron_bert_base,
        "macaron_bert_large": macaron_bert_large,
    },
    "vanilla_bert": {
        "vanilla_bert_tiny": bert.vanilla_bert_tiny,
        "vanilla_bert_small": vanilla_bert_small,
        "vanilla_bert_base": bert.vanilla_bert_base,
        "vanilla_bert_large": bert.vanilla_bert_large,
    },
}

#: alias -> the arch it names
ALIASES: dict[str, str] = {
    "macaron_iwslt_de_en": "macaron_small",
    "macaron": "macaron_base",
    "macaron_wmt_en_de": "macaron_base",
    "macaron_wmt_en_de_big": "macaron_big",
    "fixup_transformer": "fixup_transformer_wmt_en_de",
    **authors.POST_LN_ALIASES,
}

#: arch name -> the fairseq Transformer arch it is parameter-matched with
COUNTERPARTS: dict[str, str] = {
    "macaron_small": "transformer_iwslt_de_en",
    "macaron_base": "transformer_wmt_en_de",
    "macaron_big": "transformer_vaswani_wmt_en_de_big",
    **{arch: authors.BASELINES[arch] for arch in authors.MACARON},
}

#: BERT arch name -> the vanilla BERT arch it is parameter-matched with
BERT_COUNTERPARTS: dict[str, str] = {
    "macaron_bert_tiny": "vanilla_bert_tiny",
    "macaron_bert_small": "vanilla_bert_small",
    "macaron_bert_base": "vanilla_bert_base",
    "macaron_bert_large": "vanilla_bert_large",
}


def register_all() -> None:
    authors_init.install()  # the authors' archs build with their initialisation
    for model_name, archs in ARCHITECTURES.items():
        for arch_name, fn in archs.items():
            register_model_architecture(model_name, arch_name)(fn)
        for alias, target in ALIASES.items():
            if target in archs:
                register_model_architecture(model_name, alias)(archs[target])


register_all()
