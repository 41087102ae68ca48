"""The pre-training runs of the GPU check: the plan (bf16 and fp16 each with ZeRO-1 and ZeRO-2 over both
architectures, DeepSpeed's LAMB), each run's DeepSpeed config (a shipped one with the run's precision, ZeRO
stage, batch and length), the generated corpus they train on, and one invocation of the real trainer
(``torchrun ... -m macaron_fairseq.pretrain``) with the records it logged."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from macaron_pipelines.commands import REPO
from macaron_pipelines.gpu_check.device import Device, subprocess_env
from macaron_workflow.cli import available_cores


@dataclass
class Run:
    """One pre-training run of the plan."""

    name: str
    arch: str
    precision: str  # bf16 | fp16 | autocast-fp16
    zero: int
    optimizer: str  # adamw | lamb
    steps: int
    resume_at: int = 0  # > 0: also a split run saved at this step and resumed to 2× it
    skip: str = ""

    def label(self) -> str:
        return (
            f"{self.arch} {self.precision} ZeRO-{self.zero} {'LAMB' if self.optimizer == 'lamb' else 'AdamW'}"
        )


def plan(device: Device, size: str, steps: int, resume_at: int) -> list[Run]:
    """bf16 and fp16 each with ZeRO-1 and ZeRO-2 over both architectures, DeepSpeed's LAMB, and two resume
    checks (one per precision, one per architecture). Rows a device cannot run carry their reason."""
    vanilla, macaron = f"vanilla_bert_{size}", f"macaron_bert_{size}"
    runs = [
        Run("vanilla-bf16-z1", vanilla, "bf16", 1, "adamw", steps, resume_at),
        Run("macaron-bf16-z2", macaron, "bf16", 2, "adamw", steps),
        Run("vanilla-fp16-z2", vanilla, "fp16", 2, "adamw", steps),
        Run("macaron-fp16-z1", macaron, "fp16", 1, "adamw", steps, resume_at),
        Run("macaron-lamb", macaron, "autocast-fp16", 0, "lamb", steps),
    ]
    for run in runs:
        if device.kind == "cpu" and "fp16" in run.precision:
            run.skip = "needs CUDA (fp16 / DeepSpeed's FusedLamb)"
        elif run.precision == "bf16" and not device.bf16:
            run.skip = f"{device.name} has no bf16"
    return runs


def run_config(run: Run, micro_batch: int, accumulation: int, world_size: int) -> dict[str, Any]:
    """The DeepSpeed config of ``run``: the shipped one (``bert_phase1.json``, ``lamb_64k.json``) with the
    precision/ZeRO/batch of the run and a schedule as long as the run (warm-up 10 %)."""
    from macaron_fairseq.pretrain.ds_config import CONFIGS, read_config, reconcile_batch

    base = CONFIGS / ("lamb_64k.json" if run.optimizer == "lamb" else "bert_phase1.json")
    config = read_config(base)
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        config.pop(key, None)
    config = reconcile_batch(config, base, world_size, micro_batch, accumulation)
    if run.precision == "fp16":
        config.pop("bf16", None)
        config["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    if run.optimizer != "lamb":
        config["zero_optimization"] = {"stage": run.zero}
    params = config["scheduler"]["params"]
    params["total_num_steps"] = run.steps
    params["warmup_num_steps"] = max(1, run.steps // 10)
    return config


def build_corpus(dest: Path, megabytes: float, vocab: int) -> tuple[Path, str]:
    """A data-bin of ``python -m macaron_preprocess.bert_corpus`` from a generated Wikipedia dump of
    ``megabytes`` (as tests/macaron_fairseq/pretrain/test_pretrain_e2e.py); it and what it is."""
    from macaron_synthetic.wiki.dump import write_dump

    dump = dest / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    dest.mkdir(parents=True, exist_ok=True)
    write_dump(dump, target_bytes=int(megabytes * 1e6), seed=21)
    data_bin = dest / "data-bin"
    q = shlex.quote
    command = shlex.split(
        f"{q(sys.executable)} -m macaron_preprocess.bert_corpus --dest {q(str(data_bin))} "
        f"--wikipedia {q(str(dump))} --bpe-vocab-size {vocab} --valid-ratio 0.1 --workers {available_cores()}"
    )
    proc = subprocess.run(command, cwd=REPO, env=subprocess_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"building the corpus failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return data_bin, f"synthetic_wiki {megabytes:g} MB of XML, BPE {vocab}"


def trainer_command(
    run: Run,
    corpus: Path,
    config_file: Path,
    save_dir: Path,
    max_update: int,
    args: argparse.Namespace,
    device: Device,
    peak: float | None,
) -> list[str]:
    """``torchrun ... -m macaron_fairseq.pretrain ...`` for ``run`` (one process per GPU)."""
    q = shlex.quote
    command = shlex.split(
        f"{q(sys.executable)} -m torch.distributed.run --standalone --nproc_per_node {device.count} "
        f"-m macaron_fairseq.pretrain {q(str(corpus))} --arch {q(run.arch)} "
        f"--deepspeed-config {q(str(config_file))} --batch-size {args.batch_size} "
        f"--update-freq {args.update_freq} --tokens-per-sample {args.seq_len} --save-dir {q(str(save_dir))} "
        f"--seed 1 --max-update {max_update} --no-validation --keep-last-checkpoints 1 "
        f"--log-interval {max(1, max_update // 4)}"
    )
    if peak:
        command += ["--peak-tflops", str(peak)]
    return command


def read_records(save_dir: Path) -> list[dict[str, Any]]:
    lines = (save_dir / "train_log.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r.get("split", "train") == "train"]


def train(
    run: Run,
    corpus: Path,
    work: Path,
    tag: str,
    max_update: int,
    args: argparse.Namespace,
    device: Device,
    peak: float | None,
) -> tuple[list[dict[str, Any]], Path]:
    """One trainer invocation (into ``work/<run>-<tag>``, resuming what is there); its records."""
    config_file = work / f"{run.name}.json"
    config_file.write_text(
        json.dumps(run_config(run, args.batch_size, args.update_freq, device.count), indent=2)
    )
    save_dir = work / f"{run.name}-{tag}"
    command = trainer_command(run, corpus, config_file, save_dir, max_update, args, device, peak)
    print(f"[gpu_check] {run.label()} ({tag}): {shlex.join(command[2:])}", flush=True)
    proc = subprocess.run(
        command, cwd=REPO, env=subprocess_env(device, args.threads), capture_output=True, text=True
    )
    if proc.returncode != 0:
        tail = [line for line in proc.stderr.strip().splitlines() if line.strip()][-3:]
        raise RuntimeError(f"trainer exit {proc.returncode}: {' | '.join(tail)[-600:]}")
    return read_records(save_dir), save_dir
