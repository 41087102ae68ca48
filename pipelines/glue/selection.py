"""Model selection over the fine-tuning grid, and the table of results.

The rule, per task:

1. the runs are grouped by configuration (every hyper-parameter but the seed);
2. each configuration is summarised over its seeds by the mean (and sample standard deviation) of the
   dev *task score* (:func:`macaron_pipelines.glue.metrics.task_score`: the mean of a task's two metrics where
   it has two, MNLI's matched and mismatched accuracy averaged);
3. the configuration with the highest mean is selected (ties: more finished seeds, then the configuration
   that sorts first); reported: its mean ± std over seeds and each metric's mean ± std;
4. within it, the single run with the highest dev task score (ties: the lower seed) is the one whose test
   predictions are submitted. BERT selected the best single dev run; the mean over seeds is what the
   comparison of configurations rests on, the best seed is what the submission uses: both are reported,
   with the median seed beside the best.

**These dev numbers are optimistic.** The configuration is chosen on the dev set it is then scored on, so
its mean over seeds overestimates what a new run of it would score on unseen data; the best of N seeds
overestimates more (it is the maximum of N draws); the median seed is the typical single run of the
selected configuration. The table says so under every rendering (:data:`OPTIMISM_NOTE`). Unbiased
numbers come only from the test set (the GLUE server).

Failed runs (status ``failed``, no metrics) are counted and shown, never silently dropped; a configuration
is summarised over its finished seeds, and one without any finished run cannot be selected.

The GLUE average (:meth:`Selection.glue_average`) is the leaderboard's GLUE score computed on dev over the
tasks present: per task the task score above (mean over seeds of the selected configuration, or its best
seed), then the unweighted mean over those of the nine GLUE tasks that have a selected configuration; MNLI
counts once (matched and mismatched averaged, as the leaderboard's score does); AX never counts. It equals
the leaderboard's definition only when all nine tasks are present.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from macaron_pipelines.glue.metrics import (
    GLUE_SCORE_TASKS,
    METRIC_LABELS,
    dev_metric_keys,
    glue_score,
    task_score,
)
from macaron_preprocess.sources.glue import TASKS
from macaron_workflow.errors import UserError

STATUSES = ("ok", "failed")
OPTIMISM_NOTE = (
    "Dev scores, optimistic: each configuration was selected on the same dev set it is scored on, so its "
    "mean over seeds overestimates a new run on unseen data; the best seed (the maximum of the seeds, what "
    "BERT reported and what is submitted) overestimates more; the median seed is the typical single run. "
    "Unbiased scores come from the test set (the GLUE server)."
)


class SelectionError(UserError):
    """Run records that cannot be compared (unknown task or status, missing metrics, duplicates)."""


@dataclass(frozen=True)
class RunRecord:
    """One fine-tuning run: its task, configuration (hyper-parameters without the seed), seed, dev metrics
    (:func:`macaron_pipelines.glue.metrics.dev_metrics`; empty for a failed run) and where its outputs are."""

    task: str
    config: Mapping[str, Any]
    seed: int
    metrics: Mapping[str, float]
    status: str = "ok"
    directory: str | None = None

    def __post_init__(self) -> None:
        """A dataclass configuration (e.g. the grid's) is kept as its fields."""
        object.__setattr__(self, "config", _as_mapping(self.config))
        object.__setattr__(self, "metrics", dict(self.metrics))

    @property
    def score(self) -> float:
        """The dev task score."""
        return task_score(self.task, self.metrics)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str) -> RunRecord:
        """A record from its JSON form (the field names above); ``source`` (e.g. the file) names it in errors.
        A dataclass ``config`` is taken as its fields."""
        missing = [name for name in ("task", "config", "seed") if name not in data]
        if missing:
            raise SelectionError(f"{source}: the run record lacks {', '.join(missing)}")
        return cls(
            task=data["task"],
            config=data["config"],
            seed=int(data["seed"]),
            metrics=dict(data.get("metrics") or {}),
            status=data.get("status", "ok"),
            directory=data.get("directory"),
        )

    def describe(self) -> str:
        return f"{self.task} {config_name(self.config)} seed {self.seed}"


