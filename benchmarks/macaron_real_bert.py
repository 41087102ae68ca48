"""macaron_bert vs vanilla_bert pre-training on real English prose (the Python documentation), equal
parameters and steps.

    nohup nice -n 10 env OMP_NUM_THREADS=1 python -m benchmarks.macaron_real_bert \\
        --out-dir runs/macaron_real_bert --jobs 2 \\
        --results docs/results/macaron_real_bert.json --plot docs/macaron_real_bert.png \\
        > runs/macaron_real_bert.log 2>&1 &

Data: Debian's ``python3.11-doc`` (installed with apt when missing), its HTML pages converted to one
plain-text document per page (:mod:`macaron_preprocess.sources.python_docs`, the BookCorpus layout), then
``python -m macaron_preprocess.bert_corpus --bookcorpus`` (sentences, lowercased, Moses-tokenized, a
sentencepiece BPE of ``--vocab-size``; ``--valid-ratio`` of the *documents* held out for validation, chosen by
a hash of the document's path).

Models: ``vanilla_bert_small`` (BERT's recipe, post-LN, d 256, 4 layers, 4 heads, FFN 1024) and
``macaron_bert_small`` (the same with Macaron layers: FFN½ → self-attention → FFN½, each FFN 512), parameter
counts checked to be within 0.1 % before anything trains.

Training: ``python -m macaron_fairseq.pretrain`` (one CPU process, DeepSpeed with gloo), one DeepSpeed
config for both (``OUT_DIR/ds_config.json``: AdamW, linear warm-up then linear decay to 0 at ``--steps``,
micro-batch, clipping, ZeRO-1), pairs of ``--tokens-per-sample`` tokens; per seed both arms see the same
pairs in the same order with the same masks (the task's data and masks depend on the seed only). The
validation set (MLM perplexity on its masked tokens, NSP accuracy) is scored every ``--eval-every`` steps.

Resumable: each run lives in ``OUT_DIR/runs/ARCH-sSEED`` and checkpoints every ``--save-every`` steps
(the trainer resumes from its save dir by itself); a finished run is one row of ``OUT_DIR/results.jsonl``.
A rerun of the same command skips the finished runs and resumes the interrupted ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import real_text_grid as grid
from benchmarks.real_text_grid import data_is_frozen, freeze_data
from benchmarks.results_file import REPO, machine_info
from macaron_preprocess.sources import python_docs
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.cli import quiet_loggers
from macaron_workflow.grid import RowFile, Slot


def free_port() -> int:
    """A TCP port free on this host now, for the rendezvous of one torchrun launch."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


ARMS = {"vanilla": "vanilla_bert_small", "macaron": "macaron_bert_small"}
MAX_PARITY = 1e-3


@dataclass(frozen=True)
class BertProtocol:
    """Everything a run depends on except (arm, seed)."""

    vocab_size: int = 8000
    valid_ratio: float = 0.04
    tokens_per_sample: int = 128
    micro_batch: int = 16
    steps: int = 1000
    lr: float = 5e-4
    warmup: int = 100
    weight_decay: float = 0.01
    clipping: float = 1.0
    eval_every: int = 200
    save_every: int = 50


PROTOCOL_OPTIONS = ("steps", "warmup", "eval_every", "save_every", "micro_batch", "vocab_size")
"""The protocol's fields a command line may set."""


@dataclass(frozen=True, order=True)
class RunKey:
    arm: str
    seed: int

    @property
    def name(self) -> str:
        return f"{ARMS[self.arm]}-s{self.seed}"


def ds_config(p: BertProtocol) -> dict[str, Any]:
    """The DeepSpeed config of every run: the optimizer, schedule, batch and clipping."""
    return {
        "train_micro_batch_size_per_gpu": p.micro_batch,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": p.clipping,
        "optimizer": {
            "type": "AdamW",
            "params": {
                "lr": p.lr,
                "betas": [0.9, 0.999],
                "eps": 1e-6,
                "weight_decay": p.weight_decay,
                "torch_adam": True,
            },
        },
        "scheduler": {
            "type": "WarmupDecayLR",
            "params": {
                "warmup_min_lr": 0,
                "warmup_max_lr": p.lr,
                "warmup_num_steps": p.warmup,
                "total_num_steps": p.steps,
                "warmup_type": "linear",
            },
        },
        "zero_optimization": {"stage": 1},
        "steps_per_print": 1000000,
        "wall_clock_breakdown": False,
    }


