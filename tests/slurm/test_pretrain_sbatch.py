"""``slurm/pretrain.sbatch`` on the real single-host Slurm cluster (CPU, gloo, 2 tasks): a run to the end with
its export; the same job requeued mid-run (``scontrol requeue``: no signal, resumes from the last periodic
checkpoint) and preempted through the signal path (SIGHUP to the batch shell, as ``--signal=B:HUP@...`` sends
it at the deadline: forwarded, checkpoint, requeue by the trainer) — both end at the same final step with the
losses of the uninterrupted run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pretrain_job import SCRIPT, STEPS, submit
from slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm


def losses(save_dir: Path) -> dict[int, float]:
    """MLM loss by step (a resumed run logs the steps after its checkpoint again: the last record wins)."""
    lines = (save_dir / "train_log.jsonl").read_text().splitlines()
    return {r["step"]: r["mlm_loss"] for r in map(json.loads, lines) if "split" not in r}


def wait_for_steps(save_dir: Path, steps: int, timeout: float = 300) -> None:
    log = save_dir / "train_log.jsonl"
    deadline = time.monotonic() + timeout
    while not (log.exists() and len(log.read_text().splitlines()) >= steps):
        assert time.monotonic() < deadline, f"{log}: fewer than {steps} steps after {timeout} s"
        time.sleep(0.1)


def test_a_run_completes_with_its_export(uninterrupted: Path) -> None:
    output = (uninterrupted.parent / "run.out").read_text()
    assert "2 tasks" in output and f"step {STEPS}/{STEPS}" in output
    assert sorted(losses(uninterrupted)) == list(range(1, STEPS + 1))
    assert (uninterrupted / "model.pt").stat().st_size > 0


def test_requeued_without_signal_resumes_from_the_last_periodic_checkpoint(
    slurm_cluster: SlurmCluster, corpus: Path, uninterrupted: Path, tmp_path: Path
) -> None:
    save = tmp_path / "run"
    job = submit(slurm_cluster, corpus, save)
    wait_for_steps(save, 45)  # past the checkpoint of step 40
    slurm_cluster.requeue(job)
    status = slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    output = (tmp_path / "run.out").read_text()
    assert "restart 1" in output and f"(restart 1 of Slurm job {job})" in output
    resumed_at = int(output.split("resumed from ")[1].split(" at step ")[1].split()[0])
    assert resumed_at >= 40 and resumed_at % 20 == 0, status
    assert sorted(losses(save)) == sorted(losses(uninterrupted))
    assert list(losses(save).values()) == pytest.approx(list(losses(uninterrupted).values()), rel=1e-6)


def test_preempted_by_the_signal_saves_requeues_and_resumes(
    slurm_cluster: SlurmCluster, corpus: Path, uninterrupted: Path, tmp_path: Path
) -> None:
    save = tmp_path / "run"
    job = submit(slurm_cluster, corpus, save)
    wait_for_steps(save, 5)
    slurm_cluster.run("scancel", "--signal=HUP", "--batch", str(job))  # what --signal=B:HUP@300 does
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    output = (tmp_path / "run.out").read_text()
    assert "SIGHUP: forwarding it to the training tasks" in output
    saved_at = int(output.split("SIGHUP received: checkpoint saved at step ")[1].split()[0])
    assert 5 <= saved_at < STEPS
    assert f"requeued Slurm job {job}" in output
    checkpoint = save / f"step{saved_at}"
    assert f"resumed from {checkpoint} at step {saved_at} (restart 1 of Slurm job {job})" in output
    assert sorted(losses(save)) == sorted(losses(uninterrupted))
    assert list(losses(save).values()) == pytest.approx(list(losses(uninterrupted).values()), rel=1e-6)


def test_outside_slurm_the_script_says_so(tmp_path: Path) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "not inside a Slurm job" in proc.stderr
