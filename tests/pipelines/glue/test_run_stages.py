"""A GLUE run's completion is StageRunner's (RUN_DIR/.stages/: the ``train`` and ``result`` stages); a run
directory of an older version (``checkpoint/trained``, ``run.json`` without markers) resumes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from macaron_pipelines.glue import run_one, scheduler
from macaron_pipelines.glue.grid import Config, RunSpec
from macaron_workflow.processes import Completed

META = {
    "task": "RTE",
    "labels": ["entailment", "not_entailment"],
    "regression": False,
    "num_classes": 2,
    "label_scale": None,
    "splits": {
        "train": {"examples": 4, "labeled": True, "glue_split": "train"},
        "valid": {"examples": 2, "labeled": True, "glue_split": "dev"},
        "test": {"examples": 2, "labeled": False, "glue_split": "test"},
    },
}


def make_spec(tmp_path: Path) -> RunSpec:
    data = tmp_path / "data" / "RTE"
    data.mkdir(parents=True)
    (data / "meta.json").write_text(json.dumps(META))
    (data / "valid.gold").write_text("entailment\nnot_entailment\n")
    return RunSpec(
        task="RTE",
        config=Config(16, 1e-3, 1, 0.01),
        seed=100,
        data_dir=data,
        checkpoint=tmp_path / "model.pt",
        arch="macaron_bert_tiny",
        num_classes=2,
        regression=False,
        train_examples=4,
        run_dir=tmp_path / "runs" / "RTE" / "seed100",
    )


@pytest.fixture
def fake_training(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """fairseq-train writes checkpoint_last.pt into its --save-dir; predictions are fixed."""
    calls: list[list[str]] = []

    def train(command: list[str], **_: Any) -> Completed:
        calls.append(command)
        save_dir = Path(command[command.index("--save-dir") + 1])
        (save_dir / "checkpoint_last.pt").write_text(f"trained {len(calls)}")
        return Completed([str(c) for c in command], 0)

    monkeypatch.setattr(run_one.processes, "run", train)
    monkeypatch.setattr(
        run_one,
        "predict_splits",
        lambda checkpoint, data_dir, meta: {
            "valid": ["entailment", "entailment"],
            "test": ["not_entailment", "entailment"],
        },
    )
    return calls


def test_a_run_is_finished_by_its_result_marker(tmp_path: Path, fake_training: list[list[str]]) -> None:
    spec = make_spec(tmp_path)
    assert not scheduler.is_finished(spec)
    record = run_one.run(spec)
    assert record["status"] == "ok" and record["metrics"] == {"accuracy": 50.0} and len(fake_training) == 1
    assert (spec.run_dir / "predictions" / "test.txt").read_text() == "not_entailment\nentailment\n"
    markers = sorted(p.name for p in (spec.run_dir / ".stages").iterdir())
    assert markers == ["result.json", "train.json", "train.started.json"]
    assert not (spec.run_dir / "checkpoint").exists()  # deleted after the run (--keep-checkpoint keeps it)
    assert scheduler.is_finished(spec) and run_one.is_finished(spec)
    (spec.run_dir / "run.json").write_text(json.dumps({"status": "failed"}))  # e.g. the scheduler's record
    assert not scheduler.is_finished(spec)  # the marker no longer matches its output


def test_a_legacy_run_directory_resumes(tmp_path: Path, fake_training: list[list[str]]) -> None:
    spec = make_spec(tmp_path)
    save_dir = spec.run_dir / "checkpoint"
    save_dir.mkdir(parents=True)
    # 1. an older version's finished run: run.json says ok, no markers
    (spec.run_dir / "run.json").write_text(json.dumps({"status": "ok", "task": "RTE"}))
    assert scheduler.is_finished(spec)
    # 2. its finished training (checkpoint/trained) is not redone
    (spec.run_dir / "run.json").unlink()
    (save_dir / "checkpoint_last.pt").write_text("old")
    (save_dir / run_one.LEGACY_TRAINED).touch()
    assert run_one.run(spec, keep_checkpoint=True)["status"] == "ok" and fake_training == []
    assert (save_dir / "checkpoint_last.pt").read_text() == "old"


def test_a_legacy_unfinished_training_resumes_in_its_workspace(
    tmp_path: Path, fake_training: list[list[str]]
) -> None:
    spec = make_spec(tmp_path)
    save_dir = spec.run_dir / "checkpoint"
    save_dir.mkdir(parents=True)
    (save_dir / "checkpoint_last.pt").write_text("half")  # preempted under an older version: no start record
    run_one.run(spec, keep_checkpoint=True)
    assert len(fake_training) == 1 and (save_dir / "checkpoint_last.pt").read_text() == "trained 1"
    assert not list(save_dir.parent.glob("checkpoint.before-*"))  # resumed in place, not moved aside
    # the same run again: both stages are up to date, nothing trains
    assert run_one.run(spec, keep_checkpoint=True)["status"] == "ok" and len(fake_training) == 1
