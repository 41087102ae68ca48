"""``slurm/translate.sbatch`` on the real single-host Slurm cluster (CPU, gloo, 2 tasks): fairseq-train on a
tiny data-bin, preempted through the signal path (SIGHUP to the batch shell, as ``--signal=B:HUP@...``
sends it: forwarded to both ranks, checkpoint_last.pt saved, the job requeued, the restart resumes from that
update and finishes); the IWSLT14 recipe of ``macaron_pipelines.translation`` in small mode to its BLEU; a
requeued job whose checkpoint directory is gone starts fresh and says so."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, TINY
from slurm_cluster import SlurmCluster

from macaron_tools.train_progress import parse_record

pytestmark = pytest.mark.slurm
SCRIPT = REPO / "slurm" / "translate.sbatch"
UPDATES = 80
CPU_DISTRIBUTED = ["--cpu", "--distributed-backend", "gloo", "--ddp-backend", "legacy_ddp"]


def submit(
    cluster: SlurmCluster,
    output: Path,
    env: dict[str, str],
    *args: str,
    cwd: Path = REPO,
    checkout: bool = True,
) -> int:
    """sbatch the script from ``cwd``; ``checkout``: with ``REPO`` set to it (else the installed package)."""
    env = {"PYTHON": sys.executable, "PYTHONWARNINGS": "ignore", **env}
    if checkout:
        env["REPO"] = str(REPO)
    proc = cluster.run(
        "sbatch",
        "--parsable",
        "--ntasks-per-node=2",
        "--gpus-per-node=0",
        "--cpus-per-task=1",
        "--time=20",
        f"--output={output}",
        str(SCRIPT),
        *args,
        env=cluster.env(env),
        cwd=cwd,
    )
    return int(proc.stdout.split(";")[0])


def train_flags(save_interval: int, updates: int = UPDATES) -> list[str]:
    return [
        "--task",
        "translation",
        "-s",
        "src",
        "-t",
        "tgt",
        "--arch",
        "macaron_small",
        *TINY,
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        "--max-update",
        str(updates),
        "--batch-size",
        "8",
        "--num-workers",
        "1",
        "--disable-validation",
        "--seed",
        "1",
        "--log-format",
        "json",
        "--log-interval",
        "1",
        "--save-interval-updates",
        str(save_interval),
        "--no-epoch-checkpoints",
        *CPU_DISTRIBUTED,
    ]


def updates_logged(output: Path) -> list[int]:
    text = output.read_text() if output.exists() else ""
    records = (parse_record(line) for line in text.splitlines())
    return [int(r["num_updates"]) for tag, r in filter(None, records) if tag == "train_inner"]


def wait_for_update(cluster: SlurmCluster, job: int, output: Path, update: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while max(updates_logged(output), default=0) < update:
        assert time.monotonic() < deadline, f"{output}: not at update {update} after {timeout} s"
        state = cluster.job_state(job)
        running = state in (None, "PENDING", "RUNNING", "CONFIGURING")
        assert running, f"job {state}:\n{output.read_text()[-3000:]}"
        time.sleep(0.2)


def start_training(
    cluster: SlurmCluster, data: Path, tmp_path: Path, save_interval: int, until: int
) -> tuple[int, Path, Path]:
    """A 2-task fairseq-train job on ``data``, once it is past update ``until``: (job, save dir, output)."""
    save, output = tmp_path / "checkpoints", tmp_path / "job.out"
    job = submit(cluster, output, {"DATA": str(data), "SAVE_DIR": str(save)}, *train_flags(save_interval))
    wait_for_update(cluster, job, output, until)
    return job, save, output


def test_preempted_by_the_signal_saves_requeues_and_resumes(
    slurm_cluster: SlurmCluster, tiny_data_bin: Path, tmp_path: Path
) -> None:
    job, save, output = start_training(slurm_cluster, tiny_data_bin, tmp_path, save_interval=1000, until=10)
    slurm_cluster.run("scancel", "--signal=HUP", "--batch", str(job))  # what --signal=B:HUP@300 does
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    text = output.read_text()
    assert "2 tasks" in text and "SIGHUP: forwarding it to the training tasks" in text
    saved = int(text.split("SIGHUP received: checkpoint saved at update ")[1].split()[0])
    assert 10 <= saved < UPDATES and f"requeued Slurm job {job}" in text
    assert f"job {job}, restart 1" in text  # scontrol requeue ended the first run at once
    assert f"resumed from {save / 'checkpoint_last.pt'} at update {saved} " in text
    assert f"(restart 1 of Slurm job {job})" in text
    after = updates_logged(output)
    restart = after.index(saved + 1)  # the restarted job goes on from the saved update, to the end
    assert after[restart:] == list(range(saved + 1, UPDATES + 1)) and text.rstrip().endswith("done")


def test_a_requeued_job_whose_checkpoints_are_gone_starts_fresh_and_says_so(
    slurm_cluster: SlurmCluster, tiny_data_bin: Path, tmp_path: Path
) -> None:
    job, save, output = start_training(slurm_cluster, tiny_data_bin, tmp_path, save_interval=5, until=12)
    slurm_cluster.requeue(job)  # its SIGTERM makes the tasks save once more; then the job waits to restart
    slurm_cluster.wait_for(job, ("PENDING",), timeout=120)  # the first run's processes have ended
    shutil.rmtree(save, ignore_errors=True)  # the save directory is lost before the restart
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    text = output.read_text()
    assert f"{save / 'checkpoint_last.pt'} does not exist" in text
    assert f"starting fresh (restart 1 of Slurm job {job})" in text
    assert updates_logged(output)[-UPDATES:] == list(range(1, UPDATES + 1))


def test_from_the_users_own_directory_without_the_checkout_path(
    slurm_cluster: SlurmCluster, tiny_data_bin: Path, tmp_path: Path
) -> None:
    """#42: submitted from an experiment directory, with no REPO: the installed package's helpers, --user-dir
    macaron_fairseq resolved by the install, DATA and SAVE_DIR relative to the submit directory (before: the
    script cd'd into the checkout and needed it, and passed --user-dir as the checkout's path)."""
    experiment = tmp_path / "my-experiment"
    experiment.mkdir()
    shutil.copytree(tiny_data_bin, experiment / "data-bin")
    env = {"DATA": "data-bin", "SAVE_DIR": "checkpoints"}
    flags = train_flags(save_interval=1000, updates=6)
    job = submit(slurm_cluster, experiment / "job.out", env, *flags, cwd=experiment, checkout=False)
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    text = (experiment / "job.out").read_text()
    assert "data data-bin, save dir checkpoints" in text and text.rstrip().endswith("done"), text[-3000:]
    assert (experiment / "checkpoints" / "checkpoint_last.pt").is_file()
    assert updates_logged(experiment / "job.out")[-6:] == list(range(1, 7))


@pytest.fixture(scope="module")
def iwslt_raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(REPO / "tests" / "preprocess"))
    from test_preprocess_iwslt14 import make_talks, make_tests
    from upstream_layouts import iwslt_members, write_tgz

    raw = tmp_path_factory.mktemp("iwslt_raw_slurm")
    write_tgz(raw / "de-en.tgz", iwslt_members(make_talks(30, seed=1), make_tests(10)))
    return raw


def test_the_iwslt14_recipe_trains_on_both_tasks_and_scores(
    slurm_cluster: SlurmCluster, iwslt_raw: Path, tmp_path: Path
) -> None:
    workdir, output = tmp_path / "work", tmp_path / "job.out"
    recipe = {"RECIPE": "iwslt14", "WORKDIR": str(workdir)}
    # --num-avg 1: with 2 ranks an epoch is 4 updates; fairseq writes no checkpoint_E_U.pt at an epoch end
    small = ["--small", "--raw-dir", str(iwslt_raw), "--workers", "1", "--num-avg", "1"]
    job = submit(slurm_cluster, output, recipe, *small, "--", *CPU_DISTRIBUTED)
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=900)
    text = output.read_text()
    assert "$ srun --kill-on-bad-exit=1" in text and "--distributed-world-size 2" in text
    results = json.loads((workdir / "results.transformer_iwslt_de_en_macaron_v2.json").read_text())
    assert results["recipe"] == "iwslt14" and results["bleu"]
    log = (workdir / "train.log").read_text()
    assert "initialized host" in log and " as rank 1" in log  # both tasks joined the training
