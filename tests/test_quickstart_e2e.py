"""End-to-end: ``bash pipelines/quickstart.sh`` with a tiny configuration in a temporary workdir.

Checks the artefacts (BLEU JSON, PNG, detokenized hypotheses), that the training loss went down, and that
a rerun skips the finished stages. Runs in well under 90 s on 2 CPU cores; the installer is skipped
(``scripts/install.sh`` has its own tests).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tools.plot_curves import parse_log

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "--skip-install", "--train-size", "1000", "--valid-size", "100", "--test-size", "100",
    "--bpe-vocab-size", "600", "--embed-dim", "64", "--ffn-dim", "128", "--layers", "1", "--heads", "2",
    "--max-tokens", "2048", "--max-epoch", "3", "--max-update", "100", "--warmup", "10", "--lr", "3e-3",
    "--beam", "2",
    "--threads", "1",
]  # fmt: skip


def run_quickstart(workdir: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    command = ["bash", str(REPO / "pipelines" / "quickstart.sh"), "--workdir", str(workdir), *TINY]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_quickstart_tiny(tmp_path: Path) -> None:
    workdir = tmp_path / "qs"
    first = run_quickstart(workdir)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    results = workdir / "results"

    bleu = json.loads((results / "bleu.json").read_text(encoding="utf-8"))
    assert bleu["n_sentences"] == 100
    assert set(bleu["scores"]) == {"sacrebleu", "tokenized"}
    assert 0.0 <= bleu["scores"]["sacrebleu"]["score"] <= 100.0
    assert "sacreBLEU (detokenized" in first.stdout
    assert (results / "loss_curves.png").read_bytes()[:4] == b"\x89PNG"
    assert len((results / "test.hyp.de").read_text(encoding="utf-8").splitlines()) == 100

    curves = parse_log((workdir / "train.log").read_text(encoding="utf-8").splitlines())
    _, inner = curves.series("inner")
    assert len(inner) >= 3 and inner[-1] < inner[0] - 1.0, inner
    epochs, valid = curves.series("valid")
    assert len(epochs) >= 2 and valid[-1] < valid[0], valid
    assert "[epoch 1] valid loss" in first.stdout + first.stderr  # the progress display

    second = run_quickstart(workdir)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    for stage in ("synthetic corpus: up to date", "training: up to date", "translation: up to date"):
        assert stage in second.stdout
    assert json.loads((results / "bleu.json").read_text(encoding="utf-8"))["scores"] == bleu["scores"]
