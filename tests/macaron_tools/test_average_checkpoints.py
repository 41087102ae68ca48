"""Checkpoint averaging: exact means, newest non-model state, clear errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch

from macaron_tools.average_checkpoints import AveragingError, average, last_checkpoints, main


def fake_checkpoint(path: Path, value: float, epoch: int) -> None:
    state = {
        "model": {"w": torch.full((2, 3), value), "step": torch.tensor([epoch])},
        "cfg": {"model": argparse.Namespace(arch="macaron_base")},
        "extra_state": {"epoch": epoch},
    }
    torch.save(state, path)


def test_average_of_the_last_epoch_checkpoints(tmp_path: Path) -> None:
    for epoch, value in enumerate([100.0, 1.0, 2.0, 6.0], start=1):
        fake_checkpoint(tmp_path / f"checkpoint{epoch}.pt", value, epoch)
    fake_checkpoint(tmp_path / "checkpoint_last.pt", 6.0, 4)
    paths = last_checkpoints(tmp_path, 3, by_update=False)
    assert [p.name for p in paths] == ["checkpoint2.pt", "checkpoint3.pt", "checkpoint4.pt"]
    main(["--inputs", str(tmp_path), "--num-epoch-checkpoints", "3", "--out", str(tmp_path / "avg.pt")])
    avg = torch.load(tmp_path / "avg.pt", weights_only=True)
    assert torch.equal(avg["model"]["w"], torch.full((2, 3), 3.0))
    assert avg["model"]["step"].tolist() == [4] and avg["extra_state"]["epoch"] == 4
    assert not list(tmp_path.glob(".avg.pt.tmp-*"))  # written under a temporary name, then renamed


def test_numeric_epoch_order_not_lexicographic(tmp_path: Path) -> None:
    for epoch in (2, 9, 10, 11):
        fake_checkpoint(tmp_path / f"checkpoint{epoch}.pt", float(epoch), epoch)
    names = [p.name for p in last_checkpoints(tmp_path, 2, by_update=False)]
    assert names == ["checkpoint10.pt", "checkpoint11.pt"]


def test_too_few_checkpoints_and_mismatched_parameters_are_errors(tmp_path: Path) -> None:
    fake_checkpoint(tmp_path / "checkpoint1.pt", 1.0, 1)
    with pytest.raises(AveragingError, match=r"last 2 checkpoint<epoch>\.pt files but found 1"):
        last_checkpoints(tmp_path, 2, by_update=False)
    other = tmp_path / "other.pt"
    torch.save({"model": {"v": torch.zeros(1)}, "cfg": {}}, other)
    with pytest.raises(AveragingError, match="different parameters"):
        average([tmp_path / "checkpoint1.pt", other])


def test_a_malicious_checkpoint_is_refused_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    """The tool reads through the base layer's allow-list (no plugin, no fairseq needed)."""
    from helpers import write_malicious_checkpoint

    from macaron_workflow.checkpoint_safety import UnsafeCheckpointError
    from macaron_workflow.errors import UserError

    fake_checkpoint(tmp_path / "checkpoint1.pt", 1.0, 1)
    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "checkpoint2.pt", marker)
    out = tmp_path / "avg.pt"
    with pytest.raises(UnsafeCheckpointError) as error:
        main(["--inputs", str(tmp_path), "--num-epoch-checkpoints", "2", "--out", str(out)])
    message = str(error.value)
    assert isinstance(error.value, UserError) and "\n" not in message
    assert message.startswith(f"refusing to load checkpoint {evil}: it pickles posix.system")
    assert not marker.exists() and not out.exists()


def test_the_old_spelling_output_still_works_with_a_one_line_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for epoch in (1, 2):
        fake_checkpoint(tmp_path / f"checkpoint{epoch}.pt", float(epoch), epoch)
    main(["--inputs", str(tmp_path), "--num-epoch-checkpoints", "2", "--output", str(tmp_path / "avg.pt")])
    averaged = torch.load(tmp_path / "avg.pt", weights_only=True)["model"]["w"]
    assert torch.equal(averaged, torch.full((2, 3), 1.5))
    notes = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(notes) == 1 and "--output is deprecated, use --out" in notes[0], notes


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """A real full file system (a small tmpfs): torch.save raises RuntimeError there, which was a traceback
    (exit 1); the console script, in a process of its own, from outside the checkout."""
    import os
    import subprocess
    import sys

    from full_disk import fill, leftovers, other_stderr_lines, small_filesystem
    from helpers import REPO

    for epoch in (1, 2):
        big = {"w": torch.full((64, 256), float(epoch)), "step": torch.tensor([epoch])}
        torch.save({"model": big, "cfg": {}, "extra_state": {"epoch": epoch}}, tmp_path / f"c{epoch}.pt")
    with small_filesystem(tmp_path / "disk", "1m") as disk:
        fill(disk, 16384)
        before = set(leftovers(disk))
        out = disk / "new" / "avg.pt"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "macaron_tools.average_checkpoints",
                "--inputs",
                str(tmp_path / "c1.pt"),
                str(tmp_path / "c2.pt"),
                "--out",
                str(out),
            ],
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 2, proc.stderr[-3000:]
        (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
        prog = "python -m macaron_tools.average_checkpoints"
        assert line.startswith(f"{prog}: error: ") and f"cannot write {out}: No space" in line
        assert other_stderr_lines(proc.stderr, prog) == []
        assert leftovers(disk, before) == []


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_both_torch_force_variables_are_named_not_the_file(tmp_path: Path) -> None:
    """#41: with TORCH_FORCE_WEIGHTS_ONLY_LOAD and TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD both set torch refuses
    every load; the checkpoint was called truncated. Now one line names the two variables (exit 2), through
    the tool's own load and through the restricted load code we do not own goes through."""
    import os
    import subprocess
    import sys

    from helpers import REPO

    from macaron_workflow.checkpoint_safety import restricted_loads
    from macaron_workflow.errors import UserError

    for epoch in (1, 2):
        fake_checkpoint(tmp_path / f"c{epoch}.pt", float(epoch), epoch)
    both = {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "macaron_tools.average_checkpoints",
            "--inputs",
            str(tmp_path / "c1.pt"),
            str(tmp_path / "c2.pt"),
            "--out",
            str(tmp_path / "avg.pt"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), **both},
        capture_output=True,
        text=True,
        timeout=300,
    )
    (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and "are both set" in line and "truncated" not in line, proc.stderr
    assert not (tmp_path / "avg.pt").exists()
    for name, value in both.items():
        os.environ[name] = value
    try:
        with restricted_loads(), pytest.raises(UserError, match="are both set") as caught:
            torch.load(tmp_path / "c1.pt")
        assert "truncated" not in str(caught.value)
    finally:
        for name in both:
            del os.environ[name]
