"""The GLUE server's submission: ``submission/{CoLA,...,AX}.tsv`` and ``submission.zip`` holding them.

Each file has the header ``index<TAB>prediction`` and one row per example of the task's test file, in the
file's order, with the file's own index. Labels are written as the server takes them: the strings
``entailment``/``neutral``/``contradiction`` (MNLI-m, MNLI-mm, AX) and ``entailment``/``not_entailment``
(QNLI, RTE), ``0``/``1`` for CoLA, SST-2, MRPC, QQP and WNLI, a number with three decimals clipped to
[0, 5] for STS-B. AX is predicted by the MNLI model (the caller passes those predictions under ``AX``).
WNLI gets the majority class of its training set unless predictions are given, as BERT did.

Everything is checked before anything is written: per file the number of predictions equals the number of
test examples and every label is in the task's vocabulary, otherwise an error names the file (task). Each
file and the zip are written atomically.

A submission with all eleven files is ``submission.zip`` (and ``submission/``); anything less — some
tasks run, or runs that failed — is written only as ``submission-partial.zip`` (``submission-partial/``),
never under the name the server is sent, and writing one removes the other, so the folder holds what the
last run produced.
"""

from __future__ import annotations

import math
import sys
import zipfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from macaron_preprocess.sources.glue import TASKS, read_split
from macaron_workflow.atomic import atomic_output, write_text_atomically
from macaron_workflow.errors import UserError


@dataclass(frozen=True)
class SubmissionFile:
    """One file of the submission: its name (the leaderboard's column) and the test split it predicts."""

    name: str
    task: str
    split: str


SUBMISSION_FILES = (
    SubmissionFile("CoLA", "CoLA", "test"),
    SubmissionFile("SST-2", "SST-2", "test"),
    SubmissionFile("MRPC", "MRPC", "test"),
    SubmissionFile("STS-B", "STS-B", "test"),
    SubmissionFile("QQP", "QQP", "test"),
    SubmissionFile("MNLI-m", "MNLI", "test_matched"),
    SubmissionFile("MNLI-mm", "MNLI", "test_mismatched"),
    SubmissionFile("QNLI", "QNLI", "test"),
    SubmissionFile("RTE", "RTE", "test"),
    SubmissionFile("WNLI", "WNLI", "test"),
    SubmissionFile("AX", "AX", "test"),
)
"""The eleven files the GLUE server expects, in the leaderboard's order."""

BY_NAME = {entry.name: entry for entry in SUBMISSION_FILES}
COMPLETE, PARTIAL = "submission", "submission-partial"
"""The names of a complete submission (``submission.zip``) and of anything less."""
SUBMISSION_NAMES = (COMPLETE, PARTIAL)
STSB_RANGE = (0.0, 5.0)
HEADER = "index\tprediction\n"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed: the same predictions give the same zip

Prediction = str | int | float


class SubmissionError(UserError):
    """Predictions that do not fit the test file they are for; the message names the file."""


def majority_label(glue_dir: Path, task: str = "WNLI") -> str:
    """The most frequent label of ``task``'s training set (ties: the first in the task's label order)."""
    labels = TASKS[task].labels
    assert labels is not None, task
    counts = Counter(example.label for example in read_split(glue_dir, task, "train").examples)
    return max(labels, key=lambda label: (counts[label], -labels.index(label)))


def write_submission(
    glue_dir: Path,
    predictions: Mapping[str, Sequence[Prediction]],
    out_dir: Path,
    *,
    partial: bool = False,
) -> Path:
    """Write ``out_dir/submission/NAME.tsv`` and ``out_dir/submission.zip``; returns the zip's path.

    ``predictions`` maps file names (``CoLA``, ``MNLI-m``, ..., ``AX``) to the predicted labels of the test
    examples in file order. All eleven are required (WNLI defaults to the majority class) unless
    ``partial``: then only the given ones (and WNLI's majority when its folder exists) are written, e.g.
    for a run on some tasks, as ``out_dir/submission-partial/`` and ``out_dir/submission-partial.zip``.
    Files of the eleven that are not written this time are removed from the folder so that the folder and
    the zip agree, and the submission of the other kind is removed (:func:`remove_submission`).
    """
    unknown = [name for name in predictions if name not in BY_NAME]
    if unknown:
        raise SubmissionError(
            f"no submission file {', '.join(map(repr, unknown))}; the files: {', '.join(BY_NAME)}"
        )
    wanted = dict(predictions)
    if "WNLI" not in wanted and (not partial or (Path(glue_dir) / TASKS["WNLI"].directory).is_dir()):
        majority = majority_label(glue_dir)
        count = len(read_split(glue_dir, "WNLI", "test").examples)
        print(f"submission: WNLI gets the majority class of its training set, {majority!r}", file=sys.stderr)
        wanted["WNLI"] = [majority] * count
    missing = [entry.name for entry in SUBMISSION_FILES if entry.name not in wanted]
    if missing and not partial:
        raise SubmissionError(
            f"no predictions for {', '.join(missing)} (the server expects all eleven files)"
        )
    contents = {
        entry.name: _file_content(glue_dir, entry, wanted[entry.name])
        for entry in SUBMISSION_FILES
        if entry.name in wanted
    }
    kind = PARTIAL if partial else COMPLETE
    folder = Path(out_dir) / kind
    for name, text in contents.items():
        write_text_atomically(folder / f"{name}.tsv", text)
    for entry in SUBMISSION_FILES:
        if entry.name not in contents:
            (folder / f"{entry.name}.tsv").unlink(missing_ok=True)
    archive = Path(out_dir) / f"{kind}.zip"
    with atomic_output(archive) as temp, zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, text in contents.items():
            zipped.writestr(zipfile.ZipInfo(f"{name}.tsv", date_time=_ZIP_TIME), text)
    remove_submission(out_dir, COMPLETE if partial else PARTIAL)
    return archive


def remove_submission(out_dir: Path, kind: str) -> None:
    """Remove ``out_dir/KIND.zip`` and the submission files of ``out_dir/KIND/`` (the folder too when that
    leaves it empty): a stale submission must not pass for the result of the last run."""
    folder = Path(out_dir) / kind
    (Path(out_dir) / f"{kind}.zip").unlink(missing_ok=True)
    for entry in SUBMISSION_FILES:
        (folder / f"{entry.name}.tsv").unlink(missing_ok=True)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _file_content(glue_dir: Path, entry: SubmissionFile, values: Sequence[Prediction]) -> str:
    examples = read_split(glue_dir, entry.task, entry.split).examples
    if len(values) != len(examples):
        test_file = Path(glue_dir) / TASKS[entry.task].directory / TASKS[entry.task].splits[entry.split]
        raise SubmissionError(
            f"{entry.name}: {len(values)} predictions for the {len(examples)} examples of {test_file}"
        )
    rows = [
        f"{example.index}\t{_label(entry, value, row)}\n"
        for row, (example, value) in enumerate(zip(examples, values, strict=True))
    ]
    return HEADER + "".join(rows)


def _label(entry: SubmissionFile, value: Prediction, row: int) -> str:
    labels = TASKS[entry.task].labels
    if labels is None:  # STS-B
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            raise SubmissionError(f"{entry.name}: prediction {row} is {value!r}, not a finite number")
        low, high = STSB_RANGE
        return f"{min(max(number, low), high):.3f}"
    label = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if label not in labels:
        raise SubmissionError(
            f"{entry.name}: prediction {row} is {value!r}, not a {entry.task} label ({', '.join(labels)})"
        )
    return str(label)
