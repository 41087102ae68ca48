"""How every command of the project fails (the rule of docs/architecture.md, "Errors"), and the wording of
the operating-system errors it reports (which side failed, which file, which errno).

One rule for every CLI, pipeline, tool, the pre-trainer and ``macaron_slurm.submit``, applied by one wrapper
(:func:`macaron_workflow.cli.run_cli`): an error is ONE line on stderr, ``PROG: error: message``, never a
traceback,
and the exit status says whose it is —

* :data:`USAGE_EXIT` (2): a usage or input error the user can fix (:class:`UserError`: a bad option, a
  missing or malformed input file, a refused checkpoint, an unusable destination);
* :data:`FAILURE_EXIT` (1): an internal failure (:class:`ReportedError`: a stage or external command
  failed; an unexpected exception keeps its traceback, and Python exits 1 for it too);
* 130 on Ctrl-C (completed stages are kept), and the preemption protocol's own status
  (:data:`macaron_workflow.preemption.PREEMPTED_EXIT`) after a preempted training saved.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

#: errors only writing can cause (never a sign of a bad input), with what to do about them
OUTPUT_SIDE_ADVICE = {
    errno.ENOSPC: "make room on its file system (or choose another destination) and rerun",
    errno.EDQUOT: "make room within your disk quota (or choose another destination) and rerun",
    errno.EFBIG: "raise the file-size limit (ulimit -f) or write to another file system, and rerun",
    errno.EROFS: "choose a destination on a writable file system and rerun",
}


#: exit status of a usage or input error (what the user can fix)
USAGE_EXIT = 2
#: exit status of an internal failure (a stage or an external command failed; a bug)
FAILURE_EXIT = 1
#: exit status after Ctrl-C
INTERRUPTED_EXIT = 130


class ReportedError(Exception):
    """A failure reported as one line without a traceback, ending the command with :attr:`exit_status`.

    Raised as is, it is an internal failure (exit 1): a stage or an external command failed and the
    message says which and where its log is."""

    exit_status: int = FAILURE_EXIT
    #: the word before the message (``PROG: error: ...``)
    label: str = "error"


class UserError(ReportedError):
    """Bad input, a failed check or an unusable destination.

    The message is meant for the user: it names the files, line numbers and values involved. The CLIs
    print it without a traceback and exit with status 2.
    """

    exit_status = USAGE_EXIT


class OutputError(UserError):
    """Writing an output failed (disk full, file-size limit, permission): the inputs are not to blame, so
    callers that retry or blame an input (another mirror, "delete the archive") must let it through."""


def os_error_reason(exc: OSError) -> str:
    """``"No space left on device (ENOSPC)"``: the system's message and the symbolic errno."""
    text = exc.strerror or str(exc)
    name = errno.errorcode.get(exc.errno) if exc.errno is not None else None
    return f"{text} ({name})" if name else text


def cannot_read(path: Path | str, exc: OSError) -> UserError:
    """An input that exists but cannot be read (permission, a directory, an I/O error)."""
    return UserError(f"cannot read {path}: {os_error_reason(exc)}")


#: how torch's zip writer (``PyTorchStreamWriter``, inline_container.cc) reports a failed write: a full file
#: system makes ``torch.save(obj, PATH)`` raise ``RuntimeError``, not ``OSError`` (DESIGN.md section 8)
TORCH_WRITE_FAILURES = ("inline_container.cc", "PytorchStreamWriter", "file write failed")


def storage_failure(path: Path | str, exc: BaseException) -> OutputError | None:
    """The one-line :class:`OutputError` of a failed write of ``path`` — an ``OSError`` that only writing
    can cause (:data:`OUTPUT_SIDE_ADVICE`) or torch's zip writer failing (:data:`TORCH_WRITE_FAILURES`) —
    else None (not a storage failure: let it through)."""
    if isinstance(exc, OSError):
        return cannot_write(path, exc) if exc.errno in OUTPUT_SIDE_ADVICE else None
    # a Rust writer's I/O error (safetensors: "I/O error: No space left on device (os error 28)")
    rust = re.search(r"\(os error (\d+)\)", str(exc))
    if rust and int(rust.group(1)) in OUTPUT_SIDE_ADVICE:
        number = int(rust.group(1))
        return cannot_write(path, OSError(number, os.strerror(number)))
    if not isinstance(exc, RuntimeError) or not any(mark in str(exc) for mark in TORCH_WRITE_FAILURES):
        return None
    folder = Path(path).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        stats = os.statvfs(folder)
        full = stats.f_bavail * stats.f_frsize < (1 << 20) or (stats.f_files and not stats.f_favail)
    except OSError:
        full = False
    if full:
        return cannot_write(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return OutputError(
        f"cannot write {path}: torch could not write the file ({first}); check the space and "
        "the health of its file system, and rerun"
    )


def cannot_write(path: Path | str, exc: OSError) -> OutputError:
    """An output-side failure: names the file being written and the errno, and what to do about it."""
    advice = OUTPUT_SIDE_ADVICE.get(exc.errno) if exc.errno is not None else None
    return OutputError(f"cannot write {path}: {os_error_reason(exc)}" + (f"; {advice}" if advice else ""))
