"""Preemption and time limits: on a signal, save a checkpoint at the next step boundary, requeue the Slurm
job, exit; the requeued job resumes from that checkpoint by itself.

Shared by the DeepSpeed trainer (``python -m macaron_fairseq.pretrain``) and ``fairseq-train`` under
:mod:`tools.train_preemptible` (translation, GLUE runs). Protocol (``slurm/*.sbatch``): the job asks Slurm for
``--signal=B:SIG@SECONDS`` and ``--requeue``; the batch shell forwards the signal to the training tasks
(``srun`` steps do not receive ``B:`` signals); each rank's handler only records it; after every optimizer
step the ranks all-reduce the flag (one integer), so they agree on the step even when the signal reaches them
at different moments, or reaches only some of them; then every rank saves (a DeepSpeed checkpoint is
collective), rank 0 runs ``scontrol requeue $SLURM_JOB_ID``, and the process exits with
:data:`PREEMPTED_EXIT`. Outside Slurm the checkpoint is saved and the exit message says to rerun the same
command.

The default signal is SIGHUP: NCCL's proxy thread caught SIGUSR1 (NVIDIA/nccl#704, NCCL 2.12-2.13; later
behind ``NCCL_PROXY_DUMP_SIGNAL``) and RCCL was made to catch SIGUSR2 (ROCm/rccl#584), which hid Slurm's
preemption notice from the training code; submitit moved to USR2, then to SIGHUP (facebookincubator/submitit
#1697, #1701). A batch job has no terminal, so nothing else sends it SIGHUP.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from types import FrameType

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
    """The signal's handler (records only) and the collective decision to stop at a step boundary."""

    def __init__(self, name: str = DEFAULT_SIGNAL) -> None:
        self.signal = signal_number(name)
        self.received = False
        self._previous = signal.signal(self.signal, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = True

    def should_stop(self) -> bool:
        """Whether any rank received the signal (the same answer on every rank)."""
        import torch
        import torch.distributed as dist

        flag = torch.tensor([int(self.received)], dtype=torch.int32)
        if dist.is_available() and dist.is_initialized():
            if dist.get_backend() == "nccl":
                flag = flag.cuda()
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def restore(self) -> None:
        signal.signal(self.signal, self._previous)


def slurm_job() -> str | None:
    return os.environ.get("SLURM_JOB_ID")


def requeue(log: Callable[[str], None]) -> bool:
    """``scontrol requeue`` of this Slurm job (when there is one); whether it was accepted."""
    job = slurm_job()
    if job is None:
        return False
    result = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True, check=False)
    if result.returncode == 0:
        log(f"requeued Slurm job {job}: it restarts from this checkpoint")
        return True
    log(f"warning: scontrol requeue {job} failed ({result.stderr.strip() or result.returncode}); "
        "resubmit the job to resume")  # fmt: skip
    return False
