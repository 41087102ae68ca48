"""The pre-training progress lines (interval rates, MFU, loss scale) and the model-FLOPs count."""

from __future__ import annotations

import io

import pytest

from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model
from macaron_fairseq.pretrain.flops import BertFlops, device_peak_tflops
from macaron_fairseq.pretrain.progress import PretrainProgress


@pytest.mark.parametrize("arch", ["vanilla_bert_base", "macaron_bert_base"])
def test_bert_base_layer_weights_and_step_flops_by_hand(arch: str) -> None:
    with bert_dictionary_dir(30522) as d:
        model, _ = build_bert_model(d, arch)
    flops = BertFlops.of(model)
    # per layer: Q, K, V, O (768²) + FFN 768·3072·2 (Macaron: two FFNs of 1536, the same)
    assert flops.layer_matmul_weights == 12 * (4 * 768**2 + 2 * 768 * 3072) == 84_934_656
    assert (flops.layers, flops.dim, flops.vocab) == (12, 768, 30522)
    pairs, seq, masked = 32, 128, 600
    by_hand = (
        pairs * seq * (6 * 84_934_656 + 12 * 12 * seq * 768)
        + masked * 6 * (768 * 768 + 768 * 30522)
        + pairs * 6 * (768 * 768 + 2 * 768)
    )
    assert flops.step(pairs, seq, masked) == by_hand


def test_known_gpu_peaks() -> None:
    assert device_peak_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert device_peak_tflops("NVIDIA H100 80GB HBM3") == 989.0
    assert device_peak_tflops("NVIDIA GeForce GTX 1080") is None


def record(step: int, seconds: float, **extra: float) -> dict:
    return {
        "step": step,
        "mlm_loss": 5.0,
        "nsp_loss": 0.9,
        "nsp_accuracy": 61.0,
        "lr": 1e-4,
        "tokens": 1000.0,
        "pairs": 10.0,
        "seconds": seconds,
        "model_flops": 2e12,
        **extra,
    }


def test_progress_lines_at_the_interval_with_rates_over_it() -> None:
    out = io.StringIO()
    progress = PretrainProgress(True, 0, 5, 2, peak_flops=1e13, stream=out, use_bar=False)
    for step, seconds in zip(range(1, 6), (1.0, 3.0, 0.5, 0.5, 2.0), strict=True):
        progress.step(record(step, seconds))
    lines = out.getvalue().splitlines()
    assert [line.split(" | ")[0] for line in lines] == [
        "[pretrain] step 2/5",
        "[pretrain] step 4/5",
        "[pretrain] step 5/5",
    ]
    # steps 1-2: 2000 tokens in 4 s; 2 × 2e12 FLOPs in 4 s on a 1e13 FLOP/s device = 10 %
    assert "500 tokens/s, 5.0 samples/s" in lines[0] and "MFU 10.0%" in lines[0]
    assert "2000 tokens/s, 20.0 samples/s" in lines[1]  # steps 3-4: 1 s
    assert "mlm 5.000 bits | nsp 0.900 bits (61.0%) | lr 0.0001" in lines[2]


def test_loss_scale_and_skipped_steps_are_shown_with_fp16_and_nothing_on_other_ranks() -> None:
    out = io.StringIO()
    progress = PretrainProgress(True, 0, 1, 1, peak_flops=None, stream=out, use_bar=False)
    progress.step(record(1, 1.0, loss_scale=65536.0, skipped_steps=2))
    assert "loss scale 65536 | 2 overflow steps skipped" in out.getvalue() and "MFU" not in out.getvalue()
    quiet = io.StringIO()
    PretrainProgress(False, 0, 1, 1, None, stream=quiet, use_bar=False).step(record(1, 1.0))
    assert quiet.getvalue() == ""
