"""Average the parameters of the last N checkpoints of a fairseq run (the WMT/IWSLT recipes' last step
before beam search).

    python -m macaron_tools.average_checkpoints --inputs CKPT_DIR --num-epoch-checkpoints 5 \
        --out CKPT_DIR/checkpoint_avg_last5.pt
    python -m macaron_tools.average_checkpoints --inputs a.pt b.pt c.pt --out avg.pt

The output keeps the newest checkpoint's configuration and training state and replaces its model
weights by the element-wise mean (accumulated in float64, stored in each tensor's own dtype). The
checkpoints are read with torch's restricted unpickler and the allow-list of fairseq checkpoint classes
(:func:`macaron_workflow.checkpoint_safety.load_checkpoint`: a file that pickles anything else is refused in
one line, nothing of it runs); neither the plugin nor fairseq is imported. The output is written to a
temporary file and renamed.

torch is imported only where checkpoints are read or written, so the pipelines can use
:func:`last_checkpoints` to see which files an averaging will read without importing it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

from macaron_workflow.atomic import save_torch
from macaron_workflow.checkpoint_safety import load_checkpoint
from macaron_workflow.cli import ArgumentParser, add_deprecated_alias, run_cli
from macaron_workflow.errors import UserError

EPOCH_CHECKPOINT = re.compile(r"^checkpoint(\d+)\.pt$")
UPDATE_CHECKPOINT = re.compile(r"^checkpoint_\d+_(\d+)\.pt$")


class AveragingError(UserError, ValueError):
    """The checkpoints cannot be averaged (too few, or different parameters)."""


def last_checkpoints(directory: Path, count: int, by_update: bool) -> list[Path]:
    """The ``count`` newest ``checkpointE.pt`` (or ``checkpoint_E_U.pt``) files, oldest first."""
    pattern = UPDATE_CHECKPOINT if by_update else EPOCH_CHECKPOINT
    numbered = sorted(
        (int(m.group(1)), p) for p in directory.iterdir() if (m := pattern.match(p.name)) is not None
    )
    if len(numbered) < count:
        kind = "checkpoint_<epoch>_<update>.pt" if by_update else "checkpoint<epoch>.pt"
        raise AveragingError(
            f"{directory}: asked to average the last {count} {kind} files but found {len(numbered)}: "
            f"{[p.name for _, p in numbered]}"
        )
    return [p for _, p in numbered[-count:]]


def model_weights(path: Path, state: dict) -> dict:
    """The ``model`` state dict of a fairseq checkpoint: a mapping of names to tensors, else a one-line
    error naming the file."""
    import torch

    model = state.get("model")
    if not isinstance(model, dict):
        what = "no 'model'" if model is None else f"its 'model' is a {type(model).__name__}"
        raise AveragingError(
            f"{path}: not a fairseq checkpoint ({what}, not a dict of tensors); give the "
            "checkpoint files of a fairseq-train run"
        )
    odd = next((name for name, value in model.items() if not isinstance(value, torch.Tensor)), None)
    if odd is not None:
        raise AveragingError(
            f"{path}: not a fairseq checkpoint (its 'model' entry {odd!r} is a "
            f"{type(model[odd]).__name__}, not a tensor); give the checkpoint files of a "
            "fairseq-train run"
        )
    return model


def check_out(out: Path, inputs: Sequence[Path]) -> None:
    """``--out`` is a file to write that is none of the checkpoints read."""
    if out.is_dir():
        raise AveragingError(
            f"--out {out}: is a directory; give the file to write (e.g. {out / 'checkpoint_avg.pt'})"
        )
    same = next((path for path in inputs if path.exists() and out.exists() and path.samefile(out)), None)
    if same is not None or out.resolve() in {path.resolve() for path in inputs}:
        raise AveragingError(
            f"--out {out} is one of the checkpoints it averages ({same or out}), which are "
            "only read; give another --out"
        )


def average(paths: Sequence[Path]) -> dict:
    if not paths:
        raise AveragingError("no checkpoints to average")
    import torch

    sums: dict[str, torch.Tensor] = {}
    keys: list[str] | None = None
    state: dict = {}
    for path in paths:
        state = load_checkpoint(path)
        model = model_weights(path, state)
        if keys is None:
            keys = list(model)
        elif list(model) != keys:
            missing, extra = set(keys) - set(model), set(model) - set(keys)
            raise AveragingError(
                f"{path} has different parameters from {paths[0]} (missing {sorted(missing)[:5]}, "
                f"extra {sorted(extra)[:5]})"
            )
        for name, tensor in model.items():
            if tensor.is_floating_point():  # integer buffers (e.g. version counters) keep the newest value
                value = tensor.to(torch.float64)
                sums[name] = sums[name] + value if name in sums else value
    newest = state["model"]
    state["model"] = {
        name: (sums[name] / len(paths)).to(tensor.dtype) if name in sums else tensor
        for name, tensor in newest.items()
    }
    return state


def main(argv: Sequence[str] | None = None) -> None:
    parser = ArgumentParser(
        prog="python -m macaron_tools.average_checkpoints",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--inputs", nargs="+", type=Path, required=True, help="checkpoint files, or one directory"
    )
    parser.add_argument("--out", type=Path, required=True, help="the averaged checkpoint to write")
    add_deprecated_alias(parser, "--output", "--out")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--num-epoch-checkpoints", type=int, help="average the last N checkpoint<epoch>.pt")
    group.add_argument("--num-update-checkpoints", type=int, help="average the last N checkpoint_<e>_<u>.pt")
    args = parser.parse_args(argv)
    if args.num_epoch_checkpoints or args.num_update_checkpoints:
        if len(args.inputs) != 1 or not args.inputs[0].is_dir():
            raise AveragingError("--num-*-checkpoints needs exactly one directory in --inputs")
        by_update = bool(args.num_update_checkpoints)
        count = args.num_update_checkpoints if by_update else args.num_epoch_checkpoints
        paths = last_checkpoints(args.inputs[0], count, by_update)
    else:
        paths = list(args.inputs)
        if missing := [str(p) for p in paths if not p.exists()]:
            raise AveragingError(f"checkpoint files not found: {missing}")
        if directories := [str(p) for p in paths if p.is_dir()]:
            raise AveragingError(
                f"--inputs {', '.join(directories)}: a directory, not a checkpoint file; give checkpoint "
                "files, or one directory with --num-epoch-checkpoints N (or --num-update-checkpoints N)"
            )
    check_out(args.out, paths)
    state = average(paths)
    save_torch(state, args.out)
    print(f"averaged {len(paths)} checkpoints ({', '.join(p.name for p in paths)}) -> {args.out}")


def cli() -> None:
    """Console script ``macaron-average-checkpoints``: ``python -m macaron_tools.average_checkpoints``."""
    run_cli(main, "python -m macaron_tools.average_checkpoints")


if __name__ == "__main__":
    cli()
