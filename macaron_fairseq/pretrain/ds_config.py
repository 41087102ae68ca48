"""The DeepSpeed configuration of a run: read, checked against the command line, completed.

DeepSpeed requires ``train_batch_size = train_micro_batch_size_per_gpu × gradient_accumulation_steps ×
world size``. The command line may also give the micro batch (``--batch-size``) and the accumulation
(``--update-freq``); a value given in both places must agree, a missing one is derived, and a
contradiction is an error naming both sources — never a silent override.

Weight decay follows BERT: not on biases and LayerNorm weights (:func:`parameter_groups`).

:func:`check_supported` refuses, before anything is built, what would fail later or silently do nothing:
fp16 and LAMB without a GPU (DeepSpeed's CPU accelerator has no fp16, and its ``Lamb`` is the CUDA kernel
``FusedLamb``), fp16 together with bf16, and options of an ``activation_checkpointing`` section other than
off (they configure ``deepspeed.checkpointing``, which fairseq's layers do not call). The section itself
means fairseq's ``--checkpoint-activations`` (:func:`checkpoints_activations`).

Gradient accumulation (:func:`complete_precision`). DeepSpeed 0.19 accumulates the micro-batches' gradients in
``data_types.grad_accum_dtype``, whose default is the model's dtype: with ``bf16`` or ``fp16`` enabled and
no ``data_types`` section, 8-16 micro-batches are summed in bf16 (8-bit mantissa) or fp16, and reduced
across the ranks in ``communication_data_type``, whose default is also the model's dtype. With ZeRO 1 or 2
a missing ``grad_accum_dtype`` is set to fp32 here (bf16 + ZeRO-1 then runs DeepSpeed's ``BF16_Optimizer``,
bf16 + ZeRO-2 and fp16 + ZeRO-1/2 its ZeRO optimizer with a separate fp32 accumulation buffer) and a
missing ``communication_data_type`` to fp32; at ZeRO-0 DeepSpeed cannot accumulate a bf16/fp16 model's
gradients in fp32 (``NotImplementedError``), so the config is refused when it asks for that, and a warning
names the alternatives (ZeRO-1, or ``torch_autocast``: fp32 weights and gradients, bf16/fp16 compute, as
``configs/deepspeed/lamb_64k.json`` does for LAMB, whose per-tensor trust ratio needs unflattened
parameters).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torch import nn

from macaron_workflow.errors import UserError

CONFIGS = Path(__file__).parent / "configs"
"""The shipped DeepSpeed configs (``configs/deepspeed/`` of the checkout; package data in the wheel)."""


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
    """``"fp16"``, ``"bf16"`` or ``"fp32"``: what the engine computes in (a ``torch_autocast`` section
    computes in its dtype with fp32 weights)."""
    fp16 = bool(config.get("fp16", {}).get("enabled", False))
    bf16 = bool(config.get("bf16", config.get("bfloat16", {})).get("enabled", False))
    autocast = autocast_dtype(config)
    return "fp16" if fp16 else "bf16" if bf16 else autocast or "fp32"


def autocast_dtype(config: dict[str, Any]) -> str | None:
    """``"bf16"`` / ``"fp16"`` when the config enables DeepSpeed's ``torch_autocast``, else None."""
    section = config.get("torch_autocast", {})
    if not section.get("enabled", False):
        return None
    dtype = str(section.get("dtype", "bfloat16")).replace("torch.", "")
    return {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16"}.get(
        dtype, dtype
    )


def zero_stage(config: dict[str, Any]) -> int:
    return int(config.get("zero_optimization", {}).get("stage", 0))


FP32_NAMES = ("fp32", "float32", "float", "torch.float32")


def complete_precision(config: dict[str, Any], path: Path) -> tuple[dict[str, Any], list[str]]:
    """``config`` with fp32 gradient accumulation and reduction where DeepSpeed can do it (see the module
    docstring), and the notes to show about it."""
    config = dict(config)
    notes: list[str] = []
    mixed = bool(config.get("fp16", {}).get("enabled", False)) or bool(
        config.get("bf16", config.get("bfloat16", {})).get("enabled", False)
    )
    if not mixed:
        return config, notes
    name = precision(config)
    accumulate = config.get("data_types", {}).get("grad_accum_dtype")
    if zero_stage(config) == 0:
        if accumulate is not None and str(accumulate) in FP32_NAMES:
            raise UserError(
                f"{path}: DeepSpeed cannot accumulate a {name} model's gradients in fp32 at ZeRO stage 0 "
                '(NotImplementedError); use "zero_optimization": {"stage": 1}, or "torch_autocast" '
                "(fp32 weights and gradients) instead of the "
                f'"{name}" section'
            )
        if int(config.get("gradient_accumulation_steps", 1) or 1) > 1:
            notes.append(
                f"warning: {path.name}: {name} at ZeRO stage 0 accumulates gradients in {name}; ZeRO-1 "
                'with "data_types": {"grad_accum_dtype": "fp32"} or "torch_autocast" accumulates in fp32'
            )
        return config, notes
    if accumulate is None:
        config["data_types"] = {**config.get("data_types", {}), "grad_accum_dtype": "fp32"}
        notes.append(
            f'{path.name}: no "data_types.grad_accum_dtype": gradients are accumulated in fp32 (DeepSpeed\'s '
            f"default, the model's {name}, is not safe numerically over many micro-batches)"
        )
    if "communication_data_type" not in config:
        config["communication_data_type"] = "fp32"
        notes.append(f'{path.name}: no "communication_data_type": gradients are all-reduced in fp32')
    return config, notes


def check_supported(config: dict[str, Any], path: Path, cuda: bool) -> None:
    """A clear error for a config this machine (``cuda``: a GPU is used) or this trainer cannot run."""
    fp16 = bool(config.get("fp16", {}).get("enabled", False))
    bf16 = bool(config.get("bf16", config.get("bfloat16", {})).get("enabled", False))
    if fp16 and bf16:
        raise UserError(f"{path}: fp16 and bf16 are both enabled; enable one")
    if (fp16 or bf16) and autocast_dtype(config):
        both = "fp16" if fp16 else "bf16"
        raise UserError(f"{path}: torch_autocast and {both} are both enabled; enable one")
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
    unsupported = [
        key for key, value in config.get("activation_checkpointing", {}).items() if value and key != "enabled"
    ]
    if unsupported:
        raise UserError(
            f"{path}: activation_checkpointing.{unsupported[0]} configures deepspeed.checkpointing, which "
            "the fairseq layers do not call; an activation_checkpointing section (or "
            "--checkpoint-activations) checkpoints every layer with fairseq's checkpoint_wrapper only"
        )


def checkpoints_activations(config: dict[str, Any]) -> bool:
    """An ``activation_checkpointing`` section turns on fairseq's ``--checkpoint-activations`` (every
    encoder layer recomputed in the backward pass), as phase 2 at 512 tokens needs on small GPUs."""
    section = config.get("activation_checkpointing")
    return isinstance(section, dict) and section.get("enabled", True) is not False


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
