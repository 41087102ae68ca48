"""The Macaron version of a Transformer architecture: the same width, heads and depth, each of the two
FFNs of a layer as wide as given (half the Transformer's, so that the parameter counts match; paper §4)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from macaron_fairseq.modules.macaron_layer import DEFAULT_FFN_STEP

ArchFn = Callable[[argparse.Namespace], None]


def macaron_of(counterpart: ArchFn, ffn_per_half: int, args: argparse.Namespace) -> None:
    """The Macaron version of ``counterpart``: each of the two FFNs ``ffn_per_half`` wide, step γ = ½."""
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", ffn_per_half)
    args.decoder_ffn_embed_dim = getattr(args, "decoder_ffn_embed_dim", args.encoder_ffn_embed_dim)
    args.macaron_ffn_step = getattr(args, "macaron_ffn_step", DEFAULT_FFN_STEP)
    counterpart(args)
