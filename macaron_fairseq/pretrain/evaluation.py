"""Validation of a pre-training run: MLM perplexity and NSP accuracy on the whole validation set (shared among
the ranks), without touching the random streams of training."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from macaron_fairseq.pretrain.batches import Batches
from macaron_fairseq.pretrain.step_stats import StepLog


def validate(
    engine: Any, criterion: Any, batches: Batches, step: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """The validation record of ``step`` (its line goes to ``log``).

    RNG-neutral (loading data and creating a DataLoader draw from torch's generator): a resumed run must not
    depend on where validations happened.
    """
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        totals = StepLog()
        engine.eval()
        for sample in batches.validation():
            if sample:  # a rank with fewer batches gets empty ones
                _, _, logging_output = criterion(engine, batches.to_device(sample))
                totals.add(logging_output)
        engine.train()
    summary = totals.all_reduced().record()
    record = {
        "step": step,
        "split": "valid",
        "mlm_loss": summary["mlm_loss"],
        "ppl": 2 ** summary["mlm_loss"],
        "nsp_accuracy": summary["nsp_accuracy"],
        "pairs": summary["pairs"],
    }
    log(
        f"valid at step {step}: mlm {record['mlm_loss']:.3f} bits (ppl {record['ppl']:.1f}), "
        f"nsp accuracy {record['nsp_accuracy']:.1f}% on {record['pairs']:.0f} pairs"
    )
    return record
