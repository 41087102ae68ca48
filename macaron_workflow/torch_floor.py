"""The lowest torch the project runs on, written once: the ``torch>=X`` line of ``requirements.txt``.

That line is what pip sees (``pyproject.toml`` reads requirements.txt), what ``scripts/install.sh`` reads to
keep or refuse an installed torch, and what :func:`check_torch` reads when ``import macaron_fairseq`` runs
(from the checkout's requirements.txt, else the installed distribution's metadata, which holds the same line).
Why 2.6 (docs/installation.md): the checkpoint allow-list calls ``torch.serialization.add_safe_globals``
(torch 2.4) and ``torch.serialization.safe_globals`` (2.5), and the ``hf`` extra's transformers 5 disables its
PyTorch support below torch 2.6 (``transformers.utils.import_utils`` ``is_torch_available``); one floor for
the whole project, the highest of these.

Versions are compared by their release numbers only, so that a pre-release build of the floor itself (NVIDIA's
containers ship ``2.6.0a0+ecf3bae40a``) counts as that release. Nothing here imports torch.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "macaron-fairseq"
REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"
_LINE = re.compile(r"^torch\s*>=\s*(\d+(?:\.\d+)*)")


def release(version: str) -> tuple[int, ...]:
    """``"2.6.0a0+ecf3bae40a"`` -> ``(2, 6, 0)``: the release numbers, without pre-release or local parts."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    numbers = [int(part) for part in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def torch_floor() -> str:
    """The X of ``torch>=X``: the checkout's requirements.txt, else the installed distribution's metadata."""
    lines: list[str] = []
    if REQUIREMENTS.is_file():
        lines = REQUIREMENTS.read_text(encoding="utf-8").splitlines()
    else:
        try:
            lines = metadata.requires(DISTRIBUTION) or []
        except metadata.PackageNotFoundError:
            pass
    for line in lines:
        if match := _LINE.match(line.strip()):
            return match.group(1)
    raise RuntimeError(f"no 'torch>=X' requirement in {REQUIREMENTS} nor in the {DISTRIBUTION} metadata")


def installed_torch() -> str | None:
    """The installed torch's version, from its metadata (torch is not imported); None without one."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def check_torch(found: str | None = None) -> None:
    """Raise a one-line ImportError when the installed torch is older than the floor."""
    found = installed_torch() if found is None else found
    floor = torch_floor()
    if found is not None and release(found) < release(floor):
        raise ImportError(
            f"macaron-fairseq needs torch >= {floor} (requirements.txt) and this environment has torch "
            f"{found}: install a torch >= {floor} (e.g. your cluster's CUDA build), then rerun"
        )
