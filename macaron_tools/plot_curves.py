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
loss and learning rate per step (:func:`plot_step_log`, from :mod:`macaron_workflow.step_log`, which the
trainer itself uses to write ``SAVE_DIR/loss_curves.png`` at every checkpoint).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from macaron_workflow.atomic import atomic_output, write_text_atomically
from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import cannot_read
from macaron_workflow.step_log import (  # the pre-trainer's log: shared with the trainer, re-exported here
    PlotError,
    StepLog,
    is_step_log,
    plot_step_log,
    pyplot,
    read_step_log,
    smoothed,
)

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
        raise PlotError(
            f"no train/valid loss records in {log} "
            "(expected fairseq-train output with --log-format json or simple)"
        )
    return curves


def curves_json(curves: Curves) -> str:
    """The ``--json`` file: per-epoch train and valid statistics."""
    data = {
        "train": {str(k): v for k, v in sorted(curves.train_epoch.items())},
        "valid": {str(k): v for k, v in sorted(curves.valid_epoch.items())},
    }
    return json.dumps(data, indent=2) + "\n"


def plot(
    curves: Curves, out: Path, title: str = "", nll: bool = False, image_format: str | None = None
) -> None:
    """Draw the curves and write the image atomically (temporary file, then rename). The format is
    ``image_format``, by default the suffix of ``out`` (``png`` when it has none)."""
    out = Path(out)
    image_format = image_format or out.suffix.lstrip(".") or "png"
    plt = pyplot()
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
        valid = [stats for _, stats in sorted(curves.valid_epoch.items()) if "num_updates" in stats]
        vx, vy = [int(stats["num_updates"]) for stats in valid], [stats["loss"] for stats in valid]
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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m macaron_tools.plot_curves",
        description="Plot train/valid loss of a fairseq training log as a PNG.",
    )
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


__all__ = [
    "Curves",
    "PlotError",
    "StepLog",
    "curves_json",
    "is_step_log",
    "main",
    "parse_log",
    "plot",
    "plot_step_log",
    "read_curves",
    "read_step_log",
    "smoothed",
]


def cli() -> None:
    """The ``macaron-plot-curves`` console script: what ``python -m macaron_tools.plot_curves`` runs."""
    run_cli(main, "python -m macaron_tools.plot_curves")


if __name__ == "__main__":
    cli()
