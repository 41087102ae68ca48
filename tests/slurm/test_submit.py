"""python -m macaron_slurm.submit: the request checked before anything is submitted, the sbatch command it
prints."""

from __future__ import annotations

import os
import shlex

import pytest
from helpers import env_without

from macaron_slurm import submit
from macaron_workflow.errors import UserError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800),
        ("30:15", 1815),
        ("2:00:00", 7200),
        ("1-12", 129_600),
        ("1-12:30", 131_400),
        ("2-00:00:10", 172_810),
    ],
)
def test_slurm_time_formats(text: str, seconds: int) -> None:
    assert submit.time_limit_seconds(text) == seconds


def test_the_sbatch_command(capsys: pytest.CaptureFixture[str]) -> None:
    submit.main(
        [
            "pretrain",
            "--nodes",
            "2",
            "--gpus-per-node",
            "4",
            "--time",
            "1-00:00:00",
            "--partition",
            "gpu",
            "--account",
            "proj",
            "--qos",
            "high",
            "--env",
            "DATA=/d",
            "--dry-run",
            "--",
            "--max-update",
            "9",
        ]
    )
    command = capsys.readouterr().out.split()
    script = str(submit.SLURM_DIR / "pretrain.sbatch")
    assert command[0] == "sbatch" and command[-3:] == [script, "--max-update", "9"]
    for option in (
        "--nodes=2",
        "--ntasks-per-node=4",
        "--gpus-per-node=4",
        "--time=1-00:00:00",
        "--signal=B:HUP@300",
        "--partition=gpu",
        "--account=proj",
        "--qos=high",
        "--export=ALL,PREEMPT_SIGNAL=HUP,DATA=/d",
    ):
        assert option in command


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--gpus-per-node", "8", "--ntasks-per-node", "4"], "runs one task per GPU"),
        (["--nodes", "0"], "at least 1"),
        (["--time", "4"], "not shorter than --time 4"),
        (["--time", "yesterday"], "not a Slurm time"),
        (["--env", "DATA"], "give NAME=VALUE"),
        (["--env", "A=1,2"], "no commas"),
    ],
)
def test_inconsistent_requests_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        submit.main(["pretrain", *argv, "--dry-run"])


def test_the_corpus_array_has_one_task_per_source_and_the_merge_waits_for_it(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = [tmp_path / f"enwiki-20261101-pages-articles{i}.xml-p{i}p{i + 9}.bz2" for i in (1, 2, 3)]
    for part in parts:
        part.write_bytes(b"")
    options = ["--cpus-per-task", "16", "--max-parallel", "2", "--env", "DEST=d", "--env", "BOOKS=b"]
    flags = ["--bpe-vocab-size", "400"]
    submit.main(["bert_corpus", *options, "--dry-run", "--", *map(str, parts), "--", *flags])
    array, merge = map(shlex.split, capsys.readouterr().out.splitlines())
    assert "--array=0-3%2" in array and "--dependency=afterok:$ARRAY" in merge  # 3 parts + the books
    assert array[-6:] == merge[-6:] == [*map(str, parts), "--", "--bpe-vocab-size", "400"]
    assert (
        "--cpus-per-task=16" in array
        and "--gpus-per-node=0" in merge
        and not any("--signal" in a for a in array)
    )
    with pytest.raises(UserError, match=r"nope\.bz2: no such file"):
        submit.main(["bert_corpus", "--env", "DEST=x", "--dry-run", "--", "nope.bz2"])


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_the_glue_grid_is_prepared_run_as_an_array_of_its_size_and_collected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = ["--max-parallel", "16", "--env", "WORKDIR=w", "--env", "CHECKPOINT=m.pt", "--dry-run"]
    submit.main(["glue", *options, "--", "--tasks", "RTE,MRPC", "--seeds", "2"])
    prepare, cells, collect = map(shlex.split, capsys.readouterr().out.splitlines())
    # 2 tasks × the grid's configurations × 2 seeds, as python -m macaron_pipelines.glue --step count says
    size = submit.grid_size(
        submit.build_parser().parse_args(["glue", "--env", "WORKDIR=w"]),
        ["--tasks", "RTE,MRPC", "--seeds", "2"],
    )
    assert size % 4 == 0 and size >= 4
    assert f"--array=0-{size - 1}%16" in cells and "--dependency=afterok:$PREP" in cells
    assert prepare[-5:-4] == ["prepare"] and cells[-5:-4] == ["cell"] and collect[-5:-4] == ["collect"]
    assert "--gpus-per-node=0" in prepare and "--gpus-per-node=1" in cells and "--signal=B:HUP@300" in cells
    assert "--dependency=afterok:$ARRAY" in collect


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["glue", "--gpus-per-node", "2", "--env", "WORKDIR=w"], "a GLUE run uses one GPU"),
        (["glue", "--nodes", "2", "--env", "WORKDIR=w"], "one task on one node"),
        (["glue"], "glue needs --env WORKDIR"),
        (["translate"], "needs --env RECIPE=... or --env DATA"),
        (["bert_corpus", "--env", "DEST=d", "--gpus-per-node", "1"], "uses no GPU"),
        (["bert_corpus", "--env", "DEST=d", "--max-parallel", "0"], "at least 1"),
    ],
)
def test_inconsistent_requests_of_the_other_jobs_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        submit.main([*argv, "--dry-run"])


@pytest.mark.parametrize("script", [f"{job}.sbatch" for job in submit.JOBS])
def test_every_script_outside_slurm_says_so(script: str, tmp_path) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    command = ["bash", str(submit.SLURM_DIR / script)]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and f"{script}: not inside a Slurm job (no SLURM_JOB_ID)" in proc.stderr


