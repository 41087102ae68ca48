"""The report of the retired study benchmarks.pretrain_speed: the FLOPs count, the summaries and the tables
are computed from the measured times."""

from __future__ import annotations

import pytest

from benchmarks.reports import pretrain_speed as report

MACHINE = {
    "date": "2026-11-23 03:00 UTC",
    "cpu": "CPU",
    "usable_cores": 2,
    "python": "3.11",
    "load_average_1min_at_start": 0.5,
    "load_average_1min_at_end": 0.7,
    "torch": "2.13.0",
    "torch_threads": 2,
}


def steps_result(**extra: object) -> dict:
    model = {"implementation": "this project (fairseq layers)", "params": 110_106_428}
    return {
        "archs": ["macaron_bert_base", "vanilla_bert_base"],
        "models": {
            "macaron_bert_base": {**model, "label": "`macaron_bert_base`", "params": 110_107_196},
            "vanilla_bert_base": {**model, "label": "`vanilla_bert_base`"},
            "hf_bert": {**model, "label": "HF `BertForPreTraining`", "implementation": "head everywhere"},
            "hf_bert_masked_head": {**model, "label": "HF `BertForPreTraining`", "implementation": "masked"},
        },
        "times": {
            "macaron_bert_base": [2.2, 2.0, 2.1],
            "vanilla_bert_base": [2.0, 2.0, 2.0],
            "hf_bert": [2.5, 2.4, 2.6],
            "hf_bert_masked_head": [1.9, 2.1, 2.0],
        },
        "device": "cpu",
        "threads": 2,
        "config": "configs/deepspeed/tiny_cpu.json",
        "precision": "fp32",
        "zero_stage": 1,
        "optimizer": "AdamW (torch)",
        "batch_size": 8,
        "seq_len": 128,
        "masked": 152,
        "vocab": 30522,
        "rounds": 3,
        "warmup": 2,
        "transformers": "5.23.0",
        "hf_attention": "sdpa",
        "other_cores": 0.05,
        **extra,
    }


def rank_run(ranks: int, seconds: list[float], accumulation: int) -> dict:
    return {
        "ranks": ranks,
        "threads": 2 // ranks,
        "micro_batch": 8,
        "accumulation": accumulation,
        "seconds": seconds,
        "pairs": [16.0] * len(seconds),
        "tokens": [2000.0] * len(seconds),
        "wall_seconds": 30.0,
    }


RANKS = {
    "arch": "vanilla_bert_tiny",
    "model_flags": "--encoder-layers 4",
    "params": 1_000_000,
    "config": "configs/deepspeed/tiny_cpu.json",
    "seq_len": 128,
    "corpus": "synthetic_wiki 1.5 MB of XML, BPE 2000",
    "steps": 20,
    "warmup": 5,
    "cores": 2,
    "other_cores": 0.0,
    "runs": [
        rank_run(1, [0.4, 0.4], 2),
        rank_run(2, [0.25, 0.25], 1),
        rank_run(2, [0.25, 0.25], 1),
        rank_run(1, [0.4, 0.4], 2),
    ],
}


def payload(results: dict) -> dict:
    return {"command": "python -m benchmarks.pretrain_speed", "machine": MACHINE, "results": results}


# ------------------------------------------------------------------------------------------------- fast
def test_mfu_is_model_flops_per_second_over_the_peak() -> None:
    # 100k tokens/s at 674,794,344 FLOPs per token against a 312 TFLOP/s peak: 67.4794344 TFLOP/s, 21.6 %
    assert report.model_flops_utilization(100_000, 674_794_344, 312.0) == pytest.approx(67.4794344 / 312)


def test_ratio_is_of_the_medians_with_the_range_of_the_paired_rounds() -> None:
    summary = report.ratio_summary([2.0, 4.0, 3.0], [1.0, 2.0, 2.0])
    assert summary == {"ratio": 1.5, "round_min": 1.5, "round_max": 2.0}
    assert report.goal_text(1.04, 1.05) == "≤ 1.05 (met)"
    assert report.goal_text(1.2, 1.0) == "≤ 1.00 (not met)"


