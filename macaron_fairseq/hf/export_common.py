"""What the HuggingFace exports share: the check that the exported model computes the fairseq model's
logits (a random batch, the largest difference, refused above the export's tolerance), fairseq's loader
with a one-line error, and the last step: writing ``fairseq_export.json`` and renaming the directory built
aside into place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from macaron_workflow.errors import UserError


def bert_batch(vocab: int, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The check batch of both BERT exports: ids and segments, 3 × 16, row 1 padded from position 11,
    segment B from position 8 (the caller zeroes it at the pads)."""
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, vocab, (3, 16), generator=generator)
    tokens[:, 0] = 0  # <s> / [CLS]
    tokens[1, 11:] = pad
    segments = torch.zeros_like(tokens)
    segments[:, 8:] = 1
    return tokens, segments


def bert_gap(mlm: torch.Tensor, nsp: torch.Tensor, out: Any, keep: torch.Tensor, tolerance: float) -> float:
    """Max |Δ| of the MLM logits at ``keep`` and the NSP logits against the exported model's ``out``."""
    mlm_diff = (mlm - out.prediction_logits)[keep].abs().max().item()
    return refuse_gap(max(mlm_diff, (nsp - out.seq_relationship_logits).abs().max().item()), tolerance)


def refuse_gap(diff: float, tolerance: float) -> float:
    """``diff`` (max |Δ| of the fairseq and the exported model's logits); above ``tolerance`` a
    :class:`UserError`: the export stops before anything is written."""
    if not diff <= tolerance:
        raise UserError(
            f"the exported model's logits differ from the fairseq model's by {diff:.2e} "
            f"(> {tolerance:g}): not written"
        )
    return diff


def finish_export(staging: Path, out: Path, record: dict[str, Any]) -> None:
    """Write ``record`` as ``staging``'s ``fairseq_export.json``, then rename ``staging`` to ``out`` (an
    empty directory there is replaced)."""
    (staging / "fairseq_export.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if out.exists():
        out.rmdir()
    staging.rename(out)


def load_model(
    checkpoint: Path, data_dir: Path, dictionaries: str, limit: int | None = None
) -> tuple[Any, Any]:
    """(model in eval mode, task) of ``checkpoint`` over ``data_dir`` by fairseq's loader (under the plugin's
    allow-list, :mod:`macaron_fairseq.repairs.checkpoint_safety`); a failure is a :class:`UserError` naming
    ``dictionaries``, with the first line of fairseq's message (cut at ``limit`` characters)."""
    from fairseq import checkpoint_utils

    try:
        models, _, task = checkpoint_utils.load_model_ensemble_and_task(
            [str(checkpoint)], arg_overrides={"data": str(data_dir)}
        )
    except UserError:
        raise
    except Exception as err:  # e.g. a --data dictionary of another size than the checkpoint's embeddings
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise UserError(
            f"{checkpoint}: fairseq cannot load it with {dictionaries} ({type(err).__name__}: "
            f"{reason[:limit]}); give --data the model's own data-bin"
        ) from None
    return models[0].eval(), task
