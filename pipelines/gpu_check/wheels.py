"""The packages a GPU machine may lack (fairseq, DeepSpeed and their runtime dependencies), pinned to the
versions of the project's lock (``constraints.txt``, the versions the tests ran with): which are missing here,
and the ``pip`` line that installs them from the wheels ``bash scripts/gpu_wheels.sh`` downloads (it reads the
pins from ``macaron-gpu-check --wheels``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

WHEEL_DIR = "wheels/gpu"

#: the lock: the checkout's ``constraints.txt`` (this is a link to it; the wheel carries a copy)
LOCK = Path(__file__).with_name("constraints.txt")

#: (distribution, module) the check imports that a GPU machine (Python 3.12, torch + CUDA, transformers,
#: sentencepiece, sacrebleu, scipy, scikit-learn, tensorboard; no network) may lack: fairseq, DeepSpeed and
#: their runtime dependencies.
PACKAGES: tuple[tuple[str, str], ...] = (
    ("ve-fairseq", "fairseq"),
    ("hydra-core", "hydra"),
    ("omegaconf", "omegaconf"),
    ("antlr4-python3-runtime", "antlr4"),
    ("bitarray", "bitarray"),
    ("sacremoses", "sacremoses"),
    ("deepspeed", "deepspeed"),
    ("hjson", "hjson"),
    ("ninja", "ninja"),
    ("py-cpuinfo", "cpuinfo"),
    ("msgpack", "msgpack"),
    ("einops", "einops"),
    ("pydantic", "pydantic"),
    ("pydantic_core", "pydantic_core"),
)


def locked_versions(lock: Path = LOCK) -> dict[str, str]:
    """Canonical distribution name -> version of the lock's ``name==version`` lines."""
    pins = {}
    for raw in lock.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version
    return pins


def pinned(
    packages: Sequence[tuple[str, str]] = PACKAGES, lock: Path = LOCK
) -> tuple[tuple[str, str, str], ...]:
    """(distribution, version, module) of ``packages``, the versions read from the lock."""
    pins = locked_versions(lock)
    unlocked = [dist for dist, _ in packages if canonicalize_name(dist) not in pins]
    if unlocked:
        raise RuntimeError(f"{lock}: no version of {', '.join(unlocked)} (python scripts/lock.py --write)")
    return tuple((dist, pins[canonicalize_name(dist)], module) for dist, module in packages)


#: (distribution, version, module): :data:`PACKAGES` at the lock's versions
WHEELS: tuple[tuple[str, str, str], ...] = pinned()


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
