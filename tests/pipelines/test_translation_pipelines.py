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

from preprocess.sources.toy_bitext import sentence_pairs

STAGES = ("train", "average", "generate", "score", "results")


def run_pipeline(
    script: str, raw: Path, workdir: Path, *train_flags: str, **env: str
) -> subprocess.CompletedProcess:
    environment = dict(
        os.environ, SMALL="1", SKIP_INSTALL="1", RAW_DIR=str(raw), WORKDIR=str(workdir), WORKERS="1",
        OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", **env,
    )  # fmt: skip
    command = ["bash", str(REPO / "pipelines" / script), *(["--", *train_flags] if train_flags else [])]
    proc = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{script} failed\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def model_state(checkpoint: Path) -> dict[str, object]:
    """The architecture a checkpoint was trained with and the keys of its weights."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    return {"arch": state["cfg"]["model"].arch, "keys": set(state["model"])}


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
    results = json.loads((iwslt_workdir / "results.macaron_small.json").read_text())
    assert results["recipe"] == "iwslt14" and results["beam"] == 5 and results["lenpen"] == 1.0
    assert results["checkpoint"].endswith("checkpoint_avg_last5.pt")
    assert results["bleu"]["scores"]["tokenized"]["score"] >= 0
    generated = (iwslt_workdir / "generate-test.macaron_small.txt").read_text().splitlines()
    assert sum(line.startswith("H-") for line in generated) == 5 * 10  # the five test sets, none dropped
    second = run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir)
    for stage in STAGES:
        assert f"[{stage}-macaron_small] up to date, skipped" in second.stdout, second.stdout[-3000:]
    assert "running" not in second.stdout + second.stderr and "$ fairseq-" not in second.stdout
    assert "tokenized BLEU (Moses-tokenized, case-insensitive) = " in second.stdout  # printed again
    assert json.loads((iwslt_workdir / "results.macaron_small.json").read_text()) == results


@pytest.mark.slow
def test_iwslt14_a_larger_max_update_resumes_the_finished_training(
    iwslt_raw: Path, iwslt_workdir: Path
) -> None:
    proc = run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir, MAX_UPDATE="80")
    assert "[train-macaron_small] resuming in" in proc.stdout, proc.stdout[-3000:]
    assert not list((iwslt_workdir / "checkpoints").glob("*.before-*"))
    assert "Loaded checkpoint" in proc.stderr and "@ 60 updates)" in proc.stderr  # checkpoint_last.pt
    for stage in ("average", "generate", "score"):  # the new checkpoints invalidate the later stages
        assert f"[{stage}-macaron_small] running" in proc.stdout
    assert list((iwslt_workdir / "checkpoints" / "macaron_small").glob("checkpoint_*_78.pt"))  # every 13


@pytest.mark.slow
def test_iwslt14_the_transformer_baseline_gets_its_own_checkpoints(
    iwslt_raw: Path, iwslt_workdir: Path
) -> None:
    """Same workdir: the data-bin is reused, the baseline trains in its own directory, and the Macaron
    model's stages stay up to date."""
    run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir, ARCH="transformer_iwslt_de_en")
    results = json.loads((iwslt_workdir / "results.transformer_iwslt_de_en.json").read_text())
    assert results["arch"] == "transformer_iwslt_de_en"
    # the checkpoint it evaluated is a Transformer: fairseq's layers, no Macaron half-step FFN (ffn1_*) ...
    baseline_ckpt = Path(results["checkpoint"])
    assert baseline_ckpt.parent == iwslt_workdir / "checkpoints" / "transformer_iwslt_de_en"
    baseline = model_state(baseline_ckpt)
    assert "encoder.layers.0.fc1.weight" in baseline["keys"]
    assert not [key for key in baseline["keys"] if "ffn1_" in key]
    assert baseline["arch"] == "transformer_iwslt_de_en"
    # ... while the Macaron run's checkpoint has them (encoder and decoder)
    macaron_ckpt = Path(json.loads((iwslt_workdir / "results.macaron_small.json").read_text())["checkpoint"])
    macaron = model_state(macaron_ckpt)
    assert "encoder.layers.0.ffn1_fc1.weight" in macaron["keys"]
    assert "decoder.layers.0.ffn1_fc2.weight" in macaron["keys"]
    assert macaron["arch"] == "macaron_small"
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
    [aside] = (iwslt_workdir / "checkpoints").glob("macaron_small.before-*")
    assert list(aside.glob("checkpoint_*_10.pt")) and list(aside.glob("checkpoint_*_78.pt"))  # all kept
    fresh = iwslt_workdir / "checkpoints" / "macaron_small"
    assert list(fresh.glob("checkpoint_*_13.pt")) and not list(fresh.glob("checkpoint_*_10.pt"))


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
    proc = run_pipeline("wmt14.sh", raw, tmp_path / "work")
    assert "sacreBLEU" in proc.stdout and "compound" in proc.stdout.lower(), proc.stdout[-2000:]
    results = json.loads((tmp_path / "work" / "results.macaron_base.json").read_text())
    assert results["recipe"] == "wmt14" and results["beam"] == 4 and results["lenpen"] == 0.6