# ----------------------------------------------------------------------------------------------- data


def prepare_books(out: Path, html: Path, install: bool) -> dict:
    """``out/books`` (one document per page) and its summary ``out/books.json`` (reused when present)."""
    summary_path = out / "books.json"
    if summary_path.exists() and (out / "books").is_dir():
        return json.loads(summary_path.read_text())
    if not html.is_dir():
        if not install:
            raise SystemExit(f"{html}: not a directory (apt-get install {python_docs.PACKAGE})")
        print(f"installing {python_docs.PACKAGE} with apt-get", flush=True)
        python_docs.install()
    summary = python_docs.convert(html, out / "books")
    record = {k: v for k, v in summary.__dict__.items() if k != "skipped_pages"}
    record["package_version"] = package_version(python_docs.PACKAGE)
    write_text_atomically(summary_path, json.dumps(record, indent=2) + "\n")
    return record


def package_version(package: str) -> str | None:
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def build_data_bin(out: Path, p: BertProtocol) -> tuple[Path, dict]:
    """``python -m macaron_preprocess.bert_corpus`` on the books (its stages resume by themselves); the
    data-bin and its size (sentences and documents per split, from the binarized indexes). Built once: a rerun
    uses the recorded data-bin as it is (:func:`benchmarks.real_text_grid.data_is_frozen`)."""
    if data_is_frozen(out, out / "data-bin"):
        return out / "data-bin", corpus_size(out / "data-bin")
    q = shlex.quote
    command = shlex.split(
        f"{q(sys.executable)} -m macaron_preprocess.bert_corpus --dest {q(str(out / 'data-bin'))} "
        f"--bookcorpus {q(str(out / 'books'))} --bpe-vocab-size {p.vocab_size} "
        f"--valid-ratio {q(repr(p.valid_ratio))} --workers 1"
    )
    grid.run_step(command, "macaron_preprocess.bert_corpus", out / "bert_corpus.log")
    freeze_data(out, out / "data-bin")
    return out / "data-bin", corpus_size(out / "data-bin")


def count_documents(lengths: Any) -> int:
    """Documents in a BERT data-bin's item lengths: runs of sentences (length > 1) between the one-token
    items (``</s>`` of an empty line) that separate documents."""
    count, inside = 0, False
    for length in lengths:
        sentence = int(length) > 1
        count += sentence and not inside
        inside = sentence
    return count


def corpus_size(data_bin: Path) -> dict[str, int]:
    """Sentences, documents and BPE tokens (``</s>`` included) per split of a BERT data-bin."""
    from fairseq.data import data_utils

    size: dict[str, int] = {}
    for split in ("train", "valid"):
        dataset = data_utils.load_indexed_dataset(str(data_bin / split), None, "mmap")
        lengths = dataset.sizes.copy()  # a view into the memory map, which closes with the dataset
        del dataset
        size[f"{split}_sentences"] = int((lengths > 1).sum())
        size[f"{split}_documents"] = count_documents(lengths)
        size[f"{split}_tokens"] = int(lengths.sum())
    return size


def parameter_counts(data_bin: Path) -> dict[str, int]:
    from macaron_fairseq.models.bert_build import build_bert_model

    quiet_loggers("fairseq", "macaron_fairseq")
    counts = {}
    for arm, arch in ARMS.items():
        model, _ = build_bert_model(data_bin, arch)
        counts[arm] = sum(t.numel() for t in model.parameters())
    return counts


def valid_nsp_pairs(data_bin: Path, p: BertProtocol, seed: int) -> dict[str, Any]:
    """The validation pairs a run with ``seed`` scores NSP on (the task's own, pairing 0, built again here
    without touching the data-bin's pair cache): how many, how many are IsNext, and the accuracy of always
    answering the more frequent class — the floor an NSP accuracy must clear to mean anything."""
    from macaron_fairseq.models.bert_build import build_bert_task

    quiet_loggers("fairseq", "macaron_fairseq")
    flags = ["--seed", str(seed), "--tokens-per-sample", str(p.tokens_per_sample), "--pair-cache", "off"]
    task, _ = build_bert_task(data_bin, ARMS["vanilla"], flags)
    task.load_dataset("valid")
    targets = task.datasets["valid"].nsp_targets  # BERT's labels: 0 = IsNext
    pairs, is_next = len(targets), int((targets == 0).sum())
    majority = 100 * max(is_next, pairs - is_next) / pairs
    return {"pairs": pairs, "is_next": is_next, "majority_accuracy": majority}


