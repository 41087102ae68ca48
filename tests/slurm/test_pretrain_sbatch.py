"""``slurm/pretrain.sbatch`` on the real single-host Slurm cluster (CPU, gloo, 2 tasks) under the faults
clusters produce: a run to the end with its export; and, each ending at the uninterrupted run's final step
with its losses,

* Slurm's own preemption: a job of the high partition takes the CPUs (partition-priority preemption,
  ``PreemptMode=REQUEUE``): SIGTERM to the tasks, which save (no periodic checkpoint in that run), requeue the
  job themselves, and the restart resumes from that step;
* a time limit: Slurm's ``--signal=B:HUP@300`` warning to the batch shell, whose ``scancel`` fails (a failing
  ``scancel`` first on the PATH) and a slow ``scontrol`` (the requeue takes 5 s): the shell signals the
  node's tasks itself, they save, rank 0 requeues while rank 1 waits at the barrier (had it exited, ``srun
  --kill-on-bad-exit`` would have killed rank 0 before its requeue);
* a rank SIGKILLed in the middle of a checkpoint (a node failure): the job fails, is requeued, and the restart
  skips the incomplete checkpoint for the previous complete one."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from pretrain_job import SCRIPT, STEPS, submit
from slurm_cluster import HIGH_PARTITION, PATH_SBIN, SlurmCluster

pytestmark = pytest.mark.slurm
NO_EXPORT = {"EXPORT": "0"}  # the fault tests compare losses; the export is tested once, in the whole run


def losses(save_dir: Path) -> dict[int, float]:
    """MLM loss by step (a resumed run logs the steps after its checkpoint again: the last record wins)."""
    lines = (save_dir / "train_log.jsonl").read_text().splitlines()
    return {r["step"]: r["mlm_loss"] for r in map(json.loads, lines) if "split" not in r}


def assert_same_losses(save_dir: Path, uninterrupted: Path) -> None:
    assert sorted(losses(save_dir)) == sorted(losses(uninterrupted)) == list(range(1, STEPS + 1))
    assert list(losses(save_dir).values()) == pytest.approx(list(losses(uninterrupted).values()), rel=1e-6)


def wait_for_steps(save_dir: Path, steps: int, timeout: float = 300) -> None:
    log = save_dir / "train_log.jsonl"
    deadline = time.monotonic() + timeout
    while not (log.exists() and len(log.read_text().splitlines()) >= steps):
        assert time.monotonic() < deadline, f"{log}: fewer than {steps} steps after {timeout} s"
        time.sleep(0.1)


def wait_for_text(path: Path, text: str, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while text not in (content := path.read_text() if path.exists() else ""):
        assert time.monotonic() < deadline, f"{path}: no {text!r} after {timeout} s:\n{content[-3000:]}"
        time.sleep(0.2)
    return content


def saved_step(output: str, signal_name: str) -> int:
    return int(output.split(f"{signal_name} received: checkpoint saved at step ")[1].split()[0])


def test_a_run_completes_with_its_export(uninterrupted: Path) -> None:
    output = (uninterrupted.parent / "run.out").read_text()
    assert "2 tasks" in output and f"step {STEPS}/{STEPS}" in output
    assert sorted(losses(uninterrupted)) == list(range(1, STEPS + 1))
    assert (uninterrupted / "model.pt").stat().st_size > 0


def test_preempted_by_a_job_of_the_high_partition_saves_on_sigterm_requeues_and_resumes(
    slurm_cluster: SlurmCluster, corpus: Path, uninterrupted: Path, tmp_path: Path
) -> None:
    save = tmp_path / "run"
    job = submit(slurm_cluster, corpus, save, save_interval=0, env=NO_EXPORT)  # no periodic checkpoint
    wait_for_steps(save, 5)
    high = slurm_cluster.sbatch(
        "#!/bin/bash\necho the high partition ran\n",
        f"--partition={HIGH_PARTITION}",
        "--ntasks=1",
        "--cpus-per-task=1",
        f"--output={tmp_path / 'high.out'}",
    )
    try:
        slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    finally:
        output = (tmp_path / "run.out").read_text()
    slurm_cluster.wait_for(high, ("COMPLETED",), timeout=60)
    saved = saved_step(output, "SIGTERM")
    assert 5 <= saved < STEPS, output[-3000:]
    assert f"requeued Slurm job {job}: it restarts from this checkpoint" in output
    assert f"at step {saved} (restart 1 of Slurm job {job})" in output
    assert "restart 2" not in output
    assert_same_losses(save, uninterrupted)


def fake_commands(bin_dir: Path) -> dict[str, str]:
    """A ``scancel`` that fails as against a busy slurmctld, an ``scontrol`` whose requeue takes 5 s; the job
    environment that puts them first on the PATH."""
    bin_dir.mkdir()
    (bin_dir / "scancel").write_text(
        "#!/bin/sh\necho 'scancel: error: Unable to contact slurm controller (connect failure)' >&2\nexit 1\n"
    )
    scontrol = shutil.which("scontrol", path=PATH_SBIN)
    (bin_dir / "scontrol").write_text(
        f'#!/bin/sh\nif [ "$1" = requeue ]; then sleep 5; fi\nexec {scontrol} "$@"\n'
    )
    for command in bin_dir.iterdir():
        command.chmod(0o755)
    return {"PATH": f"{bin_dir}:{PATH_SBIN}"}


def run_time_seconds(cluster: SlurmCluster, job: int) -> int:
    status = cluster.job_status(job)
    assert status is not None
    days, _, clock = status.fields["RunTime"].rpartition("-")
    hours, minutes, seconds = map(int, clock.split(":"))
    return int(days or 0) * 86400 + hours * 3600 + minutes * 60 + seconds


def job_task_pids(cluster: SlurmCluster, job: int) -> list[int]:
    """The job's task processes on this host (``scontrol listpids``: not the batch shell's, not extern)."""
    pids = []
    for line in cluster.run("scontrol", "listpids", str(job)).stdout.splitlines()[1:]:
        pid, _job, step, localid, *_ = line.split()
        if step not in ("batch", "extern") and localid != "-":
            pids.append(int(pid))
    return pids


def test_a_time_limit_with_a_failing_scancel_saves_requeues_and_finishes(
    slurm_cluster: SlurmCluster, corpus: Path, uninterrupted: Path, tmp_path: Path
) -> None:
    save = tmp_path / "run"
    job = submit(slurm_cluster, corpus, save, env={**NO_EXPORT, **fake_commands(tmp_path / "bin")})
    wait_for_steps(save, 5)
    # the tasks are frozen until the shell has forwarded the warning: on an idle machine the rest of the
    # training (~15 s) ends before Slurm's next time-limit check (every 30 s) sends it
    tasks = job_task_pids(slurm_cluster, job)
    assert len(tasks) == 2, tasks
    for pid in tasks:
        os.kill(pid, signal.SIGSTOP)
    try:
        # less than the script's --signal=B:HUP@300 left: Slurm sends the warning at its next time-limit
        # check; the requeued run gets a long limit again
        minutes = run_time_seconds(slurm_cluster, job) // 60 + 4
        slurm_cluster.run("scontrol", "update", f"JobId={job}", f"TimeLimit={minutes}")
        wait_for_text(tmp_path / "run.out", "sent SIGHUP to", timeout=300)
    finally:
        for pid in tasks:
            os.kill(pid, signal.SIGCONT)
    output = wait_for_text(tmp_path / "run.out", f"requeued Slurm job {job}", timeout=300)
    slurm_cluster.run("scontrol", "update", f"JobId={job}", "TimeLimit=20")
    try:
        slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    finally:
        output = (tmp_path / "run.out").read_text()
    assert "SIGHUP: forwarding it to the training tasks" in output
    assert "scancel --signal=HUP failed (scancel: error: Unable to contact slurm controller" in output
    assert re.search(r"sent SIGHUP to 2 task\(s\) on ", output), output[-3000:]
    saved = saved_step(output, "SIGHUP")
    assert 5 <= saved < STEPS
    assert f"requeued Slurm job {job}: it restarts from this checkpoint" in output  # by rank 0 of the trainer
    assert "is not requeued yet" not in output  # not by the shell's fallback after rank 0 was killed
    assert f"resumed from {save / f'step{saved}'} at step {saved} (restart 1 of Slurm job {job})" in output
    assert_same_losses(save, uninterrupted)


KILL_IN_SAVE = """\
import os
import signal

