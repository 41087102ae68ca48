"""``slurm/glue.sbatch`` on the real single-host Slurm cluster: the preparation job, the grid as a job array
(one cell per array task, throttled with ``%``) after it, and the collection job after the array
(``--dependency=afterok``) writing the results and the submission; one array task preempted through the signal
path resumes its run from the saved checkpoint. The pre-trained model is the export of the tiny
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
    proc = cluster.run("sbatch", "--parsable", "--ntasks=1", "--cpus-per-task=1", "--time=20", *args,
                       env=cluster.env(env), cwd=REPO)  # fmt: skip
    return int(proc.stdout.split(";")[0])


def train_records(log: Path) -> int:
    text = log.read_text() if log.exists() else ""
    return text.count("| train_inner |")


def test_prepare_array_and_collect_with_a_preempted_cell(
    slurm_cluster: SlurmCluster, uninterrupted: Path, tmp_path: Path
) -> None:
    env = {"WORKDIR": str(tmp_path / "work"), "CHECKPOINT": str(uninterrupted / "model.pt")}
    argv = [sys.executable, "-m", "pipelines.glue", "--workdir", env["WORKDIR"], "--step", "count", *GRID]
    count = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=True)
    cells = int(count.stdout)
    assert cells == len(TASKS)
    no_gpu = "--gpus-per-node=0"
    prepare = sbatch(
        slurm_cluster, env, no_gpu, f"--output={tmp_path}/prepare.out", str(SCRIPT), "prepare", *GRID
    )
    array = sbatch(slurm_cluster, env, no_gpu, f"--dependency=afterok:{prepare}", f"--array=0-{cells - 1}%2",
                   f"--output={tmp_path}/cell-%a.out", str(SCRIPT), "cell", *GRID)  # fmt: skip
    collect = sbatch(slurm_cluster, env, no_gpu, f"--dependency=afterok:{array}",
                     f"--output={tmp_path}/collect.out", str(SCRIPT), "collect", *GRID)  # fmt: skip

    # preempt cell 0 once its run has trained a few updates (what --signal=B:HUP@300 does at the deadline)
    deadline = time.monotonic() + 600
    while not (logs := list((tmp_path / "work" / "glue" / "runs").glob(f"*/{TASKS[0]}/*/run.log"))) or (
        train_records(logs[0]) < 3
    ):
        assert time.monotonic() < deadline, "cell 0 did not start training"
        time.sleep(0.2)
    slurm_cluster.run("scancel", "--signal=HUP", "--batch", f"{array}_0")
    try:
        slurm_cluster.wait_for(collect, ("COMPLETED",), timeout=900)
    finally:
        outputs = {p.name: p.read_text() for p in sorted(tmp_path.glob("*.out"))}
    everything = "\n".join(f"--- {name}\n{text[-2000:]}" for name, text in outputs.items())
    assert f"grid: {cells} runs" in outputs["prepare.out"], everything
    cell0 = outputs["cell-0.out"]
    assert "SIGHUP: forwarding it to the training tasks" in cell0 and "restart 1" in cell0, everything
    run_log = logs[0].read_text()
    saved = int(run_log.split("SIGHUP received: checkpoint saved at update ")[1].split()[0])
    assert f"checkpoint_last.pt at update {saved} " in run_log.split("resumed from ")[1]

    results = json.loads((tmp_path / "work" / "glue" / "results.json").read_text())
    assert sorted(results["tasks"]) == sorted(TASKS) and results["failed_runs"] == []
    assert "| Task | Dev metrics (mean ± std) |" in outputs["collect.out"]
    with zipfile.ZipFile(tmp_path / "work" / "glue" / "submission.zip") as archive:
        assert {"RTE.tsv", "STS-B.tsv", "MRPC.tsv", "WNLI.tsv"} <= set(archive.namelist())


def test_the_cell_step_needs_an_array(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(SLURM_JOB_ID="7", WORKDIR=str(tmp_path))
    proc = subprocess.run(["bash", str(SCRIPT), "cell"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "the cell step runs as a job array" in proc.stderr
    proc = subprocess.run(["bash", str(SCRIPT), "train"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "first argument: prepare, cell or collect (got 'train')" in proc.stderr