def check_parity(counts: dict[str, int]) -> float:
    """The relative difference Macaron − vanilla; refuses more than ``MAX_PARITY``."""
    return grid.check_parity(counts, "macaron", "vanilla", MAX_PARITY)


# ------------------------------------------------------------------------------------------------ runs


def pretrain_argv(data_bin: Path, save_dir: Path, config: Path, p: BertProtocol, key: RunKey) -> list[str]:
    """The pre-training command of one run (optimizer, schedule and batch from the DeepSpeed config)."""
    q = shlex.quote
    return shlex.split(
        f"{q(sys.executable)} -m macaron_fairseq.pretrain {q(str(data_bin))} --arch {q(ARMS[key.arm])} "
        f"--deepspeed-config {q(str(config))} --tokens-per-sample {p.tokens_per_sample} "
        f"--max-update {p.steps} --seed {key.seed} --save-dir {q(str(save_dir))} "
        f"--validate-interval-updates {p.eval_every} --save-interval-updates {p.save_every} "
        "--keep-last-checkpoints 1 --log-interval 50 --num-workers 0"
    )


def parse_log(lines: list[str], warmup_steps: int = 10) -> dict[str, Any]:
    """Validation points ``[[step, mlm bits, ppl, nsp %], ...]`` and the training speed (median
    tokens/s over the steps after the first ``warmup_steps``) of a ``train_log.jsonl``."""
    valid, speed, last_step = [], [], 0
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a kill
        if record.get("split") == "valid":
            valid.append([record["step"], record["mlm_loss"], record["ppl"], record["nsp_accuracy"]])
        elif "tokens_per_second" in record:
            last_step = record["step"]
            if record["step"] > warmup_steps:
                speed.append(record["tokens_per_second"])
    return {
        "valid_curve": valid,
        "last_step": last_step,
        "tokens_per_second": round(statistics.median(speed), 1) if speed else None,
    }


def has_checkpoint(save_dir: Path) -> bool:
    """Whether the trainer will resume in ``save_dir``: it holds a complete checkpoint (the trainer's own
    choice, :func:`macaron_fairseq.pretrain.checkpoints.choose`)."""
    from macaron_fairseq.pretrain import checkpoints

    return save_dir.is_dir() and checkpoints.choose(save_dir).tag is not None


def prepare_run_dir(run_dir: Path) -> Path:
    """The run's save dir: kept when it holds a checkpoint (the trainer resumes there and truncates its
    log to that step); otherwise (never started, killed before its first checkpoint) removed with the
    run's log and attempt record, so the run starts cleanly."""
    return grid.prepare_run_dir(run_dir, "save", "pretrain.log", has_checkpoint)


