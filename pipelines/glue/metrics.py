"""GLUE's metrics, task scores and GLUE score, computed as the leaderboard computes them (values in percent).

Per task (the leaderboard's columns): CoLA Matthews correlation; MRPC and QQP F1 of the positive class
``"1"`` and accuracy; STS-B Pearson and Spearman correlation; SST-2, QNLI, RTE, WNLI accuracy; MNLI
accuracy on the matched and on the mismatched set (MNLI-m, MNLI-mm). The implementations are
scikit-learn's and SciPy's (the ones fairseq's ``sentence_prediction`` criterion uses), not our own.

The *task score* is the mean of a task's metrics (MRPC, QQP: F1 and accuracy; STS-B: Pearson and
Spearman; MNLI: matched and mismatched accuracy), the metric itself for the others. The *GLUE score* is the
unweighted mean of the task scores of the nine tasks (AX never counts). That MNLI enters it once, as the
mean of MNLI-m and MNLI-mm, is checked against published leaderboard rows: BERT-base 78.3, BERT-large
80.5, ERNIE 2.0 base 80.6, ERNIE 2.0 large 83.6 and Bort 83.6 all come out of their per-task numbers this
way, none of them when MNLI-m and MNLI-mm count as two of ten entries (tests/pipelines/glue/test_metrics.py).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from statistics import fmean

from macaron_preprocess.sources.glue import get_task
from macaron_workflow.errors import UserError

GLUE_SCORE_TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE", "WNLI")
"""The tasks of the GLUE score (the diagnostic set AX is reported apart and never averaged)."""

SPLIT_METRICS: dict[str, tuple[str, ...]] = {
    "CoLA": ("mcc",),
    "SST-2": ("accuracy",),
    "MRPC": ("f1", "accuracy"),
    "STS-B": ("pearson", "spearman"),
    "QQP": ("f1", "accuracy"),
    "MNLI": ("accuracy",),
    "QNLI": ("accuracy",),
    "RTE": ("accuracy",),
    "WNLI": ("accuracy",),
}
"""The metrics of one dev split, in the leaderboard's order (MRPC: F1/Accuracy, STS-B: Pearson/Spearman)."""

MNLI_SUFFIX = {"dev_matched": "m", "dev_mismatched": "mm"}
"""MNLI's dev splits and the suffix of their metric keys (``accuracy_m``, ``accuracy_mm``)."""

METRIC_LABELS = {
    "mcc": "MCC",
    "accuracy": "Acc",
    "f1": "F1",
    "pearson": "Pearson",
    "spearman": "Spearman",
    "accuracy_m": "Acc-m",
    "accuracy_mm": "Acc-mm",
}
"""How the tables name the metric keys."""

POSITIVE = "1"
"""The positive class of MRPC's and QQP's F1 (paraphrase, duplicate)."""

Value = str | int | float


class MetricError(UserError):
    """Predictions that cannot be scored (lengths differ, a label outside the task's vocabulary)."""


def dev_metric_keys(task: str) -> tuple[str, ...]:
    """The keys of a run's dev metrics (:func:`dev_metrics`): MNLI's carry their split's suffix."""
    keys = _split_keys(task)
    return tuple(f"{keys[0]}_{suffix}" for suffix in MNLI_SUFFIX.values()) if task == "MNLI" else keys


def task_metrics(task: str, predictions: Sequence[Value], gold: Sequence[Value]) -> dict[str, float]:
    """The leaderboard metrics of ``task`` on one dev split, in percent (e.g. ``{"mcc": 60.5}``).

    Classification predictions and gold labels are the files' label strings (ints ``0``/``1`` are taken
    as ``"0"``/``"1"``); STS-B's are numbers. A correlation that is undefined because one side is
    constant counts as 0 (no correlation), as scikit-learn's Matthews correlation does.
    """
    keys = _split_keys(task)
    if len(predictions) != len(gold):
        raise MetricError(f"{task}: {len(predictions)} predictions for {len(gold)} gold labels")
    if not gold:
        raise MetricError(f"{task}: no examples to score")
    if task == "STS-B":
        predicted, reference = _scores(task, predictions, "prediction"), _scores(task, gold, "gold label")
        return {key: 100.0 * _correlation(_correlation_function(key), predicted, reference) for key in keys}
    labels, truth = _labels(task, predictions, "prediction"), _labels(task, gold, "gold label")
    return {key: 100.0 * float(_classification(key)(truth, labels)) for key in keys}


