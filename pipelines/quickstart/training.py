"""The quickstart's ``fairseq-train`` command: a small Macaron model, with the numeric environment."""

from __future__ import annotations

import argparse

from macaron_pipelines.commands import USER_DIR
from macaron_pipelines.quickstart.threads import numeric_environment
from macaron_pipelines.quickstart.workdir import Workdir


def train_command(args: argparse.Namespace, paths: Workdir) -> list[str]:
    """``env NAME=VALUE ... fairseq-train ...``: the environment that decides the floating-point results
    (:func:`~macaron_pipelines.quickstart.threads.numeric_environment`) is part of the command, hence of the
    train stage's key (other threads or kernels train afresh)."""
    return [
        "env", *(f"{name}={value}" for name, value in numeric_environment().items()),
        "fairseq-train", str(paths.data_bin), "--user-dir", str(USER_DIR), "--task", "translation",
        "--source-lang", args.src, "--target-lang", args.tgt,
        "--arch", "macaron_base", "--share-all-embeddings",
        "--encoder-embed-dim", str(args.embed_dim), "--decoder-embed-dim", str(args.embed_dim),
        "--encoder-ffn-embed-dim", str(args.ffn_dim), "--decoder-ffn-embed-dim", str(args.ffn_dim),
        "--encoder-layers", str(args.layers), "--decoder-layers", str(args.layers),
        "--encoder-attention-heads", str(args.heads), "--decoder-attention-heads", str(args.heads),
        "--dropout", args.dropout, "--attention-dropout", "0.0", "--activation-dropout", "0.0",
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--clip-norm", "0.0", "--weight-decay", "0.0",
        "--lr", args.lr, "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(args.warmup),
        "--warmup-init-lr", "1e-7", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--max-tokens", str(args.max_tokens), "--max-update", str(args.max_update),
        "--max-epoch", str(args.max_epoch), "--seed", str(args.seed), "--num-workers", "0", "--cpu",
        "--save-dir", str(paths.checkpoints), "--no-epoch-checkpoints", "--log-format", "json",
        "--log-interval", "10",
    ]  # fmt: skip
