"""Relation-aware self-attention (Shaw et al. 2018): fallback and equivalence with fairseq's attention,
clipping, shapes, incremental ≡ full decoding with relative positions, in vanilla and Macaron models."""

from __future__ import annotations

import pytest
import torch
from fairseq.models.transformer import TransformerConfig
from fairseq.modules import MultiheadAttention
from helpers import TINY, build_model

from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer
from macaron_fairseq.modules.relative_attention import RelativeMultiheadAttention, relative_position_index
from macaron_fairseq.modules.vanilla_layer import VanillaDecoderLayer, VanillaEncoderLayer

D, HEADS, T, B = 16, 4, 6, 3


def twins(k: int = 2) -> tuple[RelativeMultiheadAttention, MultiheadAttention]:
    torch.manual_seed(0)
    rel = RelativeMultiheadAttention(D, HEADS, max_relative_positions=k).eval()
    plain = MultiheadAttention(D, HEADS, self_attention=True).eval()
    state = {k_: v for k_, v in rel.state_dict().items() if not k_.startswith("relative_")}
    plain.load_state_dict(state, strict=True)
    return rel, plain


def test_relative_index_is_clipped_distance() -> None:
    idx = relative_position_index(4, 4, 2, torch.device("cpu"))
    expected = torch.tensor([[2, 3, 4, 4], [1, 2, 3, 4], [0, 1, 2, 3], [0, 0, 1, 2]])
    torch.testing.assert_close(idx, expected)
    # an incremental step: one query at position 3 of 4
    torch.testing.assert_close(relative_position_index(1, 4, 2, torch.device("cpu")), expected[3:])


def test_zero_relation_embeddings_give_fairseq_attention() -> None:
    rel, plain = twins()
    with torch.no_grad():
        rel.relative_keys.weight.zero_()
        rel.relative_values.weight.zero_()
    x = torch.randn(T, B, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, -2:] = True
    out, w = rel(x, x, x, key_padding_mask=pad, need_weights=True)
    ref, ref_w = plain(x, x, x, key_padding_mask=pad, need_weights=True)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)
    assert out.shape == (T, B, D) and w.shape == (B, T, T)


def test_relation_embeddings_change_the_output_and_get_gradients() -> None:
    rel, plain = twins()
    x = torch.randn(T, B, D)
    out, _ = rel(x, x, x)
    assert not torch.allclose(out, plain(x, x, x)[0])
    out.sum().backward()
    assert rel.relative_keys.weight.grad.abs().sum() > 0
    assert rel.relative_values.weight.grad.abs().sum() > 0
    assert rel.relative_keys.weight.shape == (5, D // HEADS)


def make_cfg(k: int) -> TransformerConfig:
    cfg = TransformerConfig()
    for side in (cfg.encoder, cfg.decoder):
        side.embed_dim, side.ffn_embed_dim, side.attention_heads = D, 24, HEADS
    cfg.dropout = cfg.attention_dropout = 0.0
    cfg.max_relative_positions = k
    return cfg


@pytest.mark.parametrize("cls", [VanillaEncoderLayer, MacaronEncoderLayer, MacaronDecoderLayer])
def test_layers_build_relation_aware_attention_only_when_asked(cls: type) -> None:
    assert isinstance(cls(make_cfg(3)).self_attn, RelativeMultiheadAttention)
    plain = cls(make_cfg(0)).self_attn
    assert type(plain) is MultiheadAttention
    if cls is MacaronDecoderLayer:
        assert type(cls(make_cfg(3)).encoder_attn) is MultiheadAttention  # cross-attention stays plain


@pytest.mark.parametrize("arch", ["fixup_transformer_iwslt_de_en", "macaron_small"])
def test_cross_self_attention_is_refused_with_relative_positions(dict_dir, arch: str) -> None:
    """docs/dt_fixup.md §6: relation-aware attention is not combined with --cross-self-attention (error)."""
    with pytest.raises(ValueError, match="--max-relative-positions does not support cross-self-attention"):
        build_model(dict_dir, arch, [*TINY, "--max-relative-positions", "2", "--cross-self-attention"])
    model, _ = build_model(dict_dir, arch, [*TINY, "--cross-self-attention"])  # each alone is fine
    assert model.decoder.layers[0].cross_self_attention
    model, _ = build_model(dict_dir, arch, [*TINY, "--max-relative-positions", "2"])
    assert isinstance(model.decoder.layers[0].self_attn, RelativeMultiheadAttention)


@pytest.mark.parametrize("cls", [MacaronDecoderLayer, VanillaDecoderLayer])
@pytest.mark.parametrize("option", ["add_bias_kv", "add_zero_attn"])
def test_bias_kv_and_zero_attn_are_refused_with_relative_positions(cls: type, option: str) -> None:
    """docs/dt_fixup.md §6: ... nor with add_bias_kv or add_zero_attn (error)."""
    with pytest.raises(ValueError, match="does not support cross-self-attention/bias_kv/zero_attn"):
        cls(make_cfg(2), **{option: True})
    plain = cls(make_cfg(0), **{option: True}).self_attn  # without relative positions, fairseq's takes it
    assert plain.bias_k is not None if option == "add_bias_kv" else plain.add_zero_attn


def test_relation_aware_attention_is_self_attention_only() -> None:
    rel, _ = twins()
    x, memory = torch.randn(T, B, D), torch.randn(T + 2, B, D)
    with pytest.raises(ValueError, match="relation-aware attention is self-attention only"):
        rel(x, memory, memory, static_kv=True)


@pytest.mark.parametrize("arch", ["fixup_transformer_iwslt_de_en", "macaron_small"])
@pytest.mark.parametrize("scheme", ["default", "dt-fixup"])
def test_incremental_decoding_equals_full_decoding_with_relative_positions(dict_dir, arch, scheme) -> None:
    torch.manual_seed(0)
    extra = [*TINY, "--max-relative-positions", "2", "--init-scheme", scheme]
    model, task = build_model(dict_dir, arch, extra)
    model.eval()
    assert isinstance(model.decoder.layers[0].self_attn, RelativeMultiheadAttention)
    d = task.source_dictionary
    g = torch.Generator().manual_seed(0)
    src = torch.randint(d.nspecial, len(d), (2, 7), generator=g)
    prev = torch.randint(d.nspecial, len(d), (2, 6), generator=g)
    prev[:, 0] = d.eos()
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=torch.full((2,), 7))
        full, _ = model.decoder(prev, encoder_out=enc)
        state: dict = {}
        steps = [
            model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)[0] for t in range(6)
        ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)
