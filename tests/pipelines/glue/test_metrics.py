"""GLUE metrics against hand-computed values, and the GLUE score against published leaderboard rows."""

from __future__ import annotations

import math

import pytest

from macaron_pipelines.glue.metrics import (
    GLUE_SCORE_TASKS,
    MetricError,
    dev_metric_keys,
    dev_metrics,
    glue_score,
    task_metrics,
    task_score,
)


def confusion(tp: int, tn: int, fp: int, fn: int) -> tuple[list[str], list[str]]:
    """(predictions, gold) with these counts of the positive class "1"."""
    predictions = ["1"] * tp + ["0"] * tn + ["1"] * fp + ["0"] * fn
    gold = ["1"] * tp + ["0"] * tn + ["0"] * fp + ["1"] * fn
    return predictions, gold


def test_cola_matthews_correlation_of_a_known_confusion_matrix() -> None:
    # (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (6·3 − 1·2) / sqrt(7·8·4·5) = 16 / sqrt(1120)
    metrics = task_metrics("CoLA", *confusion(tp=6, tn=3, fp=1, fn=2))
    assert metrics == {"mcc": pytest.approx(100 * 16 / math.sqrt(1120))}
    assert metrics["mcc"] == pytest.approx(47.809, abs=1e-3)


def test_cola_constant_predictions_score_zero_and_perfect_ones_100() -> None:
    assert task_metrics("CoLA", ["1"] * 4, ["1", "0", "1", "1"]) == {"mcc": 0.0}
    assert task_metrics("CoLA", ["0", "1"], ["0", "1"]) == {"mcc": 100.0}


@pytest.mark.parametrize("task", ["MRPC", "QQP"])
def test_f1_of_the_positive_class_and_accuracy(task: str) -> None:
    # precision 6/7, recall 6/8: F1 = 2·6 / (2·6 + 1 + 2) = 0.8; accuracy (6 + 3) / 12
    metrics = task_metrics(task, *confusion(tp=6, tn=3, fp=1, fn=2))
    assert list(metrics) == ["f1", "accuracy"]
    assert metrics == {"f1": pytest.approx(80.0), "accuracy": pytest.approx(75.0)}
    assert task_score(task, metrics) == pytest.approx(77.5)
    # the negative class is not the one scored: F1 of "1" is 0 when "1" is never predicted
    assert task_metrics(task, ["0", "0"], ["1", "0"]) == {"f1": 0.0, "accuracy": 50.0}


def test_integer_labels_are_taken_as_the_files_strings() -> None:
    assert task_metrics("SST-2", [1, 0, 1, 1], ["1", "0", "0", "1"]) == {"accuracy": 75.0}


@pytest.mark.parametrize("task", ["SST-2", "QNLI", "RTE", "WNLI", "MNLI"])
def test_accuracy_tasks(task: str) -> None:
    labels = {
        "SST-2": ("0", "1"),
        "WNLI": ("0", "1"),
        "QNLI": ("entailment", "not_entailment"),
        "RTE": ("entailment", "not_entailment"),
        "MNLI": ("entailment", "neutral"),
    }[task]
    a, b = labels
    assert task_metrics(task, [a, a, b, b, a], [a, b, b, b, a]) == {"accuracy": pytest.approx(80.0)}


def test_stsb_pearson_and_spearman() -> None:
    # x = 1..4, y = 1, 2, 3, 5: Σdxdy = 6.5, Σdx² = 5, Σdy² = 8.75 -> r = 6.5 / sqrt(43.75); same ranks
    metrics = task_metrics("STS-B", [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0])
    assert metrics == {
        "pearson": pytest.approx(100 * 6.5 / math.sqrt(43.75)),
        "spearman": pytest.approx(100.0),
    }
    assert metrics["pearson"] == pytest.approx(98.271, abs=1e-3)
    assert task_metrics("STS-B", [3.0, 1.0, 2.0], [1.0, 2.0, 3.0])["spearman"] == pytest.approx(-50.0)


def test_stsb_constant_predictions_have_no_correlation() -> None:
    assert task_metrics("STS-B", [2.5, 2.5, 2.5], [1.0, 2.0, 4.0]) == {"pearson": 0.0, "spearman": 0.0}


def test_mnli_dev_metrics_have_a_key_per_dev_split_and_its_score_is_their_mean() -> None:
    metrics = dev_metrics(
        "MNLI",
        {
            "dev_matched": (["entailment", "neutral"], ["entailment", "contradiction"]),
            "dev_mismatched": (["neutral"] * 4, ["neutral", "neutral", "neutral", "entailment"]),
        },
    )
    assert metrics == {"accuracy_m": 50.0, "accuracy_mm": 75.0}
    assert dev_metric_keys("MNLI") == ("accuracy_m", "accuracy_mm")
    assert task_score("MNLI", metrics) == 62.5


