"""The project's one door to tensor collectives: Python numbers in, Python numbers out, the tensor placed on
the device the process group's backend accepts.

NCCL implements collectives for CUDA tensors only: ``dist.all_reduce`` of a CPU tensor under NCCL raises "No
backend type associated with device type cpu" (torch's dispatcher looks the tensor's device type up in the
group's backends). gloo accepts CPU tensors, so tests on CPU never see it. Every caller that sums or maxes a
few numbers over the ranks (the pre-trainer's step statistics and validation, DT-Fixup's μ pass, the
preemption flags) therefore goes through :func:`all_reduce`, which asks :func:`backend_device` where the
group's backend takes tensors: the CPU when the backend has a CPU implementation (gloo,
``cpu:gloo,cuda:nccl``), else the current CUDA device. Nothing else in the project calls a tensor collective
(``tests/macaron_workflow/test_collectives.py`` checks the source). Object collectives
(``broadcast_object_list``) are not tensor collectives: torch moves their buffers to the current CUDA device
itself under NCCL.

torch is imported by the functions (this package loads nothing heavy when imported).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: the reductions :func:`all_reduce` offers (names of ``torch.distributed.ReduceOp``)
OPS = ("sum", "max", "min")


def initialized() -> bool:
    """Whether a default process group exists (a collective is a no-op without one)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def backend_device_types(group: Any = None) -> list[str]:
    """The device types the group's backend(s) implement, from torch's backend config
    (``"cpu:gloo,cuda:nccl"`` -> ``["cpu", "cuda"]``; NCCL alone -> ``["cuda"]``)."""
    import torch.distributed as dist

    config = str(dist.get_backend_config(group))
    types = [item.split(":", 1)[0].strip() for item in config.split(",") if ":" in item]
    if types:
        return types
    # a backend named without devices (older configs print just the name): gloo and mpi are CPU backends
    return ["cpu"] if config.strip().lower() in ("gloo", "mpi", "undefined") else ["cuda"]


def backend_device(group: Any = None) -> Any:
    """The ``torch.device`` the group's collectives take tensors on: the CPU if its backend has a CPU
    implementation, else the current CUDA device (set by the trainer with ``torch.cuda.set_device``)."""
    import torch

    types = backend_device_types(group)
    if "cpu" in types:
        return torch.device("cpu")
    if "cuda" in types:
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(types[0])


def all_reduce(values: Sequence[float], op: str = "sum", group: Any = None) -> list[float]:
    """``values`` reduced element-wise over the ranks of ``group`` (``op``: sum, max or min), as float64 on
    the backend's device, returned as Python floats; ``values`` themselves without a process group.

    float64 keeps integer counts exact up to 2**53 (token and sentence counts of a whole corpus)."""
    if op not in OPS:
        raise ValueError(f"all_reduce: op {op!r} is not one of {', '.join(OPS)}")
    values = [float(v) for v in values]
    if not initialized():
        return values
    import torch
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64, device=backend_device(group))
    dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op.upper()), group=group)
    return tensor.cpu().tolist()
