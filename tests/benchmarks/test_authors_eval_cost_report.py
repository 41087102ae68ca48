"""benchmarks/reports/authors_eval_cost.py: the rendering of the retired study's results file (its code:
``benchmarks.results_file.RETIRED``)."""

from __future__ import annotations

from benchmarks.reports import authors_eval_cost as report

MACHINE = {
    "date": "2026-11-26 23:00 UTC",
    "cpu": "CPU",
    "usable_cores": 2,
    "python": "3.11",
    "load_average_1min_at_start": 0.1,
    "load_average_1min_at_end": 0.2,
    "torch": "2.13.0",
    "torch_threads": 2,
}


def fake_payload(load: float, overrides: list[str], sentences: int = 6_750) -> dict:
    run = {
        "threads_setting": "default",
        "torch_threads": 2,
        "repeat": 0,
        "wall_seconds": 200.0,
        "cpu_seconds": 380.0,
        "generation_seconds": 150.0,
        "sentences_per_second": 33.75,
        "tokens_per_second": 900.0,
        "peak_rss_mb": 1234.4,
        "load_1min_before": load,
        "load_1min_after": 0.3,
        "generated_tokens": 180_000,
        "sentences": 6_750,
    }
    one = run | {"threads_setting": "1", "torch_threads": 1, "wall_seconds": 300.0, "cpu_seconds": 290.0}
    results = {
        "model": {
            "arch": "transformer_iwslt_de_en_macaron_v2",
            "overrides": overrides,
            "parameters": 36_000_000,
            "embed_dim": 512,
            "attention_heads": 4,
            "encoder_layers": 6,
            "decoder_layers": 6,
            "ffn_embed_dim": 512,
            "embedding_rows": 10_008,
        },
        "dictionary": {"bpe_types": 10_000, "padding_factor": 8, "size": 10_008},
        "test_set": {
            "sentences": sentences,
            "description": "the drawn lengths",
            "words_per_sentence": 19.4,
            "de_bpe_tokens_per_sentence": 23.0,
            "de_bpe_tokens": 155_000,
            "en_bpe_tokens_per_sentence": 22.2,
            "length_model": {
                "en_split": 0.145,
                "de_split": 0.182,
                "shape": 2.0,
                "mean_words": 131_156 / 6_750,
            },
        },
        "generate_command": "fairseq-generate DATA --path CKPT",
        "length_cap": {
            "max_len_a": 1.0,
            "max_len_b": 0,
            "trained_model_tokens_estimate": 150_000.0,
            "per_sentence_cap_tokens": 170_000,
        },
        "authors": {"syslen": 127_659, "sentences": 6_750},
        "runs": [run, one],
    }
    return {"command": "python -m benchmarks.authors_eval_cost", "machine": MACHINE, "results": results}


def test_render_shows_each_run_the_assumptions_and_the_load() -> None:
    text = report.render(fake_payload(0.2, []))
    assert "`transformer_iwslt_de_en_macaron_v2` of exactly their size: 36,000,000 parameters" in text
    assert "| 2 (default) | 200.0 (3.3 min) | 380.0 | 150.0 | 33.75 | 900 | 1,234 | 0.2 → 0.3 |" in text
    assert "| 1 (OMP_NUM_THREADS=1) | 300.0 (5.0 min) | 290.0 |" in text
    assert "the 180,000 generated BPE tokens" in text
    assert "hence 1.20× the ≈ 150,000 tokens a trained model would generate" in text
    assert "10,000 BPE types" in text and "Gamma(shape 2, mean 19.43 = their reflen" in text
    assert "1.182 (de) / 1.145 (en) BPE tokens per word" in text and "--dataset-impl lazy" in text
    assert "(drawn: 19.40 words, 23.00 de / 22.20 en BPE tokens per sentence)" in text
    assert "not idle" not in text and "otherwise idle (other jobs' 1-min load at most 0.2)" in text
    retired = "(a finished study, its code retired: `git show 6b00cef:benchmarks/authors_eval_cost.py`)."
    assert text.rstrip().endswith(f"1-min load 0.1 → 0.2 {retired}")
    busy = report.render(fake_payload(3.5, ["--encoder-layers", "2"]))
    assert "**The machine was not idle**: other jobs' 1-min load reached 3.5 on its 2 cores" in busy
    assert "SCALED-DOWN size (--encoder-layers 2)" in busy
    scaled = report.render(fake_payload(0.2, [], sentences=675))
    assert "scaled to" not in text and "their syslen 127,659 words scaled to 675 sentences ×" in scaled


def test_the_runs_own_threads_do_not_count_as_other_jobs() -> None:
    """A 2-thread run ends with a 1-min load near 2 on an idle 2-core machine; the next run starts with that
    load still decaying: neither is another job. A load above the run's own threads is."""
    machine = {"load_average_1min_at_start": 0.14}
    runs = [
        {"torch_threads": 2, "load_1min_before": 0.27, "load_1min_after": 2.07},
        {"torch_threads": 1, "load_1min_before": 2.07, "load_1min_after": 1.0},
    ]
    assert report.other_jobs_load(machine, runs) == 0.27  # the first run's start; 2.07 - 2, 1.0 - 1 are less
    runs[1]["load_1min_after"] = 3.52
    assert report.other_jobs_load(machine, runs) == 2.52
