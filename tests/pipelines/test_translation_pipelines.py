"""bash pipelines/iwslt14.sh and pipelines/wmt14.sh in small-scale mode, end to end on tiny archives in
the exact upstream layouts (built by the preprocessing tests' helpers), offline: results, a rerun that skips
every stage, a larger MAX_UPDATE that resumes training, other settings that move the checkpoints aside,
a second arch in the same workdir. The IWSLT14 tests share one workdir and run in file order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO

sys.path.insert(0, str(REPO / "tests" / "preprocess"))
from test_preprocess_iwslt14 import make_talks, make_tests
from upstream_layouts import iwslt_members, wmt_archives, write_tgz

from macaron_synthetic.toy_bitext import sentence_pairs

STAGES = ("train", "generate", "score", "results")  # no averaging: checkpoint_best.pt, as the authors
ARCH = "transformer_iwslt_de_en_macaron_v2"  # the default: the authors'


def run_pipeline(
    script: str, raw: Path, workdir: Path, *train_flags: str, **env: str
) -> subprocess.CompletedProcess:
    environment = dict(
        os.environ,
        SMALL="1",
        SKIP_INSTALL="1",
        RAW_DIR=str(raw),
        WORKDIR=str(workdir),
        WORKERS="1",
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
        **env,
    )
    command = ["bash", str(REPO / "pipelines" / script), *(["--", *train_flags] if train_flags else [])]
    proc = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{script} failed\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def model_state(checkpoint: Path) -> dict[str, object]:
    """The architecture a checkpoint was trained with and the keys of its weights."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    return {"arch": state["cfg"]["model"].arch, "keys": set(state["model"])}


def updates_of(checkpoint: Path) -> int:
    """The update count a checkpoint was saved at."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    return state["optimizer_history"][-1]["num_updates"]


@pytest.fixture(scope="module")
def iwslt_raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = tmp_path_factory.mktemp("iwslt_raw")
    write_tgz(raw / "de-en.tgz", iwslt_members(make_talks(30, seed=1), make_tests(10)))
    return raw


@pytest.fixture(scope="module")
def iwslt_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iwslt_work")


@pytest.mark.slow
def test_iwslt14_pipeline_small_end_to_end_and_a_rerun_skips_every_stage(
    iwslt_raw: Path, iwslt_workdir: Path
) -> None:
    first = run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir)
    assert "tokenized BLEU (Moses-tokenized, case-insensitive) = " in first.stdout
    report = first.stdout.index("fairseq BLEU4 (")  # the authors' test-iwslt14.sh BLEU, printed first
    assert report < first.stdout.index("tokenized BLEU (Moses-tokenized")
    results = json.loads((iwslt_workdir / f"results.{ARCH}.json").read_text())
    assert results["recipe"] == "iwslt14" and results["beam"] == 5 and results["lenpen"] == 1.0
    assert results["checkpoint"].endswith(f"{ARCH}/checkpoint_best.pt")
    assert results["bleu"]["scores"]["tokenized"]["score"] >= 0
    line = results["bleu"]["scores"]["fairseq"]["line"]
    assert line.startswith("Generate test with beam=5: BLEU4 = ")
    generated = (iwslt_workdir / f"generate-test.{ARCH}.txt").read_text().splitlines()
    assert generated[-1] == line  # what fairseq-generate printed
    assert sum(line.startswith("H-") for line in generated) == 5 * 10  # the five test sets, none dropped
    second = run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir)
    for stage in STAGES:
        assert f"[{stage}-{ARCH}] up to date, skipped" in second.stdout, second.stdout[-3000:]
    assert "running" not in second.stdout + second.stderr and "$ fairseq-" not in second.stdout
    assert "tokenized BLEU (Moses-tokenized, case-insensitive) = " in second.stdout  # printed again
    assert json.loads((iwslt_workdir / f"results.{ARCH}.json").read_text()) == results


@pytest.mark.slow
def test_iwslt14_a_larger_max_update_resumes_the_finished_training(
    iwslt_raw: Path, iwslt_workdir: Path
) -> None:
    proc = run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir, MAX_UPDATE="80")
    assert f"[train-{ARCH}] resuming in" in proc.stdout, proc.stdout[-3000:]
    assert not list((iwslt_workdir / "checkpoints").glob("*.before-*"))
    assert "Loaded checkpoint" in proc.stderr and "@ 60 updates)" in proc.stderr  # checkpoint_last.pt
    for stage in ("generate", "score"):  # the new checkpoints invalidate the later stages
        assert f"[{stage}-{ARCH}] running" in proc.stdout
    assert updates_of(iwslt_workdir / "checkpoints" / ARCH / "checkpoint_last.pt") == 80


@pytest.mark.slow
def test_iwslt14_the_transformer_baseline_gets_its_own_checkpoints(
    iwslt_raw: Path, iwslt_workdir: Path
) -> None:
    """Same workdir: the data-bin is reused, the baseline trains in its own directory, and the Macaron
    model's stages stay up to date."""
    run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir, ARCH="transformer_iwslt_de_en_v2")
    results = json.loads((iwslt_workdir / "results.transformer_iwslt_de_en_v2.json").read_text())
    assert results["arch"] == "transformer_iwslt_de_en_v2"
    # the checkpoint it evaluated is a Transformer: fairseq's layers, no Macaron half-step FFN (ffn1_*) ...
    baseline_ckpt = Path(results["checkpoint"])
    assert baseline_ckpt.parent == iwslt_workdir / "checkpoints" / "transformer_iwslt_de_en_v2"
    baseline = model_state(baseline_ckpt)
    assert "encoder.layers.0.fc1.weight" in baseline["keys"]
    assert not [key for key in baseline["keys"] if "ffn1_" in key]
    assert baseline["arch"] == "transformer_iwslt_de_en_v2"
    assert "encoder.layer_norm.weight" in baseline["keys"]  # pre-LN: a final norm per stack, as theirs
    # ... while the Macaron run's checkpoint has them (encoder and decoder)
    macaron_ckpt = Path(json.loads((iwslt_workdir / f"results.{ARCH}.json").read_text())["checkpoint"])
    macaron = model_state(macaron_ckpt)
    assert "encoder.layers.0.ffn1_fc1.weight" in macaron["keys"]
    assert "decoder.layers.0.ffn1_fc2.weight" in macaron["keys"]
    assert macaron["arch"] == ARCH and "decoder.layer_norm.weight" in macaron["keys"]
    assert not list((iwslt_workdir / "checkpoints").glob("*.before-*"))
    again = run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir, MAX_UPDATE="80")
    assert "running" not in again.stdout, again.stdout[-3000:]


