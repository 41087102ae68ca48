"""A real full disk for the tests (issue #41): a small tmpfs mounted for the test, so that a command's
``torch.save`` fails the way it fails on a full file system — torch's zip writer raising ``RuntimeError``
("enforce fail at inline_container.cc"), not the ``OSError`` of an injected ``os.replace`` failure — and
the helpers the full-disk cases share: everything left on the file system afterwards (empty directories
included), and the stderr lines that are not the command's one error line.

Mounting needs root (or CAP_SYS_ADMIN): where ``mount`` is refused the fixture skips, saying why."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: the stderr lines that are warnings we document (not a second error line, not a traceback)
DOCUMENTED_WARNINGS = (
    re.compile(r"^\[pretrain\] "),  # the pre-trainer's notes (docs/pretraining.md)
    re.compile(r"^.*: note: "),  # a deprecated spelling (macaron_workflow.cli)
    re.compile(r"^.*: warning: "),
)


@contextmanager
def small_filesystem(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``mount -o size=``, e.g. ``"64k"``) mounted at ``where`` for the block; skips the
    test with the reason where it cannot be mounted."""
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command here: a full-disk case needs a small tmpfs")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path, leave: int) -> Path:
    """Fill the file system of ``where`` so that about ``leave`` bytes stay free; the filler file."""
    filler = where / "filler"
    stats = os.statvfs(where)
    free = stats.f_bavail * stats.f_frsize
    filler.write_bytes(b"\0" * max(0, free - leave))
    return filler


def leftovers(root: Path, before: set[str] = frozenset()) -> list[str]:
    """Every path under ``root`` (files and directories, empty ones included, hidden ones included) that
    is not in ``before``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if str(p.relative_to(root)) not in before)


#: the log lines of the work done before the failure (fairseq's INFO lines; the pre-trainer's job log is its
#: stderr)
TRAINING_LOG = (
    re.compile(r"^INFO:[\w.]+:"),
    re.compile(r"^\[pretrain\] "),
    re.compile(r"^[\w ]+: +\d+%\|"),  # a progress bar (DeepSpeed's "Loading checkpoint shards")
    re.compile(r"^\[[\w.\-]+\] "),  # a stage's progress line ("[extract-de-en.tgz] running", "[RTE] ...")
)


def other_stderr_lines(stderr: str, prog: str, allowed: tuple[re.Pattern[str], ...] = ()) -> list[str]:
    """The non-empty stderr lines that are neither the one ``PROG: error:`` line nor a documented warning
    (nor one of ``allowed``: :data:`TRAINING_LOG` for a command that trained first)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    known = (*DOCUMENTED_WARNINGS, *allowed)
    return [
        line
        for line in lines
        if not line.startswith(f"{prog}: error: ") and not any(w.match(line) for w in known)
    ]
