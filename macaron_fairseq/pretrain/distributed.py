"""Rank, world size and rendezvous address from whichever launcher started the process.

``torchrun`` and the ``deepspeed`` launcher export ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT``; ``srun`` (one task per GPU) exports only Slurm's variables, from
which they are derived here: ``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID`` and, as master, the
first host of ``SLURM_JOB_NODELIST`` (a compressed host list such as ``gpu[003-005,010],login1``). A plain
``python -m`` start is a world of one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class Placement:
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    launcher: str


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: ``gpu[003-005,010],x`` -> ``gpu003``; ``a,b`` -> ``a``."""
    match = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if match is None:
        raise ValueError(f"cannot read the Slurm host list {nodelist!r}")
    prefix, ranges = match.group(1), match.group(2)
    if ranges is None:
        return prefix
    return prefix + re.split(r"[-,]", ranges, maxsplit=1)[0]


def placement(env: Mapping[str, str] | None = None) -> Placement:
    """Where this process sits, from the launcher's environment (see the module docstring)."""
    env = os.environ if env is None else env
    port = int(env.get("MASTER_PORT", DEFAULT_PORT))
    if "RANK" in env and "WORLD_SIZE" in env:
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
            local_rank=int(env.get("SLURM_LOCALID", 0)),
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
