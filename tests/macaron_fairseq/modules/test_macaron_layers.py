"""Unit tests of the Macaron layers: wiring against fairseq's Transformer layers, the half step, FFN
independence, dropout behaviour."""

from __future__ import annotations

import pytest
import torch
from fairseq.models.transformer import TransformerConfig
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer

D, FFN, HEADS, T, S, B = 16, 24, 4, 5, 7, 3


def make_cfg(normalize_before: bool, dropout: float = 0.0) -> TransformerConfig:
    cfg = TransformerConfig()
    for side in (cfg.encoder, cfg.decoder):
        side.embed_dim, side.ffn_embed_dim, side.attention_heads = D, FFN, HEADS
        side.normalize_before = normalize_before
    cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = dropout
    return cfg


def zero_first_ffn_branch(layer: torch.nn.Module) -> None:
    with torch.no_grad():
        layer.ffn1_fc2.weight.zero_()
        layer.ffn1_fc2.bias.zero_()


def transformer_twin(macaron: torch.nn.Module, cls: type, cfg: TransformerConfig) -> torch.nn.Module:
    """fairseq's own layer holding the Macaron layer's attention and FFN₂ weights."""
    twin = cls(cfg)
    state = {k: v for k, v in macaron.state_dict().items() if not k.startswith("ffn1_")}
    twin.load_state_dict(state, strict=True)
    return twin.eval()


