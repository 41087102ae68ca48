"""The fused and compiled half-step FFN (``--macaron-ffn-impl``) against the plain one: same outputs and
gradients (float tolerance) in train and eval mode, incremental decoding included; the dropout mask's
distribution; the compile fallback; ``--checkpoint-activations``."""

from __future__ import annotations

import logging

import pytest
import torch
from fairseq.models.transformer.transformer_config import QuantNoiseConfig
from helpers import TINY, build_model
from test_macaron_layers import B, D, S, T, make_cfg

from macaron_fairseq.modules import fused_half_step as fhs
from macaron_fairseq.modules.half_step_ffn import ScaledLinear
from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer
from macaron_fairseq.modules.norm_free import strip_layer_norms


def test_keep_mask_is_bernoulli_one_minus_p_times_the_scale() -> None:
    torch.manual_seed(0)
    n, p = 400_000, 0.1
    for dtype in (torch.float32, torch.bfloat16):
        mask = fhs.scaled_keep_mask(torch.empty(n, dtype=dtype), p, 2.0)
        assert mask.dtype == torch.float32  # a half type would round the scale
        assert set(mask.unique().tolist()) == {0.0, 2.0}
        kept = (mask > 0).float().mean().item()
        assert abs(kept - (1 - p)) < 5 * (p * (1 - p) / n) ** 0.5, (dtype, kept)
        keep = fhs.keep_mask(torch.empty(n, dtype=dtype), p)
        assert keep.dtype == dtype and set(keep.unique().tolist()) == {0.0, 1.0}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_branch_scale_is_exact_in_half_precision(dtype: torch.dtype) -> None:
    """bf16, p = 0.1, γ = ½: every kept element is the float32 value γ/(1−p)·branch rounded once to the half
    type (a mask tensor holding γ/(1−p) in bf16 made it 0.5547 instead of 0.5556: the FFN₁ branch was 0.16 %
    smaller in training than in evaluation), so the mean branch scale is 0.5/0.9 to float32 precision. The
    activation dropout's 1/(1−p) likewise."""
    torch.manual_seed(0)
    n, p, step = 200_000, 0.1, 0.5
    branch = (torch.rand(n) + 1.0).to(dtype)  # values in [1, 2): never 0, one binade
    out = fhs.half_step_residual(torch.zeros(n, dtype=dtype), branch, step, p, dropout_active=True)
    keep = out != 0
    assert abs(keep.float().mean().item() - (1 - p)) < 0.005
    expected = (branch.float() * keep * (step / (1 - p))).to(dtype)  # exact scale, one rounding
    assert torch.equal(out, expected)
    scale = (out.float().sum() / (branch.float() * keep).sum()).item()
    assert scale == pytest.approx(step / (1 - p), rel=1e-4)  # the bf16-rounded scale was off by 1.6e-3
    dropped = fhs.dropout(branch, p, active=True)
    keep = dropped != 0
    assert torch.equal(dropped, (branch.float() * keep / (1 - p)).to(dtype))


def test_half_step_residual_is_residual_plus_step_times_dropout_by_hand() -> None:
    torch.manual_seed(1)
    residual, branch = torch.randn(6, 5), torch.randn(6, 5, requires_grad=True)
    p, step = 0.25, 0.5
    torch.manual_seed(7)
    out = fhs.half_step_residual(residual, branch, step, p, dropout_active=True)
    torch.manual_seed(7)
    keep = (torch.rand(6, 5) >= p).float()
    expected = residual + step * branch.detach() * keep / (1 - p)
    torch.testing.assert_close(out, expected)
    out.sum().backward()
    torch.testing.assert_close(branch.grad, step * keep / (1 - p))
    inactive = fhs.half_step_residual(residual, branch, step, p, dropout_active=False)
    torch.testing.assert_close(inactive, residual + step * branch)


def pair(cls: type, normalize_before: bool, dropout: float, norm_free: bool, impl: str):
    """A layer with ``impl`` and a twin with the same weights computing FFN₁ the plain way."""
    torch.manual_seed(3)
    cfg = make_cfg(normalize_before, dropout)
    layer = cls(cfg)
    if norm_free:
        strip_layer_norms(layer)
    twin = cls(cfg)
    if norm_free:
        strip_layer_norms(twin)
    twin.load_state_dict(layer.state_dict())
    layer.set_ffn_impl(impl)
    twin.set_ffn_impl("plain")
    return layer, twin


