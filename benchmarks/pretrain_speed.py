"""Pre-training speed: one DeepSpeed BERT step of ``macaron_bert_base``, ``vanilla_bert_base`` and Hugging
Face's ``BertForPreTraining``; 1 vs 2 ranks of the real pre-training command; tokens/s and MFU on a GPU.

    python -m benchmarks.pretrain_speed [--rounds 6] [--parts steps ranks gpu] [--json OUT]
    python -m benchmarks.doc_tables      # docs/pretraining_speed.md from docs/results/pretrain_speed.json

1. ``steps``: the Macaron model against the BERT baseline (``--archs``, default ``macaron_bert_base
   vanilla_bert_base``), each built exactly as the trainer builds it (fairseq's parser, BERT's 30,522-symbol
   vocabulary) and wrapped in a DeepSpeed engine from ``--config`` (batch fields replaced: one optimizer
   step = one micro-batch of ``--batch-size``), with BERT's weight-decay groups. A step is what the trainer
   does: forward, the ``macaron_bert_loss`` criterion (MLM on the masked positions + NSP),
   ``engine.backward``, ``engine.step``. All models live in one process and run the same synthetic batch
   (fixed seed: random tokens, [CLS] A [SEP] B [SEP] with a random split, 15 % of the positions masked,
   random NSP labels, no padding), alternately (A B C, then C B A, ...) after ``--warmup`` steps each, so
   machine drift hits all of them alike; medians over ``--rounds``.
2. In the same rounds: ``transformers.BertForPreTraining`` with the baseline's sizes (for
   ``vanilla_bert_base``: ``BertConfig()``'s defaults, BERT-base), dropout 0.1, train mode,
   ``attn_implementation="sdpa"``, under the same DeepSpeed config and batch, in two forms: its own
   ``forward(labels=..., next_sentence_label=...)`` (the MLM head on every position, as HF computes it), and
   the same model with the MLM head on the masked positions only (the work our model does; this separates
   the head's design from the encoder's speed). transformers is not a project requirement: without it this
   column is skipped and the install command printed (:data:`HF_INSTALL`).
3. ``ranks``: ``python -m macaron_fairseq.pretrain`` under ``torchrun --nproc_per_node N`` for each N of
   ``--ranks`` on a generated corpus (``preprocess.sources.synthetic_wiki`` + ``python -m
   preprocess.bert_corpus``), on the CPU, with ``OMP_NUM_THREADS`` = usable cores / N (every run uses all the
   cores) and the same global batch (micro batch × accumulation × ranks); samples/s from the run's
   ``train_log.jsonl`` (the first ``--rank-warmup`` steps skipped), runs in the order 1 2 2 1 ...
4. ``gpu`` (only with CUDA, or ``--mfu-on-cpu`` to test the code path): tokens/s of ``--mfu-arch``
   (``vanilla_bert_base``) at sequence 128 in bf16 and its model FLOPs utilization against
   ``--peak-tflops``, with the model FLOPs the trainer's progress lines use
   (:class:`macaron_fairseq.pretrain.flops.BertFlops`: 6 FLOPs per weight per position for the layers'
   matrix products plus 12·L·T·d for attention, Chowdhery et al. 2022 "PaLM" App. B; the MLM head on the
   masked positions only, as the model computes it), so the benchmark's MFU and the trainer's agree.

Every part records the CPU time other processes used meanwhile (``other_cores``: the machine may be shared),
besides the load averages of the results file. Ratios and speed-ups are computed from the stored times when
printing and rendering, never stored.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import resource
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.results_file import RESULTS_DIR, machine_info, provenance, write_results
from macaron_fairseq.pretrain.flops import BertFlops

REPO = Path(__file__).resolve().parents[1]

HF_VERSION = "5.23.0"
HF_INSTALL = (
    f"pip install --no-deps transformers=={HF_VERSION} huggingface_hub==2.4.0 tokenizers==0.23.3 "
    "safetensors==0.8.0 hf-xet==1.8.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 idna==3.20 "
    "click==8.5.1"
)
"""transformers and what of its dependencies this project's environment lacks (or has too old: click, idna),
without letting pip touch torch. ``pip install transformers==5.23.0 torch==<installed>`` resolves to the same
set (checked with ``pip install --dry-run``)."""

MACARON_GOAL = 1.05  # macaron / vanilla step time
HF_GOAL = 1.0  # vanilla / HF step time
HF_ATTENTION = "sdpa"
OURS_ATTENTION = "fairseq MultiheadAttention → torch F.multi_head_attention_forward → SDPA"
FIRST_WORD = 4  # fairseq dictionary: <s>=0 <pad>=1 </s>=2 <unk>=3, words from 4, <mask> last
CLS, PAD, SEP = 0, 1, 2
HF_NAME, HF_MASKED_NAME = "hf_bert", "hf_bert_masked_head"
RANK_MODEL_FLAGS = (
    "--encoder-layers 4 --encoder-embed-dim 256 --encoder-ffn-embed-dim 1024 --encoder-attention-heads 4"
)
DEFAULT_JSON = RESULTS_DIR / "pretrain_speed.json"


# ------------------------------------------------------------------------------------ pure functions
def model_flops_utilization(tokens_per_second: float, flops_token: float, peak_tflops: float) -> float:
    """Achieved model FLOP/s as a share of the peak (``peak_tflops`` in TFLOP/s)."""
    return tokens_per_second * flops_token / (peak_tflops * 1e12)


def ratio_summary(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, float]:
    """The ratio of the medians, and the range of the per-round ratios (rounds are paired: same round,
    adjacent in time)."""
    paired = [a / b for a, b in zip(numerator, denominator, strict=True)]
    return {
        "ratio": statistics.median(numerator) / statistics.median(denominator),
        "round_min": min(paired),
        "round_max": max(paired),
    }


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def goal_text(value: float, goal: float) -> str:
    return f"≤ {goal:.2f} ({'met' if value <= goal else 'not met'})"


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


def pooled_runs(runs: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The timed steps of all runs with the same number of ranks, pooled."""
    pooled: dict[int, dict[str, Any]] = {}
    for run in runs:
        into = pooled.setdefault(run["ranks"], {**run, "seconds": [], "pairs": [], "tokens": [], "runs": 0})
        for key in ("seconds", "pairs", "tokens"):
            into[key] = into[key] + run[key]
        into["runs"] += 1
    return dict(sorted(pooled.items()))


