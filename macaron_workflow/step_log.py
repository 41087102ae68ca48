"""The BERT pre-trainer's step log, read and drawn: shared by the trainer (``macaron_fairseq.pretrain``
writes ``SAVE_DIR/loss_curves.png`` at every checkpoint), ``python -m macaron_tools.plot_curves`` and the
pre-training pipeline, which must not import one another (docs/architecture.md, "Layers").

``SAVE_DIR/train_log.jsonl`` holds one JSON record per optimizer step and, when the trainer validates, records
with ``"split": "valid"``. matplotlib is imported only when a plot is drawn (:func:`pyplot`), with the Agg
backend.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from macaron_workflow.atomic import atomic_output
from macaron_workflow.errors import UserError


class PlotError(UserError, RuntimeError):
    """The log holds nothing to plot (a user error: exit 2)."""


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend (imported here, on first use)."""
    # a process that imported fairseq has its root logger at DEBUG: keep matplotlib's font search quiet
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass
class StepLog:
    """The trainer's ``train_log.jsonl``: one training record per optimizer step and, when the trainer
    validates (records with ``"split": "valid"``), the validation records."""

    train: list[dict[str, Any]]
    valid: list[dict[str, Any]]


def read_step_log(path: Path) -> StepLog:
    """The records of ``path``, one per step and split (the last one wins: a run resumed from a
    checkpoint older than its last logged step logs those steps again), in step order."""
    by_split: dict[str, dict[int, dict[str, Any]]] = {"train": {}, "valid": {}}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as err:
        raise PlotError(f"no training log at {path}") from err
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a killed run
        if isinstance(record, dict) and "step" in record:
            by_split.setdefault(record.get("split", "train"), {})[int(record["step"])] = record
    train, valid = (
        [table[step] for step in sorted(table)] for table in (by_split["train"], by_split["valid"])
    )
    if not train:
        raise PlotError(f"{path} holds no training records")
    return StepLog(train, valid)


def is_step_log(path: Path) -> bool:
    """Whether ``path`` is the pre-trainer's JSON-lines log (its first line a JSON object with a step)."""
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline()
        record = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(record, dict) and "step" in record


def smoothed(values: Sequence[float], window: int) -> list[float]:
    """Trailing running mean over ``window`` values."""
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_step_log(log: StepLog, out: Path, title: str = "") -> None:
    """MLM loss, NSP loss (bits) and learning rate per step: the raw values and, for longer runs, a
    running mean over 1/50 of the steps; the validation MLM loss and NSP accuracy where the trainer
    validated. Written atomically, as a PNG whatever the name of ``out``."""
    plt = pyplot()

    steps = [int(r["step"]) for r in log.train]
    window = max(1, len(steps) // 50)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    panels = (("mlm_loss", "MLM loss (bits)"), ("nsp_loss", "NSP loss (bits)"), ("lr", "learning rate"))
    for ax, (key, label) in zip(axes, panels, strict=True):
        values = [float(r[key]) for r in log.train]
        if key != "lr" and window > 1:
            ax.plot(steps, values, "-", alpha=0.3, linewidth=0.8, label="train, per step")
            ax.plot(steps, smoothed(values, window), "-", label=f"train, mean of {window} steps")
        else:
            ax.plot(steps, values, ".-" if len(steps) <= 100 else "-", label="train")
        ax.set_xlabel("update")
        ax.set_title(label)
        ax.grid(True, alpha=0.3)
    valid = [r for r in log.valid if "mlm_loss" in r]
    if valid:
        axes[0].plot([r["step"] for r in valid], [r["mlm_loss"] for r in valid], "s-", label="valid")
    accuracy = [r for r in log.valid if "nsp_accuracy" in r]
    if accuracy:
        twin = axes[1].twinx()
        twin.plot([r["step"] for r in accuracy], [r["nsp_accuracy"] for r in accuracy], "s--", color="C3")
        twin.set_ylabel("valid NSP accuracy (%)", color="C3")
    for ax in axes[:2]:
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        with atomic_output(Path(out)) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
    finally:
        plt.close(fig)


__all__ = ["PlotError", "StepLog", "is_step_log", "plot_step_log", "pyplot", "read_step_log", "smoothed"]