def test_dev_metrics_of_a_single_dev_split_task() -> None:
    assert dev_metrics("RTE", {"dev": (["entailment"], ["entailment"])}) == {"accuracy": 100.0}
    with pytest.raises(MetricError, match=r"MNLI: dev predictions for \['dev'\], expected \['dev_matched'"):
        dev_metrics("MNLI", {"dev": (["entailment"], ["entailment"])})


def test_task_scores_average_two_metrics() -> None:
    assert task_score("STS-B", {"pearson": 88.0, "spearman": 87.0}) == 87.5
    assert task_score("CoLA", {"mcc": 60.5}) == 60.5
    with pytest.raises(MetricError) as caught:
        task_score("MNLI", {"accuracy": 84.0})
    assert str(caught.value) == (
        "MNLI: the task score needs the metrics accuracy_m, accuracy_mm; missing accuracy_m, accuracy_mm "
        "(given: accuracy)"
    )


def test_bad_predictions_are_errors_naming_the_task() -> None:
    with pytest.raises(MetricError, match=r"^QNLI: prediction 1 is 'neutral', not a QNLI label"):
        task_metrics("QNLI", ["entailment", "neutral"], ["entailment", "entailment"])
    with pytest.raises(MetricError, match=r"^CoLA: 2 predictions for 3 gold labels$"):
        task_metrics("CoLA", ["0", "1"], ["0", "1", "1"])
    with pytest.raises(MetricError, match=r"^STS-B: prediction 0 is nan, not a finite number$"):
        task_metrics("STS-B", [float("nan"), 1.0], [1.0, 2.0])
    with pytest.raises(MetricError, match=r"^RTE: no examples to score$"):
        task_metrics("RTE", [], [])
    with pytest.raises(MetricError, match=r"^GLUE task 'AX' has no dev metrics"):
        task_metrics("AX", ["entailment"], ["entailment"])


# GLUE leaderboard rows (test set): the GLUE score, then the columns CoLA, SST-2, MRPC (F1, acc), STS-B
# (Pearson, Spearman), QQP (F1, acc), MNLI (-m, -mm), QNLI, RTE, WNLI. Sources: the XLM README (BERT-large),
# the ERNIE README (BERT-base, ERNIE 2.0), the Bort README (Bort).
LEADERBOARD = {
    "BERT-base": (78.3, 52.1, 93.5, (88.9, 84.8), (87.1, 85.8), (71.2, 89.2), (84.6, 83.4), 90.5, 66.4, 65.1),
    "BERT-large": (
        80.5,
        60.5,
        94.9,
        (89.3, 85.4),
        (87.6, 86.5),
        (72.1, 89.3),
        (86.7, 85.9),
        92.7,
        70.1,
        65.1,
    ),
    "ERNIE 2.0 base": (
        80.6,
        55.2,
        95.0,
        (89.9, 86.1),
        (86.5, 87.6),
        (73.2, 89.8),
        (86.1, 85.5),
        92.9,
        74.8,
        65.1,
    ),
    "ERNIE 2.0 large": (
        83.6,
        63.5,
        95.6,
        (90.2, 87.4),
        (90.6, 91.2),
        (73.8, 90.1),
        (88.7, 88.8),
        94.6,
        80.2,
        67.8,
    ),
    "Bort": (83.6, 63.9, 96.2, (94.1, 92.3), (89.2, 88.3), (66.0, 85.9), (88.1, 87.8), 92.3, 82.7, 71.2),
}


@pytest.mark.parametrize("model", sorted(LEADERBOARD))
def test_glue_score_reproduces_the_leaderboard(model: str) -> None:
    published, *columns = LEADERBOARD[model]
    scores = {}
    for task, values in zip(GLUE_SCORE_TASKS, columns, strict=True):
        values = values if isinstance(values, tuple) else (values,)
        scores[task] = task_score(task, dict(zip(dev_metric_keys(task), values, strict=True)))
    assert round(glue_score(scores), 1) == published
    # MNLI-m and MNLI-mm as two entries of ten would not give the published score
    entries = [score for task, score in scores.items() if task != "MNLI"] + list(columns[5])
    assert round(sum(entries) / len(entries), 1) != published


def test_glue_score_over_the_tasks_present_and_never_ax() -> None:
    assert glue_score({"CoLA": 60.0, "RTE": 70.0}) == 65.0
    with pytest.raises(MetricError, match=r"^not GLUE score tasks: AX"):
        glue_score({"CoLA": 60.0, "AX": 40.0})
    with pytest.raises(MetricError, match=r"^no task scores to average$"):
        glue_score({})
