"""Atomic outputs: write next to the final path under a temporary name, rename only on success.

A reader (or a rerun) therefore sees either the old file, or no file, or the complete new one — never a
half-written file. Temporary names are ``.NAME.tmp-PID``; :func:`remove_stale_temporaries` deletes those
left behind by a killed process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path


def temporary_path(final: Path) -> Path:
    """Where ``final`` is written before it is renamed; unique per process, hidden, in the same folder."""
    final = Path(final)
    return final.with_name(f".{final.name}.tmp-{os.getpid()}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def missing_parents(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist, deepest first."""
    folder, missing = Path(folder), []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def make_parents(folder: Path) -> list[Path]:
    """``mkdir -p folder``; the directories it created, deepest first (what :func:`remove_created` undoes)."""
    missing = missing_parents(folder)
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
    return missing


def remove_created(directories: Sequence[Path]) -> None:
    """Remove the directories :func:`make_parents` created that are still empty (deepest first)."""
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def writing(final: Path) -> Iterator[None]:
    """Run a block that builds ``final`` (a file or a directory, staged beside it and renamed in): the
    folders above ``final`` are created first and, when the block fails, those it created are removed
    again; a storage failure in the block (a full disk, whichever library met it) becomes the one-line
    :class:`~macaron_workflow.errors.OutputError` naming ``final``."""
    from macaron_workflow.errors import storage_failure

    created = make_parents(Path(final).parent)
    try:
        yield
    except Exception as exc:
        remove_created(created)
        error = storage_failure(final, exc)
        if error is None:
            raise
        raise error from None
    except BaseException:
        remove_created(created)
        raise


@contextlib.contextmanager
def atomic_output(final: Path) -> Iterator[Path]:
    """Yield the temporary path of ``final``; rename it to ``final`` when the block succeeds, delete it
    when the block raises (or when the block wrote nothing, which is an error).

    The block may write a file or a directory there. A directory replaces an existing ``final`` directory
    by two renames (the old one aside under a temporary name, then the new one in; the old one is deleted
    after): a reader sees the old directory, none, or the complete new one."""
    final = Path(final)
    created = make_parents(final.parent)
    tmp = temporary_path(final)
    _remove(tmp)
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"nothing was written to {tmp} (the temporary file of {final})")
        replace(tmp, final)
    except BaseException:
        _remove(tmp)
        remove_created(created)  # a failed write leaves no empty directory behind
        raise
    finally:
        _remove(tmp)


def save_torch(obj: object, final: Path, shown: Path | None = None) -> Path:
    """``torch.save(obj, final)`` atomically and durably: into a temporary file in the same directory,
    fsync'ed, renamed over ``final``. A storage failure — an ``OSError`` of a full disk, a file-size limit,
    a read-only file system, or the ``RuntimeError`` torch's zip writer raises for them (DESIGN.md section
    8) — is one line (:class:`~macaron_workflow.errors.OutputError`, exit 2) naming ``final``, after what
    this call started is removed: the temporary file and the directories it created. ``final`` is then as
    before (absent, or the old file). ``shown``: the path the message names, when ``final`` is itself a
    temporary one (a file of a directory that is renamed into place later)."""
    import torch

    from macaron_workflow.errors import storage_failure

    final = Path(final)
    try:
        with atomic_output(final) as tmp:
            with open(tmp, "wb") as handle:
                torch.save(obj, handle)
                handle.flush()
                os.fsync(handle.fileno())
    except (OSError, RuntimeError) as exc:
        error = storage_failure(final if shown is None else shown, exc)
        if error is None:
            raise
        raise error from None
    return final


def replace(tmp: Path, final: Path) -> None:
    """Move the finished ``tmp`` (a file or a directory, on the same file system) to ``final``; a directory
    replaces an existing ``final`` directory by two renames, so ``final`` is never missing for longer than
    between them and a failed second rename puts the old one back."""
    tmp, final = Path(tmp), Path(final)
    if not (tmp.is_dir() and final.is_dir() and not final.is_symlink()):
        os.replace(tmp, final)
        return
    old = final.with_name(f".{final.name}.old.tmp-{os.getpid()}")
    _remove(old)
    os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        os.replace(old, final)  # the old directory stays where it was
        raise
    _remove(old)


def replace_together(moves: Sequence[tuple[Path, Path]]) -> None:
    """Move several finished temporaries into place as one commit: ``moves`` are ``(tmp, final)`` pairs
    (files or directories, each on the file system of its final path). Every existing ``final`` is first
    moved aside; if any rename fails, the ones already made are undone (the new paths removed, the old
    ones put back) before the error propagates, so the outputs are either all new or all as before —
    never a data directory without its checkpoint (``python -m macaron_fairseq.hf import``)."""
    pid = os.getpid()
    aside: list[tuple[Path, Path]] = []  # (final, where the old one waits)
    placed: list[Path] = []
    try:
        for _, final in moves:
            final = Path(final)
            if final.exists() or final.is_symlink():
                old = final.with_name(f".{final.name}.old.tmp-{pid}")
                _remove(old)
                os.replace(final, old)
                aside.append((final, old))
        for tmp, final in moves:
            os.replace(tmp, final)
            placed.append(Path(final))
    except BaseException:
        for final in reversed(placed):
            _remove(final)
        for final, old in reversed(aside):
            os.replace(old, final)
        raise
    for _, old in aside:
        _remove(old)


def write_text_atomically(path: Path, text: str) -> None:
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def remove_stale_temporaries(directory: Path) -> None:
    """Delete temporary files/dirs left by a killed run (``.NAME.tmp-PID`` whose PID is not running)."""
    if not directory.is_dir():
        return
    for entry in directory.iterdir():
        name = entry.name
        if not (name.startswith(".") and ".tmp-" in name):
            continue
        pid_text = name.rsplit(".tmp-", 1)[1]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and _pid_alive(int(pid_text)):
            continue
        _remove(entry)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
