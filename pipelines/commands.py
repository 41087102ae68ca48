"""How a pipeline talks to the user and runs its external commands.

:class:`Console` prints the pipeline's stamped progress lines (and the stage runner's); :func:`run_command`
runs one command from the repository root, optionally capturing its stdout into a file, and turns a
failure into a :class:`PipelineError` that names the command and its log. :func:`report_errors` ends a
pipeline by the project's one error rule (:mod:`macaron_workflow.errors`, docs/architecture.md "Errors").
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from macaron_workflow import processes
from macaron_workflow.cli import run_cli
from macaron_workflow.errors import FAILURE_EXIT, USAGE_EXIT, ReportedError, UserError
from macaron_workflow.options import FROM_ENV, Option, with_environment
from macaron_workflow.preemption import PREEMPTED_EXIT

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "macaron_fairseq"
"""The plugin, passed to every fairseq command as ``--user-dir``."""

INIT_SCHEMES = ("default", "dt-fixup", "t-fixup", "auto")
"""The choices of the pipelines' ``--init-scheme``: fairseq-train's (``macaron_fairseq.init.config.SCHEMES``,
checked by a test; not imported here, that would import fairseq with every pipeline's ``--help``)."""

FAILURE_TAIL_LINES = 30
"""How many lines of a failed command's log are shown."""


class PipelineError(ReportedError):
    """A stage failed (exit 1); the message names the command and where its full output is. A command that
    itself ended with a usage or input error (exit 2, its one-line message above) makes the pipeline end
    with 2 as well."""


class PipelineUsageError(UserError, PipelineError):
    """A usage or input error found by a pipeline (exit 2): a bad option, a missing or unusable input."""


class Preempted(PipelineError):
    """Training stopped on the preemption signal after saving (:mod:`macaron_workflow.preemption`): the
    pipeline exits with that protocol's status, and the requeued job (or a rerun) resumes."""

    exit_status = PREEMPTED_EXIT
    label = "preempted"


@dataclass
class Console:
    """Progress lines ``[NAME STAMP] message`` on stdout.

    ``elapsed`` stamps lines with the seconds since the start (the quickstart), otherwise with the wall
    clock (the long translation pipelines). ``echo_commands`` also prints every external command.
    """

    name: str
    elapsed: bool = False
    echo_commands: bool = True
    started: float = field(default_factory=time.monotonic)

    def say(self, message: str) -> None:
        if self.elapsed:
            stamp = f"{time.monotonic() - self.started:.0f}s"
        else:
            stamp = time.strftime("%H:%M:%S")
        print(f"[{self.name} {stamp}] {message}", flush=True)

    def command(self, argv: Sequence[str]) -> None:
        if self.echo_commands:
            self.say("$ " + shlex.join(argv))


def parse_with_passthrough(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    options: Iterable[Option] = (),
    env_defaults: Mapping[str, str] | None = None,
) -> argparse.Namespace:
    """``parser``'s arguments before a ``--``; what follows it is kept unparsed in ``args.train_flags``
    (flags handed to the training command as they are). With ``--from-env`` (what the .sh wrappers pass),
    the environment variables of the option table ``options`` count as flags given before the others
    (:func:`macaron_workflow.options.with_environment`; ``env_defaults`` fill unset variables)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = with_environment(argv, options, env_defaults or {})
    except UserError as err:
        parser.error(str(err))
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.train_flags = argv[split + 1 :]
    return args


def add_from_env(parser: argparse.ArgumentParser) -> None:
    """Document ``--from-env`` in ``--help`` (:func:`parse_with_passthrough` consumes it)."""
    parser.add_argument(
        FROM_ENV,
        action="store_true",
        help="also read the options from the environment variables shown as [env NAME] (what the "
        "pipelines/*.sh wrappers pass; flags on the command line win)",
    )


def run_command(
    command: Sequence[object],
    console: Console,
    stdout: Path | None = None,
    stderr_log: Path | None = None,
) -> None:
    """Run ``command`` in the repository root; :class:`PipelineError` when it fails.

    With ``stdout``, its standard output goes to that file (the caller's temporary file: this function
    does not rename) and its standard error to ``stderr_log``, whose tail is printed on failure.
    """
    argv = [str(part) for part in command]
    console.command(argv)
    if stdout is not None and stderr_log is None:
        raise ValueError("run_command: stdout needs a stderr_log")
    completed = processes.run(argv, cwd=REPO, stdout=stdout, log=stderr_log if stdout is not None else None)
    code = completed.status
    where = "its output is above" if stdout is None else f"log: {stderr_log}"
    if code != 0:
        if stdout is not None:
            print("\n".join(completed.tail(FAILURE_TAIL_LINES)), file=sys.stderr)
        error = PipelineError(f"{argv[0]} failed with exit status {code} ({where}): {shlex.join(argv)}")
        error.exit_status = USAGE_EXIT if code == USAGE_EXIT else FAILURE_EXIT
        raise error


def report_errors(prog: str, main: Callable[[], None]) -> None:
    """Run a pipeline's ``main`` by the one error rule (:func:`macaron_workflow.cli.run_cli`): every error
    one line ``PROG: error: ...``, exit 2 for usage and input errors (any
    :class:`~macaron_workflow.errors.UserError`, e.g. ``GlueDataError``), 1 for a failed stage, the
    preemption status after a preempted training saved, 130 on Ctrl-C (finished stages are kept)."""
    run_cli(main, prog)
