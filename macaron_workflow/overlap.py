"""Outputs apart from inputs, the one rule of every command: each declares its inputs and outputs once and
:func:`refuse_overlap` refuses, before anything is written, an output path that is an input (would overwrite
it), lies inside an input directory, or contains an input — directories included, whatever the name
(``python -m macaron_preprocess.glue --glue-dir X --dest X`` replaced ``X/RTE/`` — the raw GLUE files — by its
own ``RTE/``; ``macaron-pretrain SD/step7 --save-dir SD`` pruned its own data-bin). A command whose output may
sit in a directory it reads (``macaron-export SAVE_DIR --out SAVE_DIR/model.pt``) declares the directory's
entries as inputs (:func:`entries`), so that a new name is allowed and an existing one is refused. An output
that is an existing file where a directory is expected is refused too (:func:`refuse_file_as_directory`).

Paths are compared resolved (symbolic links followed, ``..`` removed), so a link to the input directory
is the input directory. The refusal is a :class:`~macaron_workflow.errors.UserError` (exit 2) naming both
paths and the option to change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from macaron_workflow.errors import UserError


class OverlapError(UserError):
    """An output path overlaps an input path."""


def _resolved(path: Path) -> Path:
    return Path(path).expanduser().resolve(strict=False)


def relation(output: Path, input_path: Path) -> str | None:
    """How ``output`` overlaps ``input_path``: ``"is"``, ``"is inside"``, ``"contains"``, or None when
    they are apart."""
    out, inp = _resolved(output), _resolved(input_path)
    if out == inp:
        return "is"
    if inp in out.parents:
        return "is inside"
    if out in inp.parents:
        return "contains"
    return None


ALL = ("is", "is inside", "contains")


def refuse_overlap(
    outputs: Mapping[str, Path | None],
    inputs: Mapping[str, Path | None],
    change: str | None = None,
    forbid: Collection[str] = ALL,
) -> None:
    """Raise :class:`OverlapError` for the first output that is, lies inside or contains an input.

    ``outputs`` and ``inputs`` map how the user gave each path (``"--dest"``, ``"GLUE_DIR="``) to the path
    (None: not given). ``change`` is the option the message tells the user to change (default: the
    output's). ``forbid``: the relations refused (all three by default; a command that reads only named
    members of an input directory may allow an output inside it)."""
    for out_label, output in outputs.items():
        if output is None:
            continue
        for in_label, input_path in inputs.items():
            if input_path is None or (how := relation(output, input_path)) is None or how not in forbid:
                continue
            option = change or out_label
            what = "the same path as" if how == "is" else how
            raise OverlapError(
                f"{_label(out_label, output)} {what} {_label(in_label, input_path)}, an input, which is only "
                f"read (writing there would replace or mix with it); choose {option.rstrip('=')} apart "
                "from it"
            )


def entries(label: str, directory: Path, own: Callable[[Path], bool] = lambda _: False) -> dict[str, Path]:
    """Every existing entry of ``directory`` (files and directories) as an input, labelled ``LABEL's NAME``;
    ``own(path)``: an entry the command itself wrote before (its earlier output, which it may replace)."""
    if not Path(directory).is_dir():
        return {}
    return {f"{label}'s {entry.name}": entry for entry in sorted(Path(directory).iterdir()) if not own(entry)}


def refuse_file_as_directory(label: str, path: Path | None) -> None:
    """``label path`` names a directory to write: one line (exit 2) when it is an existing file."""
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise UserError(f"{label} {path}: an existing file, not a directory; give a directory to write")


def _label(label: str, path: Path) -> str:
    return f"{label}{path}" if label.endswith("=") else f"{label} {path}"
