"""A checkpoint counts once it is committed (``TAG/complete.json`` written after every rank's files, then
``latest``), and a restart loads the newest complete one: the rules on fake save directories (fast), and
the real trainer resuming from save directories a killed save left behind (slow, one process each)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from macaron_fairseq.pretrain import checkpoints

TINY_CONFIG = REPO / "configs" / "deepspeed" / "tiny_cpu.json"


def fake_checkpoint(save_dir: Path, step: int, commit: bool = True) -> Path:
    tag_dir = save_dir / f"step{step}"
    tag_dir.mkdir(parents=True)
    (tag_dir / "mp_rank_00_model_states.pt").write_bytes(b"m" * 100)
    (tag_dir / "rng_rank0.pt").write_bytes(b"r" * 10)
    if commit:
        checkpoints.write_manifest(tag_dir, {"step": step, "arch": "a", "world_size": 1})
        checkpoints.commit_latest(save_dir, tag_dir.name)
    return tag_dir


def test_the_newest_complete_checkpoint_is_chosen(tmp_path: Path) -> None:
    fake_checkpoint(tmp_path, 3)
    fake_checkpoint(tmp_path, 10)
    choice = checkpoints.choose(tmp_path)
    assert choice.tag == "step10" and choice.skipped == [] and choice.notes(tmp_path) == []
    assert choice.manifest["files"] == {"mp_rank_00_model_states.pt": 100, "rng_rank0.pt": 10}


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("truncate", "mp_rank_00_model_states.pt has 50 bytes, 100 were written"),
        ("drop_rng", "rng_rank0.pt is missing"),
        ("uncommitted", "no valid complete.json"),
        ("empty_latest", "empty"),
        ("latest_nowhere", "no such directory"),
    ],
)
def test_an_incomplete_newer_checkpoint_is_skipped_saying_why(
    tmp_path: Path, damage: str, reason: str
) -> None:
    fake_checkpoint(tmp_path, 3)
    newer = fake_checkpoint(tmp_path, 6, commit=damage not in ("uncommitted",))
    if damage == "truncate":
        (newer / "mp_rank_00_model_states.pt").write_bytes(b"m" * 50)
    elif damage == "drop_rng":
        (newer / "rng_rank0.pt").unlink()
    elif damage == "uncommitted":
        (tmp_path / "latest").write_text("step6")  # DeepSpeed's own latest, written before the commit
    elif damage == "empty_latest":
        (tmp_path / "step9").mkdir()
        (tmp_path / "latest").write_text("step9")
    elif damage == "latest_nowhere":
        (tmp_path / "latest").write_text("step12")
    choice = checkpoints.choose(tmp_path)
    assert choice.tag == ("step6" if damage in ("empty_latest", "latest_nowhere") else "step3")
    assert any(reason in why for _, why in choice.skipped), choice.skipped
    notes = "\n".join(choice.notes(tmp_path))
    assert f"is incomplete ({reason}" in notes
    assert f"newest complete checkpoint, {tmp_path / choice.tag}" in notes


def test_no_complete_checkpoint_starts_afresh_saying_so(tmp_path: Path) -> None:
    fake_checkpoint(tmp_path, 3, commit=False)
    choice = checkpoints.choose(tmp_path)
    assert choice.tag is None
    assert "holds no complete checkpoint: starting from step 0" in choice.notes(tmp_path)[-1]
    assert checkpoints.choose(tmp_path / "nothing").tag is None


def test_prune_keeps_the_newest_complete_and_removes_incomplete(tmp_path: Path) -> None:
    for step in (1, 2, 3, 4):
        fake_checkpoint(tmp_path, step)
    fake_checkpoint(tmp_path, 5, commit=False)
    assert sorted(checkpoints.prune(tmp_path, keep=2)) == ["step1", "step2", "step5"]
    assert checkpoints.tags(tmp_path) == ["step4", "step3"]


# ------------------------------------------------------------------------------------------ the trainer
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def train(corpus: Path, save_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    """One process (a world of one), 6 steps, a checkpoint every 3."""
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
        "--max-update",
        "6",
        "--save-interval-updates",
        "3",
        "--no-validation",
        "--log-interval",
        "3",
        *extra,
    ]
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
        MASTER_PORT=str(free_port()),
    )
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return proc


def losses(save_dir: Path) -> list[tuple[int, float]]:
    lines = (save_dir / "train_log.jsonl").read_text().splitlines()
    return [(r["step"], r["mlm_loss"]) for r in map(json.loads, lines)]


@pytest.fixture(scope="module")
def whole(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    save_dir = tmp_path_factory.mktemp("whole") / "run"
    train(corpus, save_dir)
    assert checkpoints.tags(save_dir) == ["step6", "step3"]
    assert (save_dir / "latest").read_text() == "step6"
    return save_dir


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage", ["truncated_model_states", "missing_rng", "missing_run_json", "empty_latest"]
)
def test_a_restart_after_a_cut_short_save_resumes_from_the_newest_complete_checkpoint(
    corpus: Path, whole: Path, tmp_path: Path, damage: str
) -> None:
    """The four ways a killed save left a save directory that crashed every restart (issue #27, item 3):
    the restart falls back to the newest complete checkpoint, says so, and ends with the uninterrupted
    run's losses."""
    save_dir = tmp_path / "run"
    shutil.copytree(whole, save_dir)
    step6 = save_dir / "step6"
    if damage == "truncated_model_states":
        states = step6 / "mp_rank_00_model_states.pt"
        states.write_bytes(states.read_bytes()[: states.stat().st_size // 2])
    elif damage == "missing_rng":
        (step6 / "rng_rank0.pt").unlink()
    elif damage == "missing_run_json":
        (save_dir / "run.json").unlink()
    elif damage == "empty_latest":
        (save_dir / "step9").mkdir()
        (save_dir / "latest").write_text("step9")
    proc = train(corpus, save_dir)
    if damage == "missing_run_json":  # the checkpoint itself is complete: nothing to redo
        assert f"resumed from {step6} at step 6" in proc.stderr
    elif damage == "empty_latest":
        assert f"checkpoint {save_dir / 'step9'} is incomplete (empty): skipped" in proc.stderr
        assert f"resumed from {step6} at step 6" in proc.stderr
    else:
        assert f"checkpoint {step6} is incomplete" in proc.stderr
        assert f"resumed from {save_dir / 'step3'} at step 3" in proc.stderr
        assert checkpoints.incomplete_reason(step6) is None  # saved again, complete
    assert losses(save_dir) == losses(whole)
    assert (save_dir / "latest").read_text() == "step6" and (save_dir / "run.json").exists()


def test_every_cuda_generator_of_the_rank_is_saved_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU, dropout draws from the CUDA generators: rng_state saves every one the process sees and
    restore_rng sets them back (exercised on CPU with torch.cuda's functions replaced)."""
    import torch

    from macaron_fairseq.pretrain import run_state

    generators = {0: torch.tensor([1], dtype=torch.uint8), 1: torch.tensor([2], dtype=torch.uint8)}
    restored: dict[int, torch.Tensor] = {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [generators[0], generators[1]])
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, index: restored.__setitem__(index, state))
    state = run_state.rng_state()
    assert [int(t) for t in state["cuda"]] == [1, 2] and torch.equal(state["torch"], torch.get_rng_state())
    assert run_state.restore_rng(state) is None
    assert {device: int(t) for device, t in restored.items()} == {0: 1, 1: 2}
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # per-task GPU binding after a requeue
    restored.clear()
    warning = run_state.restore_rng(state)
    assert list(restored) == [0] and "2 device(s) per rank, this process sees 1" in warning


@pytest.mark.slow
def test_resuming_on_another_world_size_is_refused_naming_both(
    corpus: Path, whole: Path, tmp_path: Path
) -> None:
    """A checkpoint of one rank resumed by two (a requeued job on another node count): refused before
    anything is loaded, naming both world sizes (ZeRO partitions, RNG streams, data shards are per rank)."""
    save_dir = tmp_path / "run"
    shutil.copytree(whole, save_dir)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
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
        "--max-update",
        "9",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert f"{save_dir / 'step6'} was saved by 1 ranks and this run has 2: resume with 1 ranks" in proc.stderr
    assert losses(save_dir) == losses(whole)  # nothing trained, nothing logged
