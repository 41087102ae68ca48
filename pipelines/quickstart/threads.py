"""The thread environment and the CPU kernels of the quickstart's commands: they decide the floating-point
results, so they are pinned, part of the training command, and recorded with the kernels torch reports."""

from __future__ import annotations

import os
import subprocess
import sys

from macaron_workflow.machine import cpu_flags

NUMERIC_ENVIRONMENT = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ATEN_CPU_CAPABILITY", "MKL_CBWR")
"""The environment that decides the floating-point results (threads and CPU kernels): part of the training
command (``env NAME=VALUE ... fairseq-train``, so that other values train afresh) and of the run record."""
CPU_KERNELS = ("avx2", "native")


def numeric_environment() -> dict[str, str]:
    """The variables of :data:`NUMERIC_ENVIRONMENT` that are set, as the quickstart's commands see them."""
    return {name: os.environ[name] for name in NUMERIC_ENVIRONMENT if name in os.environ}


#: The CPU kernels pinned by --cpu-kernels avx2 (the default; variables already set are kept) on a CPU with
#: AVX2. The same training on the same data gives other weights, hence another BLEU, with other kernels,
#: because a vectorized sum adds in an order that depends on the vector width and the code path. Measured
#: on this project's AVX-512 machine, 2 threads, the default settings: torch's own AVX-512 kernels gave
#: sacreBLEU 88.14; ATEN_CPU_CAPABILITY=avx2 88.39 (the figure a fresh clone reported from another
#: machine); with MKL_CBWR=AVX2 too (MKL's "conditional numerical reproducibility" code path, documented as
#: giving the same results on every CPU with AVX2) 88.38. Speed: 60 updates with 1 thread took 20.3 to
#: 21.4 s of CPU time with either ATen kernel set.
PINNED_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}


def set_thread_environment(threads: int, cpu_kernels: str = "avx2") -> None:
    """Thread settings (and the pinned CPU kernels) inherited by every command the quickstart starts."""
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    # Passive OpenMP waiting: with the default busy-waiting, 2 torch threads on a 2-core machine that has
    # any other load run several times slower than 1 thread (measured here: 4.0 s vs 0.37 s per step).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if cpu_kernels == "avx2" and "avx2" in cpu_flags():  # not elsewhere: AVX2 code is illegal without AVX2
        for name, value in PINNED_KERNELS.items():
            os.environ.setdefault(name, value)


def start_torch_probe() -> subprocess.Popen[str] | None:
    """Ask torch (in a child, started now and read at the end: this process does not import torch) which
    CPU kernels it uses — ATen's AVX-512/AVX2 kernels sum in a different order, like the thread count."""
    try:
        return subprocess.Popen(
            [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except OSError:
        return None


def read_torch_probe(probe: subprocess.Popen[str] | None) -> str | None:
    if probe is None:
        return None
    try:
        out, _ = probe.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return None
    if probe.returncode != 0:
        return None
    return out.strip() or None
