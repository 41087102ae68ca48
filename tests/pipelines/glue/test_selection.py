"""Model selection: best configuration by the mean over seeds, the submitted seed within it, failed runs
counted, the GLUE average over the tasks present, and the markdown table."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from macaron_pipelines.glue.selection import (
    OPTIMISM_NOTE,
    RunRecord,
    SelectionError,
    config_name,
    render_markdown,
    select,
)

A = {"batch_size": 16, "lr": 5e-05, "epochs": 3, "weight_decay": 0.01}
B = {"batch_size": 32, "lr": 3e-05, "epochs": 3, "weight_decay": 0.01}
C = {"batch_size": 32, "lr": 2e-05, "epochs": 4, "weight_decay": 0.01}


def cola(config: dict, seed: int, mcc: float) -> RunRecord:
    return RunRecord("CoLA", config, seed, {"mcc": mcc}, directory=f"CoLA/{config['lr']}-{seed}")


def failed(task: str, config: dict, seed: int) -> RunRecord:
    return RunRecord(task, config, seed, {}, status="failed")


def test_the_best_mean_over_seeds_wins_not_the_best_single_run() -> None:
    runs = [
        cola(A, 100, 50.0),
        cola(A, 200, 70.0),
        cola(A, 300, 51.0),  # mean 57, best single run 70
        cola(B, 100, 60.0),
        cola(B, 200, 62.0),
        cola(B, 300, 58.0),
    ]
    result = select(runs).tasks["CoLA"]
    assert result.best.config == B
    assert (result.best.mean, result.best.std) == (60.0, 2.0)  # sample standard deviation
    assert result.best.scores == (60.0, 62.0, 58.0) and result.best.median == 60.0
    assert select(runs[:3]).tasks["CoLA"].best.median == 51.0  # beside a mean of 57 and a best seed of 70
    assert (result.best_run.seed, result.best_run.directory) == (200, "CoLA/3e-05-200")
    assert [summary.config for summary in result.configs] == [B, A]


def test_two_metric_tasks_select_on_the_mean_of_both() -> None:
    runs = [
        RunRecord("MRPC", A, 1, {"f1": 92.0, "accuracy": 80.0}),  # F1 higher, task score 86
        RunRecord("MRPC", B, 1, {"f1": 90.0, "accuracy": 86.0}),  # task score 88
        RunRecord("STS-B", A, 1, {"pearson": 88.0, "spearman": 86.0}),
        RunRecord("MNLI", A, 1, {"accuracy_m": 84.0, "accuracy_mm": 83.0}),
        RunRecord("MNLI", B, 1, {"accuracy_m": 85.0, "accuracy_mm": 81.0}),
    ]
    selection = select(runs)
    assert selection.tasks["MRPC"].best.config == B and selection.tasks["MRPC"].best.mean == 88.0
    assert selection.tasks["MNLI"].best.config == A and selection.tasks["MNLI"].best.mean == 83.5
    assert selection.tasks["MNLI"].best.std is None  # one seed
    assert list(selection.tasks) == ["MRPC", "STS-B", "MNLI"]  # GLUE's order


def test_failed_runs_are_counted_and_a_configuration_without_finished_runs_is_not_selected() -> None:
    runs = [
        cola(A, 100, 55.0),
        failed("CoLA", A, 200),
        cola(A, 300, 57.0),
        failed("CoLA", B, 100),
        failed("CoLA", B, 200),
        failed("RTE", A, 100),
    ]
    selection = select(runs)
    result = selection.tasks["CoLA"]
    assert result.best.config == A and result.best.mean == 56.0
    assert [run.seed for run in result.best.failed] == [200]
    assert [summary.config for summary in result.configs] == [A]
    assert selection.unfinished == ("RTE",)
    assert len(selection.failed) == 4


def test_ties_more_finished_seeds_then_the_configuration_that_sorts_first_then_the_lower_seed() -> None:
    runs = [cola(A, 1, 60.0), cola(B, 1, 60.0), cola(B, 2, 60.0), failed("CoLA", A, 2)]
    assert select(runs).tasks["CoLA"].best.config == B
    runs = [cola(B, 1, 60.0), cola(A, 1, 60.0)]
    assert select(runs).tasks["CoLA"].best.config == A  # '"batch_size": 16' sorts before 32
    runs = [cola(A, 300, 61.0), cola(A, 100, 61.0), cola(A, 200, 59.0)]
    assert select(runs).tasks["CoLA"].best_run.seed == 100


def test_glue_average_over_the_tasks_present_with_mnli_once() -> None:
    runs = [
        cola(A, 1, 50.0),
        cola(A, 2, 54.0),  # mean 52, best seed 54
        RunRecord("MRPC", A, 1, {"f1": 90.0, "accuracy": 86.0}),  # 88
        RunRecord("MNLI", A, 1, {"accuracy_m": 85.0, "accuracy_mm": 83.0}),  # 84
    ]
    selection = select(runs)
    assert selection.averaged_tasks() == ["CoLA", "MRPC", "MNLI"]
    assert selection.glue_average("mean") == pytest.approx((52 + 88 + 84) / 3)
    assert selection.glue_average("best") == pytest.approx((54 + 88 + 84) / 3)
    assert selection.glue_average("median") == pytest.approx((52 + 88 + 84) / 3)  # two seeds: their mean
    assert select([failed("RTE", A, 1)]).glue_average() is None


def test_bad_records_are_errors_naming_the_run() -> None:
    with pytest.raises(SelectionError) as caught:
        select([RunRecord("MNLI", A, 7, {"accuracy": 84.0})])
    assert str(caught.value) == (
        "MNLI batch_size=16 lr=5e-05 epochs=3 weight_decay=0.01 seed 7: finished without the dev metrics "
        "accuracy_m, accuracy_mm (it has: accuracy)"
    )
    with pytest.raises(SelectionError, match=r"AX .* seed 1: not a GLUE task with a dev set"):
        select([RunRecord("AX", A, 1, {})])
    with pytest.raises(SelectionError, match="status 'crashed', expected one of ok, failed"):
        select([RunRecord("RTE", A, 1, {}, status="crashed")])
    with pytest.raises(SelectionError) as caught:
        select([cola(A, 1, 50.0), cola(A, 1, 51.0)])
    assert str(caught.value).startswith("two run records for CoLA batch_size=16 lr=5e-05")
    assert str(caught.value).endswith(": CoLA/5e-05-1 and CoLA/5e-05-1")


def test_from_dict_with_a_dataclass_configuration() -> None:
    @dataclass(frozen=True)
    class Config:
        batch_size: int
        lr: float

    record = RunRecord.from_dict(
        {"task": "RTE", "config": Config(16, 2e-05), "seed": "100", "metrics": {"accuracy": 70.0}}, "run.json"
    )
    assert record == RunRecord("RTE", {"batch_size": 16, "lr": 2e-05}, 100, {"accuracy": 70.0})
    assert config_name(record.config) == "batch_size=16 lr=2e-05"
    with pytest.raises(SelectionError, match=r"^run\.json: the run record lacks config, seed$"):
        RunRecord.from_dict({"task": "RTE"}, "run.json")


def test_the_markdown_table() -> None:
    runs = [
        cola(A, 100, 60.0),
        cola(A, 200, 62.0),
        failed("CoLA", A, 300),
        RunRecord("MRPC", B, 100, {"f1": 90.0, "accuracy": 86.0}),
        RunRecord("MRPC", B, 200, {"f1": 89.0, "accuracy": 85.0}),
        RunRecord("MNLI", C, 100, {"accuracy_m": 84.0, "accuracy_mm": 83.0}),
        failed("QQP", A, 100),
    ]
    assert render_markdown(select(runs)) == (
        "| Task | Dev metrics (mean ± std) | Score | Seeds | Median seed | Best seed (submitted) "
        "| Configuration |\n"
        "|---|---|---|---|---|---|---|\n"
        "| CoLA | MCC 61.0 ± 1.4 | 61.0 ± 1.4 | 2/3 | 61.0 | 62.0 (seed 200) "
        "| batch_size=16 lr=5e-05 epochs=3 weight_decay=0.01 |\n"
        "| MRPC | F1/Acc 89.5 ± 0.7 / 85.5 ± 0.7 | 87.5 ± 0.7 | 2/2 | 87.5 | 88.0 (seed 100) "
        "| batch_size=32 lr=3e-05 epochs=3 weight_decay=0.01 |\n"
        "| MNLI | Acc-m/Acc-mm 84.0 / 83.0 | 83.5 | 1/1 | 83.5 | 83.5 (seed 100) "
        "| batch_size=32 lr=2e-05 epochs=4 weight_decay=0.01 |\n"
        "| **GLUE average** (3 of 9 tasks) | | **77.3** | | 77.3 | 77.8 | |\n"
        "\n"
        f"{OPTIMISM_NOTE}\n"
        "\n"
        "The GLUE average is over CoLA, MRPC, MNLI; absent: SST-2, STS-B, QQP, QNLI, RTE, WNLI.\n"
        "\n"
        "No finished run: QQP.\n"
        "\n"
        "Failed runs (2): CoLA batch_size=16 lr=5e-05 epochs=3 weight_decay=0.01 seed 300, "
        "QQP batch_size=16 lr=5e-05 epochs=3 weight_decay=0.01 seed 100.\n"
    )
