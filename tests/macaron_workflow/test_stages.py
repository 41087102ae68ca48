"""Resumable stages (macaron_workflow.stages) and atomic outputs (macaron_workflow.atomic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from macaron_workflow.atomic import atomic_output, temporary_path
from macaron_workflow.stages import StageRunner


def test_stage_runner_skips_redoes_and_never_trusts_a_crashed_stage(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path / ".stages")
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("hello\n")
    calls = []

    def build(temps: dict[Path, Path]) -> dict:
        calls.append(1)
        temps[out].write_text(source.read_text().upper())
        return {"lines": 1}

    runner.run("upper", [source], [out], {"p": 1}, build)
    runner.run("upper", [source], [out], {"p": 1}, build)
    assert len(calls) == 1 and out.read_text() == "HELLO\n"
    runner.run("upper", [source], [out], {"p": 2}, build)  # new parameters
    assert len(calls) == 2
    StageRunner(tmp_path / ".stages", force=True).run("upper", [source], [out], {"p": 2}, build)
    assert len(calls) == 3

    def crash(temps: dict[Path, Path]) -> dict:
        temps[out].write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        StageRunner(tmp_path / ".stages", force=True).run("upper", [source], [out], {"p": 2}, crash)
    assert not temporary_path(out).exists()
    assert not (tmp_path / ".stages" / "upper.json").exists()  # the old output is no longer trusted
    runner.run("upper", [source], [out], {"p": 2}, build)
    assert len(calls) == 4 and out.read_text() == "HELLO\n"


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    stale = tmp_path / ".out.txt.tmp-999999999"
    stale.write_text("left by kill -9")
    StageRunner(tmp_path / ".stages").run("s", [], [out], {}, lambda t: t[out].write_text("x") and {})
    assert not stale.exists() and out.read_text() == "x"


def test_atomic_output_renames_on_success_and_leaves_nothing_on_failure(tmp_path: Path) -> None:
    final = tmp_path / "sub" / "result.txt"
    with atomic_output(final) as tmp:
        tmp.write_text("new")
        assert not final.exists()  # invisible until the block succeeded
    assert final.read_text() == "new"
    with pytest.raises(RuntimeError), atomic_output(final) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash while writing")
    assert final.read_text() == "new" and list((tmp_path / "sub").iterdir()) == [final]
    with pytest.raises(FileNotFoundError, match="nothing was written"), atomic_output(tmp_path / "none.txt"):
        pass
    assert not (tmp_path / "none.txt").exists()


def _training_like(workspace: Path, updates: int, log: list[str]) -> dict:
    """Resumes from the 'checkpoint' in its workspace, like fairseq-train from checkpoint_last.pt."""
    checkpoint = workspace / "last.txt"
    start = int(checkpoint.read_text()) if checkpoint.exists() else 0
    log.append(f"from {start}")
    checkpoint.write_text(str(updates))
    return {"updates": updates}


def test_in_place_stage_resumes_skips_and_moves_a_changed_workspace_aside(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path / ".stages")
    data, workspace = tmp_path / "data.txt", tmp_path / "checkpoints"
    data.write_text("corpus\n")
    log: list[str] = []

    def run(updates: int, arch: str) -> dict:
        return runner.run_in_place(
            "train",
            [data],
            [workspace / "last.txt"],
            {"arch": arch, "updates": updates},
            lambda: _training_like(workspace, updates, log),
            workspace,
            resume_params={"arch": arch},
        )

    assert run(10, "a")["updates"] == 10 and log == ["from 0"]
    run(10, "a")  # complete: skipped
    assert log == ["from 0"]
    run(20, "a")  # more updates, same resume settings: resumes in the workspace
    assert log == ["from 0", "from 10"]
    run(20, "b")  # another architecture: the old workspace is kept aside, training starts afresh
    assert log == ["from 0", "from 10", "from 0"]
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("checkpoints.before-")]
    assert len(aside) == 1 and (aside[0] / "last.txt").read_text() == "20"
    data.write_text("other corpus\n")  # changed input: not complete, and not resumable either
    run(20, "b")
    assert log[-1] == "from 0"


def test_in_place_stage_that_fails_is_not_marked_complete(tmp_path: Path) -> None:
    runner = StageRunner(tmp_path / ".stages")
    workspace = tmp_path / "ws"

    def fail() -> dict:
        (workspace / "partial").write_text("x")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        runner.run_in_place("train", [], [workspace / "done"], {}, fail, workspace)
    assert not runner.marker_path("train").exists()

    def finish() -> dict:
        assert (workspace / "partial").exists()  # resumed in place, nothing moved aside
        (workspace / "done").write_text("ok")
        return {}

    runner.run_in_place("train", [], [workspace / "done"], {}, finish, workspace)
    assert runner.marker_path("train").exists()


def test_a_workspace_without_start_record_is_adopted_and_resumed(tmp_path: Path) -> None:
    """adopt_workspace: a workspace an older version started (no start record) resumes with the given
    settings; another non-empty workspace with a start record is left to run_in_place's own rule."""
    runner = StageRunner(tmp_path / ".stages", log=lambda message: None)
    workspace = tmp_path / "ws"
    assert not runner.adopt_workspace("train", [], {"lr": 1}, workspace)  # nothing there
    workspace.mkdir()
    (workspace / "last.txt").write_text("5")
    assert runner.adopt_workspace("train", [], {"lr": 1}, workspace)
    assert not runner.adopt_workspace("train", [], {"lr": 2}, workspace)  # it has a start record now
    log: list[str] = []
    runner.run_in_place(
        "train",
        [],
        [workspace / "last.txt"],
        {"lr": 1, "updates": 8},
        lambda: _training_like(workspace, 8, log),
        workspace,
        resume_params={"lr": 1},
    )
    assert log == ["from 5"] and not list(tmp_path.glob("ws.before-*"))


def test_records_written_with_the_former_params_are_taken_over(tmp_path: Path) -> None:
    """former_params: a run finished (or started) under the keys an older version wrote is skipped (or
    resumed) under the new keys, its records rewritten; a run under other settings still is not."""
    runner = StageRunner(tmp_path / ".stages", log=lambda message: None)
    data, workspace = tmp_path / "data.txt", tmp_path / "checkpoints"
    data.write_text("corpus\n")
    log: list[str] = []

    def run(updates: int, params: dict, resume: dict, former: tuple[dict, dict] | None = None) -> None:
        runner.run_in_place(
            "train",
            [data],
            [workspace / "last.txt"],
            {**params, "updates": updates},
            lambda: _training_like(workspace, updates, log),
            workspace,
            resume_params=resume,
            former_params=None if former is None else ({**former[0], "updates": updates}, former[1]),
        )

    old, new = {"command": ["python3", "-m", "x"]}, {"command": ["-m", "x"]}
    run(10, old, old)  # an older version's finished run
    run(10, new, new, former=(old, old))
    assert log == ["from 0"]  # skipped
    run(10, new, new)  # the marker holds the new key now
    assert log == ["from 0"]
    run(20, new, new, former=(old, old))  # more updates: resumed in place, nothing moved aside
    assert log == ["from 0", "from 10"] and not list(tmp_path.glob("checkpoints.before-*"))
    other = {"command": ["python", "-m", "x"]}  # the former key of another interpreter: not this run's
    run(20, {"command": ["-m", "y"]}, {"command": ["-m", "y"]}, former=(other, other))
    assert log[-1] == "from 0" and len(list(tmp_path.glob("checkpoints.before-*"))) == 1
