"""Pre-training tokens/s and model FLOPs utilization on a GPU (the ``gpu`` part of
``python -m benchmarks.pretrain_speed``; only with CUDA, or ``--mfu-on-cpu`` to test the code path).

Tokens/s of ``--mfu-arch`` (``vanilla_bert_base``) at sequence 128 in bf16 and its model FLOPs utilization
against ``--peak-tflops``, with the model FLOPs the trainer's progress lines use
(:class:`macaron_fairseq.pretrain.flops.BertFlops`: 6 FLOPs per weight per position for the layers' matrix
products plus 12·L·T·d for attention, Chowdhery et al. 2022 "PaLM" App. B; the MLM head on the masked
positions only, as the model computes it), so the benchmark's MFU and the trainer's agree.
"""

from __future__ import annotations

import argparse
import gc
from pathlib import Path
from typing import Any

from benchmarks.pretrain_bench import (
    OtherCpuUse,
    OurModel,
    bert_batch,
    deepspeed_engine,
    device_in_use,
    init_single_process_distributed,
    one_micro_batch_config,
    precision,
    shown_path,
)
from benchmarks.results_file import REPO
from macaron_fairseq.pretrain.flops import BertFlops


def add_arguments(parser: argparse.ArgumentParser) -> None:
    gpu = parser.add_argument_group("gpu: tokens/s and MFU in bf16 (skipped without CUDA)")
    gpu.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        help="the GPU's dense bf16 peak, TFLOP/s (e.g. 312 for an A100, 989 for an H100)",
    )
    gpu.add_argument("--mfu-arch", default="vanilla_bert_base")
    gpu.add_argument("--mfu-seq-len", type=int, default=128)
    gpu.add_argument("--mfu-batch-size", type=int, default=32)
    gpu.add_argument("--mfu-steps", type=int, default=20)
    gpu.add_argument("--mfu-warmup", type=int, default=5)
    gpu.add_argument(
        "--mfu-config",
        type=Path,
        default=None,
        help="DeepSpeed config, bf16 forced on (default: configs/deepspeed/bert_phase1.json)",
    )
    gpu.add_argument(
        "--mfu-on-cpu", action="store_true", help="run this part on the CPU too (tests the code path)"
    )


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Tokens/s and MFU of ``--mfu-arch`` in bf16 (on a GPU; on the CPU only with --mfu-on-cpu)."""
    import torch

    if not torch.cuda.is_available() and not args.mfu_on_cpu:
        return {"skipped": "no GPU: torch.cuda.is_available() is False"}
    device = device_in_use()
    gc.collect()  # the engines of the steps part
    if device.type == "cuda":
        torch.cuda.empty_cache()
    config_path = args.mfu_config or REPO / "configs" / "deepspeed" / "bert_phase1.json"
    if device.type == "cpu" and args.mfu_config is None:
        config_path = REPO / "configs" / "deepspeed" / "tiny_cpu.json"  # FusedAdam needs CUDA
    config = one_micro_batch_config(config_path, args.mfu_batch_size, bf16=True)
    init_single_process_distributed()
    torch.manual_seed(args.seed)
    ours = OurModel.build(args.mfu_arch, args.vocab)
    sizes, params = ours.sizes(), ours.params
    engine = deepspeed_engine(ours.model, config)
    batch = bert_batch(args.vocab, args.mfu_batch_size, args.mfu_seq_len, args.seed + 1).to(device)
    step = ours.step_function(engine, batch, device)
    with OtherCpuUse() as other:
        for _ in range(args.mfu_warmup):
            step()
        seconds = [step() for _ in range(args.mfu_steps)]
    masked = int(batch.masked.sum())
    return {
        "model_flops_per_step": BertFlops.of(ours.model).step(args.mfu_batch_size, args.mfu_seq_len, masked),
        "masked": masked,
        "arch": args.mfu_arch,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
        "precision": precision(config),
        "config": shown_path(config_path),
        "batch_size": args.mfu_batch_size,
        "seq_len": args.mfu_seq_len,
        "params": params,
        "layers": sizes["layers"],
        "hidden": sizes["hidden"],
        "peak_tflops": args.peak_tflops,
        "warmup": args.mfu_warmup,
        "seconds": seconds,
        "other_cores": other.cores,
    }