def run_layer(layer: torch.nn.Module, x: torch.Tensor, enc: torch.Tensor) -> torch.Tensor:
    if isinstance(layer, MacaronDecoderLayer):
        causal = torch.triu(torch.full((x.size(0), x.size(0)), float("-inf")), 1)
        return layer(x, enc, None, self_attn_mask=causal)[0]
    return layer(x, None)


def assert_same_outputs_and_gradients(layer, twin, train: bool, seed: int = 0) -> None:
    layer.train(train)
    twin.train(train)
    g = torch.Generator().manual_seed(seed)
    x0, enc0 = torch.randn(T, B, D, generator=g), torch.randn(S, B, D, generator=g)
    outs, grads = [], []
    for module in (layer, twin):
        x, enc = x0.clone().requires_grad_(), enc0.clone().requires_grad_()
        out = run_layer(module, x, enc)
        out.pow(2).sum().backward()
        outs.append(out.detach())
        grads.append([x.grad, enc.grad] + [p.grad for p in module.parameters()])
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    for a, b in zip(*grads, strict=True):
        if a is None or b is None:
            assert a is None and b is None
        else:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls", [MacaronEncoderLayer, MacaronDecoderLayer], ids=["encoder", "decoder"])
@pytest.mark.parametrize(
    "normalize_before, norm_free",
    [(False, False), (True, False), (False, True)],
    ids=["post-norm", "pre-norm", "norm-free"],
)
def test_fused_layer_equals_plain_layer_in_eval_and_in_train_mode(cls, normalize_before, norm_free) -> None:
    layer, twin = pair(cls, normalize_before, dropout=0.0, norm_free=norm_free, impl="fused")
    assert layer.first_ffn_is_fusable()
    assert_same_outputs_and_gradients(layer, twin, train=False)
    assert_same_outputs_and_gradients(layer, twin, train=True)


def test_fused_first_ffn_with_dropout_equals_the_plain_formula_with_the_same_masks() -> None:
    """Train mode, dropout and activation dropout on: FFN₁ draws U for the activation mask, then for the
    output mask; the plain formula with those masks gives the same output and gradients."""
    layer, _ = pair(MacaronEncoderLayer, False, dropout=0.3, norm_free=False, impl="fused")
    layer.train()
    x = torch.randn(T, B, D, requires_grad=True)
    torch.manual_seed(11)
    out = layer.first_ffn(x)
    torch.manual_seed(11)
    hidden = torch.relu(layer.ffn1_fc1(x))
    act_keep = (torch.rand(hidden.shape) >= 0.3).float() / 0.7
    branch = torch.nn.functional.linear(hidden * act_keep, layer.ffn1_fc2.weight, layer.ffn1_fc2.bias)
    out_keep = (torch.rand(branch.shape) >= 0.3).float() / 0.7
    expected = layer.ffn1_layer_norm(x + 0.5 * branch * out_keep)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    (g_out,) = torch.autograd.grad(out.sum(), x)
    (g_exp,) = torch.autograd.grad(expected.sum(), x)
    torch.testing.assert_close(g_out, g_exp, rtol=1e-5, atol=1e-6)


def test_quant_noise_falls_back_to_the_plain_path() -> None:
    cfg = make_cfg(False)
    cfg.quant_noise = QuantNoiseConfig(pq=0.1, pq_block_size=8)  # a new one: the default is shared
    layer = MacaronEncoderLayer(cfg)
    assert not layer.first_ffn_is_fusable()
    layer.eval()
    layer(torch.randn(S, B, D), None)  # runs (the plain path)


def test_scaled_linear_paths_agree_in_value_and_gradients() -> None:
    """γ on the weight (training, rows > outputs) and γ inside addmm (few rows / no grad) agree."""
    torch.manual_seed(5)
    scaled = ScaledLinear(8, 5, step=0.5)
    for rows in (2, 40):  # 2 < 5 outputs: addmm path; 40 > 5: weight path
        x = torch.randn(rows, 8, requires_grad=True)
        out = scaled(x)
        expected = 0.5 * torch.nn.functional.linear(x, scaled.weight, scaled.bias)
        torch.testing.assert_close(out, expected)
        g = torch.randn(rows, 5)
        got = torch.autograd.grad((out * g).sum(), [x, scaled.weight, scaled.bias])
        ref = torch.autograd.grad((expected * g).sum(), [x, scaled.weight, scaled.bias])
        for a, b in zip(got, ref, strict=True):
            torch.testing.assert_close(a, b)
        with torch.no_grad():
            torch.testing.assert_close(scaled(x), expected)


def test_unknown_implementation_is_refused() -> None:
    layer = MacaronEncoderLayer(make_cfg(False))
    with pytest.raises(ValueError, match="--macaron-ffn-impl 'fast'"):
        layer.set_ffn_impl("fast")


