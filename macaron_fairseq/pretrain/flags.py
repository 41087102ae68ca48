"""fairseq training flags that mean nothing to the DeepSpeed trainer are refused, naming what decides instead.

The trainer parses fairseq's own command line (so that the model, task and criterion are built exactly as
``fairseq-train`` builds them), which also accepts ``--lr``, ``--weight-decay``, ``--fp16``, ... The
DeepSpeed config decides those; accepting them silently would train with other settings than the ones
the user typed. :func:`refuse_ignored` names the config key (or the trainer's own option) for each.
``--max-update`` defaults to the schedule's length (:func:`run_length`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macaron_workflow.errors import UserError

#: fairseq flag → the DeepSpeed config key that decides it
CONFIG_OWNED: dict[str, str] = {
    "--lr": "optimizer.params.lr (and scheduler.params.warmup_max_lr)",
    "--weight-decay": "optimizer.params.weight_decay",
    "--wd": "optimizer.params.weight_decay",
    "--clip-norm": "gradient_clipping",
    "--warmup-updates": "scheduler.params.warmup_num_steps",
    "--warmup-init-lr": "scheduler.params.warmup_min_lr",
    "--total-num-update": "scheduler.params.total_num_steps",
    "--end-learning-rate": "scheduler (its type and params)",
    "--lr-scheduler": "scheduler.type",
    "--optimizer": "optimizer.type",
    "--adam-betas": "optimizer.params.betas",
    "--adam-eps": "optimizer.params.eps",
    "--fp16": 'fp16 ("fp16": {"enabled": true}, or "torch_autocast" with dtype float16)',
    "--bf16": 'bf16 ("bf16": {"enabled": true})',
    "--memory-efficient-fp16": 'fp16 ("fp16": {"enabled": true})',
    "--memory-efficient-bf16": 'bf16 ("bf16": {"enabled": true})',
    "--amp": "torch_autocast",
    "--fp16-init-scale": "fp16.initial_scale_power",
    "--fp16-scale-window": "fp16.loss_scale_window",
    "--fp16-scale-tolerance": "fp16.hysteresis",
    "--min-loss-scale": "fp16.min_loss_scale",
    "--zero-sharding": "zero_optimization.stage",
    "--max-tokens": "train_micro_batch_size_per_gpu (a micro-batch is a number of sentence pairs)",
}

#: fairseq flag → the trainer's own option (or behaviour) that replaces it
TRAINER_OWNED: dict[str, str] = {
    "--restore-file": "the trainer resumes from --save-dir by itself; --init-from starts from other weights",
    "--finetune-from-model": "--init-from",
    "--reset-optimizer": "--init-from (weights only: fresh optimizer, schedule and data position)",
    "--reset-lr-scheduler": "--init-from (weights only: fresh optimizer, schedule and data position)",
    "--reset-dataloader": "--init-from (weights only: fresh optimizer, schedule and data position)",
    "--reset-meters": "--init-from (weights only: fresh optimizer, schedule and data position)",
    "--max-epoch": "--max-update (the run is counted in optimizer steps)",
    "--save-interval": "--save-interval-updates",
    "--keep-interval-updates": "--keep-last-checkpoints",
    "--keep-last-epochs": "--keep-last-checkpoints",
    "--no-save": "--save-interval-updates (the trainer always saves its last step)",
    "--disable-validation": "--no-validation",
    "--validate-interval": "--validate-interval-updates",
    "--stop-time-hours": "--max-update",
    "--ddp-backend": "the DeepSpeed engine (it does the data parallelism)",
}


def given(argv: Sequence[str], flag: str) -> bool:
    """Whether ``flag`` is on the command line (``--flag`` or ``--flag=value``)."""
    return any(token == flag or token.startswith(flag + "=") for token in argv)


def refuse_ignored(argv: Sequence[str], config_path: Path | str) -> None:
    """A :class:`UserError` for the first flag of ``argv`` the trainer would ignore."""
    for token in argv:
        if token == "--":
            break
        flag = token.split("=", 1)[0]
        if flag in CONFIG_OWNED:
            raise UserError(
                f"{flag}: the DeepSpeed config decides this; set {CONFIG_OWNED[flag]} in {config_path}"
            )
        if flag in TRAINER_OWNED:
            raise UserError(f"{flag} is not used by the DeepSpeed trainer: {TRAINER_OWNED[flag]}")


def schedule_length(config: dict[str, Any]) -> int | None:
    """``scheduler.params.total_num_steps`` (WarmupDecayLR, WarmupCosineLR): where the rate reaches its end
    (0 for WarmupDecayLR); None for a schedule without an end."""
    steps = config.get("scheduler", {}).get("params", {}).get("total_num_steps")
    return int(steps) if steps else None


def run_length(config: dict[str, Any], config_path: Path | str, max_update: int | None) -> int:
    """The number of optimizer steps: ``--max-update`` if given (``max_update``), else the schedule's
    length. A run longer than its schedule (the rest at the final rate, 0 for WarmupDecayLR) is refused."""
    total = schedule_length(config)
    if max_update is None or max_update <= 0:
        if total is None:
            raise UserError(f"give --max-update: the scheduler of {config_path} has no total_num_steps")
        return total
    if total is not None and max_update > total:
        raise UserError(
            f"--max-update {max_update} runs past scheduler.params.total_num_steps={total} in {config_path} "
            f"(steps {total + 1}-{max_update} would train at the schedule's final rate); raise "
            "total_num_steps or omit --max-update"
        )
    return max_update
