"""On a CUDA GPU (marked ``gpu``: skipped without one): the fused half-step FFN against the plain one in
bf16 and fp16, outputs and gradients, encoder and decoder layers (the CPU tests compare them in fp32)."""

from __future__ import annotations

import pytest
import torch
from test_fused_half_step import pair
from test_macaron_layers import B, D, S, T

from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer

pytestmark = pytest.mark.gpu
#: half precision: bf16 keeps 8 mantissa bits, fp16 11
TOLERANCE = {torch.bfloat16: 2e-2, torch.float16: 2e-3}


def run_on_device(layer: torch.nn.Module, x: torch.Tensor, enc: torch.Tensor) -> torch.Tensor:
    """The layer's output; the decoder's causal mask on the input's device."""
    if isinstance(layer, MacaronDecoderLayer):
        causal = torch.triu(torch.full((x.size(0), x.size(0)), float("-inf"), device=x.device), 1)
        return layer(x, enc, None, self_attn_mask=causal)[0]
    return layer(x, None)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("cls", [MacaronEncoderLayer, MacaronDecoderLayer], ids=["encoder", "decoder"])
def test_fused_half_step_equals_the_plain_one_on_the_gpu(cls: type, dtype: torch.dtype) -> None:
    layer, twin = pair(cls, normalize_before=True, dropout=0.0, norm_free=False, impl="fused")
    layer, twin = layer.cuda().to(dtype), twin.cuda().to(dtype)
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(T, B, D, generator=g).cuda().to(dtype)
    enc0 = torch.randn(S, B, D, generator=g).cuda().to(dtype)
    outs, grads = [], []
    for module in (layer, twin):
        module.train()
        x, enc = x0.clone().requires_grad_(), enc0.clone().requires_grad_()
        out = run_on_device(module, x, enc)
        out.float().pow(2).sum().backward()
        outs.append(out.detach().float())
        grads.append([x.grad.float()] + [p.grad.float() for p in module.parameters() if p.grad is not None])
    tol = TOLERANCE[dtype]
    assert outs[0].isfinite().all()
    torch.testing.assert_close(outs[0], outs[1], rtol=tol, atol=tol)
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol * max(1.0, float(b.abs().max())))