@pytest.mark.parametrize("normalize_before", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_reduces_to_transformer_layer(normalize_before: bool) -> None:
    torch.manual_seed(0)
    cfg = make_cfg(normalize_before)
    layer = MacaronEncoderLayer(cfg).eval()
    zero_first_ffn_branch(layer)
    layer.fc2.step = 1.0
    twin = transformer_twin(layer, TransformerEncoderLayerBase, cfg)
    x = torch.randn(S, B, D)
    pad = torch.zeros(B, S, dtype=torch.bool)
    pad[0, -2:] = True
    with torch.no_grad():
        # FFN₁'s branch is zero: pre-norm leaves x as is; post-norm still applies FFN₁'s LayerNorm.
        twin_input = x if normalize_before else layer.ffn1_layer_norm(x)
        torch.testing.assert_close(layer(x, pad), twin(twin_input, pad), rtol=0, atol=0)


@pytest.mark.parametrize("normalize_before", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_reduces_to_transformer_layer(normalize_before: bool) -> None:
    torch.manual_seed(0)
    cfg = make_cfg(normalize_before)
    layer = MacaronDecoderLayer(cfg).eval()
    zero_first_ffn_branch(layer)
    layer.fc2.step = 1.0
    twin = transformer_twin(layer, TransformerDecoderLayerBase, cfg)
    x, enc = torch.randn(T, B, D), torch.randn(S, B, D)
    enc_pad = torch.zeros(B, S, dtype=torch.bool)
    enc_pad[1, :3] = True
    causal = torch.triu(torch.full((T, T), float("-inf")), 1)
    with torch.no_grad():
        twin_input = x if normalize_before else layer.ffn1_layer_norm(x)
        out, attn, _ = layer(x, enc, enc_pad, self_attn_mask=causal, need_attn=True)
        ref, ref_attn, _ = twin(twin_input, enc, enc_pad, self_attn_mask=causal, need_attn=True)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    torch.testing.assert_close(attn, ref_attn, rtol=0, atol=0)


def ffn(layer: torch.nn.Module, fc1: torch.nn.Module, fc2: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.linear(torch.relu(fc1(x)), fc2.weight, fc2.bias)


def test_half_step_multiplies_the_branch_not_the_skip_path() -> None:
    """Pre-norm encoder layer with attention and FFN₂ outputs zeroed: y = x + ½·FFN₁(LN(x))."""
    torch.manual_seed(1)
    layer = MacaronEncoderLayer(make_cfg(normalize_before=True)).eval()
    with torch.no_grad():
        for lin in (layer.self_attn.out_proj, layer.fc2):
            lin.weight.zero_()
            lin.bias.zero_()
        x = torch.randn(S, B, D)
        expected = x + 0.5 * ffn(layer, layer.ffn1_fc1, layer.ffn1_fc2, layer.ffn1_layer_norm(x))
        torch.testing.assert_close(layer(x, None), expected)
        layer.set_ffn_step(0.25)
        expected = x + 0.25 * ffn(layer, layer.ffn1_fc1, layer.ffn1_fc2, layer.ffn1_layer_norm(x))
        torch.testing.assert_close(layer(x, None), expected)


def test_post_norm_encoder_layer_matches_eq_17_19_by_hand() -> None:
    """Post-norm: x₁ = LN₁(x + ½F₁(x)), x₂ = LN₂(x₁ + G(x₁)), y = LN₃(x₂ + ½F₂(x₂))."""
    torch.manual_seed(2)
    layer = MacaronEncoderLayer(make_cfg(normalize_before=False)).eval()
    x = torch.randn(S, B, D)
    with torch.no_grad():
        x1 = layer.ffn1_layer_norm(x + 0.5 * ffn(layer, layer.ffn1_fc1, layer.ffn1_fc2, x))
        attn, _ = layer.self_attn(query=x1, key=x1, value=x1, key_padding_mask=None, need_weights=False)
        x2 = layer.self_attn_layer_norm(x1 + attn)
        y = layer.final_layer_norm(x2 + 0.5 * ffn(layer, layer.fc1, layer.fc2, x2))
        torch.testing.assert_close(layer(x, None), y)


@pytest.mark.parametrize("cls", [MacaronEncoderLayer, MacaronDecoderLayer])
def test_the_two_ffns_have_their_own_weights_and_layer_norms(cls: type) -> None:
    torch.manual_seed(3)
    layer = cls(make_cfg(normalize_before=False))
    pairs = [
        (layer.ffn1_fc1.weight, layer.fc1.weight),
        (layer.ffn1_fc2.weight, layer.fc2.weight),
        (layer.ffn1_layer_norm.weight, layer.final_layer_norm.weight),
    ]
    for first, second in pairs:
        assert first is not second and first.data_ptr() != second.data_ptr()
    assert not torch.equal(layer.ffn1_fc1.weight, layer.fc1.weight)
    assert layer.ffn1_fc1.out_features == layer.fc1.out_features == FFN
    assert layer.ffn1_fc2.step == layer.fc2.step == 0.5


def test_decoder_first_ffn_uses_decoder_ffn_size() -> None:
    cfg = make_cfg(normalize_before=False)
    cfg.decoder.ffn_embed_dim = 40
    layer = MacaronDecoderLayer(cfg)
    assert layer.ffn1_fc1.out_features == layer.fc1.out_features == 40


def test_dropout_is_active_in_training_and_off_in_eval() -> None:
    torch.manual_seed(4)
    layer = MacaronEncoderLayer(make_cfg(normalize_before=False, dropout=0.3))
    x = torch.randn(S, B, D)
    layer.train()
    assert not torch.equal(layer(x, None), layer(x, None))
    layer.eval()
    torch.testing.assert_close(layer(x, None), layer(x, None), rtol=0, atol=0)


def test_scaled_linear_equals_step_times_linear_in_value_and_gradients() -> None:
    from macaron_fairseq.modules.half_step_ffn import ScaledLinear

    torch.manual_seed(5)
    scaled = ScaledLinear(8, 5, step=0.5)
    plain = torch.nn.Linear(8, 5)
    plain.load_state_dict(scaled.state_dict())
    x = torch.randn(3, 4, 8)
    g = torch.randn(3, 4, 5)
    (scaled(x) * g).sum().backward()
    (0.5 * plain(x) * g).sum().backward()
    torch.testing.assert_close(scaled(x), 0.5 * plain(x))
    torch.testing.assert_close(scaled.weight.grad, plain.weight.grad)
    torch.testing.assert_close(scaled.bias.grad, plain.bias.grad)