def test_throughput_pools_the_runs_of_each_rank_count() -> None:
    pooled = report.pooled_runs(RANKS["runs"])
    assert list(pooled) == [1, 2] and pooled[2]["runs"] == 2 and pooled[2]["seconds"] == [0.25] * 4
    assert report.run_throughput(pooled[1]) == {
        "samples_per_second": 40.0,
        "tokens_per_second": 5000.0,
        "median_step_seconds": 0.4,
    }


def test_render_computes_medians_ratios_and_speed_ups() -> None:
    text = report.render(payload({"steps": steps_result(), "ranks": RANKS, "gpu": {"skipped": "no GPU"}}))
    assert (
        "| `macaron_bert_base` | this project (fairseq layers) | 110,107,196 | 2.100 | 3.81 | 488 |" in text
    )
    assert "| HF `BertForPreTraining` | head everywhere | 110,106,428 | 2.500 | 3.20 | 410 |" in text
    assert "| `macaron_bert_base` / `vanilla_bert_base` | 1.050 | 1.000–1.100 | ≤ 1.05 (met) |" in text
    assert "| `vanilla_bert_base` / HF | 0.800 | 0.769–0.833 | ≤ 1.00 (met) |" in text
    assert "| `vanilla_bert_base` / HF, MLM head on masked positions | 1.000 | 0.952–1.053 |" in text
    assert 'HF `attn_implementation="sdpa"`, transformers 5.23.0' in text
    assert "| 1 × 2 | 8 × 2 × 1 = 16 | 4 | 0.400 | 40.00 | 5,000 | 1.00× | 1.00× |" in text
    assert "| 2 × 1 | 8 × 1 × 2 = 16 | 4 | 0.250 | 64.00 | 8,000 | 1.60× | 1.60× |" in text
    assert "2 runs per rank count (order 1 2 2 1)" in text
    assert "Tokens/s and MFU on a GPU: skipped (no GPU)." in text
    assert "Other processes used 0.05 cores on average meanwhile." in text
    assert text.endswith(
        "1-min load 0.5 → 0.7 (a finished study, its code retired: "
        "`git show 053e182:benchmarks/pretrain_speed.py`)."
    )


def test_render_without_transformers_names_the_install_command() -> None:
    steps = steps_result(hf_skipped="transformers not installed: pip install --no-deps transformers==5.23.0")
    del steps["hf_attention"], steps["transformers"]
    for key in ("hf_bert", "hf_bert_masked_head"):
        del steps["times"][key], steps["models"][key]
    text = report.render(payload({"steps": steps}))
    assert "/ HF" not in text and "HF `BertForPreTraining`" not in text and "attn_implementation" not in text
    assert "pip install --no-deps transformers==5.23.0" in text


def test_render_gpu_throughput_and_mfu() -> None:
    gpu = {
        "arch": "vanilla_bert_base",
        "device_name": "NVIDIA A100",
        "precision": "bf16",
        "batch_size": 32,
        "seq_len": 128,
        "params": 110_106_428,
        "layers": 12,
        "hidden": 768,
        "peak_tflops": 312.0,
        "warmup": 5,
        "seconds": [0.04, 0.04096, 0.05],
        "masked": 600,
        "model_flops_per_step": 674_794_344 * 32 * 128,
        "config": "configs/deepspeed/bert_phase1.json",
    }
    text = report.render(payload({"gpu": gpu}))
    # 32 × 128 / 0.04096 s = 100,000 tokens/s → 67.5 model TFLOP/s → 21.6 % of 312
    assert "| 100,000 | 674.8 M | 67.5 | 312 | 21.6 % |" in text and "600 masked positions" in text
