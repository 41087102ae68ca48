"""The quickstart's data: the generated en→de corpus (unless the user gives files), then its data-bin
(``python -m macaron_preprocess.custom``)."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from macaron_pipelines.commands import Console, PipelineError, run_command
from macaron_pipelines.quickstart.workdir import SPLITS, Workdir
from macaron_workflow.atomic import temporary_path
from macaron_workflow.stages import StageReport, StageRunner


def synthetic_corpus(runner: StageRunner, console: Console, args: argparse.Namespace, corpus: Path) -> None:
    """The generated en→de corpus: ``corpus/{train,valid,test}.{en,de}``."""
    sizes = {"train": args.train_size, "valid": args.valid_size, "test": args.test_size}
    outputs = [corpus / f"{split}.{lang}" for split in SPLITS for lang in ("en", "de")]

    def build(temps: Mapping[Path, Path]) -> StageReport:
        console.say(f"generating the synthetic en→de corpus ({sizes}, seed {args.seed})")
        scratch = temporary_path(corpus / "generated")  # a killed run's is removed by the next one
        try:
            q = shlex.quote
            sizes_flags = " ".join(f"--{split}={size}" for split, size in sizes.items())
            command = shlex.split(
                f"{q(sys.executable)} -m macaron_synthetic.en_de --dest {q(str(scratch))} {sizes_flags} "
                f"--seed {args.seed}"
            )
            run_command(command, console)
            for out in outputs:
                os.replace(scratch / out.name, temps[out])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return {"pairs": sizes}

    runner.run("corpus", [], outputs, {**sizes, "seed": args.seed}, build)


def preprocess(console: Console, args: argparse.Namespace, paths: Workdir, prefixes: Sequence[Path]) -> None:
    """Tokenize, learn BPE and binarize (``macaron_preprocess.custom`` skips its finished stages itself)."""
    console.say(f"preprocessing -> {paths.data}")
    train, valid, test = prefixes
    q = shlex.quote
    command = shlex.split(
        f"{q(sys.executable)} -m macaron_preprocess.custom --src {q(args.src)} --tgt {q(args.tgt)} "
        f"--trainpref {q(str(train))} --validpref {q(str(valid))} --testpref {q(str(test))} "
        f"--dest {q(str(paths.data))} --bpe-vocab-size {args.bpe_vocab_size}"
    )
    if args.lowercase:
        command.append("--lowercase")
    if args.force:
        command.append("--force")
    run_command(command, console)
    if not (paths.data_bin / f"dict.{args.src}.txt").is_file():
        raise PipelineError(f"preprocessing did not produce {paths.data_bin}")
