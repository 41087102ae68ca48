"""T-Fixup on the BERT models is T-Fixup (Huang et al. 2020, Algorithm: Xavier layers, N(0, d^-½) input
embeddings, then the scaling): BERT's ``init_bert_params`` draws every weight from N(0, 0.02), so the scheme
re-draws q, k, v, out_proj (fairseq's Xavier, the reference's starting point, q/k/v with gain 1/√2) and the
input embeddings — tokens, learned positions and segments — before scaling. Every tensor is checked against
its formula: a Xavier-uniform U(−a, a) has max |w| ≤ a (and close to it for thousands of entries) and
standard deviation a/√3."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.init.formulas import (
    T_FIXUP_QKV_GAIN,
    T_FIXUP_VALUE_GAIN,
    t_fixup_embedding_scale,
    t_fixup_encoder_scale,
)
from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model

VOCAB = 120


@pytest.fixture(scope="module")
def dict_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with bert_dictionary_dir(VOCAB) as d:
        target = tmp_path_factory.mktemp("bert_dict")
        (target / "dict.txt").write_text((d / "dict.txt").read_text())
    return target


def assert_xavier_uniform(weight: torch.Tensor, gain: float, scale: float, what: str) -> None:
    """``weight`` ~ scale · U(−a, a), a = gain·√(6/(fan_in + fan_out)) (PyTorch's xavier_uniform_)."""
    fan_out, fan_in = weight.shape
    bound = scale * gain * math.sqrt(6.0 / (fan_in + fan_out))
    w = weight.detach().abs()
    assert w.max().item() <= bound * (1 + 1e-6), what
    assert w.max().item() >= 0.95 * bound, what  # 0.95^n ≈ 0 for n in the thousands: the range is filled
    assert weight.detach().std().item() == pytest.approx(bound / math.sqrt(3.0), rel=0.06), what


def assert_normal(weight: torch.Tensor, std: float, what: str, rel: float = 0.06) -> None:
    assert weight.detach().mean().item() == pytest.approx(0.0, abs=4 * std / math.sqrt(weight.numel()))
    assert weight.detach().std().item() == pytest.approx(std, rel=rel), what


@pytest.mark.parametrize("arch", ["vanilla_bert_tiny", "macaron_bert_tiny"])
def test_t_fixup_on_bert_follows_the_formulas(dict_dir: Path, arch: str) -> None:
    torch.manual_seed(0)
    model, task = build_bert_model(dict_dir, arch, ["--init-scheme", "t-fixup"])
    encoder = model.encoder
    assert encoder.layernorm_embedding is None  # the from-scratch stack is norm-free, input included
    run_init_scheme(model, task)
    n, d = len(encoder.layers), encoder.embed_tokens.embedding_dim
    factor = t_fixup_encoder_scale(n)
    assert model.init_record.get("factor_encoder") == pytest.approx(factor) == pytest.approx(0.67 * n**-0.25)
    for i, layer in enumerate(encoder.layers):
        attn = layer.self_attn
        assert_xavier_uniform(attn.q_proj.weight, T_FIXUP_QKV_GAIN, 1.0, f"layer {i} q")
        assert_xavier_uniform(attn.k_proj.weight, T_FIXUP_QKV_GAIN, 1.0, f"layer {i} k")
        # v: the 1/√2 gain undone by √2 (Xavier gain 1), times the layer factor
        assert T_FIXUP_QKV_GAIN * T_FIXUP_VALUE_GAIN == pytest.approx(1.0)
        assert_xavier_uniform(
            attn.v_proj.weight, T_FIXUP_QKV_GAIN, factor * T_FIXUP_VALUE_GAIN, f"layer {i} v"
        )
        assert_xavier_uniform(attn.out_proj.weight, 1.0, factor, f"layer {i} out_proj")
        ffns = [layer.fc1, layer.fc2] + (
            [layer.ffn1_fc1, layer.ffn1_fc2] if hasattr(layer, "ffn1_fc1") else []
        )
        assert len(ffns) == (4 if arch.startswith("macaron") else 2)
        for lin in ffns:
            assert_xavier_uniform(lin.weight, 1.0, factor, f"layer {i} FFN {tuple(lin.weight.shape)}")
        for lin in [attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj, *ffns]:
            assert torch.count_nonzero(lin.bias) == 0  # the bias-free analysis
    # the input embeddings: N(0, d^-½) × (9N)^-¼, tokens (padding row 0), positions and segments alike
    std = d**-0.5 * t_fixup_embedding_scale(n)
    assert t_fixup_embedding_scale(n) == pytest.approx((9 * n) ** -0.25)
    tokens = encoder.embed_tokens.weight
    pad = encoder.embed_tokens.padding_idx
    assert torch.count_nonzero(tokens[pad]) == 0
    assert_normal(torch.cat([tokens[:pad], tokens[pad + 1 :]]), std, "token embeddings")
    assert_normal(encoder.embed_positions.weight, std, "position embeddings")
    assert_normal(encoder.embed_segments.weight, std, "segment embeddings", rel=0.15)  # 2 × 64 values
    assert model.lm_head.weight is tokens  # the tied MLM output reads the scaled embeddings


def test_bert_keeps_init_bert_params_with_the_default_scheme(dict_dir: Path) -> None:
    """Only a norm-free scheme re-draws: the default BERT keeps N(0, 0.02) everywhere (BERT as published)."""
    torch.manual_seed(0)
    model, _ = build_bert_model(dict_dir, "vanilla_bert_tiny")
    layer = model.encoder.layers[0]
    for weight in (
        layer.self_attn.q_proj.weight,
        layer.self_attn.v_proj.weight,
        layer.fc1.weight,
        model.encoder.embed_positions.weight,
    ):
        assert_normal(weight, 0.02, "init_bert_params", rel=0.1)
    assert isinstance(model.encoder.layernorm_embedding, nn.LayerNorm)
