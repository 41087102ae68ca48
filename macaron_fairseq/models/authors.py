"""The Macaron authors' translation architectures, by their names and with their settings.

Lu et al. trained their translation results with a fork of fairseq 0.6 (repository zhuohan123/macaron-net,
``translation/fairseq/models/transformer.py`` and ``translation/macaron-scripts/train/*.sh``). Their
training scripts train the Macaron models ``transformer_iwslt_de_en_macaron_v2``,
``transformer_wmt_en_de_macaron_v2`` and ``transformer_wmt_en_de_big_t2t_macaron``: **pre-LN** encoder and
decoder (a LayerNorm in front of every sub-layer and a final LayerNorm after each stack), attention dropout
0.1 and ReLU dropout 0.1 — not the post-LN ``macaron_small/base/big`` of this plugin, which are the paper's
Eq. 17–19 with fairseq's default (post-LN) placement. The Transformers below (``*_v2``, ``*_big_t2t``) are
the counterparts their model file defines; no script of theirs trains one. Every arch here builds with
their fork's initialisation (:mod:`macaron_fairseq.models.authors_init`).

The table of their settings (rendered from :mod:`macaron_fairseq.models.arch_table` into docs/translation.md)
says model, widths, norm placement and dropouts of each.

The Macaron ones are registered on the plugin's ``macaron`` model (the Macaron layer of
:mod:`macaron_fairseq.modules.macaron_layer`; γ = ½ on both FFNs, as their ``fc_factor = 0.5``); the
Transformer baselines on fairseq's own ``transformer`` model, which is what their fork trained
(``transformer_wmt_en_de_big_t2t`` is fairseq's own registration, identical to theirs). Their
``--relu-dropout`` is fairseq 0.12's ``--activation-dropout``. Differences from their code, none of which
changes these architectures: their decoder sized its first FFN with the *encoder*'s FFN width (equal in
every architecture above; :mod:`macaron_fairseq.upgrade` refuses a checkpoint where they differ), and
their WMT archs set ``macaron = "new"`` where IWSLT sets ``True`` (their layers read only its truth value).

The post-LN ``transformer_iwslt_de_en_macaron`` / ``transformer_wmt_en_de_macaron`` are the settings of
``macaron_small`` / ``macaron_base`` and registered as aliases of them, so that a checkpoint the authors'
fork trained with those names upgrades to them.

Every default is set with ``getattr(args, name, default)``, so command-line flags override them.
"""

from __future__ import annotations

import argparse

from fairseq.models.transformer.transformer_legacy import (
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
    transformer_wmt_en_de,
)

#: the authors' ``*_v2`` / ``*_t2t`` settings on top of the fairseq architecture they extend
AUTHORS_ATTENTION_DROPOUT = 0.1
AUTHORS_RELU_DROPOUT = 0.1


def pre_ln_v2(args: argparse.Namespace) -> None:
    """The authors' ``*_v2`` settings: pre-LN encoder and decoder, attention and ReLU dropout 0.1."""
    args.encoder_normalize_before = getattr(args, "encoder_normalize_before", True)
    args.decoder_normalize_before = getattr(args, "decoder_normalize_before", True)
    args.attention_dropout = getattr(args, "attention_dropout", AUTHORS_ATTENTION_DROPOUT)
    args.activation_dropout = getattr(args, "activation_dropout", AUTHORS_RELU_DROPOUT)


def transformer_iwslt_de_en_v2(args: argparse.Namespace) -> None:
    """Their IWSLT14 Transformer baseline: ``transformer_iwslt_de_en``, pre-LN, dropouts 0.1."""
    pre_ln_v2(args)
    transformer_iwslt_de_en(args)


def transformer_wmt_en_de_v2(args: argparse.Namespace) -> None:
    """Their WMT14 base Transformer baseline: ``transformer_wmt_en_de``, pre-LN, dropouts 0.1."""
    pre_ln_v2(args)
    transformer_wmt_en_de(args)


def transformer_wmt_en_de_big_t2t(args: argparse.Namespace) -> None:
    """Their big baseline, tensor2tensor's settings (= fairseq's own ``transformer_wmt_en_de_big_t2t``):
    ``transformer_vaswani_wmt_en_de_big`` (dropout 0.3), pre-LN, dropouts 0.1."""
    pre_ln_v2(args)
    transformer_vaswani_wmt_en_de_big(args)
