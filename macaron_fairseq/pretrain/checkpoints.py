"""When a DeepSpeed checkpoint of the pre-trainer counts as complete, and which one a restart loads.

DeepSpeed's ``save_checkpoint`` writes its files into ``SAVE_DIR/TAG/`` and then, by itself,
``SAVE_DIR/latest`` (not atomically, and before the trainer's own files: every rank's RNG state). A run
killed during a save left a ``latest`` that named a checkpoint missing files, or holding a truncated one,
and every restart crashed on it. The trainer therefore saves with ``save_latest=False`` and commits a
checkpoint itself, in this order:

1. every rank writes its part (DeepSpeed's model and optimizer states, ``rng_rank{R}.pt``) into
   ``SAVE_DIR/.TAG.tmp-save`` (:func:`staging_dir`; a storage failure there is one line, and the directory
   is removed);
2. a barrier: every rank has finished writing;
3. rank 0 writes ``complete.json`` into it atomically: the step, the architecture, the world size and ZeRO
   stage, and the size of every file of the checkpoint, then renames the directory to ``SAVE_DIR/TAG`` (the
   **commit**: a ``stepN`` directory appears only complete);
4. rank 0 replaces ``SAVE_DIR/latest`` atomically (a pointer for tools; restore does not trust it).

Only directories that are this trainer's (:func:`is_own`: named ``stepN`` and holding nothing but its
checkpoint files) are ever skipped-and-pruned or replaced: anything else in the save directory is left alone.

A checkpoint is *complete* when its ``complete.json`` exists and every file it lists exists with the listed
size (:func:`incomplete_reason`). A restart loads the complete checkpoint with the highest step and says
which newer ones it skipped and why (:func:`choose`); a save directory with no complete checkpoint starts
afresh, saying so.

A save directory is untrusted input like any checkpoint (it may come from elsewhere, or be damaged after
its commit): before DeepSpeed reads it, every ``*.pt`` file of the chosen checkpoint is read through the
allow-list (:func:`check_resumable`) — a file that pickles code, or that torch cannot read (truncated,
empty), stops the run with one line naming it, before anything of it runs.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from macaron_workflow.atomic import write_text_atomically

MANIFEST = "complete.json"
LATEST = "latest"
TAG = re.compile(r"^step(\d+)$")
#: the files of a checkpoint directory of this trainer: DeepSpeed's model and optimizer states (every ZeRO
#: stage and precision), the trainer's RNG states, the manifest, and hidden temporaries of an atomic write
OWN_FILE = re.compile(r"^(.*_(model|optim)_states\.pt|rng_rank\d+\.pt|complete\.json|\..*\.tmp-\w+)$")


def tag_of(step: int) -> str:
    return f"step{step}"


def tags(save_dir: Path) -> list[str]:
    """The checkpoint directories of ``save_dir``, newest (highest step) first."""
    found = [p.name for p in save_dir.glob("step*") if p.is_dir() and TAG.match(p.name)]
    return sorted(found, key=lambda name: int(TAG.match(name)[1]), reverse=True)  # type: ignore[index]


def staging_dir(save_dir: Path, tag: str) -> Path:
    """Where the checkpoint ``tag`` is written before its commit renames it to ``save_dir / tag`` (the same
    name on every rank: DeepSpeed checks that the ranks save the same tag)."""
    return save_dir / f".{tag}.tmp-save"


def is_own(tag_dir: Path) -> bool:
    """Whether ``tag_dir`` is a checkpoint directory of this trainer (complete or not, damaged or not): every
    entry is named as DeepSpeed or the trainer names its files (:data:`OWN_FILE`). Anything else — a data-bin,
    a user's folder that happens to be named ``step7`` — is never deleted or replaced."""
    try:
        return tag_dir.is_dir() and all(OWN_FILE.match(p.name) for p in tag_dir.iterdir())
    except OSError:
        return False


def checkpoint_files(tag_dir: Path) -> dict[str, int]:
    """Every file of a checkpoint directory (relative path → size), the manifest excepted."""
    return {
        str(path.relative_to(tag_dir)): path.stat().st_size
        for path in sorted(tag_dir.rglob("*"))
        if path.is_file() and path.name != MANIFEST and not path.name.startswith(".")
    }