def run_one(
    out: Path, data_bin: Path, config: Path, p: BertProtocol, key: RunKey, slot: Slot
) -> dict[str, Any]:
    run_dir = out / "runs" / key.name
    save_dir = prepare_run_dir(run_dir)
    argv = pretrain_argv(data_bin, save_dir, config, p, key)
    port = str(free_port())
    env = slot.env(dict(os.environ, MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore", MASTER_PORT=port))
    rc, seconds, attempts = grid.run_attempt(argv, env, run_dir, "pretrain.log")
    log_path = save_dir / "train_log.jsonl"
    lines = log_path.read_text(encoding="utf-8").splitlines() if log_path.exists() else []
    shown = {data_bin: "DATA", save_dir: "SAVE_DIR", config: "DS_CONFIG"}
    row: dict[str, Any] = {
        **asdict(key),
        "arch": ARMS[key.arm],
        "rc": rc,
        **parse_log(lines),
        "command": grid.shown_command(["python", *argv[1:]], shown),
        "seconds": seconds,
        "attempts": attempts,
    }
    if rc != 0 or row["last_step"] != p.steps or not row["valid_curve"]:
        row["error"] = (run_dir / "pretrain.log").read_text(encoding="utf-8", errors="replace")[-1500:]
    return row


def finished(row: dict) -> bool:
    return row.get("rc") == 0 and "error" not in row and bool(row.get("valid_curve"))


# ---------------------------------------------------------------------------------------------- report


def plot(r: dict, path: Path) -> None:
    """Validation perplexity and NSP accuracy over steps, one line per run (colour = arm)."""
    plt = grid.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colours = {"vanilla": "tab:blue", "macaron": "tab:orange"}
    labelled: set[str] = set()
    for row in sorted(r["rows"], key=lambda x: (x["arm"], x["seed"])):
        if not finished(row):
            continue
        steps = [pt[0] for pt in row["valid_curve"]]
        label = None if row["arm"] in labelled else ARMS[row["arm"]]
        labelled.add(row["arm"])
        for ax, column in zip(axes, (2, 3), strict=True):
            values = [pt[column] for pt in row["valid_curve"]]
            colour = colours[row["arm"]]
            ax.plot(steps, values, marker="o", markersize=3, color=colour, alpha=0.8, label=label)
    left, right = axes
    left.set_yscale("log")
    left.set_ylabel("validation MLM perplexity")
    right.set_ylabel("validation NSP accuracy (%)")
    for ax in axes:
        ax.set_xlabel("steps")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("BERT pre-training on the Python documentation: one line per seed")
    fig.tight_layout()
    grid.save_figure(fig, path)


# ------------------------------------------------------------------------------------------------ main


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (the protocol's from its dataclass)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    grid.add_grid_arguments(ap, list(ARMS), REPO / "runs" / "macaron_real_bert")
    ap.add_argument("--html", type=Path, default=python_docs.DEFAULT_HTML)
    ap.add_argument("--no-install", action="store_true", help="fail instead of apt-get installing the docs")
    grid.add_protocol_arguments(ap, BertProtocol, PROTOCOL_OPTIONS)
    return ap


def main() -> None:
    a = parser().parse_args()
    p = grid.protocol_from_args(BertProtocol, a, PROTOCOL_OPTIONS)
    machine = machine_info()
    rows = RowFile(a.out_dir)
    rows.claim(p)
    books = prepare_books(a.out_dir, a.html, install=not a.no_install)
    print(f"books: {books}", flush=True)
    data_bin, corpus = build_data_bin(a.out_dir, p)
    print(f"corpus: {corpus}", flush=True)
    counts = parameter_counts(data_bin)
    parity = check_parity(counts)
    print(f"parameters: {counts} (Macaron − vanilla: {100 * parity:+.4f} %)", flush=True)
    valid_nsp = {str(seed): valid_nsp_pairs(data_bin, p, seed) for seed in a.seeds}
    print(f"validation NSP pairs per seed: {valid_nsp}", flush=True)
    config = a.out_dir / "ds_config.json"
    write_text_atomically(config, json.dumps(ds_config(p), indent=2) + "\n")

    def results(rows: list[dict]) -> dict[str, Any]:
        return {
            "protocol": asdict(p),
            "ds_config": ds_config(p),
            "books": books,
            "corpus": corpus,
            "parameters": counts,
            "parity": parity,
            "valid_nsp": valid_nsp,
            "seeds": a.seeds,
            "arms": a.arms,
            "rows": rows,
        }

    def describe(_key: RunKey, row: dict) -> str:
        last = row["valid_curve"][-1] if row["valid_curve"] else None
        return f"last validation {last}, {row['tokens_per_second']} tokens/s, {row['seconds']} s"

    wanted = [RunKey(arm, seed) for seed in a.seeds for arm in a.arms]
    publication = grid.Publication(rows, wanted, finished, results, plot, machine, a.results, a.plot)
    if a.publish_only:
        publication.write()
        return
    grid.run(
        publication, lambda key, slot: run_one(a.out_dir, data_bin, config, p, key, slot), describe, a.jobs
    )


if __name__ == "__main__":
    from macaron_workflow.cli import run_cli

    run_cli(main, "python -m benchmarks.macaron_real_bert")
