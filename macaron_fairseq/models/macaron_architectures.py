"""Macaron architectures: each matches a fairseq Transformer architecture in width, heads and depth,
with each of its two FFNs half as wide, so that the parameter counts match (paper §4).

| arch (alias)                        | d    | heads | layers | FFN/half | counterpart                       |
|-------------------------------------|------|-------|--------|----------|-----------------------------------|
| macaron_small (macaron_iwslt_de_en) | 512  | 4     | 6+6    | 512      | transformer_iwslt_de_en           |
| macaron_base (macaron_wmt_en_de)    | 512  | 8     | 6+6    | 1024     | transformer_wmt_en_de             |
| macaron_big (macaron_wmt_en_de_big) | 1024 | 16    | 6+6    | 2048     | transformer_vaswani_wmt_en_de_big |

Defaults are set with ``getattr(args, name, default)`` so that every command-line flag overrides them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from fairseq.models import register_model_architecture
from fairseq.models.transformer.transformer_legacy import (
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
    transformer_wmt_en_de,
)

from macaron_fairseq.models import macaron_transformer  # noqa: F401  (registers the model first)
from macaron_fairseq.modules.macaron_layer import DEFAULT_FFN_STEP

ArchFn = Callable[[argparse.Namespace], None]


def _register(*names: str) -> Callable[[ArchFn], ArchFn]:
    def decorate(fn: ArchFn) -> ArchFn:
        for name in names:
            register_model_architecture("macaron", name)(fn)
        return fn

    return decorate


def _macaron_of(counterpart: ArchFn, ffn_per_half: int, args: argparse.Namespace) -> None:
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", ffn_per_half)
    args.decoder_ffn_embed_dim = getattr(args, "decoder_ffn_embed_dim", args.encoder_ffn_embed_dim)
    args.macaron_ffn_step = getattr(args, "macaron_ffn_step", DEFAULT_FFN_STEP)
    counterpart(args)


@_register("macaron_small", "macaron_iwslt_de_en")
def macaron_small(args: argparse.Namespace) -> None:
    _macaron_of(transformer_iwslt_de_en, 512, args)


@_register("macaron", "macaron_base", "macaron_wmt_en_de")
def macaron_base(args: argparse.Namespace) -> None:
    _macaron_of(transformer_wmt_en_de, 1024, args)


@_register("macaron_big", "macaron_wmt_en_de_big")
def macaron_big(args: argparse.Namespace) -> None:
    _macaron_of(transformer_vaswani_wmt_en_de_big, 2048, args)


#: arch name -> the fairseq Transformer arch it is parameter-matched with
COUNTERPARTS: dict[str, str] = {
    "macaron_small": "transformer_iwslt_de_en",
    "macaron_base": "transformer_wmt_en_de",
    "macaron_big": "transformer_vaswani_wmt_en_de_big",
}
