"""The forward pass of the Macaron authors' BERT, written from the facts of their code (``bert/fairseq``:
``models/transformer.py`` ``TransformerEncoder``/``TransformerEncoderLayer`` with ``macaron``,
``models/fairseq_model.py`` ``FairseqBertModel``, ``modules/sinusoidal_positional_embedding.py``,
``modules/multihead_attention.py``) with tensor operations only — nothing of the plugin or of fairseq — on
their state dict, their token ids and their segment convention. The upgrade tests compare the plugin's
``authors_bert`` with it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping

import torch
from torch import Tensor

PAD = 1  # their padding id (and the padding row of their segment embedding)
EPS = 1e-5


def layer_norm(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None) -> Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + EPS)
    return y if weight is None else y * weight + bias


def gelu(x: Tensor) -> Tensor:
    """Their ``gelu``: x · ½ · (1 + erf(x / √2))."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def sinusoids(rows: int, dim: int) -> Tensor:
    """tensor2tensor's table as fairseq 0.6 builds it: [sin | cos], row ``PAD`` zero."""
    half = dim // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float64) * -(math.log(10000) / (half - 1)))
    angles = torch.arange(rows, dtype=torch.float64)[:, None] * freq[None]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    table[PAD] = 0
    return table.float()


def positions(tokens: Tensor) -> Tensor:
    """fairseq 0.6's ``make_positions`` for right padding: position t of a real token is PAD + 1 + t, pads
    get PAD."""
    t = torch.arange(tokens.size(1))[None].expand_as(tokens) + PAD + 1
    return torch.where(tokens.ne(PAD), t, torch.full_like(t, PAD))


def their_forward(
    sd: Mapping[str, Tensor], args: argparse.Namespace, tokens: Tensor, segments: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """``(mlm logits B × T × V, next-sentence logit B, final states B × T × d)`` of their model in eval
    mode; ``tokens`` in their ids (right-padded with 1), ``segments`` theirs (1: ``<cls>``, A, padding;
    0: B)."""
    d, heads = args.encoder_embed_dim, args.encoder_attention_heads
    head_dim = d // heads
    embed = sd["encoder.embed_tokens.weight"]
    x = math.sqrt(d) * embed[tokens]
    x = x + sinusoids(int(positions(tokens).max()) + 1, d)[positions(tokens)]
    x = x + sd["encoder.embed_segment.weight"][segments]
    pad = tokens.eq(PAD)
    bsz, length = tokens.shape
    for i in range(args.encoder_layers):
        p = f"encoder.layers.{i}."

        def lin(h: Tensor, name: str, p: str = p) -> Tensor:
            return h @ sd[p + name + ".weight"].T + sd[p + name + ".bias"]

        # the Macaron half: ReLU, x + ½·FFN(LN(x))
        x = x + 0.5 * lin(torch.relu(lin(layer_norm(x), "macaron_fc1")), "macaron_fc2")
        # self-attention on LN(x), q scaled by head_dim^-½, padded keys masked
        h = layer_norm(x)
        qkv = h @ sd[p + "self_attn.in_proj_weight"].T + sd[p + "self_attn.in_proj_bias"]
        q, k, v = (t.reshape(bsz, length, heads, head_dim).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
        scores = (q * head_dim**-0.5) @ k.transpose(-1, -2)
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        attn = torch.softmax(scores, dim=-1) @ v
        x = x + lin(attn.transpose(1, 2).reshape(bsz, length, d), "self_attn.out_proj")
        # the main FFN: GELU, x + ½·FFN(LN(x))
        x = x + 0.5 * lin(gelu(lin(layer_norm(x), "fc1")), "fc2")
    x = layer_norm(x)  # the final LayerNorm, non-affine
    mid = gelu(x @ sd["mid_layer.0.weight"].T + sd["mid_layer.0.bias"])
    mid = layer_norm(mid, sd["mid_layer.2.weight"], sd["mid_layer.2.bias"])
    mlm = mid @ sd["embed_out"].T
    nsp = (x[:, 0] @ sd["classifier.weight"].T + sd["classifier.bias"]).view(-1)
    return mlm, nsp, x
