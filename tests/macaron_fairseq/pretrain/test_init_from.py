"""``--init-from``: BERT's phase 2 starts from phase 1's weights with a fresh optimizer, schedule and data
position. Phase 2's first step, on the batch a fresh data position gives, has the loss of phase 1's final
model on that batch (dropout 0: the forward is deterministic), from the save directory and from the exported
model.pt alike; a checkpoint that pickles code is refused before anything runs."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, run_module, write_malicious_checkpoint

TINY_CONFIG = REPO / "configs" / "deepspeed" / "tiny_cpu.json"
NO_DROPOUT = ("--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0")


def train(corpus: Path, save_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "macaron_fairseq.pretrain",
        str(corpus),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(TINY_CONFIG),
        "--save-dir",
        str(save_dir),
        "--seed",
        "3",
        "--no-validation",
        *NO_DROPOUT,
        *extra,
    ]
    env = dict(
        os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", MASTER_PORT=str(port)
    )
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return proc


def first_record(save_dir: Path) -> dict:
    return json.loads((save_dir / "train_log.jsonl").read_text().splitlines()[0])


def loss_on_first_batch(corpus: Path, weights: dict) -> float:
    """MLM loss (bits per masked token) of a macaron_bert_tiny with ``weights`` on the first micro-batch of a
    fresh data position (seed 3, epoch 1, 8 pairs, one rank), as the trainer computes it."""
    from fairseq import options, tasks

    import macaron_fairseq  # noqa: F401

    parser = options.get_training_parser()
    argv = [
        str(corpus),
        "--task",
        "macaron_bert_pretraining",
        "--criterion",
        "macaron_bert_loss",
        "--arch",
        "macaron_bert_tiny",
        "--seed",
        "3",
        "--pair-cache",
        "off",  # in-process: the default cache dir is ./checkpoints, which was the checkout
        *NO_DROPOUT,
    ]
    args = options.parse_args_and_arch(parser, argv)
    task = tasks.setup_task(args)
    task.load_dataset("train", epoch=1)
    model, criterion = task.build_model(args), task.build_criterion(args)
    model.load_state_dict(weights, strict=False)  # the MLM output projection is tied to the embeddings
    iterator = task.get_batch_iterator(
        dataset=task.dataset("train"),
        max_sentences=8,
        max_positions=task.max_positions(),
        seed=3,
        num_shards=1,
        shard_id=0,
        epoch=1,
        required_batch_size_multiple=1,
    )
    batches = iterator.next_epoch_itr(shuffle=True)
    import torch

    with torch.no_grad():
        _, _, logging_output = criterion(model.train(), next(iter(batches)))
    return float(logging_output["mlm_loss"]) / float(logging_output["masked"]) / math.log(2)


@pytest.mark.slow
def test_phase_2_starts_from_phase_1s_final_model(corpus: Path, tmp_path: Path) -> None:
    import torch

    phase1 = tmp_path / "phase1"
    train(corpus, phase1, "--max-update", "4")
    phase2 = tmp_path / "phase2"
    proc = train(corpus, phase2, "--max-update", "1", "--init-from", str(phase1))
    assert (
        f"initialised from {phase1 / 'step4'} (weights only: fresh optimizer, schedule and data position)"
        in (proc.stderr)
    )
    weights = torch.load(phase1 / "step4" / "mp_rank_00_model_states.pt", weights_only=False)["module"]
    expected = loss_on_first_batch(corpus, weights)
    step1 = first_record(phase2)
    assert step1["mlm_loss"] == pytest.approx(expected, rel=1e-5)
    assert step1["mlm_loss"] < first_record(phase1)["mlm_loss"]  # trained weights, not a fresh model
    assert step1["lr"] == first_record(phase1)["lr"]  # a fresh schedule: the first warm-up step's rate

    exported = tmp_path / "model.pt"
    run_module("macaron_fairseq.pretrain.export", str(phase1), "--out", str(exported), timeout=600)
    from_export = tmp_path / "phase2_from_export"
    train(corpus, from_export, "--max-update", "1", "--init-from", str(exported))
    assert first_record(from_export)["mlm_loss"] == pytest.approx(expected, rel=1e-5)

    again = train(corpus, phase2, "--max-update", "2", "--init-from", str(phase1))  # resumes its own run
    assert "resumed from" in again.stderr and "initialised from" not in again.stderr


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_init_from_a_checkpoint_that_pickles_code_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data-bin"
    data.mkdir()
    for name in ("dict.txt", "train.bin", "train.idx"):
        (data / name).write_text("")
    marker = tmp_path / "pwned"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    proc = run_module(
        "macaron_fairseq.pretrain",
        str(data),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(TINY_CONFIG),
        "--save-dir",
        str(tmp_path / "run"),
        "--init-from",
        str(evil),
        check=False,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip() and "[WARNING]" not in line]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert "--init-from" in lines[0] and str(evil) in lines[0] and "posix.system" in lines[0]
    assert not marker.exists() and not (tmp_path / "run").exists()
