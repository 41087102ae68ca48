"""macaron_workflow.preemption: SIGTERM is recorded (not fatal) beside the warning signal, and rank 0
requeues after
the warning signal always, after SIGTERM only when Slurm is preempting the job (a requeue after ``scancel``
would undo the cancel: ``scontrol requeue`` accepts a cancelled job). ``scontrol`` is a fake on the PATH that
logs its calls and answers ``show job`` with a given record."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from macaron_workflow.preemption import Preemption, slurm_port


@pytest.fixture
def fake_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``set_job(record)``: what ``scontrol show job`` prints; returns the calls file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls, record = tmp_path / "calls", tmp_path / "record"
    script = bin_dir / "scontrol"
    script.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n[ "$1" = show ] && cat {record}\nexit 0\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "42")

    def set_job(text: str) -> Path:
        record.write_text(text + "\n")
        return calls

    return set_job


def stopped_on(signum: signal.Signals, name: str = "HUP") -> Preemption:
    preemption = Preemption(name)
    try:
        os.kill(os.getpid(), signum)  # the handler runs before os.kill returns (main thread)
        assert preemption.should_stop()
    finally:
        preemption.restore()
    return preemption


def test_sigterm_is_recorded_beside_the_warning_signal_and_the_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    preemption = stopped_on(signal.SIGTERM)
    assert (preemption.received, preemption.terminated, preemption.reason) == (False, True, "SIGTERM")
    assert signal.getsignal(signal.SIGTERM) is before
    hup = stopped_on(signal.SIGHUP)
    assert (hup.received, hup.terminated, hup.reason) == (True, False, "SIGHUP")
    quiet = Preemption("HUP")
    try:
        assert not quiet.should_stop()
    finally:
        quiet.restore()


def test_the_warning_signal_requeues(fake_scontrol) -> None:
    calls = fake_scontrol("JobId=42 JobState=RUNNING PreemptTime=None")
    messages: list[str] = []
    assert stopped_on(signal.SIGHUP).requeue(messages.append)
    assert calls.read_text().splitlines() == ["requeue 42"]
    assert messages == ["requeued Slurm job 42: it restarts from this checkpoint"]


def test_sigterm_of_a_preemption_requeues(fake_scontrol) -> None:
    calls = fake_scontrol("JobId=42 JobName=x JobState=RUNNING Reason=None PreemptTime=2026-11-25T19:33:55")
    assert stopped_on(signal.SIGTERM).requeue(lambda message: None)
    assert calls.read_text().splitlines() == ["show job -o 42", "requeue 42"]


def test_sigterm_of_a_scancel_does_not_requeue(fake_scontrol) -> None:
    calls = fake_scontrol("JobId=42 JobState=COMPLETING Reason=None PreemptTime=None")
    messages: list[str] = []
    assert not stopped_on(signal.SIGTERM).requeue(messages.append)
    assert calls.read_text().splitlines() == ["show job -o 42"]
    assert "is not requeued" in messages[0]


def test_the_rendezvous_port_stays_below_the_ephemeral_range() -> None:
    ports = [slurm_port(job) for job in (0, 1, 19_999, 20_000, 123_456_789)]
    assert all(10_000 <= port < 32_768 for port in ports) and slurm_port(7) == slurm_port(20_007) == 10_007
