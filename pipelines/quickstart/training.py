"""The quickstart's ``fairseq-train`` command: a small Macaron model, with the numeric environment."""

from __future__ import annotations

import argparse
import shlex

from macaron_pipelines.commands import USER_DIR
from macaron_pipelines.quickstart.threads import numeric_environment
from macaron_pipelines.quickstart.workdir import Workdir


def train_command(args: argparse.Namespace, paths: Workdir) -> list[str]:
    """``env NAME=VALUE ... fairseq-train ...``: the environment that decides the floating-point results
    (:func:`~macaron_pipelines.quickstart.threads.numeric_environment`) is part of the command, hence of the
    train stage's key (other threads or kernels train afresh)."""
    q = shlex.quote
    sizes = " ".join(
        f"--{side}-{flag} {value}"
        for flag, value in (
            ("embed-dim", args.embed_dim),
            ("ffn-embed-dim", args.ffn_dim),
            ("layers", args.layers),
            ("attention-heads", args.heads),
        )
        for side in ("encoder", "decoder")
    )
    return [
        "env",
        *(f"{name}={value}" for name, value in numeric_environment().items()),
        *shlex.split(
            f"fairseq-train {q(str(paths.data_bin))} --user-dir {q(str(USER_DIR))} --task translation "
            f"--source-lang {q(args.src)} --target-lang {q(args.tgt)} "
            f"--arch macaron_base --share-all-embeddings {sizes} "
            f"--dropout {q(args.dropout)} --attention-dropout 0.0 --activation-dropout 0.0 "
            f"--optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 0.0 --weight-decay 0.0 "
            f"--lr {q(args.lr)} --lr-scheduler inverse_sqrt --warmup-updates {args.warmup} "
            "--warmup-init-lr 1e-7 --criterion label_smoothed_cross_entropy --label-smoothing 0.1 "
            f"--max-tokens {args.max_tokens} --max-update {args.max_update} --max-epoch {args.max_epoch} "
            f"--seed {args.seed} --num-workers 0 "
            f"--cpu --save-dir {q(str(paths.checkpoints))} --no-epoch-checkpoints --log-format json "
            "--log-interval 10"
        ),
    ]
