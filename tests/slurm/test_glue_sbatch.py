"""``slurm/glue.sbatch`` on the real single-host Slurm cluster: the preparation job, the grid as a job array
(one cell per array task, throttled with ``%``) after it, and the collection job after the array
(``--dependency=afterok``) writing the results and the submission; the warning signal reaches each step once:
the preparation and the collection (no job step: the batch shell requeues them, their stages resume) and one
array task (forwarded to its run, which saves and resumes from its checkpoint). A chain submitted by
``python -m macaron_slurm.submit glue`` whose array task fails ends: the collection job is cancelled
(``--kill-on-invalid-dep=yes``) instead of waiting forever. The pre-trained model is the export of the tiny
``slurm/pretrain.sbatch`` run (``conftest.uninterrupted``); the GLUE data is ``--small``'s generated one."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from helpers import REPO
from slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm
SCRIPT = REPO / "slurm" / "glue.sbatch"
TASKS = ["RTE", "STS-B", "MRPC"]
GRID = ["--small", "--tasks", ",".join(TASKS), "--seeds", "1", "--", "--log-interval", "1"]


def sbatch(cluster: SlurmCluster, env: dict[str, str], *args: str) -> int:
    env = {"REPO": str(REPO), "PYTHON": sys.executable, "PYTHONWARNINGS": "ignore", **env}
    proc = cluster.run(
        "sbatch",
        "--parsable",
        "--ntasks=1",
        "--cpus-per-task=1",
        "--time=20",
        *args,
        env=cluster.env(env),
        cwd=REPO,
    )
    return int(proc.stdout.split(";")[0])


def train_records(log: Path) -> int:
    text = log.read_text() if log.exists() else ""
    return text.count("| train_inner |")


def signal_when_started(cluster: SlurmCluster, job: int | str, output: Path, timeout: float = 600) -> None:
    """SIGHUP to the batch shell of ``job`` once its script has started (what ``--signal=B:HUP@300`` does)."""
    deadline = time.monotonic() + timeout
    while "restart 0, step" not in (output.read_text() if output.exists() else ""):
        assert time.monotonic() < deadline, f"{output}: the job did not start"
        time.sleep(0.2)
    cluster.run("scancel", "--signal=HUP", "--batch", str(job))


def test_prepare_array_and_collect_each_preempted_once(
    slurm_cluster: SlurmCluster, uninterrupted: Path, tmp_path: Path
) -> None:
    env = {"WORKDIR": str(tmp_path / "work"), "CHECKPOINT": str(uninterrupted / "model.pt")}
    argv = [
        sys.executable,
        "-m",
        "macaron_pipelines.glue",
        "--workdir",
        env["WORKDIR"],
        "--step",
        "count",
        *GRID,
    ]
    count = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=True)
    cells = int(count.stdout)
    assert cells == len(TASKS)
    no_gpu = "--gpus-per-node=0"
    prepare = sbatch(
        slurm_cluster, env, no_gpu, f"--output={tmp_path}/prepare.out", str(SCRIPT), "prepare", *GRID
    )
    array = sbatch(
        slurm_cluster,
        env,
        no_gpu,
        f"--dependency=afterok:{prepare}",
        f"--array=0-{cells - 1}%2",
        f"--output={tmp_path}/cell-%a.out",
        str(SCRIPT),
        "cell",
        *GRID,
    )
    collect = sbatch(
        slurm_cluster,
        env,
        no_gpu,
        f"--dependency=afterok:{array}",
        f"--output={tmp_path}/collect.out",
        str(SCRIPT),
        "collect",
        *GRID,
    )

    signal_when_started(slurm_cluster, prepare, tmp_path / "prepare.out")
    # preempt cell 0 once its run has trained a few updates (what --signal=B:HUP@300 does at the deadline)
    deadline = time.monotonic() + 600
    while not (logs := list((tmp_path / "work" / "glue" / "runs").glob(f"*/{TASKS[0]}/*/run.log"))) or (
        train_records(logs[0]) < 3
    ):
        assert time.monotonic() < deadline, "cell 0 did not start training"
        time.sleep(0.2)
    slurm_cluster.run("scancel", "--signal=HUP", "--batch", f"{array}_0")
    try:
        signal_when_started(slurm_cluster, collect, tmp_path / "collect.out", timeout=900)
        slurm_cluster.wait_for(collect, ("COMPLETED",), timeout=900)
    finally:
        outputs = {p.name: p.read_text() for p in sorted(tmp_path.glob("*.out"))}
    everything = "\n".join(f"--- {name}\n{text[-2000:]}" for name, text in outputs.items())
    for step in ("prepare", "collect"):  # requeued by the batch shell, which did not die on the signal
        text = outputs[f"{step}.out"]
        assert "SIGHUP: no job step runs: requeueing the job" in text, everything
        assert f"restart 1, step {step}" in text and f"done: step {step}" in text, everything
    assert f"grid: {cells} runs" in outputs["prepare.out"], everything
    cell0 = outputs["cell-0.out"]
    assert "SIGHUP: forwarding it to the training tasks" in cell0 and "restart 1" in cell0, everything
    run_log = logs[0].read_text()
    saved = int(run_log.split("SIGHUP received: checkpoint saved at update ")[1].split()[0])
    assert f"checkpoint_last.pt at update {saved} " in run_log.split("resumed from ")[1]

    results = json.loads((tmp_path / "work" / "glue" / "results.json").read_text())
    assert sorted(results["tasks"]) == sorted(TASKS) and results["failed_runs"] == []
    assert "| Task | Dev metrics (mean ± std) |" in outputs["collect.out"]
    with zipfile.ZipFile(tmp_path / "work" / "glue" / "submission-partial.zip") as archive:  # 4 tasks run
        assert {"RTE.tsv", "STS-B.tsv", "MRPC.tsv", "WNLI.tsv"} <= set(archive.namelist())


def test_the_cell_step_needs_an_array(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(SLURM_JOB_ID="7", WORKDIR=str(tmp_path))
    proc = subprocess.run(["bash", str(SCRIPT), "cell"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "the cell step runs as a job array" in proc.stderr
    proc = subprocess.run(["bash", str(SCRIPT), "train"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "first argument: prepare, cell or collect (got 'train')" in proc.stderr


def test_a_chain_whose_array_task_fails_ends(
    slurm_cluster: SlurmCluster, uninterrupted: Path, tmp_path: Path
) -> None:
    """``python -m macaron_slurm.submit glue`` for real: one cell whose fairseq-train refuses its flags fails
    (twice); the collection job is cancelled by Slurm (``--kill-on-invalid-dep=yes``) rather than left
    pending."""
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {
        "WORKDIR": str(tmp_path / "work"),
        "CHECKPOINT": str(uninterrupted / "model.pt"),
        "REPO": str(REPO),
        "PYTHON": sys.executable,
        "PYTHONWARNINGS": "ignore",
    }
    grid = [
        "--small",
        "--tasks",
        "RTE",
        "--seeds",
        "1",
        "--batch-sizes",
        "8",
        "--lrs",
        "1e-3",
        "--epochs",
        "1",
        "--",
        "--no-such-fairseq-flag",
    ]
    command = [
        sys.executable,
        "-m",
        "macaron_slurm.submit",
        "glue",
        "--gpus-per-node",
        "0",
        "--cpus-per-task",
        "1",
        "--time",
        "20",
        *(f"--env={k}={v}" for k, v in env.items()),
        "--",
        *grid,
    ]
    submit_env = slurm_cluster.env({"PYTHONPATH": str(REPO)})
    proc = slurm_cluster.run(*command, cwd=logs, env=submit_env, timeout=300)
    ids = dict(line.split()[1:4:2] for line in proc.stdout.splitlines() if line.startswith("submitted "))
    assert set(ids) == {"prep", "array", "collect"}, proc.stdout
    assert "--kill-on-invalid-dep=yes" in proc.stdout
    slurm_cluster.wait_for(int(ids["prep"]), ("COMPLETED",), timeout=600)
    status = slurm_cluster.wait_for(int(ids["collect"]), ("CANCELLED",), timeout=600)
    assert status.source == "jobcomp" or status.reason == "DependencyNeverSatisfied", status
    cell = next(p for p in logs.glob("macaron-glue-*.out") if ", step cell" in p.read_text())
    assert "failed twice" in cell.read_text(), cell.read_text()[-3000:]
