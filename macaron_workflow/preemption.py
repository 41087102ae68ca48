"""Preemption and time limits: on a signal, save a checkpoint at the next step boundary, requeue the Slurm
job, exit; the requeued job resumes from that checkpoint by itself.

Shared by the DeepSpeed trainer (``python -m macaron_fairseq.pretrain``) and ``fairseq-train`` under
:mod:`macaron_tools.train_preemptible` (translation, GLUE runs). Protocol (``slurm/*.sbatch``, docs/slurm.md):

* **The warning signal** (``--preemption-signal``, default SIGHUP): the job asks Slurm for
  ``--signal=B:SIG@SECONDS`` and ``--requeue``; the batch shell forwards the signal to the training tasks
  (``srun`` steps do not receive ``B:`` signals). A cluster with ``PreemptParameters=send_user_signal``
  sends it on preemption too.
* **SIGTERM**: Slurm's own preemption (``PreemptMode=REQUEUE`` or ``CANCEL``) sends SIGCONT + SIGTERM to the
  tasks and SIGKILL after the partition's ``GraceTime``; ``scancel`` and a time limit reached without a
  warning send SIGTERM too. It is caught as well: the tasks save.

Each rank's handler only records the signal; after every optimizer step the ranks all-reduce the flags (two
integers, through :mod:`macaron_workflow.collectives`: on the GPU under NCCL), so they agree on the step even
when the signal reaches them at different moments, or reaches only some of them; then every rank saves (a
DeepSpeed checkpoint is collective), rank 0 requeues the job (:meth:`Preemption.requeue`: always after the
warning signal; after SIGTERM only when Slurm is preempting the job, i.e. ``scontrol show job`` has a
``PreemptTime`` and the job still runs, since a job that ends by itself during the grace time is not requeued
by Slurm, while requeueing after ``scancel`` would undo the cancel), then a barrier, so that no rank exits
(and ``srun --kill-on-bad-exit`` ends the step) before rank 0 has requeued; the process exits with
:data:`PREEMPTED_EXIT`. Outside Slurm the checkpoint is saved and the exit message says to rerun the same
command.

The default signal is SIGHUP: NCCL's proxy thread caught SIGUSR1 (NVIDIA/nccl#704, NCCL 2.12-2.13; later
behind ``NCCL_PROXY_DUMP_SIGNAL``) and RCCL was made to catch SIGUSR2 (ROCm/rccl#584), which hid Slurm's
preemption notice from the training code; submitit moved to USR2, then to SIGHUP (facebookincubator/submitit
#1697, #1701). A batch job has no terminal, so nothing else sends it SIGHUP.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable
from types import FrameType

from macaron_workflow.collectives import all_reduce

DEFAULT_SIGNAL = "HUP"
PREEMPTED_EXIT = 3
"""Exit status of a run stopped by the signal after saving (resumable: rerun the same command)."""


def signal_number(name: str) -> signal.Signals:
    """``HUP``, ``SIGHUP`` or ``1`` → ``signal.SIGHUP``; a clear error otherwise."""
    text = name.strip().upper()
    try:
        return (
            signal.Signals(int(text))
            if text.isdigit()
            else signal.Signals[text if text.startswith("SIG") else f"SIG{text}"]
        )
    except (KeyError, ValueError) as err:
        raise ValueError(f"--preemption-signal {name!r}: not a signal name (e.g. HUP, USR2, TERM)") from err


class Preemption:
    """The handlers (they only record) and the collective decision to stop at a step boundary.

    ``received``: this process got the warning signal; ``terminated``: it got SIGTERM (``terminate=False``
    leaves SIGTERM's default action alone). After :meth:`should_stop`, ``any_received`` /
    ``any_terminated`` say what any rank got (the same on every rank)."""

    def __init__(self, name: str = DEFAULT_SIGNAL, *, terminate: bool = True) -> None:
        self.signal = signal_number(name)
        self.received = False
        self.terminated = False
        self.any_received = False
        self.any_terminated = False
        self._previous = {self.signal: signal.signal(self.signal, self._handle)}
        if terminate and self.signal != signal.SIGTERM:
            self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if signum == self.signal:
            self.received = True
        else:
            self.terminated = True

    def should_stop(self) -> bool:
        """Whether any rank received the signal or SIGTERM (the same answer on every rank)."""
        flags = all_reduce([int(self.received), int(self.terminated)], "max")
        self.any_received, self.any_terminated = (bool(v) for v in flags)
        return self.any_received or self.any_terminated

    @property
    def reason(self) -> str:
        """The signal the ranks stopped on (``SIGHUP``, ``SIGTERM``)."""
        return self.signal.name if self.any_received or not self.any_terminated else signal.SIGTERM.name

    def requeue(self, log: Callable[[str], None]) -> bool:
        """Rank 0, after the checkpoint: requeue the Slurm job when the warning signal came, or when SIGTERM
        came and Slurm is preempting the job; whether the job was requeued."""
        job = slurm_job()
        if job is None:
            return False
        if self.any_received:
            return requeue(log)
        preempting = slurm_preempting(job)
        if preempting is False:
            log(
                f"SIGTERM without a preemption (scancel, or a time limit without --signal): Slurm job {job} "
                "is not requeued"
            )
            return False
        if preempting is None:
            log(f"warning: could not ask Slurm whether job {job} is being preempted; requeueing it")
        return requeue(log)

    def restore(self) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)


def slurm_job() -> str | None:
    return os.environ.get("SLURM_JOB_ID")


def slurm_port(job_id: int | str) -> int:
    """The rendezvous port of a Slurm job (the same after a requeue): ``10000 + JOB_ID % 20000``, i.e.
    10000-29999, below Linux's ephemeral range (32768-60999, ``net.ipv4.ip_local_port_range``), from which
    any process's outgoing connections take their ports; ``slurm/*.sbatch`` compute the same number."""
    return 10000 + int(job_id) % 20000


def job_fields(job: str) -> dict[str, str] | None:
    """``scontrol show job -o JOB`` as ``{key: value}`` (None when scontrol fails)."""
    try:
        result = subprocess.run(
            ["scontrol", "show", "job", "-o", job], capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0 or not result.stdout.startswith("JobId="):
        return None
    first = result.stdout.splitlines()[0]
    return dict(m.groups() for m in re.finditer(r"(?:^|\s)([A-Za-z_:]+)=(\S*)", first))


def slurm_preempting(job: str) -> bool | None:
    """Whether Slurm is preempting the running job (its ``PreemptTime`` is set during the grace time; a
    cancelled job is no longer ``RUNNING``); None when Slurm cannot be asked."""
    fields = job_fields(job)
    if fields is None:
        return None
    return fields.get("JobState") == "RUNNING" and fields.get("PreemptTime", "None") not in ("None", "")


def requeue(log: Callable[[str], None]) -> bool:
    """``scontrol requeue`` of this Slurm job (when there is one); whether it was accepted."""
    job = slurm_job()
    if job is None:
        return False
    try:
        result = subprocess.run(
            ["scontrol", "requeue", job], capture_output=True, text=True, check=False, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        log(f"warning: scontrol requeue {job} failed ({err}); resubmit the job to resume")
        return False
    if result.returncode == 0:
        log(f"requeued Slurm job {job}: it restarts from this checkpoint")
        return True
    log(
        f"warning: scontrol requeue {job} failed ({result.stderr.strip() or result.returncode}); "
        "resubmit the job to resume"
    )
    return False
