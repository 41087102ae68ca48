"""What the pre-training benchmarks share (:mod:`benchmarks.pretrain_step_speed`,
:mod:`benchmarks.pretrain_rank_scaling`, :mod:`benchmarks.pretrain_mfu`): the models built
as the trainer builds them, a synthetic BERT batch, DeepSpeed engines in one process, DeepSpeed configs with
the batch fields replaced, the timing helpers and the CPU time other processes used meanwhile."""

from __future__ import annotations

import logging
import os
import resource
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.results_file import REPO
from macaron_workflow.cli import quiet_loggers

FIRST_WORD = 4  # fairseq dictionary: <s>=0 <pad>=1 </s>=2 <unk>=3, words from 4, <mask> last
CLS, PAD, SEP = 0, 1, 2


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
    quiet_loggers("fairseq", "macaron_fairseq", "DeepSpeed", "deepspeed", "transformers")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


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

    from macaron_fairseq.pretrain.ops import skip_shm_comm

    if dist.is_initialized():
        return
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0"
    )
    if torch.cuda.is_available():
        torch.cuda.set_device(0)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    skip_shm_comm()
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


def device_in_use() -> Any:
    import torch

    return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")


def subprocess_env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, PYTHONWARNINGS="ignore", **extra)
