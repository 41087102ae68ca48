"""DT-Fixup / T-Fixup math: factors against the paper's formulas, which weights are scaled (and which are
not), norm-free layers, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import DT_FIXUP, TINY, build_model
from torch import nn

from macaron_fairseq.init.errors import NoNewLayersError, ZeroMuError
from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.init.formulas import (
    ResidualBlock,
    dt_fixup_scale,
    relation_aware_scale,
    t_fixup_decoder_scale,
    t_fixup_encoder_scale,
    vanilla_scale,
)
from macaron_fairseq.init.scaling import StackScaling, apply_dt_fixup
from macaron_fairseq.init.targets import dt_fixup_parameters, residual_blocks
from macaron_fairseq.modules.norm_free import is_layer_norm

VANILLA = [ResidualBlock("self_attention"), ResidualBlock("ffn")]
RELATION = [ResidualBlock("self_attention", relation_aware=True), ResidualBlock("ffn")]
MACARON = [ResidualBlock("ffn", 0.5), ResidualBlock("self_attention"), ResidualBlock("ffn", 0.5)]


@pytest.mark.parametrize("n", [1, 6, 32])
@pytest.mark.parametrize("mu", [0.3, 1.0, 17.5])
def test_block_sums_reproduce_the_papers_factors(n: int, mu: float) -> None:
    assert dt_fixup_scale(VANILLA, n, mu) == pytest.approx(n**-0.5 / (2 * mu), rel=1e-12)
    assert dt_fixup_scale(VANILLA, n, mu) == pytest.approx(vanilla_scale(n, mu), rel=1e-12)
    assert dt_fixup_scale(RELATION, n, mu) == pytest.approx((n * (4 * mu**2 + 2 * mu + 2)) ** -0.5, rel=1e-12)
    assert dt_fixup_scale(RELATION, n, mu) == pytest.approx(relation_aware_scale(n, mu), rel=1e-12)
    # Macaron: ½FFN + attention + ½FFN → c = 2μ² + 2·(2·¼·μ²) = 3μ²
    assert dt_fixup_scale(MACARON, n, mu) == pytest.approx((3 * n) ** -0.5 / mu, rel=1e-12)
    mac_rel = [MACARON[0], ResidualBlock("self_attention", relation_aware=True), MACARON[2]]
    assert dt_fixup_scale(mac_rel, n, mu) == pytest.approx((n * (3 * mu**2 + 2 * mu + 2)) ** -0.5, rel=1e-12)
    dec = [ResidualBlock("self_attention"), ResidualBlock("cross_attention"), ResidualBlock("ffn")]
    assert dt_fixup_scale(dec, n, mu, mu_cross=2 * mu) == pytest.approx((n * 12 * mu**2) ** -0.5, rel=1e-12)


def snapshot(layers: list[nn.Module]) -> list[dict[str, torch.Tensor]]:
    return [{k: v.clone() for k, v in layer.state_dict().items()} for layer in layers]


@pytest.mark.parametrize("arch", ["macaron_small", "fixup_transformer_iwslt_de_en"])
@pytest.mark.parametrize("rel", ["0", "3"])
def test_scaled_weight_norms_match_the_formulas(dict_dir, arch: str, rel: str) -> None:
    torch.manual_seed(0)
    model, _ = build_model(dict_dir, arch, [*TINY, *DT_FIXUP, "--max-relative-positions", rel])
    layers = model.encoder.new_layers()
    before = snapshot(layers)
    mu = 7.25
    result = apply_dt_fixup(layers, mu, name="encoder")
    n, k = len(layers), int(rel)
    c = (3 * mu**2 if arch == "macaron_small" else 4 * mu**2) + ((2 * mu + 2) if k else 0)
    assert result.factor == pytest.approx((n * c) ** -0.5, rel=1e-12)
    for layer, old in zip(layers, before, strict=True):
        scaled = {name for name, _ in dt_fixup_parameters(layer)}
        expected_scaled = {"self_attn.v_proj.weight", "self_attn.out_proj.weight", "fc1.weight", "fc2.weight"}
        if arch == "macaron_small":
            expected_scaled |= {"ffn1_fc1.weight", "ffn1_fc2.weight"}
        if k:
            expected_scaled |= {"self_attn.relative_values.weight"}
        assert scaled == expected_scaled
        for name, value in layer.state_dict().items():
            if name in scaled:
                expected = result.factor * float(old[name].norm())
                assert float(value.norm()) == pytest.approx(expected, rel=1e-6), name
            else:  # q, k, rᵏ, every bias: untouched
                torch.testing.assert_close(value, old[name], rtol=0, atol=0)


def test_dt_fixup_xavier_init_of_new_layers_has_zero_biases(dict_dir) -> None:
    model, _ = build_model(dict_dir, "macaron_small", [*TINY, *DT_FIXUP])
    for layer in model.new_layers():
        for name, p in layer.named_parameters():
            if name.endswith("bias"):
                assert p.abs().sum() == 0, name


def test_decoder_factor_uses_the_cross_attention_bound(dict_dir) -> None:
    torch.manual_seed(0)
    model, _ = build_model(dict_dir, "fixup_transformer_iwslt_de_en", [*TINY, *DT_FIXUP])
    layers = model.decoder.new_layers()
    assert [b.kind for b in residual_blocks(layers[0])] == ["self_attention", "cross_attention", "ffn"]
    v_before = layers[0].encoder_attn.v_proj.weight.clone()
    result = apply_dt_fixup(layers, 3.0, mu_cross=5.0, name="decoder")
    assert result.factor == pytest.approx((2 * (4 * 9 + 2 * 25)) ** -0.5)
    torch.testing.assert_close(layers[0].encoder_attn.v_proj.weight, v_before * result.factor)
    with pytest.raises(ZeroMuError, match="cross inputs"):
        apply_dt_fixup(layers, 3.0, name="decoder")  # cross-attention without μ_cross


@pytest.mark.parametrize("arch", ["macaron_small", "fixup_transformer_iwslt_de_en"])
@pytest.mark.parametrize("scheme", ["dt-fixup", "t-fixup"])
def test_fixup_schemes_build_norm_free_models(dict_dir, arch: str, scheme: str) -> None:
    model, _ = build_model(dict_dir, arch, [*TINY, "--init-scheme", scheme, "--encoder-normalize-before"])
    norms = [name for name, m in model.named_modules() if is_layer_norm(m)]
    assert norms == []
    assert model.encoder.layer_norm is None and model.decoder.layer_norm is None
    default, _ = build_model(dict_dir, arch, TINY)
    assert any(is_layer_norm(m) for m in default.modules())


def test_bad_mu_and_missing_layers_are_named() -> None:
    layer = nn.Linear(2, 2)
    with pytest.raises(NoNewLayersError, match="no new layers"):
        apply_dt_fixup([], 1.0, name="encoder")
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ZeroMuError, match="μ > 0"):
            apply_dt_fixup([layer], bad, name="encoder")


def test_t_fixup_matches_the_reference_factors(dict_dir) -> None:
    torch.manual_seed(0)
    extra = [*TINY, "--encoder-layers", "3", "--decoder-layers", "5", "--init-scheme", "t-fixup"]
    model, task = build_model(dict_dir, "fixup_transformer_iwslt_de_en", extra)
    enc, dec = model.encoder, model.decoder
    before = {k: v.clone() for k, v in model.state_dict().items()}
    run_init_scheme(model, task)
    after = model.state_dict()
    fe, fd = t_fixup_encoder_scale(3), t_fixup_decoder_scale(5)
    assert fe == pytest.approx(0.67 * 3**-0.25) and fd == pytest.approx(45**-0.25)
    for name in ("fc1.weight", "fc2.weight", "self_attn.out_proj.weight"):
        torch.testing.assert_close(after[f"encoder.layers.1.{name}"], before[f"encoder.layers.1.{name}"] * fe)
        torch.testing.assert_close(after[f"decoder.layers.4.{name}"], before[f"decoder.layers.4.{name}"] * fd)
    root2 = math.sqrt(2)
    torch.testing.assert_close(
        after["encoder.layers.0.self_attn.v_proj.weight"],
        before["encoder.layers.0.self_attn.v_proj.weight"] * fe * root2,
    )
    for attn in ("self_attn", "encoder_attn"):
        key = f"decoder.layers.0.{attn}.v_proj.weight"
        torch.testing.assert_close(after[key], before[key] * fd * root2)
        torch.testing.assert_close(
            after[f"decoder.layers.0.{attn}.q_proj.weight"], before[f"decoder.layers.0.{attn}.q_proj.weight"]
        )
    torch.testing.assert_close(
        after["encoder.embed_tokens.weight"], before["encoder.embed_tokens.weight"] * 27**-0.25
    )
    torch.testing.assert_close(
        after["decoder.embed_tokens.weight"], before["decoder.embed_tokens.weight"] * 45**-0.25
    )
    assert model.init_record.is_applied and model.init_record.get("factor_decoder") == pytest.approx(fd)
    assert enc.layers[0].fc1.bias.abs().sum() == 0  # T-Fixup's xavier Linear has zero biases
    assert dec.layers[0].fc2.bias.abs().sum() == 0


def test_t_fixup_scales_a_shared_embedding_once(dict_dir) -> None:
    torch.manual_seed(0)
    model, task = build_model(
        dict_dir, "macaron_small", [*TINY, "--init-scheme", "t-fixup", "--share-all-embeddings"]
    )
    before = model.encoder.embed_tokens.weight.clone()
    run_init_scheme(model, task)
    torch.testing.assert_close(model.encoder.embed_tokens.weight, before * 18**-0.25)  # (9·N_enc)^-¼, N=2
    run_init_scheme(model, task)  # applied already: a second call is a no-op
    torch.testing.assert_close(model.encoder.embed_tokens.weight, before * 18**-0.25)


def test_describe_prints_mu_only_when_the_scheme_uses_it() -> None:
    dt = StackScaling("encoder", 6, 2.5, None, 0.0408, 24).describe()
    assert dt == "encoder: N=6, μ=2.5000, factor=0.0408 (24 weight tensors scaled)"
    t_fixup = StackScaling("decoder", 6, float("nan"), None, 0.35, 36).describe()
    assert t_fixup == "decoder: N=6, factor=0.35 (36 weight tensors scaled)"
