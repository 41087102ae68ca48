"""End-to-end: ``bash pipelines/quickstart.sh`` with a tiny configuration in a temporary workdir.

Checks the artefacts (BLEU JSON, PNG, detokenized hypotheses), that the training loss went down, that a
rerun skips every stage (and prints the BLEU lines again), and that ``--force`` redoes every stage with the
old checkpoints and training log moved aside. Runs in about a minute on 2 CPU cores; the installer is
skipped (``--skip-install``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import REPO

from tools.plot_curves import parse_log

TINY = [
    "--skip-install", "--train-size", "1000", "--valid-size", "100", "--test-size", "100",
    "--bpe-vocab-size", "600", "--embed-dim", "64", "--ffn-dim", "128", "--layers", "1", "--heads", "2",
    "--max-tokens", "2048", "--max-epoch", "3", "--max-update", "100", "--warmup", "10", "--lr", "3e-3",
    "--beam", "2",
    "--threads", "1",
]  # fmt: skip
STAGES = ("corpus", "train", "generate", "score", "plot")


def run_quickstart(workdir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    command = ["bash", str(REPO / "pipelines" / "quickstart.sh"), "--workdir", str(workdir), *TINY, *extra]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.slow
def test_quickstart_tiny(tmp_path: Path) -> None:
    workdir = tmp_path / "qs"
    first = run_quickstart(workdir)
    results = workdir / "results"

    bleu = json.loads((results / "bleu.json").read_text(encoding="utf-8"))
    assert bleu["n_sentences"] == 100
    assert set(bleu["scores"]) == {"sacrebleu", "tokenized"}
    assert 0.0 <= bleu["scores"]["sacrebleu"]["score"] <= 100.0
    assert bleu["hypotheses_file"] == str(results / "test.hyp.de")
    assert "sacreBLEU (detokenized" in first.stdout
    assert (results / "loss_curves.png").read_bytes()[:4] == b"\x89PNG"
    assert len((results / "test.hyp.de").read_text(encoding="utf-8").splitlines()) == 100
    assert (workdir / "generate-test.txt").is_file()
    for stage in STAGES:
        assert f"[{stage}] running" in first.stdout

    curves = parse_log((workdir / "train.log").read_text(encoding="utf-8").splitlines())
    _, inner = curves.series("inner")
    assert len(inner) >= 3 and inner[-1] < inner[0] - 1.0, inner
    epochs, valid = curves.series("valid")
    assert len(epochs) >= 2 and valid[-1] < valid[0], valid
    assert "[epoch 1] valid loss" in first.stdout + first.stderr  # the progress display

    second = run_quickstart(workdir)
    for stage in STAGES:
        assert f"[{stage}] up to date, skipped" in second.stdout, second.stdout
    assert " running" not in second.stdout + second.stderr  # nor any preprocessing stage
    assert "sacreBLEU (detokenized" in second.stdout  # the result is printed on every run
    assert json.loads((results / "bleu.json").read_text(encoding="utf-8"))["scores"] == bleu["scores"]

    forced = run_quickstart(workdir, "--force")
    for stage in STAGES:
        assert f"[{stage}] running" in forced.stdout
    assert "[tokenize-train] running" in forced.stderr  # the preprocessor got --force too
    assert "--force: moving the previous" in forced.stdout
    assert len(list(workdir.glob("checkpoints.before-*"))) == 1
    [old_log] = workdir.glob("train.log.before-*")
    assert parse_log(old_log.read_text(encoding="utf-8").splitlines()).series("valid") == (epochs, valid)
    # same seed, same data, a fresh start: the same training again, in a log of its own
    new_curves = parse_log((workdir / "train.log").read_text(encoding="utf-8").splitlines())
    assert new_curves.series("valid") == (epochs, valid)