# ------------------------------------------------------------------------------------------- rendering
def render(payload: dict[str, Any]) -> str:
    """The docs' tables of a results file: each part that ran, then where the numbers come from."""
    results = payload["results"]
    parts = []
    if "steps" in results:
        parts.append(render_steps(results["steps"]))
    if "ranks" in results:
        parts.append(render_ranks(results["ranks"]))
    if "gpu" in results:
        parts.append(render_gpu(results["gpu"]))
    parts.append(f"Measured by {provenance(payload)}.")
    return "\n\n".join(parts)


def render_summary(payload: dict[str, Any]) -> str:
    """The README's excerpt: the step-time table and where the numbers come from."""
    return f"{render_steps(payload['results']['steps'])}\n\nMeasured by {provenance(payload)}."


def _other(part: dict[str, Any]) -> str:
    cores = part.get("other_cores")
    return "" if cores is None else f" Other processes used {cores:.2f} cores on average meanwhile."


def render_steps(steps: dict[str, Any]) -> str:
    macaron, vanilla = steps["archs"]
    times, models = steps["times"], steps["models"]
    tokens = steps["batch_size"] * steps["seq_len"]
    lines = [
        "| model | implementation | parameters | median step (s) | samples/s | tokens/s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, model in models.items():
        median = statistics.median(times[name])
        lines.append(
            f"| {model['label']} | {model['implementation']} | {model['params']:,} | {median:.3f} | "
            f"{steps['batch_size'] / median:.2f} | {tokens / median:,.0f} |"
        )
    ratios = [(f"`{macaron}` / `{vanilla}`", macaron, vanilla, goal_text, MACARON_GOAL)]
    if HF_NAME in times:
        ratios.append((f"`{vanilla}` / HF", vanilla, HF_NAME, goal_text, HF_GOAL))
        ratios.append(
            (f"`{vanilla}` / HF, MLM head on masked positions", vanilla, HF_MASKED_NAME, None, None)
        )
    lines += ["", "| step-time ratio | ratio of medians | per-round range | goal |", "|---|---:|---:|---|"]
    for label, a, b, goal, bound in ratios:
        r = ratio_summary(times[a], times[b])
        shown = goal(r["ratio"], bound) if goal else "— (same work as ours)"
        lines.append(f"| {label} | {r['ratio']:.3f} | {r['round_min']:.3f}–{r['round_max']:.3f} | {shown} |")
    hf = steps.get("hf_skipped")
    hf_line = f" HF column skipped: {hf}." if hf else ""
    hf_text = ""
    if "hf_attention" in steps:
        hf_text = (
            f'; HF `attn_implementation="{steps["hf_attention"]}"`, transformers {steps["transformers"]}'
        )
    settings = (
        f"Step = forward + loss + backward + optimizer step, one micro-batch of {steps['batch_size']} × "
        f"{steps['seq_len']} tokens ({steps['masked']} masked positions, vocabulary {steps['vocab']:,}); "
        f"{steps['device']}, {steps['threads']} threads; DeepSpeed config `{steps['config']}` "
        f"({steps['precision']}, ZeRO stage {steps['zero_stage']}, {steps['optimizer']}); "
        f"{plural(steps['rounds'], 'alternated round')} after {plural(steps['warmup'], 'warm-up step')} "
        "of each. "
        f"Attention: ours {OURS_ATTENTION}{hf_text}.{hf_line}{_other(steps)}"
    )
    return "\n".join(lines) + "\n\n" + settings


def render_ranks(ranks: dict[str, Any]) -> str:
    pooled = pooled_runs(ranks["runs"])
    first = next(iter(pooled.values()))
    base = run_throughput(first)
    lines = [
        "| ranks × threads | micro × accumulation × ranks = batch | timed steps | median step (s) "
        "| samples/s | tokens/s | speed-up | speed-up of the median step |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n, run in pooled.items():
        t = run_throughput(run)
        micro, accumulation = run["micro_batch"], run["accumulation"]
        batch = f"{micro} × {accumulation} × {n} = {micro * accumulation * n}"
        lines.append(
            f"| {n} × {run['threads']} | {batch} | {len(run['seconds'])} | {t['median_step_seconds']:.3f} | "
            f"{t['samples_per_second']:.2f} | {t['tokens_per_second']:,.0f} | "
            f"{t['samples_per_second'] / base['samples_per_second']:.2f}× | "
            f"{base['median_step_seconds'] / t['median_step_seconds']:.2f}× |"
        )
    flags = f" `{ranks['model_flags']}`" if ranks["model_flags"] else ""
    runs = first["runs"]
    settings = (
        f"`python -m macaron_fairseq.pretrain` under `torchrun --nproc_per_node N`, CPU (gloo): "
        f"`{ranks['arch']}`{flags} ({ranks['params']:,} parameters), `{ranks['config']}`, "
        f"{ranks['seq_len']} tokens per sample, generated corpus ({ranks['corpus']}); {ranks['steps']} steps "
        f"per run, the first {ranks['warmup']} not timed; {runs} run{'s' if runs != 1 else ''} per rank "
        f"count (order {' '.join(str(r['ranks']) for r in ranks['runs'])}). Samples/s = timed samples / "
        "their summed step times (`train_log.jsonl`); the median step is less sensitive to other processes "
        f"(the global batch is the same for every rank count). With {ranks['cores']} cores, both rank counts "
        "use every core: this compares process (data) parallelism with torch's intra-op threads."
        f"{_other(ranks)}"
    )
    return "\n".join(lines) + "\n\n" + settings


def render_gpu(gpu: dict[str, Any]) -> str:
    if "skipped" in gpu:
        return f"Tokens/s and MFU on a GPU: skipped ({gpu['skipped']})."
    median = statistics.median(gpu["seconds"])
    tokens_s = gpu["batch_size"] * gpu["seq_len"] / median
    per_token = gpu["model_flops_per_step"] / (gpu["batch_size"] * gpu["seq_len"])
    achieved = tokens_s * per_token / 1e12
    peak = gpu.get("peak_tflops")
    mfu = (
        f"{100 * model_flops_utilization(tokens_s, per_token, peak):.1f} %"
        if peak
        else "— (no --peak-tflops)"
    )
    peak_text = f"{peak:g}" if peak else "—"
    lines = [
        "| model | device | precision | batch × sequence | tokens/s | FLOPs/token | model TFLOP/s | "
        "peak TFLOP/s | MFU |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
        f"| `{gpu['arch']}` | {gpu['device_name']} | {gpu['precision']} | "
        f"{gpu['batch_size']} × {gpu['seq_len']} | {tokens_s:,.0f} | {per_token / 1e6:,.1f} M | "
        f"{achieved:.3g} | {peak_text} | {mfu} |",
    ]
    return (
        "\n".join(lines) + "\n\nFLOPs/token: the trainer's model FLOPs per step (`macaron_fairseq.pretrain."
        f"flops.BertFlops`: L = {gpu['layers']}, T = {gpu['seq_len']}, d = {gpu['hidden']}, MLM head on "
        f"{gpu['masked']} masked positions) / positions; median of {plural(len(gpu['seconds']), 'step')} "
        "after "
        f"{plural(gpu['warmup'], 'warm-up step')}; DeepSpeed config `{gpu['config']}` with bf16 enabled."
        f"{_other(gpu)}"
    )


# -------------------------------------------------------------------------------------- measurement
class OtherCpuUse:
    """Cores other processes kept busy during a ``with`` block: the machine's busy CPU time (``/proc/stat``)
    minus this process tree's (``getrusage`` of this process and its waited-for children), over the wall
    time. ``cores`` is None where ``/proc/stat`` is unavailable."""

    def __init__(self) -> None:
        self.cores: float | None = None

    @staticmethod
    def _machine_busy() -> float | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own() -> float:
        usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        return sum(u.ru_utime + u.ru_stime for u in usage)

    def __enter__(self) -> OtherCpuUse:
        self._start = (self._machine_busy(), self._own(), time.monotonic())
        return self

    def __exit__(self, *exc: object) -> None:
        busy, own, wall = self._machine_busy(), self._own(), time.monotonic()
        if busy is not None and self._start[0] is not None:
            other = (busy - self._start[0]) - (own - self._start[1])
            self.cores = round(max(other, 0.0) / max(wall - self._start[2], 1e-9), 2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def quiet_libraries() -> None:
    warnings.simplefilter("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    for name in ("fairseq", "macaron_fairseq", "DeepSpeed", "deepspeed", "transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)


def one_micro_batch_config(path: Path, micro_batch: int, bf16: bool = False) -> dict[str, Any]:
    """``path``'s DeepSpeed config with one optimizer step = one micro-batch of ``micro_batch`` on one rank
    (and bf16 forced on with ``bf16``)."""
    return batch_config(path, micro_batch, accumulation=1, world_size=1, bf16=bf16)


def batch_config(
    path: Path, micro_batch: int, accumulation: int, world_size: int, bf16: bool = False
) -> dict[str, Any]:
    from macaron_fairseq.pretrain.ds_config import read_config, reconcile_batch

    config = read_config(path)
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        config.pop(key, None)
    if bf16:
        config.pop("fp16", None)
        config["bf16"] = {"enabled": True}
    return reconcile_batch(config, path, world_size, micro_batch, accumulation)


def precision(config: dict[str, Any]) -> str:
    for key in ("bf16", "fp16"):
        if config.get(key, {}).get("enabled"):
            return key
    return "fp32"


def optimizer_text(config: dict[str, Any]) -> str:
    optimizer = config.get("optimizer", {})
    torch_impl = " (torch)" if optimizer.get("params", {}).get("torch_adam") else ""
    return f"{optimizer.get('type', 'no optimizer')}{torch_impl}"


def shown_path(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


@dataclass
class BertBatch:
    """One synthetic BERT micro-batch (B × T), the same tensors for every model."""

    tokens: Any  # input ids, masked positions replaced by <mask>
    segments: Any  # 0 for [CLS] A [SEP], 1 for B [SEP]
    masked: Any  # bool, the MLM positions
    originals: Any  # the ids before masking (the MLM targets where masked)
    nsp: Any  # B next-sentence labels

    def to(self, device: Any) -> BertBatch:
        return BertBatch(
            *(t.to(device) for t in (self.tokens, self.segments, self.masked, self.originals, self.nsp))
        )

    def fairseq_sample(self) -> dict[str, Any]:
        """The batch as the ``macaron_bert_pretraining`` task collates it."""
        return {
            "net_input": {"src_tokens": self.tokens, "segment_labels": self.segments},
            "target": self.originals.masked_fill(~self.masked, PAD),
            "nsp_target": self.nsp,
            "ntokens": self.tokens.numel(),
        }

    def hf_labels(self) -> Any:
        return self.originals.masked_fill(~self.masked, -100)


def bert_batch(vocab: int, batch_size: int, seq_len: int, seed: int, mask_prob: float = 0.15) -> BertBatch:
    """Random words, ``[CLS] A [SEP] B [SEP]`` with a random split, ``round(mask_prob × words)`` masked
    positions per sequence, random NSP labels; no padding (ids never ``<pad>``)."""
    import torch

    if seq_len < 5:
        raise ValueError(f"sequence length {seq_len}: needs at least 5 positions ([CLS] a [SEP] b [SEP])")
    g = torch.Generator().manual_seed(seed)
    originals = torch.randint(FIRST_WORD, vocab - 1, (batch_size, seq_len), generator=g)
    segments = torch.zeros(batch_size, seq_len, dtype=torch.long)
    masked = torch.zeros(batch_size, seq_len, dtype=torch.bool)
    for row in range(batch_size):
        split = int(torch.randint(2, seq_len - 2, (1,), generator=g))  # the first [SEP]
        originals[row, 0], originals[row, split], originals[row, -1] = CLS, SEP, SEP
        segments[row, split + 1 :] = 1
        words = torch.tensor([p for p in range(1, seq_len - 1) if p != split])
        count = max(1, round(mask_prob * len(words)))
        masked[row, words[torch.randperm(len(words), generator=g)[:count]]] = True
    nsp = torch.randint(0, 2, (batch_size,), generator=g)
    return BertBatch(originals.masked_fill(masked, vocab - 1), segments, masked, originals, nsp)


def init_single_process_distributed() -> None:
    """DeepSpeed needs torch.distributed: a world of one (gloo; nccl with a GPU, as the trainer)."""
    import deepspeed
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0"
    )
    if torch.cuda.is_available():
        torch.cuda.set_device(0)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    deepspeed.init_distributed(dist_backend=backend, auto_mpi_discovery=False)
    logging.getLogger("DeepSpeed").setLevel(logging.WARNING)


def deepspeed_engine(model: Any, config: dict[str, Any]) -> Any:
    """The engine as the trainer builds it (BERT's weight-decay groups), in train mode."""
    import deepspeed

    from macaron_fairseq.pretrain.ds_config import configured_weight_decay, parameter_groups

    groups = parameter_groups(model, configured_weight_decay(config))
    engine, *_ = deepspeed.initialize(model=model, model_parameters=groups, config=config)
    engine.train()
    return engine


def synchronize(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(step: Callable[[], None], device: Any) -> float:
    synchronize(device)
    start = time.perf_counter()
    step()
    synchronize(device)
    return time.perf_counter() - start


def alternate(steps: dict[str, Callable[[], float]], rounds: int, warmup: int) -> dict[str, list[float]]:
    """``warmup`` untimed steps of each, then ``rounds`` rounds, forward and backward order in turn."""
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            times[name].append(steps[name]())
        print(
            f"  round {r + 1}/{rounds}: " + ", ".join(f"{n} {times[n][-1]:.3f} s" for n in names), flush=True
        )
    return times


@dataclass
class OurModel:
    model: Any
    task: Any

    @classmethod
    def build(cls, arch: str, vocab: int, extra: Sequence[str] = ()) -> OurModel:
        from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model

        with bert_dictionary_dir(vocab) as data_dir:
            model, task = build_bert_model(data_dir, arch, list(extra))
        return cls(model, task)

    @property
    def params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def sizes(self) -> dict[str, int]:
        """Layers, width, heads, FFN width (of a vanilla layer), vocabulary."""
        encoder = self.model.encoder
        first = encoder.layers[0]
        return {
            "layers": len(encoder.layers),
            "hidden": encoder.embed_tokens.embedding_dim,
            "heads": first.self_attn.num_heads,
            "ffn": first.fc1.out_features if hasattr(first, "fc1") else 0,
            "vocab": encoder.embed_tokens.num_embeddings,
        }

    def step_function(self, engine: Any, batch: BertBatch, device: Any) -> Callable[[], float]:
        from macaron_fairseq.criterions.bert_pretraining import BertPretrainingLoss

        criterion = BertPretrainingLoss(self.task)
        sample = batch.fairseq_sample()

        def step() -> None:
            loss, sample_size, _ = criterion(engine, sample)
            engine.backward(loss / sample_size)
            engine.step()

        return lambda: timed(step, device)


def hf_module(sizes: dict[str, int]) -> tuple[Any, str]:
    """``BertForPreTraining`` with ``sizes`` (BERT-base: BertConfig's defaults) in a module whose forward
    is a pre-training loss, with the MLM head on every position (HF's own forward) or on the masked ones."""
    import torch.nn.functional as F
    import transformers
    from torch import nn
    from transformers import BertConfig, BertForPreTraining

    config = BertConfig(
        vocab_size=sizes["vocab"],
        hidden_size=sizes["hidden"],
        num_hidden_layers=sizes["layers"],
        num_attention_heads=sizes["heads"],
        intermediate_size=sizes["ffn"],
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
    )

    class HfPretraining(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hf = BertForPreTraining._from_config(config, attn_implementation=HF_ATTENTION)

        def forward(self, batch: BertBatch, labels: Any, masked_head: bool) -> Any:
            if not masked_head:
                out = self.hf(
                    input_ids=batch.tokens, token_type_ids=batch.segments, labels=labels,
                    next_sentence_label=batch.nsp,
                )  # fmt: skip
                return out.loss
            out = self.hf.bert(input_ids=batch.tokens, token_type_ids=batch.segments)
            scores = self.hf.cls.predictions(out.last_hidden_state[batch.masked])
            nsp = self.hf.cls.seq_relationship(out.pooler_output)
            return F.cross_entropy(scores.float(), labels[batch.masked]) + F.cross_entropy(
                nsp.float(), batch.nsp
            )

    module = HfPretraining()
    return module, transformers.__version__


def hf_step_functions(engine: Any, batch: BertBatch, device: Any) -> dict[str, Callable[[], float]]:
    labels = batch.hf_labels()

    def step(masked_head: bool) -> None:
        loss = engine(batch, labels, masked_head)
        engine.backward(loss)
        engine.step()

    return {
        HF_NAME: lambda: timed(lambda: step(False), device),
        HF_MASKED_NAME: lambda: timed(lambda: step(True), device),
    }


def device_in_use() -> Any:
    import torch

    return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")


def default_config() -> Path:
    import torch

    name = "bert_phase1.json" if torch.cuda.is_available() else "tiny_cpu.json"
    return REPO / "configs" / "deepspeed" / name


def measure_steps(args: argparse.Namespace) -> dict[str, Any]:
    """Part 1 and 2: the step times of our two models and HF's, alternated in this process."""
    import deepspeed
    import torch

    device = device_in_use()
    config_path = args.config or default_config()
    config = one_micro_batch_config(config_path, args.batch_size)
    init_single_process_distributed()
    torch.manual_seed(args.seed)
    batch = bert_batch(args.vocab, args.batch_size, args.seq_len, args.seed).to(device)
    macaron, vanilla = args.archs
    steps: dict[str, Callable[[], float]] = {}
    models: dict[str, dict[str, Any]] = {}
    sizes: dict[str, int] = {}
    for arch in (macaron, vanilla):
        ours = OurModel.build(arch, args.vocab)
        sizes = ours.sizes()  # the baseline's (built last) sizes are HF's
        engine = deepspeed_engine(ours.model, config)
        steps[arch] = ours.step_function(engine, batch, device)
        models[arch] = {"label": f"`{arch}`", "implementation": "this project (fairseq layers)",
                        "params": ours.params}  # fmt: skip
    result: dict[str, Any] = {}
    try:
        module, version = hf_module(sizes)
    except ImportError as exc:
        torch_pin = torch.__version__.split("+")[0]
        result["hf_skipped"] = f"transformers not installed ({exc.name or exc}): {HF_INSTALL}"
        print(f"transformers is not installed; the HF column is skipped. Install it with:\n  {HF_INSTALL}\n"
              f"or let pip resolve it with torch pinned:\n  pip install transformers=={HF_VERSION} "
              f"torch=={torch_pin}", flush=True)  # fmt: skip
    else:
        params = sum(p.numel() for p in module.parameters())
        hf_engine = deepspeed_engine(module, config)
        steps.update(hf_step_functions(hf_engine, batch, device))
        result.update(transformers=version, hf_attention=module.hf.config._attn_implementation)
        models[HF_NAME] = {"label": "HF `BertForPreTraining`",
                           "implementation": "its forward with labels: MLM head on every position",
                           "params": params}  # fmt: skip
        models[HF_MASKED_NAME] = {"label": "HF `BertForPreTraining`",
                                  "implementation": "MLM head on the masked positions only (as ours)",
                                  "params": params}  # fmt: skip
    print(f"step times ({device}, {torch.get_num_threads()} threads, batch {args.batch_size} × "
          f"{args.seq_len}): {', '.join(steps)}", flush=True)  # fmt: skip
    with OtherCpuUse() as other:
        times = alternate(steps, args.rounds, args.warmup)
    result.update(
        archs=[macaron, vanilla],
        models=models,
        times=times,
        device=device.type if device.type == "cpu" else torch.cuda.get_device_name(device),
        threads=torch.get_num_threads(),
        config=shown_path(config_path),
        precision=precision(config),
        zero_stage=config.get("zero_optimization", {}).get("stage", 0),
        optimizer=optimizer_text(config),
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        masked=int(batch.masked.sum()),
        vocab=args.vocab,
        rounds=args.rounds,
        warmup=args.warmup,
        deepspeed=deepspeed.__version__,
        other_cores=other.cores,
    )
    return result


def measure_gpu(args: argparse.Namespace) -> dict[str, Any]:
    """Part 4: tokens/s and MFU of ``--mfu-arch`` in bf16 (on a GPU; on the CPU only with --mfu-on-cpu)."""
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


# --------------------------------------------------------------------------------------------- ranks
def build_corpus(dest: Path, megabytes: float, vocab: int) -> tuple[Path, str]:
    """A data-bin from a generated Wikipedia dump (as tests/macaron_fairseq/pretrain/test_pretrain_e2e.py)."""
    from preprocess.sources.synthetic_wiki import write_dump

    dump = dest / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    dest.mkdir(parents=True, exist_ok=True)
    write_dump(dump, target_bytes=int(megabytes * 1e6), seed=21)
    data_bin = dest / "data-bin"
    command = [
        sys.executable, "-m", "preprocess.bert_corpus", "--dest", str(data_bin), "--wikipedia", str(dump),
        "--vocab-size", str(vocab), "--valid-ratio", "0.1", "--workers", str(usable_cores()),
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=subprocess_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"building the corpus failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return data_bin, f"synthetic_wiki {megabytes:g} MB of XML, BPE {vocab}"


def subprocess_env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, PYTHONWARNINGS="ignore", **extra)


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
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks),
        "--master_port", str(free_port()), "-m", "macaron_fairseq.pretrain", str(corpus),
        "--arch", args.rank_arch, *shlex.split(args.rank_model_flags),
        "--deepspeed-config", str(config_file), "--batch-size", str(args.rank_batch_size),
        "--update-freq", str(accumulation), "--tokens-per-sample", str(args.rank_seq_len),
        "--save-dir", str(save_dir), "--seed", str(args.seed + 1), "--max-update", str(args.rank_steps),
        "--no-validation", "--keep-last-checkpoints", "1", "--log-interval", str(args.rank_steps),
    ]  # fmt: skip
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
    print(f"    {t['samples_per_second']:.2f} samples/s, median step {t['median_step_seconds']:.3f} s "
          f"({wall:.0f} s with start-up)", flush=True)  # fmt: skip
    return run


def measure_ranks(args: argparse.Namespace) -> dict[str, Any]:
    """Part 3: the real CLI with each rank count, same global batch, all cores."""
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


# ----------------------------------------------------------------------------------------------- main
def print_summary(results: dict[str, Any]) -> None:
    """The tables, as the docs show them (without the provenance line)."""
    for key, renderer in (("steps", render_steps), ("ranks", render_ranks), ("gpu", render_gpu)):
        if key in results:
            print(f"\n{renderer(results[key])}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--parts", nargs="+", choices=("steps", "ranks", "gpu"), default=["steps", "ranks", "gpu"]
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="results file (default: %(default)s)")
    steps = parser.add_argument_group("steps: macaron vs BERT vs Hugging Face, one process")
    steps.add_argument(
        "--archs",
        nargs=2,
        metavar=("MACARON", "BASELINE"),
        default=["macaron_bert_base", "vanilla_bert_base"],
        help="the Macaron model and its vanilla_bert_* baseline (HF gets the baseline's sizes)",
    )
    steps.add_argument("--vocab", type=int, default=30522, help="vocabulary (BERT's: %(default)s)")
    steps.add_argument("--seq-len", type=int, default=128)
    steps.add_argument("--batch-size", type=int, default=8, help="micro batch = the step's batch")
    steps.add_argument("--rounds", type=int, default=6, help="timed rounds (one step of each model)")
    steps.add_argument("--warmup", type=int, default=2, help="untimed steps of each model first")
    steps.add_argument("--threads", type=int, default=None, help="torch threads (default: the usable cores)")
    steps.add_argument(
        "--config",
        type=Path,
        default=None,
        help="DeepSpeed config (default: configs/deepspeed/tiny_cpu.json on CPU, bert_phase1.json "
        "with a GPU); its batch fields are replaced by --batch-size",
    )
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
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    quiet_libraries()
    machine = machine_info()
    import torch

    torch.set_num_threads(args.threads or usable_cores())
    results: dict[str, Any] = {}
    if "steps" in args.parts:
        results["steps"] = measure_steps(args)
    if "gpu" in args.parts:
        results["gpu"] = measure_gpu(args)
        if "skipped" in results["gpu"]:
            print(f"tokens/s and MFU: skipped ({results['gpu']['skipped']})", flush=True)
    if "ranks" in args.parts:
        results["ranks"] = measure_ranks(args)
    print_summary(results)
    if args.json:
        write_results(args.json, results, machine)


if __name__ == "__main__":
    main()
