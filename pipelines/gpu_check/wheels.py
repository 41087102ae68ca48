"""The packages a GPU machine may lack (fairseq, DeepSpeed and their runtime dependencies), pinned to this
project environment's versions: which are missing here, and the ``pip`` line that installs them from the
wheels ``bash scripts/gpu_wheels.sh`` downloads (it reads the pins from ``macaron-gpu-check --wheels``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

WHEEL_DIR = "wheels/gpu"

#: (distribution, version, module) the check imports that a GPU machine (Python 3.12, torch + CUDA,
#: transformers, sentencepiece, sacrebleu, scipy, scikit-learn, tensorboard; no network) may lack: fairseq,
#: DeepSpeed and their runtime dependencies. The versions are the project environment's (a test checks).
WHEELS: tuple[tuple[str, str, str], ...] = (
    ("ve-fairseq", "0.12.3", "fairseq"),
    ("hydra-core", "1.3.8", "hydra"),
    ("omegaconf", "2.3.1", "omegaconf"),
    ("antlr4-python3-runtime", "4.9.3", "antlr4"),
    ("bitarray", "3.12.3", "bitarray"),
    ("sacremoses", "0.2.0", "sacremoses"),
    ("deepspeed", "0.19.8", "deepspeed"),
    ("hjson", "3.1.0", "hjson"),
    ("ninja", "1.13.2", "ninja"),
    ("py-cpuinfo", "9.0.0", "cpuinfo"),
    ("msgpack", "1.2.4", "msgpack"),
    ("einops", "0.8.2", "einops"),
    ("pydantic", "2.13.4", "pydantic"),
    ("pydantic_core", "2.46.4", "pydantic_core"),
)


def missing_packages(find_spec: Callable[[str], Any] | None = None) -> list[tuple[str, str, str]]:
    """The :data:`WHEELS` entries whose module cannot be imported here."""
    find = find_spec or importlib.util.find_spec
    return [entry for entry in WHEELS if find(entry[2]) is None]


def install_command(missing: Sequence[tuple[str, str, str]]) -> str:
    pins = " ".join(f"{dist}=={version}" for dist, version, _ in missing)
    return f"pip install --no-deps --no-index --find-links {WHEEL_DIR} {pins}"


def missing_message(missing: Sequence[tuple[str, str, str]]) -> str:
    names = ", ".join(module for _, _, module in missing)
    return (
        f"gpu_check: missing packages: {names}; install them from the wheels carried with the tree: "
        f"{install_command(missing)} (make {WHEEL_DIR}/ with `bash scripts/gpu_wheels.sh` on a machine with "
        "network)"
    )
