"""External commands, run one way: :func:`run` starts a command and sends its output where the caller asks
(the terminal, a log file, a stdout file, memory, or a per-line callback that also fills the log), passes
signals on to it, and on Ctrl-C lets it stop by itself (SIGINT) before anything else happens.

What a failure means is the caller's: :func:`run` returns the exit status (:class:`Completed`) and the tail
of what the command printed, and raises nothing but the error of a command that cannot start (``OSError``)
and the ``KeyboardInterrupt`` it was told to pass on.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal


@dataclass
class Completed:
    """A finished command: its argument list, exit status, captured output (``capture=True``) and log."""

    argv: list[str]
    status: int
    output: str = ""
    log: Path | None = None
    interrupted: bool = False
    """Ctrl-C stopped it (``on_interrupt="return"``)."""

    def tail(self, lines: int) -> list[str]:
        """The last ``lines`` lines the command printed (from its log, else from the captured output)."""
        if self.log is not None and self.log.exists():
            text = self.log.read_text(encoding="utf-8", errors="replace")
        else:
            text = self.output
        return text.splitlines()[-lines:] if lines > 0 else []


@contextlib.contextmanager
def forwarding(proc: subprocess.Popen, signals: Sequence[int]) -> Iterator[None]:
    """While the block runs, each of ``signals`` this process receives is sent to ``proc`` instead (the
    previous handlers come back afterwards; only in the main thread)."""
    previous = {
        number: signal.signal(number, lambda signum, _frame: proc.send_signal(signum)) for number in signals
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run(
    command: Sequence[object],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    append: bool = False,
    header: str | None = None,
    stdout: Path | None = None,
    capture: bool = False,
    on_line: Callable[[str], None] | None = None,
    forward: Sequence[int] = (),
    on_interrupt: Literal["raise", "return"] = "raise",
) -> Completed:
    """Run ``command`` (its parts as strings) until it ends.

    Where its output goes: by default this process's terminal; with ``log``, its standard error — and its
    standard output too unless ``stdout`` names a file for it — into ``log`` (``append``: after what is
    there, below ``header``); with ``capture`` or ``on_line``, both merged and read as text line by line:
    kept in :attr:`Completed.output` (``capture``), passed to ``on_line`` without the newline, and written
    to ``log`` if given. ``forward``: signals passed on to the command while it runs. Ctrl-C sends it
    SIGINT and waits for it to end, then re-raises (``on_interrupt="return"``: returns its status)."""
    argv = [str(part) for part in command]
    with contextlib.ExitStack() as files:
        log_file: IO[str] | None = None
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            log_file = files.enter_context(open(log, "a" if append else "w", encoding="utf-8"))
            if header is not None:
                log_file.write(header)
                log_file.flush()
        out_file = files.enter_context(open(stdout, "w", encoding="utf-8")) if stdout is not None else None
        piped = capture or on_line is not None
        if piped:
            streams: dict[str, object] = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
        else:
            streams = {"stdout": out_file or log_file, "stderr": log_file}
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=None if env is None else dict(env),
            text=True,
            bufsize=1,
            errors="replace",
            **streams,  # type: ignore[arg-type]
        )
        captured: list[str] = []
        interrupted = False

        def pump() -> None:
            """Read the merged output to its end."""
            if not piped:
                return
            assert proc.stdout is not None
            for line in proc.stdout:
                if log_file is not None:
                    log_file.write(line)
                    log_file.flush()
                if capture:
                    captured.append(line)
                if on_line is not None:
                    on_line(line.rstrip("\n"))

        with forwarding(proc, forward):
            try:
                pump()
                status = proc.wait()
            except KeyboardInterrupt:
                proc.send_signal(signal.SIGINT)  # a trainer saves or cleans up; torchrun passes it on
                pump()  # what it prints while stopping is kept too
                status = proc.wait()
                if on_interrupt == "raise":
                    raise
                interrupted = True
            except BaseException:
                proc.kill()  # the caller's callback failed: the command must not outlive this process
                proc.wait()
                raise
    return Completed(argv, status, "".join(captured), log, interrupted)
