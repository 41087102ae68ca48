"""The one exception type the preprocessing CLIs turn into a clean ``error: ...`` message, and the wording
of the operating-system errors they report (which side failed, which file, which errno)."""

from __future__ import annotations

import errno
from pathlib import Path

#: errors only writing can cause (never a sign of a bad input), with what to do about them
OUTPUT_SIDE_ADVICE = {
    errno.ENOSPC: "make room on its file system (or choose another destination) and rerun",
    errno.EDQUOT: "make room within your disk quota (or choose another destination) and rerun",
    errno.EFBIG: "raise the file-size limit (ulimit -f) or write to another file system, and rerun",
    errno.EROFS: "choose a destination on a writable file system and rerun",
}


class UserError(Exception):
    """Bad input, a failed check or an unusable destination.

    The message is meant for the user: it names the files, line numbers and values involved. The CLIs
    print it without a traceback and exit with status 2.
    """


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


def cannot_write(path: Path | str, exc: OSError) -> OutputError:
    """An output-side failure: names the file being written and the errno, and what to do about it."""
    advice = OUTPUT_SIDE_ADVICE.get(exc.errno) if exc.errno is not None else None
    return OutputError(f"cannot write {path}: {os_error_reason(exc)}" + (f"; {advice}" if advice else ""))
