"""An independent implementation of the forward pass of the Macaron authors' translation models, written
from the layer order of their fork (``translation/fairseq/models/transformer.py`` of zhuohan123/macaron-net),
on their parameter names: the reference the upgraded plugin model is compared with.

Their forward, in words (eval mode: every dropout off):

* embeddings: ``√d · E[token]`` plus sinusoidal positions (``sin`` half then ``cos`` half of
  ``pos · 10000^(-i/(d/2-1))``, row ``padding_idx`` zero) or learned ones; the encoder's input is
  left-padded, positions count from ``padding_idx + 1`` at the first real token; padding masked as keys.
* encoder layer: [Macaron: ``x + ½·FFN_m(x)`` with ``layer_norms.2``] → ``x + SelfAttn(x)`` with
  ``layer_norms.0`` → ``x + c·FFN(x)`` with ``layer_norms.1``, ``c = ½`` for Macaron else 1; each norm
  before the branch (pre-LN) or after the residual sum (post-LN); FFN = ``fc2(relu(fc1(x)))``.
* decoder layer: [Macaron: ``x + ½·FFN_m(x)``, ``macaron_layer_norm``] → causal self-attention
  (``self_attn_layer_norm``) → attention over the encoder output (``encoder_attn_layer_norm``) →
  ``x + c·FFN(x)`` (``final_layer_norm``).
* pre-LN: a final ``layer_norm`` after each stack; output logits ``x · E_out^T`` (the shared embedding or
  ``decoder.embed_out``).
* attention: ``in_proj_weight`` holds q, k, v stacked; q is scaled by ``head_dim^-½`` after its bias.

:class:`ReferenceModel` wraps it as a fairseq model (no incremental state: every step re-runs the prefix),
so that fairseq's own beam search can be run on it and on the upgraded model alike.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from fairseq.models import FairseqDecoder, FairseqEncoder, FairseqEncoderDecoderModel
from torch import Tensor

PAD = 1


def sinusoid_table(rows: int, dim: int) -> Tensor:
    half = dim // 2
    rate = math.log(10000) / (half - 1)
    freqs = torch.exp(torch.arange(half, dtype=torch.float) * -rate)
    angles = torch.arange(rows, dtype=torch.float)[:, None] * freqs[None, :]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    if dim % 2:
        table = torch.cat([table, torch.zeros(rows, 1)], dim=1)
    table[PAD] = 0
    return table


def position_ids(tokens: Tensor, left_pad: bool) -> Tensor:
    """fairseq 0.6's positions: PAD+1, PAD+2, ... over the real tokens, PAD at padding."""
    batch, length = tokens.shape
    real = tokens.ne(PAD)
    steps = torch.arange(PAD + 1, PAD + 1 + length).expand(batch, length)
    if left_pad:
        steps = steps - length + real.sum(dim=1, keepdim=True)
    return torch.where(real, steps, torch.full_like(steps, PAD))