@pytest.mark.slow
def test_iwslt14_other_training_settings_move_the_checkpoints_aside(
    iwslt_raw: Path, iwslt_workdir: Path
) -> None:
    proc = run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir, "--dropout", "0.2", MAX_UPDATE="80")
    assert "its settings or inputs changed: moving the previous" in proc.stdout, proc.stdout[-3000:]
    assert "No existing checkpoint found" in proc.stderr  # fairseq-train started afresh
    [aside] = (iwslt_workdir / "checkpoints").glob(f"{ARCH}.before-*")
    assert list(aside.glob("checkpoint_*_60.pt")) and updates_of(aside / "checkpoint_last.pt") == 80  # kept
    fresh = iwslt_workdir / "checkpoints" / ARCH
    assert updates_of(fresh / "checkpoint_last.pt") == 80 and not list(fresh.glob("checkpoint_*_60.pt"))


@pytest.mark.slow
def test_wmt14_pipeline_small_reports_both_bleus(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    corpora = {
        "europarl": sentence_pairs(300, seed=1),
        "commoncrawl": sentence_pairs(200, seed=2),
        "news-commentary": sentence_pairs(200, seed=3),
    }
    wmt_archives(raw, corpora, sentence_pairs(30, seed=24), sentence_pairs(40, seed=25))
    proc = run_pipeline("wmt14.sh", raw, tmp_path / "work", NUM_AVG="2")
    assert "sacreBLEU" in proc.stdout and "compound" in proc.stdout.lower(), proc.stdout[-2000:]
    authors = proc.stdout.index("BLEU as the authors' test-wmt14 (Moses detok → tok, ##AT## split")
    assert authors < proc.stdout.index("sacreBLEU (detokenized")  # their BLEU first
    results = json.loads((tmp_path / "work" / "results.transformer_wmt_en_de_macaron_v2.json").read_text())
    assert results["recipe"] == "wmt14" and results["beam"] == 4 and results["lenpen"] == 0.6
    assert results["checkpoint"].endswith("checkpoint_avg_last2.pt")  # NUM_AVG: the average instead
    assert set(results["bleu"]["scores"]) == {"retokenized", "tokenized", "sacrebleu"}
    # their data (prepare-wmt14en2de.sh: subword-nmt BPE), their --remove-bpe, their batch said in one line
    work = tmp_path / "work"
    assert (work / "data-bin" / "subword_nmt.codes").is_file() and not (
        work / "data-bin" / "spm.model"
    ).exists()
    generated = (work / "generate-test.transformer_wmt_en_de_macaron_v2.txt").read_text()
    assert "@@ " not in "".join(line for line in generated.splitlines(True) if line.startswith("H-"))
    assert "batch: 1 GPU(s) × 2000 tokens × update-freq 1 (given) = 2,000 tokens per update — NOT theirs" in (
        proc.stdout + proc.stderr
    )
    assert "stand-in reference" in results["bleu"]["scores"]["retokenized"]["label"]
    for score in results["bleu"]["scores"].values():
        assert score["sys_len"] > 0 and 0 < score["length_ratio"] and 0 < score["brevity_penalty"] <= 1