@pytest.mark.parametrize("limit", ["UNLIMITED", "infinite", "0"])
def test_no_time_limit_is_a_slurm_time(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert submit.time_limit_seconds(limit) is None
    submit.main(["pretrain", "--time", limit, "--env", "DATA=/d", "--dry-run"])
    assert f"--time={limit}" in capsys.readouterr().out.split()


def test_the_signal_is_checked_and_named_as_slurm_reads_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UserError, match="--signal 'FOO': not a signal name"):
        submit.main(["pretrain", "--signal", "FOO", "--env", "DATA=/d", "--dry-run"])
    submit.main(["pretrain", "--signal", "sigusr2", "--env", "DATA=/d", "--dry-run"])
    command = capsys.readouterr().out.split()
    assert "--signal=B:USR2@300" in command and "--export=ALL,PREEMPT_SIGNAL=USR2,DATA=/d" in command


def test_without_sbatch_on_the_path_a_one_line_error(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="sbatch: not found on the PATH"):
        submit.main(["pretrain", "--env", "DATA=/d"])


def test_a_grid_without_cells_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def count(command, **kwargs):
        return subprocess.CompletedProcess(command, 0, "0\n", "")

    monkeypatch.setattr(submit.subprocess, "run", count)
    with pytest.raises(UserError, match="the GLUE grid has no cells"):
        submit.main(["glue", "--env", "WORKDIR=w", "--dry-run", "--", "--tasks", "RTE"])


def test_every_job_that_waits_for_another_is_killed_when_that_one_fails(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    submit.main(["glue", "--env", "WORKDIR=w", "--dry-run", "--", "--tasks", "RTE", "--seeds", "1"])
    prepare, cells, collect = map(shlex.split, capsys.readouterr().out.splitlines())
    assert "--kill-on-invalid-dep=yes" not in prepare
    assert "--kill-on-invalid-dep=yes" in cells and "--kill-on-invalid-dep=yes" in collect
    part = tmp_path / "part.bz2"
    part.write_bytes(b"")
    submit.main(["bert_corpus", "--env", "DEST=d", "--dry-run", "--", str(part)])
    array, merge = map(shlex.split, capsys.readouterr().out.splitlines())
    assert "--kill-on-invalid-dep=yes" in merge and "--kill-on-invalid-dep=yes" not in array


def test_a_chain_whose_later_sbatch_fails_cancels_the_jobs_already_submitted(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    fakes = {
        "sbatch": f'#!/bin/sh\necho "sbatch $*" >> {calls}\n'
        f'if [ "$(grep -c sbatch {calls})" -ge 2 ]; then echo "sbatch: error: Invalid qos" >&2; exit 1; fi\n'
        "echo 101\n",
        "scancel": f'#!/bin/sh\necho "scancel $*" >> {calls}\n',
    }
    for name, text in fakes.items():
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    part = tmp_path / "part.bz2"
    part.write_bytes(b"")
    failed = r"sbatch of the merge job failed \(exit status 1: sbatch: error: Invalid qos\); cancelled the "
    with pytest.raises(UserError, match=failed + "jobs already submitted: 101"):
        submit.main(["bert_corpus", "--env", "DEST=d", "--", str(part)])
    lines = calls.read_text().splitlines()
    assert len(lines) == 3 and "--dependency=afterok:101" in lines[1] and lines[2] == "scancel 101"


def test_a_users_dollar_strings_reach_every_job_unchanged(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """#41: ``--env 'WORKDIR=/w/wk$PREP'``: the prepare job got ``wk$PREP``, the cell and collect jobs
    ``wk1001`` (the chain's job ids were put into every argument). A stand-in ``sbatch`` records what it is
    given; only the chain's own ``--dependency`` arguments get the ids."""
    calls = tmp_path / "calls"
    sbatch = tmp_path / "sbatch"
    sbatch.write_text(
        f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done >> {calls}\n'
        f"echo ---- >> {calls}\necho $((1000 + $(grep -c -- ---- {calls})))\n"
    )
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    submit.main(
        [
            "glue",
            "--env",
            "WORKDIR=/w/wk$PREP",
            "--env",
            "NOTE=$ARRAY",
            "--",
            "--tasks",
            "RTE",
            "--seeds",
            "1",
        ]
    )
    jobs = [job.strip().splitlines() for job in calls.read_text().split("----") if job.strip()]
    assert len(jobs) == 3
    for job in jobs:
        (export,) = [arg for arg in job if arg.startswith("--export=")]
        assert "WORKDIR=/w/wk$PREP" in export and "NOTE=$ARRAY" in export, export
    assert "--dependency=afterok:1001" in jobs[1] and "--dependency=afterok:1002" in jobs[2]


def test_the_glue_grid_count_and_help_import_no_torch_sklearn_or_scipy(tmp_path) -> None:
    """``submit glue`` counts the grid with ``python -m macaron_pipelines.glue --step count`` before it
    submits anything, and ``--help`` is the first thing a user runs: neither needs torch (~3 s to import
    here) nor scikit-learn and SciPy (~2 s, the metrics'). Blocked in the child, both still work."""
    import subprocess
    import sys

    env = env_without(tmp_path, "torch", "sklearn", "scipy")
    command = [sys.executable, "-m", "macaron_pipelines.glue"]
    count = [*command, "--step", "count", "--workdir", str(tmp_path / "w"), "--tasks", "RTE", "--seeds", "2"]
    counted = subprocess.run(count, capture_output=True, text=True, env=env, timeout=120)
    assert counted.returncode == 0, counted.stderr[-2000:]
    assert int(counted.stdout) == 2 * int(
        subprocess.run([*count[:-1], "1"], capture_output=True, text=True, env=env, timeout=120).stdout
    )
    shown = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0 and "--step" in shown.stdout, shown.stderr[-2000:]
