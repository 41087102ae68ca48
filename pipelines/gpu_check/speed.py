"""Macaron vs its parameter-matched Transformer, timed: a training step and beam-4 search of one batch for
each ``--macaron-ffn-impl``, the variants alternated round by round (the timing functions
``benchmarks/speed_macaron_vs_transformer.py`` measures with too), and the GPU check's ``speed`` rows (timed
with CUDA synchronisation)."""

from __future__ import annotations

import argparse
import logging
import shlex
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from fairseq.sequence_generator import SequenceGenerator

from macaron_fairseq.build_without_data import build_translation_model, joined_dictionary_dir
from macaron_fairseq.models.architectures import COUNTERPARTS
from macaron_fairseq.modules.macaron_layer import MacaronFFNMixin
from macaron_pipelines.gpu_check.device import Device
from macaron_pipelines.gpu_check.report import Row

TRANSFORMER = "transformer"


@dataclass
class Batch:
    src_tokens: torch.Tensor
    src_lengths: torch.Tensor
    prev_output_tokens: torch.Tensor
    target: torch.Tensor


def random_batch(vocab: int, nspecial: int, bsz: int, length: int, seed: int) -> Batch:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(nspecial, vocab, (bsz, length), generator=g)
    tgt = torch.randint(nspecial, vocab, (bsz, length), generator=g)
    prev = torch.cat([torch.full((bsz, 1), 2), tgt[:, :-1]], dim=1)  # eos-shifted, as fairseq does
    return Batch(src, torch.full((bsz,), length), prev, tgt)


def train_step_seconds(model: torch.nn.Module, batch: Batch) -> float:
    model.train()
    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    logits, _ = model(batch.src_tokens, batch.src_lengths, batch.prev_output_tokens)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), batch.target.view(-1), reduction="sum")
    loss.backward()
    return time.perf_counter() - start


def generation_seconds(generator: SequenceGenerator, model: torch.nn.Module, batch: Batch) -> float:
    model.eval()
    sample = {"net_input": {"src_tokens": batch.src_tokens, "src_lengths": batch.src_lengths}}
    start = time.perf_counter()
    with torch.no_grad():
        generator.generate([model], sample)
    return time.perf_counter() - start


def set_impl(model: torch.nn.Module, impl: str) -> None:
    for module in model.modules():
        if isinstance(module, MacaronFFNMixin):
            module.set_ffn_impl(impl)


def alternate(measure: dict[str, Callable[[], float]], rounds: int, warmup: int) -> dict[str, list[float]]:
    """``rounds`` timings of each callable, the order reversed every other round, after ``warmup``."""
    names = list(measure)
    for _ in range(warmup):
        for name in names:
            measure[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            times[name].append(measure[name]())
    return times


def summarise(times: dict[str, list[float]], per: int) -> dict[str, Any]:
    """Per variant: median/min/max seconds per batch and ms per unit; ratios against the Transformer."""
    base = times[TRANSFORMER]
    out: dict[str, Any] = {}
    for name, ts in times.items():
        paired = [t / b for t, b in zip(ts, base, strict=True)]
        out[name] = {
            "seconds": ts,
            "median_s": statistics.median(ts),
            "min_s": min(ts),
            "max_s": max(ts),
            "ms_per_unit": 1e3 * statistics.median(ts) / per,
            "ratio": statistics.median(ts) / statistics.median(base),
            "paired_ratio_median": statistics.median(paired),
            "paired_ratio_min": min(paired),
            "paired_ratio_max": max(paired),
        }
    return out


def variants(impls: list[str]) -> list[str]:
    return [TRANSFORMER, *(f"macaron:{impl}" for impl in impls)]


def part_speed(device: Device, args: argparse.Namespace) -> list[Row]:
    """Macaron vs Transformer: training step and beam-4 search on ``device`` for each FFN implementation
    (median seconds over ``--speed-rounds``; ratio = Macaron / Transformer)."""
    for name in ("fairseq", "filelock", "torch"):
        logging.getLogger(name).setLevel(logging.WARNING)
    start = time.monotonic()
    dev = torch.device("cuda" if device.kind == "cuda" else "cpu")
    flags = ["--share-all-embeddings", "--dropout", "0.1", *shlex.split(args.speed_model_flags)]
    with joined_dictionary_dir(args.speed_vocab) as data_dir:
        macaron, task = build_translation_model(data_dir, "macaron_base", flags)
        transformer, _ = build_translation_model(data_dir, COUNTERPARTS["macaron_base"], flags)
    models = {"macaron": macaron.to(dev), TRANSFORMER: transformer.to(dev)}
    tgt = task.target_dictionary
    bsz = max(1, args.speed_tokens // args.speed_seq_len)
    b = random_batch(len(tgt), tgt.nspecial, bsz, args.speed_seq_len, 0)
    b = type(b)(*(t.to(dev) for t in (b.src_tokens, b.src_lengths, b.prev_output_tokens, b.target)))

    def model_of(name: str) -> torch.nn.Module:
        if name == TRANSFORMER:
            return models[TRANSFORMER]
        set_impl(models["macaron"], name.split(":", 1)[1])
        return models["macaron"]

    def synced(fn: Callable[[], float]) -> Callable[[], float]:
        def timed() -> float:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            return time.perf_counter() - t0

        return timed

    names = variants(args.impls)
    length = args.speed_gen_len
    generators = {
        n: SequenceGenerator([models[n]], tgt, beam_size=4, max_len_a=0, max_len_b=length, min_len=length)
        for n in models
    }
    rows = []
    phases = {
        "train step": (
            {n: synced(lambda n=n: train_step_seconds(model_of(n), b)) for n in names},
            bsz * args.speed_seq_len,
        ),
        "beam-4 search": (
            {
                n: synced(lambda n=n: generation_seconds(generators[n.split(":")[0]], model_of(n), b))
                for n in names
            },
            bsz,
        ),
    }
    for phase, (fns, per) in phases.items():
        try:
            summary = summarise(alternate(fns, args.speed_rounds, 1), per)
        except Exception as error:
            rows.append(Row("speed", phase, "FAIL", f"{type(error).__name__}: {str(error)[:300]}"))
            continue
        for name, cell in summary.items():
            low, high = 1e3 * cell["min_s"], 1e3 * cell["max_s"]
            detail = f"median {1e3 * cell['median_s']:.1f} ms [{low:.1f}, {high:.1f}]"
            if name != TRANSFORMER:
                detail += f", {cell['ratio']:.3f}× Transformer (paired {cell['paired_ratio_median']:.3f})"
            rows.append(Row("speed", f"{phase} {bsz}×{args.speed_seq_len}: {name}", "ok", detail, data=cell))
    rows[-1].seconds = time.monotonic() - start
    return rows
