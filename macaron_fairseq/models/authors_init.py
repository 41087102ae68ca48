"""The Macaron authors' initialisation, for the authors' architectures only.

Their fork of fairseq 0.6 (zhuohan123/macaron-net, commit 3a84e7a) initialises a translation model as
fairseq 0.6 did:

* every ``Linear`` of a layer (``fc1``, ``fc2``, ``macaron_fc1``, ``macaron_fc2``) and the decoder's
  ``project_in_dim`` / ``project_out_dim``: ``nn.init.xavier_uniform_`` weight, zero bias
  (``translation/fairseq/models/transformer.py``, ``Linear``, lines 769-777);
* attention: one ``in_proj_weight`` of shape (3d × d) drawn with ``xavier_uniform_`` — so each of q, k, v
  is uniform on ±√(6/(4d)) — zero ``in_proj_bias``, ``out_proj`` Xavier-uniform with zero bias
  (``translation/fairseq/modules/multihead_attention.py``, ``reset_parameters``);
* token embeddings N(0, d^-½) with a zero padding row, learned positions likewise, an untied output
  projection N(0, d^-½) (``Embedding``, ``PositionalEmbedding``, ``embed_out``); LayerNorm weight 1, bias 0.

fairseq 0.12 differs on the first two points only: it builds ``fc1``/``fc2`` (and so this plugin's FFN
halves) as PyTorch's default ``nn.Linear`` (kaiming-uniform a = √5: weights uniform on ±1/√fan_in, biases
uniform on ±1/√fan_in) and leaves the q/k/v biases at that default; its q/k/v weights (Xavier, gain 1/√2)
have the fork's per-projection bound already, and its embeddings, output projection and ``out_proj`` are
the fork's. So :func:`apply_authors_init` redraws exactly the Linear layers of the encoder and decoder
layers (and the decoder's dimension projections) and zeroes the q/k/v biases; embeddings stay as built.

It applies to the architectures in :data:`AUTHORS_INIT_ARCHS` — the authors' names — whichever model
builds them: the plugin's ``macaron`` model and fairseq's ``transformer`` (their baselines
``transformer_*_v2`` and fairseq's own ``transformer_wmt_en_de_big_t2t``, which fairseq 0.6 introduced
with this initialisation). :func:`install` makes fairseq's ``TransformerModel.build_model`` (which the
plugin's models call too) apply it after building. Every other architecture — the plugin's own
``macaron_small/base/big``, ``fixup_transformer_*`` and fairseq's ``transformer_iwslt_de_en`` /
``transformer_wmt_en_de`` / ``transformer_vaswani_wmt_en_de_big`` — keeps fairseq 0.12's initialisation,
so that it stays comparable with 0.12's baselines. The post-LN authors' names
``transformer_iwslt_de_en_macaron`` / ``transformer_wmt_en_de_macaron`` get their initialisation although
they alias ``macaron_small`` / ``macaron_base``; their Transformer baselines are fairseq's own
``transformer_iwslt_de_en`` / ``transformer_wmt_en_de``, which keep 0.12's.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from fairseq.modules import MultiheadAttention
from torch import nn

from macaron_fairseq.models import arch_table

logger = logging.getLogger(__name__)

#: the architectures built with the authors' initialisation (the authors' rows of the architecture table)
AUTHORS_INIT_ARCHS: frozenset[str] = arch_table.archs_with_init(arch_table.AUTHORS_INIT)

AUTHORS = "authors' (fairseq 0.6: Xavier-uniform Linear, zero biases)"
FAIRSEQ_012 = "fairseq 0.12"


def initialisation_of(arch: str) -> str:
    """Which initialisation a model of ``arch`` gets: :data:`AUTHORS` or :data:`FAIRSEQ_012`."""
    return AUTHORS if arch in AUTHORS_INIT_ARCHS else FAIRSEQ_012


def arch_of(args: Any) -> str | None:
    """The arch name of a Namespace (``arch``) or a Hydra model config (``_name``)."""
    return getattr(args, "arch", None) or getattr(args, "_name", None)


@torch.no_grad()
def xavier_linear_(linear: nn.Linear) -> None:
    """The fork's ``Linear``: Xavier-uniform weight, zero bias."""
    nn.init.xavier_uniform_(linear.weight)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)


@torch.no_grad()
def authors_attention_(attn: MultiheadAttention) -> None:
    """The fork's ``MultiheadAttention.reset_parameters`` on fairseq 0.12's separate q/k/v projections:
    one (3d × d) Xavier-uniform matrix split into q, k, v; zero biases; Xavier-uniform ``out_proj``.
    (Their attention has no other case; with keys/values of another width than the queries each
    projection is drawn on its own.)"""
    projections = (attn.q_proj, attn.k_proj, attn.v_proj)
    if attn.qkv_same_dim:
        d_out, d_in = attn.q_proj.weight.shape
        in_proj = torch.empty(3 * d_out, d_in, dtype=attn.q_proj.weight.dtype)
        nn.init.xavier_uniform_(in_proj)
        for proj, part in zip(projections, in_proj.chunk(3), strict=True):
            proj.weight.copy_(part)
    else:
        for proj in projections:
            nn.init.xavier_uniform_(proj.weight)
    for proj in (*projections, attn.out_proj):
        if proj.bias is not None:
            nn.init.zeros_(proj.bias)
    nn.init.xavier_uniform_(attn.out_proj.weight)


def apply_authors_init(model: nn.Module) -> int:
    """Redraw the encoder and decoder layers' attention and Linear layers (and the decoder's
    ``project_in_dim``/``project_out_dim``) as the authors' fork draws them; the number of modules
    redrawn."""
    count = 0
    for stack_name in ("encoder", "decoder"):
        stack = getattr(model, stack_name, None)
        if stack is None:
            continue
        attention_linears: set[int] = set()
        for layer in getattr(stack, "layers", []):
            for module in layer.modules():
                if isinstance(module, MultiheadAttention):
                    authors_attention_(module)
                    attention_linears |= {id(m) for m in module.modules()}
                    count += 1
            for module in layer.modules():
                if isinstance(module, nn.Linear) and id(module) not in attention_linears:
                    xavier_linear_(module)
                    count += 1
        for name in ("project_in_dim", "project_out_dim"):
            module = getattr(stack, name, None)
            if isinstance(module, nn.Linear):
                xavier_linear_(module)
                count += 1
    return count


def install() -> None:
    """Make fairseq's ``TransformerModel.build_model`` (and so every plugin model's) apply
    :func:`apply_authors_init` to a model of an arch in :data:`AUTHORS_INIT_ARCHS`. Idempotent."""
    from fairseq.models.transformer import TransformerModel

    if getattr(TransformerModel.build_model, "_macaron_authors_init", False):
        return
    original = TransformerModel.build_model.__func__

    def build_model(cls: type, args: Any, task: Any) -> Any:
        model = original(cls, args, task)
        arch = arch_of(args)
        if arch in AUTHORS_INIT_ARCHS:
            redrawn = apply_authors_init(model)
            logger.info("%s: the authors' initialisation (%d modules redrawn)", arch, redrawn)
        return model

    build_model._macaron_authors_init = True  # type: ignore[attr-defined]
    TransformerModel.build_model = classmethod(build_model)  # type: ignore[method-assign]
