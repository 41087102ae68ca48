"""Issue #41, pre-training: the run never deletes or writes into its input, and a full disk is one line.

Real processes (``python -m macaron_fairseq.pretrain``, one rank, DeepSpeed ZeRO-1 on the CPU) on a tiny
data-bin hashed before anything runs:

* ``macaron-pretrain SD/step7 --save-dir SD`` was accepted, called the data-bin an incomplete checkpoint and
  pruned it: now refused (one line, exit 2), and so is every other overlap of an output (``--save-dir``,
  ``--pair-cache``) with an input (the data-bin, the DeepSpeed config, ``--init-from``);
* a normal run writes nothing into its data-bin (the pair cache goes into ``--save-dir``) and its pruning
  leaves a ``stepN`` directory that is not one of its checkpoints alone;
* ``--save-dir FILE`` is one line before anything is built;
* the save directory on a full file system (a small tmpfs): one line, exit 2, no ``stepN`` and no
  staging directory left, nothing truncated.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from bert_data_bin import write_data_bin
from full_disk import TRAINING_LOG, fill, leftovers, other_stderr_lines, small_filesystem
from helpers import REPO, command_here

pytestmark = pytest.mark.slow
TINY_CONFIG = REPO / "configs" / "deepspeed" / "tiny_cpu.json"
PROG = "python -m macaron_fairseq.pretrain"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pretrain(data: Path, save_dir: Path, *extra: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "macaron_fairseq.pretrain",
        str(data),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(TINY_CONFIG),
        "--save-dir",
        str(save_dir),
        "--seed",
        "1",
        "--no-validation",
        *extra,
    ]
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
        MASTER_PORT=str(free_port()),
    )
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` → the sha256 of a file, ``"dir"`` for a directory (empty ones too)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


def assert_one_line(proc: subprocess.CompletedProcess, *words: str, trained: bool = False) -> str:
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith(f"{PROG}: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    allowed = TRAINING_LOG if trained else ()
    assert other_stderr_lines(proc.stderr, PROG, allowed) == [], proc.stderr[-3000:]
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


def test_a_save_dir_holding_the_data_bin_is_refused_and_the_data_bin_kept(tmp_path: Path) -> None:
    save_dir = tmp_path / "SD"
    data = save_dir / "step7"  # a data-bin named like a checkpoint, inside the save directory
    write_data_bin(data, documents=12, sentences=6)
    before = tree(tmp_path)
    proc = pretrain(data, save_dir, "--max-update", "1", cwd=tmp_path)
    assert_one_line(proc, f"--save-dir {save_dir}", f"DATA {data}", "contains")
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    "where",
    [
        "save-dir is the data",
        "save-dir inside the data",
        "pair-cache in the data",
        "save-dir holds the config",
    ],
)
def test_every_output_apart_from_every_input(tmp_path: Path, where: str) -> None:
    data = tmp_path / "data-bin"
    write_data_bin(data, documents=12, sentences=6)
    config = tmp_path / "run" / "ds.json"
    config.parent.mkdir()
    config.write_bytes(TINY_CONFIG.read_bytes())
    save_dir, extra = {
        "save-dir is the data": (data, []),
        "save-dir inside the data": (data / "run", []),
        "pair-cache in the data": (tmp_path / "out", ["--pair-cache", str(data)]),
        "save-dir holds the config": (tmp_path / "run", []),
    }[where]
    before = tree(tmp_path)
    command_config = ["--deepspeed-config", str(config)] if "config" in where else []
    proc = pretrain(data, save_dir, "--max-update", "1", *extra, *command_config, cwd=tmp_path)
    assert_one_line(proc, "an input, which is only read")
    assert tree(tmp_path) == before


def test_a_run_writes_nothing_into_its_data_bin_and_prunes_only_its_own_checkpoints(tmp_path: Path) -> None:
    data = tmp_path / "data-bin"
    write_data_bin(data, documents=12, sentences=6)
    data_before = tree(data)
    save_dir = tmp_path / "run"
    (save_dir / "step0").mkdir(parents=True)
    (save_dir / "step0" / "notes.txt").write_text("the user's, not a checkpoint\n")
    proc = pretrain(
        data,
        save_dir,
        "--max-update",
        "2",
        "--save-interval-updates",
        "1",
        "--keep-last-checkpoints",
        "1",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert tree(data) == data_before  # no pair cache, nothing else
    assert (save_dir / "step0" / "notes.txt").read_text() == "the user's, not a checkpoint\n"
    assert sorted(p.name for p in save_dir.glob("step*")) == ["step0", "step2"]
    assert sorted(p.suffix for p in save_dir.glob("train.pairs-*")) == [".json", ".npy"]
    assert not list(save_dir.glob(".*tmp*"))


def test_an_existing_file_as_save_dir_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data-bin"
    write_data_bin(data, documents=12, sentences=6)
    save_dir = tmp_path / "run"
    save_dir.write_text("a file\n")
    proc = pretrain(data, save_dir, "--max-update", "1", cwd=tmp_path)
    assert_one_line(proc, f"--save-dir {save_dir}", "not a directory")
    assert save_dir.read_text() == "a file\n"


def test_a_full_disk_while_saving_is_one_line_and_leaves_no_checkpoint(tmp_path: Path) -> None:
    data = tmp_path / "data-bin"
    write_data_bin(data, documents=12, sentences=6)
    with small_filesystem(tmp_path / "disk", "4m") as disk:
        save_dir = disk / "run"
        save_dir.mkdir()
        fill(disk, 200_000)  # room for the log and the pair cache, not for the model and optimizer states
        before = set(leftovers(disk))
        proc = pretrain(data, save_dir, "--max-update", "1", "--pair-cache", "off", cwd=tmp_path)
        line = assert_one_line(proc, "No space left on device", "step 1", trained=True)
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        left = [p for p in leftovers(disk, before) if "step" in p or p.endswith(".pt")]
        assert left == [], (left, line)


# ---------------------------------------------------------------------------------------- the export
EXPORT = "python -m macaron_fairseq.pretrain.export"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run saved at step 1."""
    root = tmp_path_factory.mktemp("export")
    write_data_bin(root / "data-bin", documents=12, sentences=6)
    proc = pretrain(root / "data-bin", root / "run", "--max-update", "1", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "run"


def export(save_dir: Path, out: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    command = [sys.executable, "-m", "macaron_fairseq.pretrain.export", str(save_dir), "--out", str(out)]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", ["train_log.jsonl", "zero_to_fp32.py", "run.json", "step1", "step1/x.pt"])
def test_the_export_never_writes_over_the_runs_own_files(
    run_dir: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out RUN/train_log.jsonl`` replaced the run's log with a zip (so did ``RUN/zero_to_fp32.py``). The
    command runs in this process (its own interpreter: the next test)."""
    from macaron_fairseq.pretrain.export import cli

    assert (run_dir / name).exists() or name == "step1/x.pt", sorted(p.name for p in run_dir.iterdir())
    before = tree(run_dir)
    argv = [str(run_dir), "--out", str(run_dir / name)]
    proc = command_here(cli, "export.py", *argv, capsys=capsys, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
    assert line.startswith(f"{EXPORT}: error: --out {run_dir / name}"), line
    assert "an input" in line or "is a directory" in line, line
    assert tree(run_dir) == before


def test_the_export_may_write_a_new_name_in_the_run_and_replace_its_own_export(
    run_dir: Path, tmp_path: Path
) -> None:
    out = run_dir / "model.pt"  # slurm/pretrain.sbatch's --out "$SAVE_DIR/model.pt"
    try:
        for _ in range(2):  # a rerun replaces the export it wrote
            proc = export(run_dir, out, tmp_path)
            assert proc.returncode == 0, proc.stderr[-3000:]
        (tmp_path / "other.pt").write_bytes(out.read_bytes())
    finally:
        out.unlink(missing_ok=True)


def test_a_full_disk_while_exporting_is_one_line_and_leaves_nothing(run_dir: Path, tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "disk", "1m") as disk:
        fill(disk, 8192)
        before = set(leftovers(disk))
        out = disk / "new" / "model.pt"
        proc = export(run_dir, out, tmp_path)
        assert proc.returncode == 2, proc.stderr[-3000:]
        (line,) = [line for line in proc.stderr.splitlines() if line.startswith(f"{EXPORT}: error: ")]
        assert f"cannot write {out}: No space left on device (ENOSPC)" in line
        assert other_stderr_lines(proc.stderr, EXPORT, TRAINING_LOG) == [], proc.stderr
        assert leftovers(disk, before) == []
