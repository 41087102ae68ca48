"""The figures of an optimizer step: the criterion's sums over its micro-batches on all ranks, and the record
the step log keeps of them (losses in bits, accuracies, learning rate, loss scale, throughput, model FLOPs and
MFU)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass
from typing import Any

import torch

from macaron_fairseq.pretrain.engine import grad_scaler
from macaron_fairseq.pretrain.flops import device_peak_tflops
from macaron_workflow.collectives import all_reduce


@dataclass
class StepLog:
    """Sums over the micro-batches of one optimizer step (or of a validation), on all ranks."""

    loss: float = 0.0
    mlm_loss: float = 0.0
    nsp_loss: float = 0.0
    masked: float = 0.0
    pairs: float = 0.0
    mlm_correct: float = 0.0
    nsp_correct: float = 0.0
    tokens: float = 0.0
    flops: float = 0.0  # model FLOPs (macaron_fairseq.pretrain.flops)

    def add(self, logging_output: dict[str, Any]) -> None:
        self.loss += float(logging_output["loss"])
        self.mlm_loss += float(logging_output["mlm_loss"])
        self.nsp_loss += float(logging_output["nsp_loss"])
        self.masked += float(logging_output["masked"])
        self.pairs += float(logging_output["nsentences"])
        self.mlm_correct += float(logging_output["mlm_correct"])
        self.nsp_correct += float(logging_output["nsp_correct"])
        self.tokens += float(logging_output["ntokens"])

    def all_reduced(self) -> StepLog:
        """The sums over all ranks (on the backend's device: CUDA under NCCL)."""
        return StepLog(*all_reduce(astuple(self), "sum"))

    def record(self) -> dict[str, float]:
        """Per-token / per-pair figures in fairseq's units (losses in bits)."""
        ln2 = math.log(2)
        masked, pairs = max(self.masked, 1.0), max(self.pairs, 1.0)
        return {
            "mlm_loss": self.mlm_loss / masked / ln2,
            "nsp_loss": self.nsp_loss / pairs / ln2,
            "mlm_accuracy": 100 * self.mlm_correct / masked,
            "nsp_accuracy": 100 * self.nsp_correct / pairs,
            "pairs": self.pairs,
            "tokens": self.tokens,
            "model_flops": self.flops,
        }


def peak_flops(
    peak_tflops: float | None, local_rank: int, world_size: int, log: Callable[[str], None]
) -> float | None:
    """The peak FLOP/s of all GPUs of the run, for MFU: ``--peak-tflops`` per GPU, else a known device's; None
    on CPU."""
    if not torch.cuda.is_available():
        return None
    peak = peak_tflops or device_peak_tflops(torch.cuda.get_device_name(local_rank))
    if peak is None:
        log("MFU not shown: unknown GPU peak, pass --peak-tflops")
        return None
    return peak * 1e12 * world_size


def step_record(
    step: int, step_log: StepLog, seconds: float, engine: Any, peak: float | None
) -> dict[str, Any]:
    """The step log's record of optimizer step ``step``, which took ``seconds``."""
    record = {"step": step, **step_log.all_reduced().record(), "lr": engine.get_lr()[0]}
    if engine.fp16_enabled():
        optimizer = engine.optimizer
        record["loss_scale"] = float(getattr(optimizer, "cur_scale", getattr(optimizer, "loss_scale", 0)))
        record["skipped_steps"] = int(engine.skipped_steps)
    scaler = grad_scaler(engine)
    if scaler is not None:  # torch_autocast fp16: torch's GradScaler scales the loss
        record["loss_scale"] = float(scaler.get_scale())
    record["tokens_per_second"] = record["tokens"] / max(seconds, 1e-9)
    record["samples_per_second"] = record["pairs"] / max(seconds, 1e-9)
    if peak:  # model FLOPs utilisation of this step (the progress lines show it per interval)
        record["mfu"] = record["model_flops"] / max(seconds, 1e-9) / peak
    record["seconds"] = seconds
    record["time"] = time.time()
    return record
