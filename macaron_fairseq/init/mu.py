"""μ for DT-Fixup: the largest L2 norm of any input vector entering a new stack, over the training data.

μ = max_i ‖x_i‖ over every (non-padding) position of every training example (DT-Fixup §3.3), computed
by a forward pass of the pre-stack module in eval mode with no gradient, streamed batch by batch (memory
independent of the dataset size), each data-parallel worker on its own shard, combined with an
all-reduce MAX. Several "probes" (e.g. the decoder's input and the encoder output its cross-attention
reads) can be measured in the same pass.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from macaron_fairseq.init.errors import EmptyTrainingSplitError, NonFiniteInputError
from macaron_workflow.collectives import all_reduce

#: sample -> (vectors [..., d], keep mask [...] with True on real positions, or None for all)
Probe = Callable[[dict], tuple[Tensor, Tensor | None]]


@dataclass
class MaxNormEstimate:
    """Result of one μ pass."""

    max_norms: dict[str, float]
    sentences: int
    tokens: int
    batches: int
    seconds: float
    split: str = "train"
    per_worker_max: dict[str, float] = field(default_factory=dict)
    device: str = "cpu"  # where this worker's forward passes ran

    def describe(self) -> str:
        mus = ", ".join(f"μ[{k}]={v:.6g}" for k, v in self.max_norms.items())
        return (
            f"{mus} over {self.sentences} sentences / {self.tokens} tokens of '{self.split}' "
            f"({self.batches} batches, on {self.device}) in {self.seconds:.2f}s"
        )


@contextlib.contextmanager
def eval_mode(module: nn.Module) -> Iterator[None]:
    """Eval mode + no grad for the pass; restores the previous train/eval state."""
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        module.train(was_training)


def _sample_ids(sample: dict, limit: int = 8) -> list[int]:
    ids = sample.get("id")
    return [] if ids is None else [int(i) for i in ids[:limit]]


def batch_max_norm(x: Tensor, keep: Tensor | None, probe: str, batch_index: int, sample: dict) -> float:
    """max ‖x_i‖ over the kept positions of one batch; raises on NaN/inf among them."""
    vectors = x.float() if keep is None else x.float()[keep.to(torch.bool)]
    if vectors.numel() == 0:
        return 0.0
    if not torch.isfinite(vectors).all():
        raise NonFiniteInputError(
            f"non-finite values (NaN/inf) in the '{probe}' input vectors of batch {batch_index} "
            f"(example ids {_sample_ids(sample)}); μ cannot be estimated"
        )
    return float(vectors.norm(dim=-1).max())


def all_reduce_max_and_counts(
    values: list[float], counts: list[int], group: object | None = None
) -> tuple[list[float], list[int]]:
    """MAX over workers of ``values``, SUM of ``counts`` (no-op without an initialised process group), on the
    backend's device (:mod:`macaron_workflow.collectives`: CUDA under NCCL)."""
    maxes = all_reduce(values, "max", group)
    sums = all_reduce(counts, "sum", group)
    return maxes, [int(c) for c in sums]


def estimate_max_norms(
    batches: Iterable[dict],
    probes: Mapping[str, Probe],
    module: nn.Module,
    count: Callable[[dict], tuple[int, int]] | None = None,
    group: object | None = None,
    split: str = "train",
) -> MaxNormEstimate:
    """Stream ``batches`` through ``probes`` (with ``module`` in eval mode, no grad) and return the max
    input-vector norm per probe, all-reduced (MAX) over data-parallel workers.

    ``count(sample) -> (sentences, tokens)`` defaults to fairseq's ``nsentences``/``ntokens``. Empty
    batches (``{}``, fairseq's padding of uneven shards) are skipped. Raises
    :class:`EmptyTrainingSplitError` if no worker saw any example and :class:`NonFiniteInputError` on
    NaN/inf inputs.
    """
    start = time.perf_counter()
    names = list(probes)
    best = dict.fromkeys(names, 0.0)
    sentences = tokens = n_batches = 0
    device = str(next(module.parameters(), torch.empty(0)).device)
    with eval_mode(module):
        for index, sample in enumerate(batches):
            if not sample or "net_input" not in sample:
                continue
            for name in names:
                x, keep = probes[name](sample)
                best[name] = max(best[name], batch_max_norm(x, keep, name, index, sample))
            s, t = count(sample) if count is not None else (int(sample["nsentences"]), int(sample["ntokens"]))
            sentences, tokens, n_batches = sentences + s, tokens + t, n_batches + 1
    local = dict(best)
    values, counts = all_reduce_max_and_counts(
        [best[n] for n in names], [sentences, tokens, n_batches], group
    )
    sentences, tokens, n_batches = counts
    if sentences == 0:
        raise EmptyTrainingSplitError(
            f"the '{split}' split holds no example (0 sentences over all workers): μ for DT-Fixup cannot be "
            "estimated; check the data, or pass --dt-fixup-mu"
        )
    return MaxNormEstimate(
        max_norms=dict(zip(names, values, strict=True)),
        sentences=sentences,
        tokens=tokens,
        batches=n_batches,
        seconds=time.perf_counter() - start,
        split=split,
        per_worker_max=local,
        device=device,
    )
