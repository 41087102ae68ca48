"""macaron_workflow.processes.run: where a command's output goes (terminal, log, stdout file, memory, line
callback), its exit status and tail, signals passed on, Ctrl-C."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from macaron_workflow.processes import run

PY = sys.executable


def script(code: str) -> list[str]:
    return [PY, "-c", code]


def test_log_gets_both_streams_and_stdout_can_go_to_its_own_file(tmp_path: Path) -> None:
    log = tmp_path / "sub" / "run.log"
    done = run(script("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"), log=log)
    assert done.status == 3 and sorted(log.read_text().split()) == ["err", "out"]
    assert sorted(done.tail(5)) == ["err", "out"] and done.tail(0) == []
    out = tmp_path / "stdout.txt"
    run(
        script("import sys; print('data'); print('note', file=sys.stderr)"),
        stdout=out,
        log=log,
        append=True,
        header="=== second\n",
    )
    assert out.read_text() == "data\n"
    assert log.read_text().splitlines()[-2:] == ["=== second", "note"]


def test_capture_and_lines(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(3): print(i, flush=True)\nprint('e', file=sys.stderr)"
    captured = run(script(code), capture=True, cwd=tmp_path, env={**os.environ, "X": "1"})
    assert captured.status == 0 and sorted(captured.output.split()) == ["0", "1", "2", "e"]
    lines: list[str] = []
    log = tmp_path / "lines.log"
    run(script(code), on_line=lines.append, log=log)
    assert sorted(lines) == ["0", "1", "2", "e"] and sorted(log.read_text().split()) == sorted(lines)


def test_a_failing_callback_does_not_leave_the_command_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
        "print('x', flush=True); time.sleep(60)"
    )

    def fail(_line: str) -> None:
        raise ValueError("bad line")

    with pytest.raises(ValueError, match="bad line"):
        run(script(code), on_line=fail)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_forwarded_signal_reaches_the_command(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    code = (
        "import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGUSR2, lambda *a: sys.exit(7))\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(60)\n"
    )

    def send_when_ready() -> None:
        while not ready.exists():
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGUSR2)

    previous = signal.getsignal(signal.SIGUSR2)
    threading.Thread(target=send_when_ready, daemon=True).start()
    assert run(script(code), forward=[signal.SIGUSR2]).status == 7
    assert signal.getsignal(signal.SIGUSR2) is previous  # the handler is given back


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this process, as in a terminal: a process started in the background
    by a non-interactive shell (a CI runner's ``cmd &``) inherits SIGINT ignored, and Python then installs no
    handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_lets_the_command_stop_then_raises_or_returns(tmp_path: Path, ctrl_c_raises: None) -> None:
    ready = tmp_path / "ready"
    code = (
        "import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored\n"
        # ready only inside the try: a Ctrl-C that came while touch() ran raised before it (seen once in CI)
        f"try:\n    pathlib.Path({str(ready)!r}).touch()\n    time.sleep(60)\n"
        "except KeyboardInterrupt:\n    print('saved', flush=True); sys.exit(5)\n"
    )

    def interrupt_when_ready() -> None:
        while not ready.exists():
            time.sleep(0.02)
        ready.unlink()
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C of this process only (the child gets run's SIGINT)

    threading.Thread(target=interrupt_when_ready, daemon=True).start()
    done = run(script(code), capture=True, on_interrupt="return")
    assert (done.status, done.interrupted, done.output) == (5, True, "saved\n")
    threading.Thread(target=interrupt_when_ready, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run(script(code), capture=True)
