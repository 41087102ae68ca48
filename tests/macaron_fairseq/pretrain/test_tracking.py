"""Experiment tracking: --tensorboard-logdir writes TensorBoard scalars (read back from the event file),
--wandb-project logs to W&B (a fake ``wandb`` module stands in for the package, which is not installed
here) and is refused in one line when the package is missing."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from macaron_fairseq.pretrain.tracking import Tracker, scalars
from macaron_workflow.errors import UserError

STEP = {
    "step": 3,
    "mlm_loss": 8.5,
    "nsp_loss": 0.9,
    "mlm_accuracy": 2.0,
    "nsp_accuracy": 55.0,
    "lr": 1e-4,
    "loss_scale": 1024.0,
    "tokens_per_second": 900.0,
    "samples_per_second": 7.0,
    "mfu": 0.41,
    "pairs": 8,
    "tokens": 1000,
    "seconds": 1.1,
}
VALID = {"step": 3, "split": "valid", "mlm_loss": 8.0, "ppl": 256.0, "nsp_accuracy": 60.0, "pairs": 40}


def read_scalars(logdir: Path) -> list[tuple[int, str, float]]:
    """(step, tag, value) of every scalar in the TensorBoard event files of ``logdir`` (TFRecord framing:
    length, its CRC, the Event proto, its CRC)."""
    from tensorboardX.proto import event_pb2

    found = []
    for path in sorted(logdir.rglob("events.out.tfevents.*")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            event = event_pb2.Event()
            event.ParseFromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            found += [(event.step, value.tag, value.simple_value) for value in event.summary.value]
    return found


def test_scalars_of_a_step_and_a_validation() -> None:
    assert scalars(STEP) == {
        "train/mlm_loss": 8.5,
        "train/nsp_loss": 0.9,
        "train/mlm_accuracy": 2.0,
        "train/nsp_accuracy": 55.0,
        "train/lr": 1e-4,
        "train/loss_scale": 1024.0,
        "train/tokens_per_second": 900.0,
        "train/samples_per_second": 7.0,
        "train/mfu": 0.41,
    }
    assert scalars(VALID) == {"valid/mlm_loss": 8.0, "valid/ppl": 256.0, "valid/nsp_accuracy": 60.0}


def tracker(tmp_path: Path, **kwargs: Any) -> Tracker:
    settings = dict(
        active=True,
        tensorboard_logdir=None,
        wandb_project=None,
        save_dir=tmp_path / "run",
        run_name="tiny-run",
        config={"arch": "macaron_bert_tiny"},
        start_step=0,
    )
    return Tracker(**{**settings, **kwargs})


def test_tensorboard_scalars(tmp_path: Path) -> None:
    board = tracker(tmp_path, tensorboard_logdir=str(tmp_path / "tb"))
    board.log(STEP)
    board.log(VALID)
    board.close()
    found = read_scalars(tmp_path / "tb")
    assert (3, "train/mlm_loss", 8.5) in found and (3, "valid/ppl", 256.0) in found
    assert {tag for _, tag, _ in found} == set(scalars(STEP)) | set(scalars(VALID))
    assert tracker(tmp_path, active=False, tensorboard_logdir=str(tmp_path / "rank1")).tensorboard is None
    assert not (tmp_path / "rank1").exists()


class FakeRun:
    def __init__(self, **kwargs: Any) -> None:
        self.init, self.logged, self.finished = kwargs, [], False

    def log(self, values: dict[str, float], step: int) -> None:
        self.logged.append((step, values))

    def finish(self) -> None:
        self.finished = True


def test_wandb_logs_and_a_resumed_run_continues_the_same_wandb_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[FakeRun] = []
    fake = types.ModuleType("wandb")
    fake.util = types.SimpleNamespace(generate_id=lambda: f"id{len(runs)}")
    fake.init = lambda **kwargs: runs.append(FakeRun(**kwargs)) or runs[-1]
    monkeypatch.setitem(sys.modules, "wandb", fake)
    first = tracker(tmp_path, wandb_project="bert")
    first.log(STEP)
    first.close()
    (run,) = runs
    assert run.init["project"] == "bert" and run.init["resume"] == "allow" and run.init["id"] == "id0"
    assert run.logged == [(3, scalars(STEP))] and run.finished
    tracker(tmp_path, wandb_project="bert", start_step=3).close()
    assert runs[1].init["id"] == "id0"  # the id kept in SAVE_DIR/wandb_run_id


def test_wandb_project_without_the_package_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    with pytest.raises(UserError, match=r"^--wandb-project bert: the wandb package is not installed"):
        tracker(tmp_path, wandb_project="bert")


@pytest.mark.slow
def test_the_trainer_writes_tensorboard_scalars(corpus: Path, tmp_path: Path) -> None:
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
        str(REPO / "configs" / "deepspeed" / "tiny_cpu.json"),
        "--save-dir",
        str(tmp_path / "run"),
        "--max-update",
        "2",
        "--tensorboard-logdir",
        str(tmp_path / "tb"),
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MASTER_PORT=str(port))
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    noises = ("DEBUG:", "Warning", "deprecat", "can_reuse_epoch_itr", "creating new batches", "pin_memory")
    for noise in noises:  # the job log shows the run, not fairseq's internals (Python's warnings left on)
        assert noise not in proc.stderr, noise
    found = read_scalars(tmp_path / "tb")
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    for record in log:
        for tag, value in scalars(record).items():
            assert (record["step"], tag, pytest.approx(value, rel=1e-6)) in found, tag
    assert {tag for _, tag, _ in found} >= {
        "train/mlm_loss",
        "train/lr",
        "train/tokens_per_second",
        "valid/ppl",
    }
