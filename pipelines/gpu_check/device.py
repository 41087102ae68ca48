"""What the GPU check runs on: the CUDA devices (or, with ``--allow-cpu``, the CPU), their dense bf16/fp16
peak for MFU, and the environment of the commands it runs there."""

from __future__ import annotations

import os
from dataclasses import dataclass

from macaron_pipelines.commands import REPO


class CheckError(Exception):
    """A usage or environment problem: one line, exit 2."""


@dataclass(frozen=True)
class Device:
    """What the check runs on."""

    kind: str  # "cuda" or "cpu"
    name: str
    count: int
    bf16: bool


def probe_device(allow_cpu: bool) -> Device:
    """The CUDA devices, or the CPU with ``allow_cpu``; else :class:`CheckError` (no GPU)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return Device(
            "cuda", torch.cuda.get_device_name(0), torch.cuda.device_count(), torch.cuda.is_bf16_supported()
        )
    if not allow_cpu:
        raise CheckError(
            "gpu_check: no CUDA GPU here (torch.cuda.is_available() is False, torch "
            f"{torch.__version__}); run it on a GPU machine (--allow-cpu runs the CPU smoke test)"
        )
    return Device("cpu", "CPU", 1, True)


def peak_tflops(device_name: str, override: float | None = None) -> tuple[float | None, str]:
    """(peak TFLOP/s per device, where it came from or why there is none): ``--peak-tflops``, else the data
    sheet of :data:`macaron_fairseq.pretrain.flops.PEAK_TFLOPS`."""
    if override:
        return override, "--peak-tflops"
    if device_name == "CPU":
        return None, "n/a: CPU (no tensor-core peak)"
    from macaron_fairseq.pretrain.flops import PEAK_TFLOPS, device_peak_key

    key = device_peak_key(device_name)
    if key is None:
        return None, f"n/a: unknown peak for {device_name!r} (pass --peak-tflops)"
    return PEAK_TFLOPS[key], f"{key} data sheet"


def subprocess_env(device: Device | None = None, threads: int = 0) -> dict[str, str]:
    """The environment of the commands the check runs: this code first on the path; on ``device``,
    ``threads`` OMP/MKL threads per process and, for a CPU check, no CUDA device."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, PYTHONWARNINGS="ignore")
    if device is not None:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        if device.kind == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
    return env
