"""The GLUE submission: file names, headers, rows in test-file order with the file's index, labels as the
server takes them, WNLI's majority class, the checks before writing, and the zip."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from glue_layout import EXAMPLES, WNLI_MAJORITY, write_glue_dir

from macaron_pipelines.glue.submission import (
    SUBMISSION_FILES,
    SubmissionError,
    majority_label,
    write_submission,
)

NAMES = ["CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI-m", "MNLI-mm", "QNLI", "RTE", "WNLI", "AX"]


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_glue_dir(tmp_path_factory.mktemp("glue"))


def examples_of(name: str) -> list:
    entry = next(e for e in SUBMISSION_FILES if e.name == name)
    return EXAMPLES[(entry.task, entry.split)]


def cycle(labels: tuple, count: int) -> list:
    return [labels[i % len(labels)] for i in range(count)]


def all_predictions() -> dict[str, list]:
    """Predictions for every file but WNLI: labels cycling through the vocabulary, ints for binary tasks,
    STS-B numbers outside [0, 5] among them."""
    nli = ("entailment", "neutral", "contradiction")
    predictions: dict[str, list] = {name: cycle((1, 0), len(examples_of(name))) for name in ("CoLA", "SST-2")}
    predictions.update({name: cycle(("1", "0"), len(examples_of(name))) for name in ("MRPC", "QQP")})
    predictions.update({name: cycle(nli, len(examples_of(name))) for name in ("MNLI-m", "MNLI-mm", "AX")})
    predictions.update(
        {name: cycle(("not_entailment", "entailment"), len(examples_of(name))) for name in ("QNLI", "RTE")}
    )
    predictions["STS-B"] = [5.73, -0.2]
    return predictions


def read_rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_submission_files_and_their_rows(glue_dir: Path, tmp_path: Path) -> None:
    predictions = all_predictions()
    archive = write_submission(glue_dir, predictions, tmp_path / "out")
    assert archive == tmp_path / "out" / "submission.zip"
    folder = tmp_path / "out" / "submission"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{name}.tsv" for name in NAMES)
    for name in NAMES:
        rows = read_rows(folder / f"{name}.tsv")
        assert rows[0] == ["index", "prediction"]
        assert [row[0] for row in rows[1:]] == [example.index for example in examples_of(name)]
    assert read_rows(folder / "CoLA.tsv")[1:] == [["0", "1"], ["1", "0"], ["2", "1"]]
    assert read_rows(folder / "MRPC.tsv")[1:] == [["0", "1"], ["1", "0"]]
    assert [row[1] for row in read_rows(folder / "MNLI-m.tsv")[1:]] == ["entailment", "neutral"]
    assert [row[1] for row in read_rows(folder / "AX.tsv")[1:]] == ["entailment", "neutral", "contradiction"]
    assert [row[1] for row in read_rows(folder / "RTE.tsv")[1:]] == ["not_entailment", "entailment"]
    assert read_rows(folder / "STS-B.tsv")[1:] == [["0", "5.000"], ["1", "0.000"]]  # clipped to [0, 5]
    assert read_rows(folder / "WNLI.tsv")[1:] == [["0", WNLI_MAJORITY], ["1", WNLI_MAJORITY]]
    assert [e.index for e in examples_of("QQP")] == ["0", "1"]  # QQP's "id" column


def test_the_zip_holds_the_files_at_its_root_and_is_reproducible(glue_dir: Path, tmp_path: Path) -> None:
    archive = write_submission(glue_dir, all_predictions(), tmp_path / "out")
    with zipfile.ZipFile(archive) as zipped:
        assert zipped.namelist() == [f"{name}.tsv" for name in NAMES]
        for name in NAMES:
            assert (
                zipped.read(f"{name}.tsv") == (tmp_path / "out" / "submission" / f"{name}.tsv").read_bytes()
            )
    again = write_submission(glue_dir, all_predictions(), tmp_path / "again")
    assert again.read_bytes() == archive.read_bytes()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["submission", "submission.zip"]


def test_wnli_majority_class_and_given_wnli_predictions(glue_dir: Path, tmp_path: Path) -> None:
    assert majority_label(glue_dir) == WNLI_MAJORITY == "1"
    predictions = all_predictions() | {"WNLI": ["0", "0"]}
    write_submission(glue_dir, predictions, tmp_path / "out")
    assert read_rows(tmp_path / "out" / "submission" / "WNLI.tsv")[1:] == [["0", "0"], ["1", "0"]]


def test_a_wrong_row_count_names_the_file_and_writes_nothing(glue_dir: Path, tmp_path: Path) -> None:
    predictions = all_predictions()
    predictions["MNLI-mm"] = predictions["MNLI-mm"] + ["neutral"]
    with pytest.raises(SubmissionError) as caught:
        write_submission(glue_dir, predictions, tmp_path / "out")
    assert str(caught.value) == (
        f"MNLI-mm: 2 predictions for the 1 examples of {glue_dir / 'MNLI' / 'test_mismatched.tsv'}"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("QNLI", "neutral", "QNLI: prediction 0 is 'neutral', not a QNLI label (entailment, not_entailment)"),
        ("AX", "not_entailment", "AX: prediction 0 is 'not_entailment', not a AX label (contradiction, "),
        ("CoLA", 2, "CoLA: prediction 0 is 2, not a CoLA label (0, 1)"),
        ("SST-2", True, "SST-2: prediction 0 is True, not a SST-2 label (0, 1)"),
        ("STS-B", float("inf"), "STS-B: prediction 0 is inf, not a finite number"),
    ],
)
def test_a_label_outside_the_vocabulary_names_the_file(
    glue_dir: Path, tmp_path: Path, name: str, value: object, message: str
) -> None:
    predictions = all_predictions()
    predictions[name] = [value, *predictions[name][1:]]
    with pytest.raises(SubmissionError) as caught:
        write_submission(glue_dir, predictions, tmp_path / "out")
    assert str(caught.value).startswith(message)
    assert not (tmp_path / "out").exists()


def test_missing_and_unknown_files(glue_dir: Path, tmp_path: Path) -> None:
    predictions = all_predictions()
    del predictions["AX"], predictions["QQP"]
    with pytest.raises(SubmissionError, match=r"^no predictions for QQP, AX \(the server expects all eleven"):
        write_submission(glue_dir, predictions, tmp_path / "out")
    with pytest.raises(SubmissionError, match=r"^no submission file 'MNLI'; the files: CoLA, SST-2"):
        write_submission(glue_dir, {"MNLI": []}, tmp_path / "out")


def test_a_partial_submission_and_stale_files(glue_dir: Path, tmp_path: Path) -> None:
    """A partial submission is never written under the name the server is sent (#34): it is
    ``submission-partial.zip``, and it replaces a stale complete one (and the reverse)."""
    out = tmp_path / "out"
    write_submission(glue_dir, all_predictions(), out)
    predictions = {name: values for name, values in all_predictions().items() if name in ("RTE", "CoLA")}
    archive = write_submission(glue_dir, predictions, out, partial=True)
    assert archive == out / "submission-partial.zip"
    written = ["CoLA.tsv", "RTE.tsv", "WNLI.tsv"]  # WNLI's majority: its folder exists
    assert sorted(p.name for p in (out / "submission-partial").iterdir()) == written
    with zipfile.ZipFile(archive) as zipped:
        assert zipped.namelist() == written
    assert sorted(p.name for p in out.iterdir()) == ["submission-partial", "submission-partial.zip"]
    write_submission(glue_dir, all_predictions(), out)  # complete again: the partial one goes
    assert sorted(p.name for p in out.iterdir()) == ["submission", "submission.zip"]
    glue = write_glue_dir(tmp_path / "rte-only", ["RTE"])
    write_submission(glue, {"RTE": predictions["RTE"]}, tmp_path / "rte", partial=True)
    assert [p.name for p in (tmp_path / "rte" / "submission-partial").iterdir()] == ["RTE.tsv"]
