"""``python -m macaron_fairseq.upgrade AUTHORS_CKPT --out model.pt [--data DATA_BIN]`` (``macaron-upgrade``).

Errors follow the project's rule: one line ``macaron-upgrade: error: ...`` (or ``python -m ...``, as
typed), exit 2 for a file or option the user can fix (a payload in the checkpoint, another kind of
checkpoint, ``--out`` the input or a directory), and nothing is written.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.overlap import refuse_overlap

PROG = "python -m macaron_fairseq.upgrade"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog=PROG,
        description="Upgrade a checkpoint of the Macaron authors' fairseq 0.6 fork (zhuohan123/macaron-net: "
        "their released IWSLT14/WMT14 models, their BERT fork's pre-trained model, or one their scripts "
        "trained) to a checkpoint of this plugin. The model's settings come from the checkpoint's own args; "
        "the file is read through the checkpoint allow-list (nothing in it is executed).",
    )
    parser.add_argument(
        "checkpoint", type=Path, help="the authors' checkpoint (e.g. checkpoint_pretrained.pt)"
    )
    parser.add_argument("--out", type=Path, required=True, help="the plugin checkpoint to write")
    parser.add_argument(
        "--data",
        type=Path,
        help="the data-bin the model was trained on (their binarized data): its dict.SRC.txt/dict.TGT.txt "
        "must match the checkpoint's embeddings, and the upgraded checkpoint records it as its data (as "
        "fairseq-train's checkpoints do); for their BERT, the directory of their dict.txt (copied beside "
        "--out as the plugin's); default: the path their args recorded",
    )
    return parser.parse_args(argv)


def check_paths(args: argparse.Namespace) -> None:
    """Refuse an output that is, or would replace, an input, before anything is read or written."""
    source, out = args.checkpoint, args.out
    if out.is_dir():
        raise UserError(
            f"--out {out} is a directory: give the checkpoint file to write, e.g. {out / 'model.pt'}"
        )
    if args.data is not None and not args.data.is_dir():
        raise UserError(f"--data {args.data}: no such directory")
    # the data-bin is an input: nothing is written into it, whatever the name
    refuse_overlap({"--out": out}, {"CHECKPOINT": source, "--data": args.data})


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    check_paths(args)
    from macaron_fairseq.upgrade import AuthorsBert, upgrade_checkpoint
    from macaron_fairseq.upgrade.evaluation import authors_test

    start = time.time()
    model = upgrade_checkpoint(args.checkpoint, args.out, args.data)
    print(f"{args.checkpoint}: {model.describe()}")
    if isinstance(model, AuthorsBert):
        took = time.time() - start
        print(f"wrote {args.out} and {args.out.parent / 'dict.txt'} in {took:.1f} s; fine-tune on GLUE with")
        print(f"  CHECKPOINT={args.out} GRID_PRESET=macaron-best bash pipelines/glue.sh")
        return
    data = args.data or model.data or "DATA_BIN"
    command = authors_test(model.source_lang, model.target_lang, data, args.out)
    print(
        f"wrote {args.out} in {time.time() - start:.1f} s; test it as the authors did — {command.benchmark}:"
    )
    for line in command.lines:
        print(f"  {line}")


def cli() -> None:
    run_cli(main, PROG)


if __name__ == "__main__":
    cli()
