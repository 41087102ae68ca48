"""End to end through the real entry points, in subprocesses, on a tiny binarized corpus:
fairseq-train (relative --user-dir from the repo root, absolute --user-dir from elsewhere, resume),
fairseq-generate, fairseq-interactive, the hub interface, and the checkpoint allow-list."""

from __future__ import annotations

import datetime
import re
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO, TINY, run_cli

pytestmark = pytest.mark.slow  # real fairseq-train / preprocessing runs: seconds to minutes

TRAIN_FLAGS = [
    *TINY,
    "--share-all-embeddings",
    "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "5e-3",
    "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "20",
    "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
    "--max-tokens", "2000", "--num-workers", "0", "--seed", "1",
    "--no-progress-bar", "--log-interval", "10", "--no-epoch-checkpoints",
]  # fmt: skip
N_TEST = 30


def train(data_bin: Path, save_dir: Path, user_dir: str, cwd: Path, max_update: int):
    return run_cli(
        [
            "fairseq-train", str(data_bin), "--user-dir", user_dir, "--arch", "macaron_base",
            "--save-dir", str(save_dir), "--max-update", str(max_update), *TRAIN_FLAGS,
        ],
        cwd=cwd,
    )  # fmt: skip


@pytest.fixture(scope="module")
def training_run(tiny_data_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Train from the repository root with the relative --user-dir, as the README shows."""
    save_dir = tmp_path_factory.mktemp("ckpt")
    proc = train(tiny_data_bin, save_dir, "macaron_fairseq", REPO, max_update=120)
    return save_dir / "checkpoint_last.pt", proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def trained(training_run: tuple[Path, str]) -> Path:
    return training_run[0]


def losses(log: str) -> list[float]:
    return [float(x) for x in re.findall(r"\| train \| epoch \d+ \| loss ([\d.]+)", log)]


def test_train_from_repo_root_learns(training_run: tuple[Path, str]) -> None:
    trained, log = training_run
    assert "MacaronModel" in log and "MacaronEncoderLayer" in log
    epoch_losses = losses(log)
    assert len(epoch_losses) >= 5 and epoch_losses[-1] < 0.8 * epoch_losses[0], epoch_losses
    state = torch.load(trained, weights_only=True)  # the allow-list is not needed for the model weights
    assert any(k.endswith("ffn1_fc1.weight") for k in state["model"])
    assert state["cfg"]["model"].arch == "macaron_base"
    assert state["cfg"]["common"]["user_dir"] == "macaron_fairseq"


def test_train_elsewhere_with_absolute_user_dir_and_resume(tiny_data_bin: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "somewhere_else"
    elsewhere.mkdir()
    save_dir = tmp_path / "ckpt"
    first = train(tiny_data_bin, save_dir, str(REPO / "macaron_fairseq"), elsewhere, max_update=40)
    first_losses = losses(first.stdout + first.stderr)
    assert first_losses and first_losses[-1] < first_losses[0]
    resumed = train(tiny_data_bin, save_dir, str(REPO / "macaron_fairseq"), elsewhere, max_update=60)
    log = resumed.stdout + resumed.stderr
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 40 updates\)", log), log[-3000:]
    assert "num_updates 60" in log


def test_generate_translates_the_test_split(trained: Path, tiny_data_bin: Path, tmp_path: Path) -> None:
    proc = run_cli(
        [
            "fairseq-generate", str(tiny_data_bin), "--user-dir", str(REPO / "macaron_fairseq"),
            "--path", str(trained), "--beam", "5", "--lenpen", "1.0", "--batch-size", "16",
        ],
        cwd=tmp_path,
    )  # fmt: skip
    hyps = [line for line in proc.stdout.splitlines() if line.startswith("H-")]
    assert len(hyps) == N_TEST
    assert all(re.fullmatch(r"H-\d+\t-?[\d.]+\t(v\d+ ?)+", h) for h in hyps), hyps[:3]
    assert re.search(r"BLEU4 = [\d.]+", proc.stdout)


def test_interactive_translates_stdin(trained: Path, tiny_data_bin: Path, tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [
            "fairseq-interactive", str(tiny_data_bin), "--user-dir", str(REPO / "macaron_fairseq"),
            "--path", str(trained), "--beam", "4", "-s", "src", "-t", "tgt",
        ],
        input="w1 w2 w3 w4\nw5 w6 w7\n", capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    hyps = [line for line in proc.stdout.splitlines() if line.startswith("H-")]
    assert [h.split("\t")[0] for h in hyps] == ["H-0", "H-1"]


def test_hub_from_pretrained_translates(trained: Path, tiny_data_bin: Path, tmp_path: Path) -> None:
    script = (
        "from macaron_fairseq.models import MacaronModel\n"
        f"hub = MacaronModel.from_pretrained({str(trained.parent)!r}, checkpoint_file='checkpoint_last.pt',"
        f" data_name_or_path={str(tiny_data_bin)!r})\n"
        "print('TYPE', type(hub.models[0]).__name__)\n"
        "print('OUT', hub.translate('w1 w2 w3 w4', beam=5))\n"
    )
    proc = run_cli([sys.executable, "-c", script], cwd=tmp_path)
    assert "TYPE MacaronModel" in proc.stdout
    out = re.search(r"^OUT (.*)$", proc.stdout, re.M)
    assert out and re.fullmatch(r"(v\d+ ?)+", out.group(1)), proc.stdout


def test_checkpoint_with_unexpected_global_is_refused(
    trained: Path, tiny_data_bin: Path, tmp_path: Path
) -> None:
    state = torch.load(trained, weights_only=False)
    state["extra_state"]["smuggled"] = datetime.timedelta(days=1)  # any class off the allow-list
    bad = tmp_path / "tampered.pt"
    torch.save(state, bad)
    proc = run_cli(
        [
            "fairseq-generate", str(tiny_data_bin), "--user-dir", str(REPO / "macaron_fairseq"),
            "--path", str(bad),
        ],
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode != 0
    assert "UnsafeCheckpointError" in proc.stderr and f"refusing to load checkpoint {bad}" in proc.stderr
    assert "datetime.timedelta" in proc.stderr


def test_batching_keeps_the_tail_batch() -> None:
    """fairseq #5036: with --required-batch-size-multiple 8, fairseq alone drops the last 6 of 30."""
    import numpy as np
    from fairseq.data import data_utils

    batches = data_utils.batch_by_size(
        np.arange(30, dtype=np.int64),
        num_tokens_fn=lambda i: 10,
        max_sentences=16,
        required_batch_size_multiple=8,
    )
    assert [len(b) for b in batches] == [16, 8, 6]
    assert np.concatenate(batches).tolist() == list(range(30))
