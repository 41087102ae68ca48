"""Smoke tests of the single-host Slurm cluster the suite starts (fixture ``slurm_cluster``): batch jobs and
their final states, a 2-task ``srun`` step, requeue, the batch shell's warning signal, and a teardown that
leaves none of its daemons behind."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster, munge_works

pytestmark = pytest.mark.slurm


def _wait_for_file(path: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path} not written after {timeout} s"
        time.sleep(0.1)
    return path.read_text()


def test_sbatch_wait_reports_completed_and_failed_with_the_exit_code(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    ok = slurm_cluster.sbatch("#!/bin/bash\necho hello\n", "-o", str(tmp_path / "ok.out"), wait=True)
    status = slurm_cluster.wait_for(ok, ("COMPLETED",), timeout=30)
    assert (status.exit_code, status.signal) == (0, 0)
    assert (tmp_path / "ok.out").read_text() == "hello\n"

    # plain `sbatch --wait` with SLURM_CONF exported: its exit code is the job's
    script = tmp_path / "fail.sh"
    script.write_text("#!/bin/bash\necho failing\nexit 3\n")
    proc = subprocess.run(
        ["sbatch", "--wait", "--parsable", "-o", str(tmp_path / "fail.out"), str(script)],
        capture_output=True,
        text=True,
        env=slurm_cluster.env(),
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    status = slurm_cluster.wait_for(int(proc.stdout.split(";")[0]), ("FAILED",), timeout=30)
    assert (status.exit_code, status.reason) == (3, "NonZeroExitCode")
    assert (tmp_path / "fail.out").read_text() == "failing\n"


def test_two_task_srun_step_sees_its_rank_and_the_node_list(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    script = "#!/bin/bash\nsrun bash -c 'echo $SLURM_PROCID $SLURM_NTASKS $SLURM_JOB_NODELIST'\n"
    job = slurm_cluster.sbatch(script, "--ntasks=2", "-o", str(tmp_path / "out"), wait=True)
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=30)
    lines = sorted((tmp_path / "out").read_text().splitlines())
    assert lines == [f"0 2 {slurm_cluster.node}", f"1 2 {slurm_cluster.node}"]


def test_a_requeued_running_job_runs_again_with_restart_count_1(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    script = f"""#!/bin/bash
echo "run ${{SLURM_RESTART_COUNT:-0}} $SLURM_JOB_ID" >> {runs}
if [ "${{SLURM_RESTART_COUNT:-0}}" = 0 ]; then sleep 120; fi
"""
    job = slurm_cluster.sbatch(script, "--requeue", "-o", str(tmp_path / "out"))
    assert _wait_for_file(runs) == f"run 0 {job}\n"
    assert slurm_cluster.job_state(job) == "RUNNING"
    slurm_cluster.requeue(job)
    status = slurm_cluster.wait_for(job, ("COMPLETED",), timeout=60)
    assert runs.read_text() == f"run 0 {job}\nrun 1 {job}\n"
    if status.source == "scontrol":  # the job-completion log has no restart count
        assert status.restarts == 1


BATCH_TRAP = """#!/bin/bash
trap 'echo "USR2 $(date +%s)" > {marker}; exit 0' USR2
date +%s > {started}
sleep 300 &
wait $!
"""


def test_the_batch_shell_traps_usr2_sent_with_scancel(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    # `scancel --signal=USR2 --batch` is what `--signal=B:USR2@N` does at the deadline (next test)
    marker, started = tmp_path / "usr2", tmp_path / "started"
    job = slurm_cluster.sbatch(BATCH_TRAP.format(marker=marker, started=started), "-o", str(tmp_path / "out"))
    _wait_for_file(started)
    slurm_cluster.run("scancel", "--signal=USR2", "--batch", str(job))
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=30)
    assert marker.read_text().startswith("USR2 ")


def test_signal_b_usr2_reaches_the_batch_shell_before_the_time_limit(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    # slurmctld checks time limits every 30 s, so the warning comes 0-30 s after the start with --time=1
    # (the sbatch man page: "may be sent up to 60 seconds earlier than specified")
    marker, started = tmp_path / "usr2", tmp_path / "started"
    job = slurm_cluster.sbatch(
        BATCH_TRAP.format(marker=marker, started=started),
        "--time=1",
        "--signal=B:USR2@50",
        "-o",
        str(tmp_path / "out"),
    )
    status = slurm_cluster.wait_for(job, ("COMPLETED",), timeout=90)
    t0, t1 = int(started.read_text()), int(marker.read_text().split()[1])
    assert 0 <= t1 - t0 < 60 and status.state != "TIMEOUT"


def test_stop_ends_the_daemons_it_started(tmp_path: Path, slurm_cluster: SlurmCluster) -> None:
    # a second cluster beside the session's one (own munged, ports, state and spool)
    other = SlurmCluster.start(tmp_path / "cluster")
    try:
        assert set(other.pids) == {"munged", "slurmctld", "slurmd"}
        job = other.sbatch("#!/bin/bash\ntrue\n", "-o", "/dev/null", wait=True)
        other.wait_for(job, ("COMPLETED",), timeout=30)
    finally:
        other.stop()
    for name, pid in other.pids.items():
        alive = Path(f"/proc/{pid}/cmdline")
        assert not (alive.exists() and name.encode() in alive.read_bytes()), f"{name} ({pid}) still runs"
    assert not other.rundir.exists()
    # the session's cluster is untouched
    assert munge_works(slurm_cluster.rundir / "munge.sock")
    assert slurm_cluster.node_state() == "idle"
