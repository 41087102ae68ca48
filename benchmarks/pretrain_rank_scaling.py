"""Pre-training with 1 vs 2 ranks of the real command (the ``ranks`` part of
``python -m benchmarks.pretrain_speed``).

``python -m macaron_fairseq.pretrain`` under ``torchrun --nproc_per_node N`` for each N of ``--ranks`` on a
generated corpus (``macaron_synthetic.wiki`` + ``python -m macaron_preprocess.bert_corpus``), on the CPU,
with ``OMP_NUM_THREADS`` = usable cores / N (every run uses all the cores) and the same global batch (micro
batch × accumulation × ranks); samples/s from the run's ``train_log.jsonl`` (the first ``--rank-warmup``
steps skipped), runs in the order 1 2 2 1 ...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.pretrain_bench import (
    OtherCpuUse,
    batch_config,
    free_port,
    shown_path,
    subprocess_env,
    usable_cores,
)
from benchmarks.results_file import REPO
from macaron_pipelines.gpu_check.runs import build_corpus

RANK_MODEL_FLAGS = (
    "--encoder-layers 4 --encoder-embed-dim 256 --encoder-ffn-embed-dim 1024 --encoder-attention-heads 4"
)


def train_records(lines: Sequence[str], warmup: int) -> list[dict[str, Any]]:
    """The training records of a ``train_log.jsonl`` after the first ``warmup`` steps (validation records,
    ``"split": "valid"``, are skipped)."""
    records = [json.loads(line) for line in lines if line.strip()]
    return [r for r in records if r.get("split", "train") == "train" and r["step"] > warmup]


def run_throughput(run: dict[str, Any]) -> dict[str, float]:
    """Samples/s (all timed steps' samples over their summed wall time), tokens/s, median step seconds."""
    seconds = sum(run["seconds"])
    return {
        "samples_per_second": sum(run["pairs"]) / seconds,
        "tokens_per_second": sum(run["tokens"]) / seconds,
        "median_step_seconds": statistics.median(run["seconds"]),
    }


def parameter_count(data_dir: Path, arch: str, extra: Sequence[str]) -> int:
    """Parameters of ``arch`` with the dictionary of a data-bin (as the trainer builds it)."""
    from macaron_fairseq.models.bert_build import build_bert_model

    model, _ = build_bert_model(data_dir, arch, extra)
    return sum(p.numel() for p in model.parameters())


def rank_order(ranks: Sequence[int], repeats: int) -> list[int]:
    """``1 2``, then ``2 1``, ... (``repeats`` passes)."""
    return [n for r in range(repeats) for n in (ranks if r % 2 == 0 else list(reversed(ranks)))]


def pretrain_run(
    args: argparse.Namespace, corpus: Path, work: Path, ranks: int, index: int
) -> dict[str, Any]:
    """One ``torchrun --nproc_per_node ranks python -m macaron_fairseq.pretrain`` run; its timed steps."""
    top = max(args.ranks)
    accumulation = top // ranks
    config = batch_config(args.rank_config, args.rank_batch_size, accumulation, ranks)
    config_file = work / f"ds_{ranks}ranks.json"
    config_file.write_text(json.dumps(config, indent=2))
    threads = max(1, usable_cores() // ranks)
    save_dir = work / f"run{index}_{ranks}ranks"
    q = shlex.quote
    command = [
        *shlex.split(
            f"{q(sys.executable)} -m torch.distributed.run --nproc_per_node {ranks} "
            f"--master_port {free_port()} -m macaron_fairseq.pretrain {q(str(corpus))} "
            f"--arch {q(args.rank_arch)}"
        ),
        *shlex.split(args.rank_model_flags),
        *shlex.split(
            f"--deepspeed-config {q(str(config_file))} --batch-size {args.rank_batch_size} "
            f"--update-freq {accumulation} --tokens-per-sample {args.rank_seq_len} "
            f"--save-dir {q(str(save_dir))} --seed {args.seed + 1} --max-update {args.rank_steps} "
            f"--no-validation --keep-last-checkpoints 1 --log-interval {args.rank_steps}"
        ),
    ]
    env = subprocess_env(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), CUDA_VISIBLE_DEVICES="")
    print(f"  {ranks} rank(s) × {threads} thread(s): {shlex.join(command[2:])}", flush=True)
    start = time.monotonic()
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"pre-training with {ranks} ranks failed ({proc.returncode}):\n{proc.stderr[-5000:]}"
        )
    log = (save_dir / "train_log.jsonl").read_text(encoding="utf-8").splitlines()
    timed_steps = train_records(log, args.rank_warmup)
    if not timed_steps:
        raise SystemExit(f"{save_dir}/train_log.jsonl: no step after the {args.rank_warmup} warm-up steps")
    run = {
        "ranks": ranks,
        "threads": threads,
        "micro_batch": args.rank_batch_size,
        "accumulation": accumulation,
        "seconds": [r["seconds"] for r in timed_steps],
        "pairs": [r["pairs"] for r in timed_steps],
        "tokens": [r["tokens"] for r in timed_steps],
        "wall_seconds": round(wall, 1),
    }
    t = run_throughput(run)
    print(
        f"    {t['samples_per_second']:.2f} samples/s, median step {t['median_step_seconds']:.3f} s "
        f"({wall:.0f} s with start-up)",
        flush=True,
    )
    return run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    ranks = parser.add_argument_group("ranks: the pre-training command with 1 and 2 ranks on the CPU")
    ranks.add_argument("--ranks", nargs="+", type=int, default=[1, 2])
    ranks.add_argument("--rank-arch", default="vanilla_bert_tiny")
    ranks.add_argument(
        "--rank-model-flags",
        default=RANK_MODEL_FLAGS,
        help='model flags (one string; give it as --rank-model-flags="..."; default: %(default)s)',
    )
    ranks.add_argument("--rank-config", type=Path, default=REPO / "configs" / "deepspeed" / "tiny_cpu.json")
    ranks.add_argument("--rank-batch-size", type=int, default=8, help="micro batch per rank")
    ranks.add_argument("--rank-seq-len", type=int, default=128, help="--tokens-per-sample")
    ranks.add_argument("--rank-steps", type=int, default=20, help="--max-update of each run")
    ranks.add_argument("--rank-warmup", type=int, default=5, help="first steps not timed")
    ranks.add_argument("--rank-repeats", type=int, default=2, help="runs per rank count (order 1 2 2 1 ...)")
    ranks.add_argument("--rank-corpus-mb", type=float, default=1.5, help="generated dump size (MB of XML)")
    ranks.add_argument("--rank-vocab", type=int, default=2000, help="BPE size of the generated corpus")
    ranks.add_argument("--corpus", type=Path, default=None, help="an existing BERT data-bin instead")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The real CLI with each rank count, same global batch, all cores."""
    top = max(args.ranks)
    if any(top % n for n in args.ranks):
        raise SystemExit(f"--ranks {args.ranks}: each must divide {top} (the same global batch for all)")
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pretrain_speed_")))
        if args.corpus:
            corpus, corpus_text = args.corpus, f"--corpus {args.corpus}"
        else:
            print(f"generating a {args.rank_corpus_mb:g} MB corpus", flush=True)
            corpus, corpus_text = build_corpus(work / "corpus", args.rank_corpus_mb, args.rank_vocab)
        params = parameter_count(corpus, args.rank_arch, shlex.split(args.rank_model_flags))
        print(f"ranks {args.ranks}, global batch {args.rank_batch_size * top}", flush=True)
        with OtherCpuUse() as other:
            runs = [
                pretrain_run(args, corpus, work, n, i)
                for i, n in enumerate(rank_order(args.ranks, args.rank_repeats))
            ]
    return {
        "arch": args.rank_arch,
        "model_flags": args.rank_model_flags,
        "params": params,
        "config": shown_path(args.rank_config),
        "seq_len": args.rank_seq_len,
        "corpus": corpus_text,
        "steps": args.rank_steps,
        "warmup": args.rank_warmup,
        "cores": usable_cores(),
        "runs": runs,
        "other_cores": other.cores,
    }
