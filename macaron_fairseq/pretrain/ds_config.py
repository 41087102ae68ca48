"""The DeepSpeed configuration of a run: read, checked against the command line, completed.

DeepSpeed requires ``train_batch_size = train_micro_batch_size_per_gpu × gradient_accumulation_steps ×
world size``. The command line may also give the micro batch (``--batch-size``) and the accumulation
(``--update-freq``); a value given in both places must agree, a missing one is derived, and a
contradiction is an error naming both sources — never a silent override.

Weight decay follows BERT: not on biases and LayerNorm weights (:func:`parameter_groups`).

:func:`check_supported` refuses, before anything is built, what would fail later or silently do nothing:
fp16 and LAMB without a GPU (DeepSpeed's CPU accelerator has no fp16, and its ``Lamb`` is the CUDA kernel
``FusedLamb``), fp16 together with bf16, and an ``activation_checkpointing`` section (it configures
``deepspeed.checkpointing``, which fairseq's layers do not call: ``--checkpoint-activations`` is the switch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torch import nn

from workflow.errors import UserError


def read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UserError(f"--deepspeed-config {path}: no such file") from exc
    except json.JSONDecodeError as exc:
        raise UserError(f"--deepspeed-config {path}: not valid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise UserError(f"--deepspeed-config {path}: expected a JSON object")
    return config


#: DeepSpeed optimizers implemented only as CUDA kernels
CUDA_ONLY_OPTIMIZERS = ("lamb", "onebitlamb", "onebitadam", "zerooneadam")


def precision(config: dict[str, Any]) -> str:
    """``"fp16"``, ``"bf16"`` or ``"fp32"``: what the engine computes in."""
    fp16 = bool(config.get("fp16", {}).get("enabled", False))
    bf16 = bool(config.get("bf16", config.get("bfloat16", {})).get("enabled", False))
    return "fp16" if fp16 else "bf16" if bf16 else "fp32"


def check_supported(config: dict[str, Any], path: Path, cuda: bool) -> None:
    """A clear error for a config this machine (``cuda``: a GPU is used) or this trainer cannot run."""
    fp16 = bool(config.get("fp16", {}).get("enabled", False))
    bf16 = bool(config.get("bf16", config.get("bfloat16", {})).get("enabled", False))
    if fp16 and bf16:
        raise UserError(f"{path}: fp16 and bf16 are both enabled; enable one")
    optimizer = str(config.get("optimizer", {}).get("type", "")).lower()
    if not cuda:
        if fp16:
            raise UserError(
                f"{path}: fp16 needs a GPU (DeepSpeed's CPU accelerator has no fp16); on CPU use "
                '"bf16": {"enabled": true} or fp32'
            )
        if optimizer in CUDA_ONLY_OPTIMIZERS:
            raise UserError(
                f"{path}: optimizer {config['optimizer']['type']} is a CUDA kernel in DeepSpeed and needs a "
                "GPU; on CPU use AdamW"
            )
    if "activation_checkpointing" in config:
        raise UserError(
            f"{path}: 'activation_checkpointing' configures deepspeed.checkpointing, which the fairseq "
            "layers do not call (it would do nothing); remove it and pass --checkpoint-activations"
        )


def reconcile_batch(
    config: dict[str, Any], path: Path, world_size: int, batch_size: int | None, update_freq: int | None
) -> dict[str, Any]:
    """``config`` with the three batch fields consistent with each other and with the command line."""
    config = dict(config)
    for key, given, flag in (
        ("train_micro_batch_size_per_gpu", batch_size, "--batch-size"),
        ("gradient_accumulation_steps", update_freq, "--update-freq"),
    ):
        if given is not None:
            if key in config and config[key] != given:
                raise UserError(f"{flag} {given} contradicts {key}={config[key]} in {path}")
            config[key] = given
    micro = config.get("train_micro_batch_size_per_gpu")
    accumulation = config.get("gradient_accumulation_steps")
    total = config.get("train_batch_size")
    if micro is None and total is not None:
        accumulation = accumulation or 1
        if total % (accumulation * world_size):
            raise UserError(
                f"train_batch_size={total} in {path} is not a multiple of gradient_accumulation_steps="
                f"{accumulation} × {world_size} ranks"
            )
        micro = total // (accumulation * world_size)
    if micro is None:
        raise UserError(f"give the micro batch: --batch-size or train_micro_batch_size_per_gpu in {path}")
    if accumulation is None:
        accumulation = total // (micro * world_size) if total is not None else 1
    expected = micro * accumulation * world_size
    if total is not None and total != expected:
        raise UserError(
            f"train_batch_size={total} in {path} != micro batch {micro} × accumulation {accumulation} × "
            f"{world_size} ranks = {expected}"
        )
    config.update(train_micro_batch_size_per_gpu=micro, gradient_accumulation_steps=accumulation)
    config["train_batch_size"] = expected
    return config


def no_weight_decay(name: str, parameter: nn.Parameter) -> bool:
    """Biases, LayerNorm weights (and any other 1-d parameter) are not decayed, as in BERT."""
    return parameter.ndim < 2 or name.endswith(".bias") or "layer_norm" in name or "LayerNorm" in name


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, plain = [], []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            (plain if no_weight_decay(name, parameter) else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def configured_weight_decay(config: dict[str, Any]) -> float:
    return float(config.get("optimizer", {}).get("params", {}).get("weight_decay", 0.0))
