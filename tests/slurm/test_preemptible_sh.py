"""``slurm/preemptible.sh`` without a cluster: its traps under ``set -euo pipefail`` with fake Slurm commands
on the PATH. The shell survives a failing or missing ``scancel`` inside its trap (``set -e`` applies inside
traps: the old trap ended the job unsaved, exit 127 for a missing one) and signals this node's tasks itself;
with no job step running it requeues the job at once instead of dying on the signal and orphaning its
command; SIGTERM does not end it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO

#: a training task stand-in: records the signals it gets; on SIGHUP it "saves" and exits 3, as the trainers do
TASK = """\
import os, signal, sys, time
state = sys.argv[1]
def record(signum, frame):
    with open(os.path.join(state, "task.signals"), "a") as f:
        f.write(signal.Signals(signum).name + "\\n")
    if signum == signal.SIGHUP:
        if os.environ.get("TASK_REQUEUES") == "1":  # rank 0 requeued: the job is completing
            open(os.path.join(state, "job.state"), "w").write("COMPLETING")
        sys.exit(3)
signal.signal(signal.SIGHUP, record)
signal.signal(signal.SIGTERM, record)
open(os.path.join(state, "task.pid"), "w").write(str(os.getpid()))
for _ in range(600):
    time.sleep(0.1)
"""

FAKES = {
    # a job step (7.0) runs unless STATE/no-step exists
    "squeue": '#!/bin/sh\necho 7.batch\n[ -e "$STATE/no-step" ] || echo 7.0\n',
    "scontrol": """#!/bin/sh
echo "scontrol $*" >> "$STATE/calls"
case "$1" in
  listpids) echo "PID JOBID STEPID LOCALID GLOBALID"; echo "1 7 batch 0 0"
            echo "$(cat "$STATE/task.pid") 7 0 0 0" ;;
  requeue) echo COMPLETING > "$STATE/job.state"  # and Slurm ends the job: SIGTERM, SIGKILL
           kill -TERM "$(cat "$STATE/task.pid")"; sleep 0.5; kill -KILL "$(cat "$STATE/task.pid")" ;;
  show) echo "JobId=7 JobState=$(cat "$STATE/job.state" 2>/dev/null || echo RUNNING) PreemptTime=None" ;;
esac
""",
}
#: scancel against a busy slurmctld (exit 1), or not found (bash's 127)
SCANCEL = (
    '#!/bin/sh\necho "scancel: error: Unable to contact slurm controller (connect failure)" >&2\nexit {}\n'
)

SCRIPT = """\
set -euo pipefail
source {repo}/slurm/preemptible.sh
SCRIPT_NAME=test PREEMPT_SIGNAL=HUP
run_preemptible {python} {task} {state} && status=0 || status=$?
say "command status $status"
"""


def default_signals() -> None:
    """In the child: HUP and TERM at their default disposition. A signal ignored when bash starts cannot be
    trapped, and a suite started under ``nohup`` (or a worker that ignores SIGHUP) passes SIG_IGN on; a
    Slurm batch shell starts with the defaults."""
    for signum in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def run_shell(
    tmp_path: Path,
    *,
    scancel_exit: int = 1,
    step: bool = True,
    task_requeues: bool = True,
    signum: int = signal.SIGHUP,
) -> tuple[str, Path]:
    """Start the script, send ``signum`` to the shell once the task runs; (its output, the state dir)."""
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    state.mkdir()
    bin_dir.mkdir()
    for name, text in {**FAKES, "scancel": SCANCEL.format(scancel_exit)}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    if not step:
        (state / "no-step").touch()
    (tmp_path / "task.py").write_text(TASK)
    script = SCRIPT.format(repo=REPO, python=sys.executable, task=tmp_path / "task.py", state=state)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(
        PATH=f"{bin_dir}:/usr/bin:/bin",
        STATE=str(state),
        SLURM_JOB_ID="7",
        TASK_REQUEUES="1" if task_requeues else "0",
    )
    shell = subprocess.Popen(
        ["bash", "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_signals,
    )
    deadline = time.monotonic() + 60
    while not (state / "task.pid").exists():
        assert time.monotonic() < deadline and shell.poll() is None, shell.communicate()[0]
        time.sleep(0.05)
    shell.send_signal(signum)
    if signum == signal.SIGTERM:  # the shell goes on waiting; the task ends as Slurm would end it
        time.sleep(1)
        assert shell.poll() is None, shell.communicate()[0]
        os.kill(int((state / "task.pid").read_text()), signal.SIGKILL)
    output, _ = shell.communicate(timeout=120)
    assert shell.returncode == 0, f"the shell died (exit {shell.returncode}):\n{output}"
    return output, state


@pytest.mark.parametrize("scancel_exit", [1, 127])
def test_without_scancel_the_shell_signals_the_nodes_tasks_and_survives(
    tmp_path: Path, scancel_exit: int
) -> None:
    output, state = run_shell(tmp_path, scancel_exit=scancel_exit)
    assert "SIGHUP: forwarding it to the training tasks" in output
    assert "scancel --signal=HUP failed" in output and "sent SIGHUP to 1 task(s)" in output
    assert (state / "task.signals").read_text() == "SIGHUP\n"
    assert "command status 3" in output
    assert "requeue" not in (state / "calls").read_text()  # the task's rank 0 requeued, not the shell


def test_the_shell_requeues_when_the_tasks_could_not_save(tmp_path: Path) -> None:
    # the signal reached the tasks before their handler (or not at all): they did not requeue
    output, state = run_shell(tmp_path, task_requeues=False)
    assert "the job was to be preempted and is not requeued yet: requeueing it" in output
    assert "scontrol requeue 7" in (state / "calls").read_text()


def test_with_no_job_step_the_signal_requeues_the_job_at_once(tmp_path: Path) -> None:
    output, state = run_shell(tmp_path, step=False)
    assert "SIGHUP: no job step runs: requeueing the job" in output and "requeued job 7" in output
    assert (state / "calls").read_text().splitlines() == ["scontrol requeue 7"]
    assert (state / "task.signals").read_text() == "SIGTERM\n"  # Slurm's kill after the requeue (the fake's)
    assert "command status 137" in output


def test_sigterm_does_not_end_the_shell(tmp_path: Path) -> None:
    output, state = run_shell(tmp_path, signum=signal.SIGTERM)
    assert "SIGTERM (scancel, requeue, or Slurm's preemption)" in output
    assert not (state / "task.signals").exists()  # the shell forwards nothing: Slurm signals the tasks
    assert "command status 137" in output