def dev_metrics(task: str, splits: Mapping[str, tuple[Sequence[Value], Sequence[Value]]]) -> dict[str, float]:
    """A run's dev metrics from ``{dev split: (predictions, gold)}``: :func:`task_metrics` of the single dev
    split, or for MNLI ``{"accuracy_m": ..., "accuracy_mm": ...}``."""
    expected = get_task(task).dev_splits
    if set(splits) != set(expected):
        raise MetricError(f"{task}: dev predictions for {sorted(splits)}, expected {list(expected)}")
    if task != "MNLI":
        (split,) = expected
        return task_metrics(task, *splits[split])
    return {
        f"{key}_{MNLI_SUFFIX[split]}": value
        for split in expected
        for key, value in task_metrics(task, *splits[split]).items()
    }


def task_score(task: str, metrics: Mapping[str, float]) -> float:
    """The task's score from its dev metrics (:func:`dev_metrics`): the mean of its metrics."""
    keys = dev_metric_keys(task)
    missing = [key for key in keys if key not in metrics]
    if missing:
        raise MetricError(
            f"{task}: the task score needs the metrics {', '.join(keys)}; missing {', '.join(missing)} "
            f"(given: {', '.join(metrics) or 'none'})"
        )
    return fmean(float(metrics[key]) for key in keys)


def glue_score(task_scores: Mapping[str, float]) -> float:
    """The unweighted mean of the task scores given (a subset of :data:`GLUE_SCORE_TASKS`; the
    leaderboard's GLUE score when all nine are given)."""
    unknown = [task for task in task_scores if task not in GLUE_SCORE_TASKS]
    if unknown:
        raise MetricError(
            f"not GLUE score tasks: {', '.join(unknown)} (the tasks: {', '.join(GLUE_SCORE_TASKS)})"
        )
    if not task_scores:
        raise MetricError("no task scores to average")
    return fmean(task_scores.values())


def _classification(key: str) -> Callable[[list[str], list[str]], float]:
    """Metric key -> scikit-learn's function of (gold, predictions). Imported here, not with the module:
    scikit-learn and SciPy take ~2 s to import, which every ``--help``, dry run and grid count paid."""
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    functions = {
        "accuracy": accuracy_score,
        "mcc": matthews_corrcoef,
        "f1": functools.partial(f1_score, pos_label=POSITIVE, zero_division=0.0),
    }
    return functions[key]


def _correlation_function(key: str) -> Callable:
    """Metric key -> SciPy's correlation function (imported here, as in :func:`_classification`)."""
    from scipy.stats import pearsonr, spearmanr

    return {"pearson": pearsonr, "spearman": spearmanr}[key]


def _split_keys(task: str) -> tuple[str, ...]:
    if task not in SPLIT_METRICS:
        known = ", ".join(SPLIT_METRICS)
        raise MetricError(f"GLUE task {task!r} has no dev metrics; the tasks with a dev set: {known}")
    return SPLIT_METRICS[task]


def _labels(task: str, values: Sequence[Value], what: str) -> list[str]:
    vocabulary = get_task(task).labels
    assert vocabulary is not None
    labels = [
        str(value) if isinstance(value, int) and not isinstance(value, bool) else value for value in values
    ]
    for position, label in enumerate(labels):
        if label not in vocabulary:
            raise MetricError(
                f"{task}: {what} {position} is {label!r}, not a {task} label ({', '.join(vocabulary)})"
            )
    return labels  # type: ignore[return-value]


def _scores(task: str, values: Sequence[Value], what: str) -> list[float]:
    scores = []
    for position, value in enumerate(values):
        try:
            score = float(value)
        except (TypeError, ValueError):
            score = math.nan
        if not math.isfinite(score):
            raise MetricError(f"{task}: {what} {position} is {value!r}, not a finite number")
        scores.append(score)
    return scores


def _correlation(function: Callable, predicted: list[float], reference: list[float]) -> float:
    if len(set(predicted)) < 2 or len(set(reference)) < 2:
        return 0.0  # undefined: a constant side
    with warnings.catch_warnings():  # SciPy's warnings about nearly constant input: the value stands
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(function(predicted, reference)[0])