@dataclass(frozen=True)
class ConfigSummary:
    """A configuration of one task over its seeds."""

    task: str
    config: Mapping[str, Any]
    runs: tuple[RunRecord, ...]  # the finished runs, by seed
    failed: tuple[RunRecord, ...]

    @property
    def scores(self) -> tuple[float, ...]:
        return tuple(run.score for run in self.runs)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores)

    @property
    def median(self) -> float:
        """The median seed's task score (the mean of the two middle ones for an even number of seeds)."""
        return statistics.median(self.scores)

    @property
    def std(self) -> float | None:
        """Sample standard deviation over seeds; None for a single seed."""
        return statistics.stdev(self.scores) if len(self.runs) > 1 else None

    def metric(self, key: str) -> tuple[float, float | None]:
        """(mean, sample std or None) of one dev metric over the seeds."""
        values = [float(run.metrics[key]) for run in self.runs]
        return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None

    @property
    def best_run(self) -> RunRecord:
        """The finished run with the highest dev task score (ties: the lower seed)."""
        return max(self.runs, key=lambda run: (run.score, -run.seed))


@dataclass(frozen=True)
class TaskResult:
    """The selection of one task."""

    task: str
    best: ConfigSummary
    configs: tuple[ConfigSummary, ...]  # every configuration with a finished run, best first

    @property
    def best_run(self) -> RunRecord:
        """The run whose test predictions are submitted."""
        return self.best.best_run


@dataclass(frozen=True)
class Selection:
    """Per task its result; the failed runs of all tasks; the tasks where no run finished."""

    tasks: dict[str, TaskResult]
    failed: tuple[RunRecord, ...]
    unfinished: tuple[str, ...]

    def glue_average(self, which: Literal["mean", "median", "best"] = "mean") -> float | None:
        """The GLUE average on dev over the tasks present (see the module docstring): of the selected
        configurations' mean over seeds, median seed, or best seed. None without any GLUE task."""
        per_task = {
            "mean": lambda r: r.best.mean,
            "median": lambda r: r.best.median,
            "best": lambda r: r.best_run.score,
        }[which]
        scores = {task: per_task(result) for task, result in self.tasks.items() if task in GLUE_SCORE_TASKS}
        return glue_score(scores) if scores else None

    def averaged_tasks(self) -> list[str]:
        return [task for task in GLUE_SCORE_TASKS if task in self.tasks]


def config_name(config: Mapping[str, Any]) -> str:
    """``batch_size=32 lr=2e-05 ...``: the configuration as the tables show it."""
    return " ".join(f"{key}={_format(value)}" for key, value in config.items())