class AuthorsReference:
    """Their model's forward from their state dict and args."""

    def __init__(self, args: argparse.Namespace, weights: Mapping[str, Tensor]) -> None:
        self.args, self.w = args, {k: v.float() for k, v in weights.items()}
        self.macaron = bool(getattr(args, "macaron", False))
        self.factor = 0.5 if self.macaron else 1.0

    # ----------------------------------------------------------------------------------- pieces
    def norm(self, name: str, x: Tensor) -> Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.w[f"{name}.weight"], self.w[f"{name}.bias"], eps=1e-5)

    def linear(self, name: str, x: Tensor) -> Tensor:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def ffn(self, fc1: str, fc2: str, x: Tensor) -> Tensor:
        return self.linear(fc2, torch.relu(self.linear(fc1, x)))

    def attention(
        self, name: str, query: Tensor, memory: Tensor, key_pad: Tensor | None, causal: bool, heads: int
    ) -> Tensor:
        """query (T, B, d), memory (S, B, d) -> (T, B, d)."""
        d = query.shape[-1]
        w, b = self.w[f"{name}.in_proj_weight"], self.w[f"{name}.in_proj_bias"]
        q = (query @ w[:d].T + b[:d]) * (d // heads) ** -0.5
        k = memory @ w[d : 2 * d].T + b[d : 2 * d]
        v = memory @ w[2 * d :].T + b[2 * d :]
        t, batch, s = query.shape[0], query.shape[1], memory.shape[0]

        def split(x: Tensor, n: int) -> Tensor:  # (n, B, d) -> (B, heads, n, d/heads)
            return x.reshape(n, batch, heads, d // heads).permute(1, 2, 0, 3)

        scores = split(q, t) @ split(k, s).transpose(-1, -2)
        if causal:
            scores = scores.masked_fill(torch.ones(t, s, dtype=torch.bool).triu(1), float("-inf"))
        if key_pad is not None:
            scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ split(v, s)
        return self.linear(f"{name}.out_proj", out.permute(2, 0, 1, 3).reshape(t, batch, d))

    def sublayer(self, norm: str, x: Tensor, branch: Any, factor: float = 1.0) -> Tensor:
        """One residual step with their LayerNorm placement."""
        pre = (
            self.args.encoder_normalize_before
            if norm.startswith("encoder")
            else self.args.decoder_normalize_before
        )
        out = x + factor * branch(self.norm(norm, x) if pre else x)
        return out if pre else self.norm(norm, out)

    def embed(self, side: str, tokens: Tensor, left_pad: bool) -> Tensor:
        d = getattr(self.args, f"{side}_embed_dim")
        x = math.sqrt(d) * self.w[f"{side}.embed_tokens.weight"][tokens]
        pos = position_ids(tokens, left_pad)
        if getattr(self.args, f"{side}_learned_pos"):
            x = x + self.w[f"{side}.embed_positions.weight"][pos]
        else:
            x = x + sinusoid_table(int(pos.max()) + 1, d)[pos]
        return x.transpose(0, 1)

    def self_attention(self, name: str, pad: Tensor | None, causal: bool, heads: int, x: Tensor) -> Tensor:
        return self.attention(name, x, x, pad, causal, heads)

    def macaron_step(self, norm: str, p: str, x: Tensor) -> Tensor:
        """Their first half step: ``x + ½·FFN_m(x)``."""
        return self.sublayer(norm, x, partial(self.ffn, f"{p}.macaron_fc1", f"{p}.macaron_fc2"), 0.5)

    def ffn_step(self, norm: str, p: str, x: Tensor) -> Tensor:
        return self.sublayer(norm, x, partial(self.ffn, f"{p}.fc1", f"{p}.fc2"), self.factor)

    # ------------------------------------------------------------------------------------ model
    def encode(self, src_tokens: Tensor) -> tuple[Tensor, Tensor | None]:
        a = self.args
        x = self.embed("encoder", src_tokens, left_pad=True)
        pad = src_tokens.eq(PAD)
        pad = pad if pad.any() else None
        for i in range(a.encoder_layers):
            p = f"encoder.layers.{i}"
            if self.macaron:
                x = self.macaron_step(f"{p}.layer_norms.2", p, x)
            attend = partial(self.self_attention, f"{p}.self_attn", pad, False, a.encoder_attention_heads)
            x = self.sublayer(f"{p}.layer_norms.0", x, attend)
            x = self.ffn_step(f"{p}.layer_norms.1", p, x)
        if a.encoder_normalize_before:
            x = self.norm("encoder.layer_norm", x)
        return x, pad

    def decode(self, prev_output_tokens: Tensor, encoder: tuple[Tensor, Tensor | None]) -> Tensor:
        a = self.args
        memory, memory_pad = encoder
        heads = a.decoder_attention_heads
        x = self.embed("decoder", prev_output_tokens, left_pad=False)
        for i in range(a.decoder_layers):
            p = f"decoder.layers.{i}"
            if self.macaron:
                x = self.macaron_step(f"{p}.macaron_layer_norm", p, x)
            x = self.sublayer(
                f"{p}.self_attn_layer_norm",
                x,
                partial(self.self_attention, f"{p}.self_attn", None, True, heads),
            )
            cross = partial(
                self.attention,
                f"{p}.encoder_attn",
                memory=memory,
                key_pad=memory_pad,
                causal=False,
                heads=heads,
            )
            x = self.sublayer(f"{p}.encoder_attn_layer_norm", x, lambda y, cross=cross: cross(query=y))
            x = self.ffn_step(f"{p}.final_layer_norm", p, x)
        if a.decoder_normalize_before:
            x = self.norm("decoder.layer_norm", x)
        out = self.w.get("decoder.embed_out", self.w["decoder.embed_tokens.weight"])
        return x.transpose(0, 1) @ out.T

    def logits(self, src_tokens: Tensor, prev_output_tokens: Tensor) -> Tensor:
        return self.decode(prev_output_tokens, self.encode(src_tokens))


# ------------------------------------------------------------------------- as a fairseq model
class _Encoder(FairseqEncoder):
    def __init__(self, ref: AuthorsReference, dictionary: Any) -> None:
        super().__init__(dictionary)
        self.ref = ref

    def forward(self, src_tokens: Tensor, src_lengths: Tensor | None = None, **_: Any) -> dict[str, Any]:
        memory, pad = self.ref.encode(src_tokens)
        return {"memory": memory, "pad": pad}

    def reorder_encoder_out(self, encoder_out: dict[str, Any], new_order: Tensor) -> dict[str, Any]:
        pad = encoder_out["pad"]
        return {
            "memory": encoder_out["memory"].index_select(1, new_order),
            "pad": None if pad is None else pad.index_select(0, new_order),
        }


class _Decoder(FairseqDecoder):
    def __init__(self, ref: AuthorsReference, dictionary: Any) -> None:
        super().__init__(dictionary)
        self.ref = ref

    def forward(self, prev_output_tokens: Tensor, encoder_out: dict[str, Any] | None = None, **_: Any):
        assert encoder_out is not None
        return self.ref.decode(prev_output_tokens, (encoder_out["memory"], encoder_out["pad"])), {
            "attn": None
        }


class ReferenceModel(FairseqEncoderDecoderModel):
    """The reference as a fairseq encoder–decoder (fairseq's ``SequenceGenerator`` runs on it)."""

    def __init__(self, ref: AuthorsReference, src_dict: Any, tgt_dict: Any) -> None:
        super().__init__(_Encoder(ref, src_dict), _Decoder(ref, tgt_dict))

    def max_decoder_positions(self) -> int:
        return 1024