if os.environ.get("SLURM_PROCID") == "1" and os.environ.get("SLURM_RESTART_COUNT", "0") in ("", "0"):
    import torch

    _save = torch.save

    def save(obj, f, *args, **kwargs):
        if "{os.sep}.step{step}.tmp-save{os.sep}" in str(f):  # rank 1 dies inside the save of step {step}
            os.kill(os.getpid(), signal.SIGKILL)
        return _save(obj, f, *args, **kwargs)

    torch.save = save
"""


def test_a_rank_killed_in_a_save_resumes_from_the_previous_complete_checkpoint(
    slurm_cluster: SlurmCluster, corpus: Path, uninterrupted: Path, tmp_path: Path
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(KILL_IN_SAVE.replace("{step}", "60").replace("{os.sep}", "/"))
    save = tmp_path / "run"
    job = submit(slurm_cluster, corpus, save, env={**NO_EXPORT, "PYTHONPATH": str(hooks)})
    status = slurm_cluster.wait_for(job, ("FAILED",), timeout=600)
    output = (tmp_path / "run.out").read_text()
    assert max(losses(save)) == 60 and (save / "step40").is_dir(), (status, output[-3000:])
    assert not (save / "step60").exists(), "a checkpoint cut short was committed"  # only its staging dir
    slurm_cluster.requeue(job)  # what Slurm does with a --requeue job after a node failure
    try:
        slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    finally:
        output = (tmp_path / "run.out").read_text()
    assert f"resumed from {save / 'step40'} at step 40 (restart 1 of Slurm job {job})" in output
    assert_same_losses(save, uninterrupted)


def test_outside_slurm_the_script_says_so(tmp_path: Path) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "not inside a Slurm job" in proc.stderr
