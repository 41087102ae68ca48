"""Plot training and validation loss from a fairseq training log into a PNG.

    python -m macaron_tools.plot_curves --log train.log --out loss_curves.png

Reads the log written by ``fairseq-train`` in either ``--log-format json`` (lines ending in a JSON
object) or ``--log-format simple`` (``epoch 003 | loss 4.12 | ...``). Records tagged ``train`` and
``valid`` give one point per epoch; ``train_inner`` records give a per-update training curve. Repeated
lines (fairseq can attach the same log file handler more than once) are counted once.

The left panel shows loss per epoch (train and valid), the right one training loss per update when
``train_inner`` records exist. Losses are fairseq's, in base 2 (label-smoothed for the training
criterion; ``nll_loss`` is also plotted when ``--nll`` is given). matplotlib runs with the Agg backend.

The BERT pre-trainer's ``SAVE_DIR/train_log.jsonl`` (``python -m macaron_fairseq.pretrain``: one JSON
record per step, validation records with ``"split": "valid"``) is recognised and drawn as MLM loss, NSP
loss and learning rate per step (:func:`plot_step_log`); the trainer itself writes that plot to
``SAVE_DIR/loss_curves.png`` at every checkpoint.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from macaron_workflow.atomic import atomic_output, write_text_atomically
from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import UserError, cannot_read


class PlotError(UserError, RuntimeError):
    """The log holds nothing to plot (a user error: exit 2)."""


_TAGGED = re.compile(r"\|\s*(?:INFO|WARNING)\s*\|\s*(?P<tag>train_inner|train|valid)\s*\|\s*(?P<body>.*)$")


@dataclass
class Curves:
    """Loss values parsed from a log: per-epoch train/valid and per-update train."""

    train_epoch: dict[int, dict[str, float]] = field(default_factory=dict)
    valid_epoch: dict[int, dict[str, float]] = field(default_factory=dict)
    train_updates: dict[int, dict[str, float]] = field(default_factory=dict)

    def series(self, which: str, key: str = "loss") -> tuple[list[int], list[float]]:
        table = {"train": self.train_epoch, "valid": self.valid_epoch, "inner": self.train_updates}[which]
        xs = sorted(x for x, stats in table.items() if key in stats)
        return xs, [table[x][key] for x in xs]


def _to_float(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _parse_body(body: str) -> dict[str, str] | None:
    body = body.strip()
    if body.startswith("{"):
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            return None
        return {str(k): str(v) for k, v in data.items()}
    stats: dict[str, str] = {}
    for part in body.split("|"):
        words = part.strip().split()
        if len(words) >= 2:
            stats[words[0]] = words[-1]
    return stats or None


def parse_log(lines: Iterable[str]) -> Curves:
    """Parse fairseq ``train``/``valid``/``train_inner`` records (JSON or simple format)."""
    curves = Curves()
    for line in lines:
        match = _TAGGED.search(line)
        if match is None:
            continue
        stats = _parse_body(match["body"])
        if not stats:
            continue
        tag = match["tag"]
        prefix = f"{tag}_" if tag in ("train", "valid") else ""
        values = {}
        for key in ("loss", "nll_loss", "ppl", "num_updates", "epoch", "lr", "wall"):
            raw = stats.get(prefix + key, stats.get(key))
            number = _to_float(raw)
            if number is not None:
                values[key] = number
        if "loss" not in values:
            continue
        if tag == "train_inner":
            if "num_updates" in values:
                curves.train_updates[int(values["num_updates"])] = values
            continue
        if "epoch" not in values:
            continue
        table = curves.train_epoch if tag == "train" else curves.valid_epoch
        table[int(values["epoch"])] = values
    return curves


def read_curves(log: Path) -> Curves:
    """Parse a fairseq-train log file; :class:`PlotError` when it has no loss records at all."""
    with open(log, encoding="utf-8", errors="replace") as handle:
        curves = parse_log(handle)
    if not curves.train_epoch and not curves.valid_epoch and not curves.train_updates:
        raise PlotError(f"no train/valid loss records in {log} "
                        "(expected fairseq-train output with --log-format json or simple)")
    return curves


def curves_json(curves: Curves) -> str:
    """The ``--json`` file: per-epoch train and valid statistics."""
    data = {"train": {str(k): v for k, v in sorted(curves.train_epoch.items())},
            "valid": {str(k): v for k, v in sorted(curves.valid_epoch.items())}}
    return json.dumps(data, indent=2) + "\n"


def plot(curves: Curves, out: Path, title: str = "", nll: bool = False,
         image_format: str | None = None) -> None:
    """Draw the curves and write the image atomically (temporary file, then rename). The format is
    ``image_format``, by default the suffix of ``out`` (``png`` when it has none)."""
    out = Path(out)
    image_format = image_format or out.suffix.lstrip(".") or "png"
    # a process that imported fairseq has its root logger at DEBUG: keep matplotlib's font search quiet
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    has_inner = bool(curves.train_updates)
    fig, axes = plt.subplots(1, 2 if has_inner else 1, figsize=(11 if has_inner else 6, 4), squeeze=False)
    ax = axes[0][0]
    for which, style, label in (("train", "o-", "train"), ("valid", "s-", "valid")):
        xs, ys = curves.series(which)
        if xs:
            ax.plot(xs, ys, style, label=f"{label} loss")
        if nll:
            xs, ys = curves.series(which, "nll_loss")
            if xs:
                ax.plot(xs, ys, style[0] + "--", alpha=0.5, label=f"{label} nll_loss")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss (base 2)")
    ax.set_title("loss per epoch")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # a log with train_inner records only has no per-epoch points
        ax.legend()
    if has_inner:
        ax2 = axes[0][1]
        xs, ys = curves.series("inner")
        ax2.plot(xs, ys, "-", label="train loss (log interval)")
        vx = [int(curves.valid_epoch[e]["num_updates"]) for e in sorted(curves.valid_epoch)
              if "num_updates" in curves.valid_epoch[e]]
        vy = [curves.valid_epoch[e]["loss"] for e in sorted(curves.valid_epoch)
              if "num_updates" in curves.valid_epoch[e]]
        if vx:
            ax2.plot(vx, vy, "s-", label="valid loss")
        ax2.set_xlabel("update")
        ax2.set_ylabel("loss (base 2)")
        ax2.set_title("loss per update")
        ax2.grid(True, alpha=0.3)
        ax2.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        with atomic_output(out) as tmp:
            fig.savefig(tmp, dpi=100, format=image_format)
    finally:
        plt.close(fig)


# ------------------------------------------------- the pre-trainer's log (macaron_fairseq.pretrain)
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
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(prog="python -m macaron_tools.plot_curves",
                                     description="Plot train/valid loss of a fairseq training log as a PNG.")
    parser.add_argument("--log", required=True, type=Path, help="fairseq-train log (json or simple format)")
    parser.add_argument("--out", required=True, type=Path, help="PNG to write")
    parser.add_argument("--title", default="", help="figure title")
    parser.add_argument("--nll", action="store_true", help="also plot nll_loss")
    parser.add_argument("--json", type=Path, help="also write the parsed per-epoch losses as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if is_step_log(args.log):
        log = read_step_log(args.log)
        plot_step_log(log, args.out, args.title)
        print(f"plot_curves: wrote {args.out} ({len(log.train)} steps, {len(log.valid)} validations)")
        return 0
    try:
        curves = read_curves(args.log)
    except OSError as err:
        raise cannot_read(args.log, err) from err
    plot(curves, args.out, args.title, args.nll)
    if args.json is not None:
        write_text_atomically(args.json, curves_json(curves))
    epochs = sorted(set(curves.train_epoch) | set(curves.valid_epoch))
    print(f"plot_curves: wrote {args.out} ({len(epochs)} epochs, {len(curves.train_updates)} update points)")
    return 0


def cli() -> None:
    """The ``macaron-plot-curves`` console script: what ``python -m macaron_tools.plot_curves`` runs."""
    run_cli(main, "plot_curves")


if __name__ == "__main__":
    cli()
