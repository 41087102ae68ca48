"""benchmarks/authors_eval_cost.py: the synthetic test set, the dictionary, the parsing of fairseq-generate's
output, the measurement of a child process, the rendering, and one tiny end-to-end run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import authors_eval_cost as bench
from benchmarks.reports import authors_eval_cost as report
from macaron_workflow.errors import ReportedError

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

GENERATE_STDOUT = """S-1\tw1 w2
T-1\tw3
H-1\t-1.5\tw4c5
D-1\t-1.5\tw4c5
P-1\t-1.0 -2.0 -1.5
H-0\t-1.2\tw6
Generate test with beam=5: BLEU4 = 0.00, 1.1/0.0/0.0/0.0 (BP=1.000, ratio=1.690, syslen=1639, reflen=1378)
"""
GENERATE_LOG = (
    "INFO:fairseq_cli.generate:Translated 2 sentences (1,760 tokens) in 12.5s (0.16 sentences/s, "
    "140.80 tokens/s)\n"
)


def test_the_length_model_defaults_are_their_test_set_and_fairseqs_bpe_ratios() -> None:
    lengths = bench.LengthModel()
    assert lengths.sentences == 6_750
    assert lengths.mean_words == pytest.approx(131_156 / 6_750)  # their reflen / sentences ≈ 19.43
    words = bench.REFERENCE_EN_WORDS
    assert (1 + lengths.de_split) * words == pytest.approx(161_838 - 6_750)  # de BPE tokens without </s>
    assert (1 + lengths.en_split) * words == pytest.approx(156_928 - 6_750)
    sizes, de_pieces, en_pieces = bench.draw_sizes(lengths, np.random.default_rng(0))
    summary = sizes.summary()
    assert summary["sentences"] == 6_750 and summary["words_per_sentence_max"] <= lengths.max_words
    assert summary["words_per_sentence"] == pytest.approx(lengths.mean_words, abs=0.5)
    assert summary["de_bpe_tokens_per_sentence"] == pytest.approx(155_088 / 6_750, abs=0.7)
    assert summary["en_bpe_tokens_per_sentence"] == pytest.approx(150_178 / 6_750, abs=0.7)
    assert [len(p) for p in de_pieces] == [len(p) for p in en_pieces] == sizes.words.tolist()
    assert sizes.de_tokens.tolist() == [int(p.sum()) for p in de_pieces]
    again, _, _ = bench.draw_sizes(lengths, np.random.default_rng(0))
    assert again.words.tolist() == sizes.words.tolist()  # seeded


@pytest.mark.parametrize(("types", "size"), [(10_000, 10_008), (100, 104), (4, 8), (12, 16), (13, 24)])
def test_the_dictionary_is_padded_to_a_multiple_of_8_as_fairseq_pads_it(types: int, size: int) -> None:
    vocab = bench.Vocabulary(types)
    assert vocab.size == size
    lines = vocab.dictionary_text().splitlines()
    assert len(lines) == size - 4  # fairseq adds its 4 special symbols when it loads the file
    assert len({line.split()[0] for line in lines}) == len(lines)
    assert all(line.startswith("madeupword") for line in lines[types:])


def test_the_test_set_files_have_the_drawn_sizes_and_only_dictionary_tokens(tmp_path: Path) -> None:
    lengths = bench.LengthModel(sentences=50)
    vocab = bench.Vocabulary(40)
    sizes = bench.write_test_set(tmp_path, vocab, lengths, seed=3)
    known = {line.split()[0] for line in (tmp_path / "dict.txt").read_text().splitlines()}
    for lang, tokens in (("de", sizes.de_tokens), ("en", sizes.en_tokens)):
        lines = (tmp_path / f"test.{lang}").read_text().splitlines()
        assert [len(line.split()) for line in lines] == tokens.tolist()
        assert {t for line in lines for t in line.split()} <= known
        words = [len(line.replace("@@ ", "").split()) for line in lines]  # what --remove-bpe leaves
        assert words == sizes.words.tolist()
        assert not any(line.endswith("@@") for line in lines)  # every word ends with a final piece


def test_fairseq_generate_output_is_parsed_and_an_incomplete_one_refused() -> None:
    parsed = bench.parse_generate_output(GENERATE_STDOUT + GENERATE_LOG)
    assert parsed == {
        "hypotheses": 2,
        "sentences": 2,
        "generated_tokens": 1_760,
        "generation_seconds": 12.5,
        "bleu": 0.0,
        "syslen": 1_639,
        "reflen": 1_378,
    }
    with pytest.raises(ReportedError, match="no Translated line"):
        bench.parse_generate_output(GENERATE_STDOUT)
    with pytest.raises(ReportedError, match="no BLEU line"):
        bench.parse_generate_output(GENERATE_LOG)


def test_the_command_is_theirs_plus_the_cpu_and_the_length_cap(tmp_path: Path) -> None:
    argv = bench.generate_argv(tmp_path / "data", tmp_path / "c.pt", 1.0, 0)
    assert argv[:2] == ["fairseq-generate", str(tmp_path / "data")]
    joined = " ".join(argv)
    assert "--batch-size 128 --beam 5 --lenpen 1.0 --remove-bpe" in joined
    assert joined.endswith("--gen-subset test -s de -t en --cpu --max-len-a 1 --max-len-b 0")


def test_thread_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    assert "OMP_NUM_THREADS" not in bench.thread_env("default")
    one = bench.thread_env("1")
    assert one["OMP_NUM_THREADS"] == one["MKL_NUM_THREADS"] == "1"


def test_a_child_is_measured_by_its_own_cpu_time_and_a_failure_is_reported(tmp_path: Path) -> None:
    busy = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\nprint('ok')"
    row = bench.run_measured([sys.executable, "-c", busy], {}, tmp_path / "out", tmp_path / "err")
    assert (tmp_path / "out").read_text() == "ok\n"
    assert row["cpu_seconds"] >= 0.3 and row["wall_seconds"] >= 0.3 and row["peak_rss_mb"] > 1
    assert row["cpu_seconds"] == pytest.approx(row["user_seconds"] + row["system_seconds"])
    fail = "import sys; print('broken input', file=sys.stderr); sys.exit(3)"
    with pytest.raises(ReportedError, match=r"exited 3.*broken input"):
        bench.run_measured([sys.executable, "-c", fail], {}, tmp_path / "out", tmp_path / "err")


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
            "arch": bench.ARCH,
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
    assert text.rstrip().endswith("1-min load 0.1 → 0.2.")
    busy = report.render(fake_payload(3.5, ["--encoder-layers", "2"]))
    assert "**The machine was not idle**: other jobs' 1-min load reached 3.5 on its 2 cores" in busy
    assert "SCALED-DOWN size (--encoder-layers 2)" in busy
    scaled = report.render(fake_payload(0.2, [], sentences=675))
    assert "scaled to" not in text and "their syslen 127,659 words scaled to 675 sentences ×" in scaled


@pytest.mark.slow  # fairseq-preprocess, a model build and two fairseq-generate processes (~1 min)
def test_a_tiny_end_to_end_run(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    tiny = ["--sentences", "20", "--bpe-types", "100", "--dim", "32", "--ffn", "32", "--layers", "2"]
    bench.main([*tiny, "--threads", "default", "1", "--workdir", str(tmp_path / "work"), "--json", str(out)])
    payload = json.loads(out.read_text())
    results = payload["results"]
    assert results["model"]["embedding_rows"] == results["dictionary"]["size"] == 104
    assert results["model"]["pre_ln"] and results["model"]["share_all_embeddings"]
    assert [r["threads_setting"] for r in results["runs"]] == ["default", "1"]
    cap = results["length_cap"]
    assert cap["per_sentence_cap_tokens"] == results["test_set"]["de_bpe_tokens"] + 2 * 20
    assert results["runs"][1]["torch_threads"] == 1
    for run in results["runs"]:
        assert run["sentences"] == run["hypotheses"] == 20
        assert run["reflen"] == results["test_set"]["words"]  # --remove-bpe joined the pieces to words
        assert run["cpu_seconds"] > 0 and run["generation_seconds"] < run["wall_seconds"]
    assert "SCALED-DOWN" in report.render(payload)


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