def select(runs: Iterable[RunRecord]) -> Selection:
    """Apply the rule of the module docstring to ``runs`` (any tasks, any order)."""
    groups: dict[str, dict[str, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    seen: dict[tuple[str, str, int], RunRecord] = {}
    failed = []
    for run in runs:
        _check(run)
        key = _config_key(run.config)
        identity = (run.task, key, run.seed)
        if identity in seen:
            where = [r.directory for r in (seen[identity], run) if r.directory]
            raise SelectionError(
                f"two run records for {run.describe()}" + (f": {' and '.join(where)}" if where else "")
            )
        seen[identity] = run
        groups[run.task][key].append(run)
        if run.status == "failed":
            failed.append(run)
    results, unfinished = {}, []
    for task in sorted(groups, key=list(TASKS).index):
        summaries = [_summary(task, members) for _, members in sorted(groups[task].items())]
        ranked = sorted(
            (s for s in summaries if s.runs), key=lambda s: (-s.mean, -len(s.runs), _config_key(s.config))
        )
        if ranked:
            results[task] = TaskResult(task, ranked[0], tuple(ranked))
        else:
            unfinished.append(task)
    return Selection(results, tuple(failed), tuple(unfinished))


def _check(run: RunRecord) -> None:
    if run.task not in TASKS or run.task == "AX":
        raise SelectionError(
            f"{run.describe()}: not a GLUE task with a dev set ({', '.join(GLUE_SCORE_TASKS)})"
        )
    if run.status not in STATUSES:
        raise SelectionError(
            f"{run.describe()}: status {run.status!r}, expected one of {', '.join(STATUSES)}"
        )
    if run.status == "ok":
        missing = [key for key in dev_metric_keys(run.task) if key not in run.metrics]
        if missing:
            raise SelectionError(
                f"{run.describe()}: finished without the dev metrics {', '.join(missing)} "
                f"(it has: {', '.join(run.metrics) or 'none'})"
            )


def _summary(task: str, members: list[RunRecord]) -> ConfigSummary:
    members = sorted(members, key=lambda run: run.seed)
    ok = tuple(run for run in members if run.status == "ok")
    return ConfigSummary(task, members[0].config, ok, tuple(run for run in members if run.status != "ok"))


def _as_mapping(config: Any) -> Mapping[str, Any]:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if not isinstance(config, Mapping):
        raise SelectionError(f"a run configuration must be a mapping of hyper-parameters, got {config!r}")
    return dict(config)


def _config_key(config: Mapping[str, Any]) -> str:
    return json.dumps(_as_mapping(config), sort_keys=True, default=str)


def _format(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- the table ----------------------------------------------------------------------------------------------


def _mean_std(mean: float, std: float | None) -> str:
    return f"{mean:.1f}" if std is None else f"{mean:.1f} ± {std:.1f}"


def render_markdown(selection: Selection) -> str:
    """The results as a markdown table: per task its metrics and task score (mean ± std over the seeds of
    the selected configuration), finished/all seeds, the median seed's score, the submitted (best) seed's
    score, the configuration; then the GLUE averages; then the note that these dev numbers are optimistic,
    the tasks without a finished run and the failed runs."""
    lines = [
        "| Task | Dev metrics (mean ± std) | Score | Seeds | Median seed | Best seed (submitted) "
        "| Configuration |",
        "|---|---|---|---|---|---|---|",
    ]
    for task, result in selection.tasks.items():
        best = result.best
        keys = dev_metric_keys(task)
        names = "/".join(METRIC_LABELS[key] for key in keys)
        values = " / ".join(_mean_std(*best.metric(key)) for key in keys)
        run = result.best_run
        seeds = f"{len(best.runs)}/{len(best.runs) + len(best.failed)}"
        lines.append(
            f"| {task} | {names} {values} | {_mean_std(best.mean, best.std)} | {seeds} | {best.median:.1f} "
            f"| {run.score:.1f} (seed {run.seed}) | {config_name(best.config)} |"
        )
    averaged = selection.averaged_tasks()
    if averaged:
        mean, median = selection.glue_average("mean"), selection.glue_average("median")
        best_seed = selection.glue_average("best")
        lines.append(
            f"| **GLUE average** ({len(averaged)} of {len(GLUE_SCORE_TASKS)} tasks) | | **{mean:.1f}** | "
            f"| {median:.1f} | {best_seed:.1f} | |"
        )
    notes = [OPTIMISM_NOTE] if selection.tasks else []
    if len(averaged) < len(GLUE_SCORE_TASKS):
        absent = [task for task in GLUE_SCORE_TASKS if task not in averaged]
        notes.append(
            f"The GLUE average is over {', '.join(averaged) or 'no task'}; absent: {', '.join(absent)}."
        )
    if selection.unfinished:
        notes.append(f"No finished run: {', '.join(selection.unfinished)}.")
    if selection.failed:
        failed = ", ".join(run.describe() for run in selection.failed)
        notes.append(f"Failed runs ({len(selection.failed)}): {failed}.")
    return "\n".join(lines) + "\n" + "".join(f"\n{note}\n" for note in notes)
