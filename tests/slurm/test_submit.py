"""python -m slurm.submit: the request checked before anything is submitted, the sbatch command it prints."""

from __future__ import annotations

import pytest

from slurm import submit
from workflow.errors import UserError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 1800), ("30:15", 1815), ("2:00:00", 7200), ("1-12", 129_600), ("1-12:30", 131_400),
     ("2-00:00:10", 172_810)],
)  # fmt: skip
def test_slurm_time_formats(text: str, seconds: int) -> None:
    assert submit.time_limit_seconds(text) == seconds


def test_the_sbatch_command(capsys: pytest.CaptureFixture[str]) -> None:
    submit.main(["pretrain", "--nodes", "2", "--gpus-per-node", "4", "--time", "1-00:00:00",
                 "--partition", "gpu", "--account", "proj", "--qos", "high", "--env", "DATA=/d", "--dry-run",
                 "--", "--max-update", "9"])  # fmt: skip
    command = capsys.readouterr().out.split()
    script = str(submit.SLURM_DIR / "pretrain.sbatch")
    assert command[0] == "sbatch" and command[-3:] == [script, "--max-update", "9"]
    for option in ("--nodes=2", "--ntasks-per-node=4", "--gpus-per-node=4", "--time=1-00:00:00",
                   "--signal=B:HUP@300", "--partition=gpu", "--account=proj", "--qos=high",
                   "--export=ALL,PREEMPT_SIGNAL=HUP,DATA=/d"):  # fmt: skip
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
