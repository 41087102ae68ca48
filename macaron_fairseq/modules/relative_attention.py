"""Relation-aware self-attention (Shaw, Uszkoreit & Vaswani 2018, "Self-Attention with Relative Position
Representations"), the layer type DT-Fixup's Theorem 3.2 is stated for.

For query position i and key position j, with the relative distance clipped at K (Shaw et al. Eq. 5),

    r_ij^k = wᵏ[clip(j − i, −K, K)],   r_ij^v = wᵛ[clip(j − i, −K, K)]      (2K + 1 learned vectors each)
    e_ij   = q_i · (k_j + r_ij^k) / √d_h                                       (Shaw et al. Eq. 4)
    z_i    = Σ_j softmax_j(e_ij) · (v_j + r_ij^v)                              (Shaw et al. Eq. 3)

per head (the relation embeddings have the head size d_h and are shared across heads, as in the paper),
followed by the output projection. With wᵏ = wᵛ = 0 this is exactly fairseq's ``MultiheadAttention``.

Incremental decoding caches keys/values like fairseq's attention (same ``prev_key``/``prev_value`` buffer
layout, so ``reorder_incremental_state`` works unchanged); the query of step t sits at position
``src_len − tgt_len + i``, so relative positions are the same as in full decoding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn


def relative_position_index(tgt_len: int, src_len: int, max_distance: int, device: torch.device) -> Tensor:
    """``clip(j − i, −K, K) + K`` for queries at positions ``src_len − tgt_len + i`` (shape tgt × src)."""
    offset = src_len - tgt_len
    q_pos = torch.arange(offset, offset + tgt_len, device=device)
    k_pos = torch.arange(src_len, device=device)
    return (k_pos[None, :] - q_pos[:, None]).clamp(-max_distance, max_distance) + max_distance


class RelativeMultiheadAttention(MultiheadAttention):
    """Self-attention with clipped relative-position key and value embeddings rᵏ, rᵛ (Shaw et al. 2018)."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        max_relative_positions: int,
        dropout: float = 0.0,
        bias: bool = True,
        q_noise: float = 0.0,
        qn_block_size: int = 8,
    ) -> None:
        if max_relative_positions < 1:
            raise ValueError(f"max_relative_positions must be >= 1, got {max_relative_positions}")
        super().__init__(
            embed_dim,
            num_heads,
            dropout=dropout,
            bias=bias,
            self_attention=True,
            q_noise=q_noise,
            qn_block_size=qn_block_size,
        )
        self.max_relative_positions = int(max_relative_positions)
        n_rel = 2 * self.max_relative_positions + 1
        self.relative_keys = nn.Embedding(n_rel, self.head_dim)  # rᵏ
        self.relative_values = nn.Embedding(n_rel, self.head_dim)  # rᵛ
        nn.init.xavier_uniform_(self.relative_keys.weight)
        nn.init.xavier_uniform_(self.relative_values.weight)

    def extra_repr(self) -> str:
        return f"max_relative_positions={self.max_relative_positions}"

    def _heads(self, x: Tensor, length: int, bsz: int) -> Tensor:
        return x.contiguous().view(length, bsz * self.num_heads, self.head_dim).transpose(0, 1)

    def forward(
        self,
        query: Tensor,
        key: Tensor | None,
        value: Tensor | None,
        key_padding_mask: Tensor | None = None,
        incremental_state: dict[str, dict[str, Tensor | None]] | None = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Tensor | None = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        if static_kv:
            raise ValueError("relation-aware attention is self-attention only (static_kv=False)")
        if need_head_weights:
            need_weights = True
        tgt_len, bsz, embed_dim = query.size()
        q = self._heads(self.q_proj(query) * self.scaling, tgt_len, bsz)
        k = self._heads(self.k_proj(query), tgt_len, bsz)
        v = self._heads(self.v_proj(query), tgt_len, bsz)

        if incremental_state is not None:
            saved_state = self._get_input_buffer(incremental_state)
            if "prev_key" in saved_state:
                prev_key = saved_state["prev_key"]
                prev_value = saved_state["prev_value"]
                assert prev_key is not None and prev_value is not None
                k = torch.cat([prev_key.view(bsz * self.num_heads, -1, self.head_dim), k], dim=1)
                v = torch.cat([prev_value.view(bsz * self.num_heads, -1, self.head_dim), v], dim=1)
            key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
                key_padding_mask=key_padding_mask,
                prev_key_padding_mask=saved_state.get("prev_key_padding_mask"),
                batch_size=bsz,
                src_len=k.size(1),
                static_kv=False,
            )
            saved_state["prev_key"] = k.view(bsz, self.num_heads, -1, self.head_dim)
            saved_state["prev_value"] = v.view(bsz, self.num_heads, -1, self.head_dim)
            saved_state["prev_key_padding_mask"] = key_padding_mask
            self._set_input_buffer(incremental_state, saved_state)

        src_len = k.size(1)
        index = relative_position_index(tgt_len, src_len, self.max_relative_positions, query.device)
        rel_k = self.relative_keys(index)  # tgt × src × d_h
        rel_v = self.relative_values(index)

        # e_ij = q_i·k_j + q_i·r_ij^k   (q already carries 1/√d_h)
        attn_weights = torch.bmm(q, k.transpose(1, 2)) + torch.einsum("btd,tsd->bts", q, rel_k)
        if attn_mask is not None:
            attn_weights = attn_weights + attn_mask.unsqueeze(0)
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(
                key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool), float("-inf")
            )
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        if before_softmax:
            return attn_weights, v

        probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32).type_as(attn_weights)
        dropped = self.dropout_module(probs)
        # z_i = Σ_j α_ij (v_j + r_ij^v)
        attn = torch.bmm(dropped, v) + torch.einsum("bts,tsd->btd", dropped, rel_v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        attn = self.out_proj(attn)

        weights: Tensor | None = None
        if need_weights:
            weights = probs.view(bsz, self.num_heads, tgt_len, src_len).transpose(1, 0)
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return attn, weights


class RelativeSelfAttentionMixin:
    """Builds :class:`RelativeMultiheadAttention` as the layer's self-attention when the config carries
    ``max_relative_positions`` K > 0 (``--max-relative-positions``); fairseq's attention otherwise.

    Mixed into a fairseq encoder or decoder layer before its base class.
    """

    quant_noise: float
    quant_noise_block_size: int

    def build_self_attention(self, embed_dim: int, cfg, *args, **kwargs) -> nn.Module:
        max_rel = int(getattr(cfg, "max_relative_positions", 0) or 0)
        if max_rel <= 0:
            return super().build_self_attention(embed_dim, cfg, *args, **kwargs)  # type: ignore[misc]
        is_decoder = hasattr(self, "cross_self_attention")
        if is_decoder and (cfg.cross_self_attention or any(args) or any(kwargs.values())):
            raise ValueError(
                "--max-relative-positions does not support cross-self-attention/bias_kv/zero_attn"
            )
        side = cfg.decoder if is_decoder else cfg.encoder
        return RelativeMultiheadAttention(
            embed_dim,
            side.attention_heads,
            max_relative_positions=max_rel,
            dropout=cfg.attention_dropout,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
        )
