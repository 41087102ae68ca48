"""Rank, world size and rendezvous address from whichever launcher started the process.

``torchrun`` and the ``deepspeed`` launcher export ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT``; ``srun`` (one task per GPU) exports only Slurm's variables, from
which they are derived here: ``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID`` and, as master, the
first host of ``SLURM_JOB_NODELIST`` (a compressed host list such as ``gpu[003-005,010],login1``). A plain
``python -m`` start is a world of one.

Inside an ``srun`` task, Slurm's variables win over a ``RANK``/``WORLD_SIZE`` that no launcher set: ``sbatch``
exports the submitting shell's whole environment (``--export=ALL``, the default), so a ``RANK=0 WORLD_SIZE=1``
left over from a local ``torchrun`` session would otherwise make every task rank 0 of a world of one. A
launcher started inside the task (``torchrun``: ``TORCHELASTIC_RUN_ID``; the ``deepspeed`` launcher:
``CROSS_RANK``/``LOCAL_SIZE``) is believed.

With per-task GPU binding (``srun --gpus-per-task=1``, ``--gpu-bind=single:1``) a task sees one device,
``cuda:0``, whatever its ``SLURM_LOCALID``: :attr:`Placement.local_rank` is the device index the task uses
(``SLURM_LOCALID`` modulo the number of devices in ``CUDA_VISIBLE_DEVICES``), and it is what ``LOCAL_RANK``
is set to for DeepSpeed, which selects its device by it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_PORT = 29500
#: variables a launcher running inside a Slurm task sets (torchrun, the deepspeed launcher)
LAUNCHER_MARKERS = ("TORCHELASTIC_RUN_ID", "CROSS_RANK", "LOCAL_SIZE")


@dataclass(frozen=True)
class Placement:
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    launcher: str


def expand_hostlist(nodelist: str) -> list[str]:
    """A Slurm host list, expanded: ``gpu[003-005,010],login1`` -> ``gpu003 gpu004 gpu005 gpu010 login1``;
    several bracket groups in one name multiply out (``rack[1-2]-node[01-02]`` -> ``rack1-node01
    rack1-node02 rack2-node01 rack2-node02``, Slurm's order); zero padding is kept."""
    hosts: list[str] = []
    for item in _top_level_items(nodelist.strip()):
        names = [""]
        for text, ranges in re.findall(r"([^\[\]]*)(?:\[([^\]]*)\])?", item):
            suffixes = _expand_ranges(ranges, nodelist) if ranges else [""]
            names = [name + text + suffix for name in names for suffix in suffixes]
        hosts.extend(names)
    if not hosts or any(not host or "[" in host or "]" in host for host in hosts):
        raise ValueError(f"cannot read the Slurm host list {nodelist!r}")
    return hosts


def _top_level_items(nodelist: str) -> list[str]:
    """Split at the commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(nodelist):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"cannot read the Slurm host list {nodelist!r}")
        elif char == "," and depth == 0:
            items.append(nodelist[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"cannot read the Slurm host list {nodelist!r}")
    items.append(nodelist[start:])
    return [item for item in items if item]


def _expand_ranges(ranges: str, nodelist: str) -> list[str]:
    out: list[str] = []
    for part in ranges.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if match is None:
            raise ValueError(f"cannot read the Slurm host list {nodelist!r} (range {part!r})")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise ValueError(f"cannot read the Slurm host list {nodelist!r} (range {part!r})")
        width = len(low) if low.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return out


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: ``scontrol show hostnames`` when Slurm's tools are on the PATH,
    else :func:`expand_hostlist` (``gpu[003-005,010],x`` -> ``gpu003``; ``rack[1-2]-node[01-04]`` ->
    ``rack1-node01``)."""
    if shutil.which("scontrol") is not None:
        try:
            proc = subprocess.run(
                ["scontrol", "show", "hostnames", nodelist],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            proc = None
        if proc is not None and proc.returncode == 0 and proc.stdout.split():
            return proc.stdout.split()[0]
    return expand_hostlist(nodelist)[0]


def device_index(local_rank: int, env: Mapping[str, str]) -> int:
    """The CUDA device a task uses: its local rank among the devices it sees (``CUDA_VISIBLE_DEVICES``, which
    Slurm narrows with per-task binding; one visible device -> 0)."""
    visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if visible and local_rank >= len(visible):
        return local_rank % len(visible)
    return local_rank


def placement(env: Mapping[str, str] | None = None) -> Placement:
    """Where this process sits, from the launcher's environment (see the module docstring)."""
    env = os.environ if env is None else env
    port = int(env.get("MASTER_PORT", DEFAULT_PORT))
    in_slurm_task = "SLURM_PROCID" in env and "SLURM_NTASKS" in env and "SLURM_STEP_ID" in env
    launched = any(name in env for name in LAUNCHER_MARKERS)
    if "RANK" in env and "WORLD_SIZE" in env and (launched or not in_slurm_task):
        return Placement(
            rank=int(env["RANK"]),
            world_size=int(env["WORLD_SIZE"]),
            local_rank=int(env.get("LOCAL_RANK", 0)),
            master_addr=env.get("MASTER_ADDR", "127.0.0.1"),
            master_port=port,
            launcher="torchrun/deepspeed",
        )
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or "127.0.0.1"
        return Placement(
            rank=int(env["SLURM_PROCID"]),
            world_size=int(env["SLURM_NTASKS"]),
            local_rank=device_index(int(env.get("SLURM_LOCALID", 0)), env),
            master_addr=env.get("MASTER_ADDR") or first_host(nodelist),
            master_port=port,
            launcher="srun",
        )
    return Placement(0, 1, 0, "127.0.0.1", port, "single process")


def export_placement(where: Placement) -> None:
    """Set the variables ``torch.distributed``'s ``env://`` rendezvous reads."""
    os.environ.update(
        RANK=str(where.rank),
        WORLD_SIZE=str(where.world_size),
        LOCAL_RANK=str(where.local_rank),
        MASTER_ADDR=where.master_addr,
        MASTER_PORT=str(where.master_port),
    )