def write_manifest(tag_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    """Commit the checkpoint in ``tag_dir`` (step 3 of the module docstring); call after the barrier."""
    manifest = {**record, "files": checkpoint_files(tag_dir)}
    write_text_atomically(tag_dir / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return manifest


def commit_latest(save_dir: Path, tag: str) -> None:
    write_text_atomically(save_dir / LATEST, tag)


def read_manifest(tag_dir: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((tag_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return manifest if isinstance(manifest, dict) and isinstance(manifest.get("files"), dict) else None


def incomplete_reason(tag_dir: Path) -> str | None:
    """None if the checkpoint in ``tag_dir`` is complete, else what is wrong with it."""
    if not tag_dir.is_dir():
        return "no such directory"
    if not is_own(tag_dir):
        return "not a checkpoint directory of this trainer (it holds other files): left alone"
    manifest = read_manifest(tag_dir)
    if manifest is None:
        if not any(tag_dir.iterdir()):
            return "empty"
        return f"no valid {MANIFEST} (the save was cut short, or written by an older version)"
    for name, size in manifest["files"].items():
        path = tag_dir / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size} bytes, {size} were written"
    return None


@dataclass
class Choice:
    """The checkpoint a restart loads (``tag`` None: none is complete) and the newer ones it skips."""

    tag: str | None
    manifest: dict[str, Any] | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)
    latest: str | None = None  # what SAVE_DIR/latest names, if anything

    def notes(self, save_dir: Path) -> list[str]:
        """What to tell the user about the choice (nothing when the newest checkpoint is complete)."""
        lines = [f"checkpoint {save_dir / tag} is incomplete ({why}): skipped" for tag, why in self.skipped]
        if self.skipped or (self.latest and self.latest != self.tag):
            named = f"'latest' names {self.latest}; " if self.latest and self.latest != self.tag else ""
            if self.tag is None:
                lines.append(f"{named}{save_dir} holds no complete checkpoint: starting from step 0")
            else:
                lines.append(f"{named}resuming from the newest complete checkpoint, {save_dir / self.tag}")
        return lines


def choose(save_dir: Path) -> Choice:
    """The newest complete checkpoint of ``save_dir`` (see the module docstring)."""
    latest_path = save_dir / LATEST
    latest = latest_path.read_text(encoding="utf-8").strip() if latest_path.is_file() else None
    skipped: list[tuple[str, str]] = []
    candidates = tags(save_dir)
    if latest and latest not in candidates:
        skipped.append((latest, "no such directory"))
    for tag in candidates:
        reason = incomplete_reason(save_dir / tag)
        if reason is None:
            return Choice(tag, read_manifest(save_dir / tag), skipped, latest)
        skipped.append((tag, reason))
    return Choice(None, None, skipped, latest)


def prune(save_dir: Path, keep: int) -> list[str]:
    """Keep the ``keep`` newest complete checkpoints (``keep`` <= 0: all); remove older ones and every
    incomplete one of this trainer (:func:`is_own`; called after a commit, so none is being written). The
    removed tags."""
    removed = []
    complete = 0
    for tag in tags(save_dir):
        if not is_own(save_dir / tag):
            continue
        if incomplete_reason(save_dir / tag) is None:
            complete += 1
            if keep <= 0 or complete <= keep:
                continue
        shutil.rmtree(save_dir / tag, ignore_errors=True)
        removed.append(tag)
    return removed


def resume_hint(save_dir: Path, tag: str) -> str:
    """How to get past a checkpoint that cannot be resumed."""
    return (
        f"move {save_dir / tag} out of {save_dir} to resume from the checkpoint before it, or start afresh "
        "with another --save-dir"
    )


def check_matches(save_dir: Path, choice: Choice, arch: str, world_size: int) -> None:
    """The chosen checkpoint is of this run's architecture and world size (a one-line
    :class:`~macaron_workflow.errors.UserError` otherwise)."""
    from macaron_workflow.errors import UserError

    assert choice.tag is not None
    manifest = choice.manifest or {}
    if manifest.get("arch") != arch:
        raise UserError(
            f"{save_dir} holds a {manifest.get('arch')} run; this command trains {arch} (use "
            "another --save-dir, or --arch of that run)"
        )
    saved_world = int(manifest.get("world_size", world_size))
    if saved_world != world_size:
        raise UserError(
            f"{save_dir / choice.tag} was saved by {saved_world} ranks and this run has {world_size}: resume "
            f"with {saved_world} ranks (ZeRO partitions, RNG streams and the data shards are per rank)"
        )


def check_resumable(save_dir: Path, choice: Choice, arch: str, world_size: int) -> None:
    """Before anything is built: :func:`check_matches`, and every ``*.pt`` file of the checkpoint reads
    through the allow-list (DeepSpeed's own classes allowed for this read only), tensors memory-mapped: a
    file that pickles anything else, or that torch cannot read, is a
    :class:`~macaron_workflow.errors.UserError` naming it and how to go on — before DeepSpeed, which loads
    these files with ``weights_only=False``, sees them."""
    from macaron_workflow.checkpoint_safety import deepspeed_globals, load_checkpoint

    check_matches(save_dir, choice, arch, world_size)
    assert choice.tag is not None
    extra, hint = deepspeed_globals(), resume_hint(save_dir, choice.tag)
    for path in sorted((save_dir / choice.tag).glob("*.pt")):
        load_checkpoint(path, extra_globals=extra, hint=hint)