def test_compile_failure_falls_back_to_the_eager_fused_function(monkeypatch, caplog) -> None:
    def broken_compile(*args, **kwargs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(torch, "compile", broken_compile)
    compiled = fhs.CompiledHalfStep()
    layer, twin = pair(MacaronEncoderLayer, False, dropout=0.0, norm_free=False, impl="compile")
    monkeypatch.setattr(fhs, "COMPILED", compiled)
    from macaron_fairseq.modules import macaron_layer

    monkeypatch.setattr(macaron_layer, "COMPILED", compiled)
    with caplog.at_level(logging.WARNING):
        assert_same_outputs_and_gradients(layer, twin, train=True)
    assert compiled.failed == "RuntimeError: no C++ compiler"
    assert "torch.compile failed (RuntimeError: no C++ compiler)" in caplog.text


def test_checkpoint_activations_keep_the_fused_gradients(dict_dir) -> None:
    """fairseq's --checkpoint-activations recomputes each layer in the backward (restoring the RNG state):
    with dropout on, the gradients equal those of the same model without checkpointing."""
    grads = []
    for extra in ([], ["--checkpoint-activations"]):
        torch.manual_seed(0)
        model, task = build_model(dict_dir, "macaron_base", [*TINY, "--dropout", "0.2", *extra])
        model.train()
        vocab = len(task.source_dictionary)
        src = torch.randint(4, vocab, (2, 5), generator=torch.Generator().manual_seed(1))
        torch.manual_seed(5)
        out, _ = model(src, torch.tensor([5, 5]), src)
        out.float().pow(2).mean().backward()
        grads.append({n: p.grad for n, p in model.named_parameters()})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], msg=name)


@pytest.mark.slow
def test_compiled_model_equals_fused_one_in_train_eval_and_incremental(dict_dir, monkeypatch) -> None:
    """torch.compile with Inductor's eager random numbers (``fallback_random``): the compiled FFN₁ draws
    the same masks, so train mode with dropout must match the eager fused layer; eval and incremental
    decoding must match the plain one. Every call runs compiled: past Dynamo's recompile limit (8 graphs)
    a call would quietly run eager, so hitting it fails here."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config, "fallback_random", True)
    monkeypatch.setattr(dynamo_config, "fail_on_recompile_limit_hit", True)
    monkeypatch.setattr(fhs, "COMPILED", fhs.CompiledHalfStep())
    from macaron_fairseq.modules import macaron_layer

    monkeypatch.setattr(macaron_layer, "COMPILED", fhs.COMPILED)
    torch.manual_seed(0)
    flags = [*TINY, "--dropout", "0.2", "--macaron-ffn-impl", "compile"]
    model, task = build_model(dict_dir, "macaron_base", flags)
    g = torch.Generator().manual_seed(2)
    src = torch.randint(4, len(task.source_dictionary), (3, 6), generator=g)
    prev = torch.randint(4, len(task.source_dictionary), (3, 5), generator=g)
    lengths = torch.full((3,), 6)

    def train_step(impl: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        model.train()
        model.zero_grad()
        for m in model.modules():
            if hasattr(m, "set_ffn_impl"):
                m.set_ffn_impl(impl)
        torch.manual_seed(9)
        out, _ = model(src, lengths, prev)
        out.pow(2).mean().backward()
        return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    out_c, grads_c = train_step("compile")
    out_f, grads_f = train_step("fused")
    assert fhs.COMPILED.failed is None, repr(fhs.COMPILED.error)
    torch.testing.assert_close(out_c, out_f, rtol=1e-4, atol=1e-5)
    for name in grads_f:
        torch.testing.assert_close(grads_c[name], grads_f[name], rtol=1e-3, atol=1e-5, msg=name)

    model.eval()
    results = {}
    for impl in ("compile", "plain"):
        for m in model.modules():
            if hasattr(m, "set_ffn_impl"):
                m.set_ffn_impl(impl)
        with torch.no_grad():
            enc = model.encoder(src, src_lengths=lengths)
            full, _ = model.decoder(prev, encoder_out=enc)
            state: dict = {}
            steps = [
                model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)[0]
                for t in range(prev.size(1))
            ]
        results[impl] = (full, torch.cat(steps, dim=1))
    torch.testing.assert_close(results["compile"][0], results["plain"][0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(results["compile"][1], results["plain"][0], rtol=1e-4, atol=1e-5)
    assert fhs.COMPILED.failed is None, repr(fhs.COMPILED.error)
