"""Predictions of a fine-tuned checkpoint for every example of a split, in the split's file order: what a
GLUE submission file needs (one line per test example, none dropped) and what selection compares with.

The checkpoint is one written by ``fairseq-train --task macaron_sentence_prediction`` (see
:mod:`macaron_fairseq.tasks.bert_sentence_prediction`). It is loaded with fairseq's
``checkpoint_utils.load_model_ensemble_and_task``: the task is rebuilt from the checkpoint's configuration
with its data directory replaced by ``data_dir`` (same dictionaries; the split may be one the run never
saw, e.g. ``test``), and its ``build_model`` registers the classification head, whose weights the
checkpoint then restores. The model runs in eval mode (no dropout), without gradients, on CUDA when there
is one. The task truncates long examples (BERT's rule) instead of dropping them, so every example gets a
prediction.

    from macaron_pipelines.glue.predict import predict, predict_labels
    predict(Path("run/checkpoint_last.pt"), Path("glue-bin/RTE"), "test")          # [1, 0, 0, ...]
    predict_labels(Path("run/checkpoint_last.pt"), Path("glue-bin/RTE"), "test")   # ["not_entailment", ...]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclass
class FineTunedModel:
    model: Any
    task: Any

    @property
    def regression(self) -> bool:
        return bool(self.task.cfg.regression_target)

    @property
    def head(self) -> str:
        return str(self.task.cfg.classification_head_name)


def load_fine_tuned(checkpoint: Path, data_dir: Path) -> FineTunedModel:
    """The model of ``checkpoint`` (eval mode, on CUDA when available) and its task reading ``data_dir``."""
    import macaron_fairseq  # noqa: F401  (registers the task and the models; first: fairseq without DeepSpeed)

    if not Path(checkpoint).is_file():
        raise FileNotFoundError(f"{checkpoint}: no such checkpoint")
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data_dir)}
    )
    model = models[0].eval()
    if torch.cuda.is_available():
        model = model.cuda()
    fine_tuned = FineTunedModel(model, task)
    if fine_tuned.head not in getattr(model, "classification_heads", {}):
        raise ValueError(
            f"{checkpoint}: no classification head {fine_tuned.head!r} (not a fine-tuned model?)"
        )
    if fine_tuned.regression and task.cfg.num_classes != 1:
        raise ValueError(f"{checkpoint}: {task.cfg.num_classes} regression targets; GLUE's have one")
    return fine_tuned


def run(fine_tuned: FineTunedModel, split: str, batch_size: int = 64) -> list[int | float]:
    """One prediction per example of ``split``, in file order: the class index (position in the label
    dictionary after its special symbols, as fairseq's targets), or the regression value."""
    from fairseq import utils

    model, task = fine_tuned.model, fine_tuned.task
    task.load_dataset(split)
    dataset = task.dataset(split)
    count = len(dataset)
    # batches of similar lengths (less padding); the ids put the predictions back in file order
    order = np.argsort([dataset.num_tokens(i) for i in range(count)], kind="stable")
    cuda = next(model.parameters()).is_cuda
    ids: list[int] = []
    values: list[int | float] = []
    with torch.inference_mode():
        for start in range(0, count, batch_size):
            sample = dataset.collater([dataset[int(i)] for i in order[start : start + batch_size]])
            if cuda:
                sample = utils.move_to_cuda(sample)
            logits, _ = model(**sample["net_input"], classification_head_name=fine_tuned.head)
            if fine_tuned.regression:
                values += logits[:, 0].float().tolist()
            else:
                values += logits.argmax(dim=-1).tolist()
            ids += sample["id"].tolist()
    if sorted(ids) != list(range(count)):
        raise RuntimeError(f"{split}: predictions for {len(ids)} ids, expected each of 0..{count - 1} once")
    by_id = dict(zip(ids, values, strict=True))
    return [by_id[i] for i in range(count)]


def predict(checkpoint: Path, data_dir: Path, split: str, batch_size: int = 64) -> list[int | float]:
    """Class indices (classification) or values (regression, ``--regression-target``) of every example of
    ``split`` in ``data_dir`` (the fairseq-preprocess layout the model was fine-tuned on), in file order."""
    return run(load_fine_tuned(checkpoint, data_dir), split, batch_size)


def predict_labels(checkpoint: Path, data_dir: Path, split: str, batch_size: int = 64) -> list[str | float]:
    """:func:`predict` with the class indices turned into the label strings of ``label/dict.txt`` (what
    the labels were binarized from); regression values unchanged."""
    fine_tuned = load_fine_tuned(checkpoint, data_dir)
    values = run(fine_tuned, split, batch_size)
    if fine_tuned.regression:
        return values
    labels = fine_tuned.task.label_dictionary
    return [labels[int(index) + labels.nspecial] for index in values]
