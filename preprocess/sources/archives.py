"""Getting the expected files out of a corpus archive (or an already extracted copy of it).

:class:`ArchiveSpec` names an archive, where to download it, and the member files a preprocessor needs.
:func:`locate_members` returns local paths for those members:

* ``--raw-dir`` holding the extracted files (at their path inside the archive, or directly by file
  name): they are used in place;
* ``--raw-dir`` holding the archive: the members are extracted into ``WORK/orig/``;
* no ``--raw-dir``: the archive is downloaded into ``WORK/downloads/`` first.

Extraction is a resumable stage: one sequential pass over the (gzipped) tar writes each wanted member to a
temporary file; a truncated or corrupt archive and missing members (all listed) are errors, and nothing is
renamed into place unless every member was read completely. Errors are told apart by the side that failed:
reading the archive (truncated, corrupt: get it again), opening it (permission: the archive is fine), or
writing a member (disk full, file-size limit, permission: the message names the file being written and the
errno, and the archive is left alone).
"""

from __future__ import annotations

import contextlib
import sys
import tarfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from macaron_preprocess.sources.download import download_archive
from macaron_workflow.errors import UserError
from macaron_workflow.files import OutputFile, open_input
from macaron_workflow.stages import StageReport, StageRunner

_CORRUPT = (tarfile.TarError, EOFError, zlib.error, OSError)
"""What reading a damaged archive raises (``OSError`` included: gzip reports a bad header or CRC with it).
Only reading the archive can raise these here: opening it and writing members report their own errors."""


@dataclass(frozen=True)
class ArchiveSpec:
    """A corpus archive: file name, download URLs (first = preferred mirror), needed member paths."""

    filename: str
    urls: tuple[str, ...]
    members: tuple[str, ...]


def _normalise(name: str) -> str:
    return str(PurePosixPath(name.removeprefix("./")))


def _corrupt(path: Path | str, exc: BaseException) -> UserError:
    return UserError(
        f"archive {path} is truncated or corrupt ({type(exc).__name__}: {exc}); delete it and get it again"
    )


@contextlib.contextmanager
def _read_archive(path: Path) -> Iterator[tarfile.TarFile]:
    """The archive opened for one sequential pass; a file that cannot be opened is a ``UserError`` naming
    it (not "corrupt": the archive may be fine)."""
    with open_input(path) as handle, tarfile.open(fileobj=handle, mode="r:*") as archive:
        yield archive


def verify_tar(path: Path, shown_name: str | None = None) -> int:
    """Read the whole archive (headers and data); returns the number of members."""
    count = 0
    try:
        with _read_archive(path) as archive:
            for member in archive:
                count += 1
                if member.isfile():
                    handle = archive.extractfile(member)
                    if handle is not None:
                        while handle.read(1 << 20):  # reading is the check: CRC and length errors
                            continue
    except _CORRUPT as exc:
        raise _corrupt(shown_name or path, exc) from exc
    if count == 0:
        raise UserError(f"archive {shown_name or path} is empty")
    return count


def _copy_member(
    archive: tarfile.TarFile, member: tarfile.TarInfo, destination: Path, progress: tqdm
) -> None:
    """Write one member to ``destination``: reading errors propagate as they are (the archive's fault),
    writing errors become a ``UserError`` naming ``destination`` (see
    :class:`~macaron_workflow.files.OutputFile`)."""
    source = archive.extractfile(member)
    assert source is not None, member.name
    with OutputFile(destination) as out:
        while block := source.read(1 << 20):
            out.write(block)
            progress.update(len(block))


def extract_members(archive_path: Path, wanted: Mapping[str, Path]) -> StageReport:
    """Copy each wanted member (archive path -> output path) in one pass; all-or-error."""
    found: set[str] = set()
    try:
        with (
            _read_archive(archive_path) as archive,
            tqdm(
                desc=f"extract {archive_path.name}", unit="B", unit_scale=True, file=sys.stderr, delay=0.5
            ) as progress,
        ):
            for member in archive:
                name = _normalise(member.name)
                if name in wanted and member.isfile():
                    _copy_member(archive, member, wanted[name], progress)
                    found.add(name)
    except _CORRUPT as exc:  # reading failed; write errors are UserErrors of OutputFile and pass through
        raise _corrupt(archive_path, exc) from exc
    missing = sorted(set(wanted) - found)
    if missing:
        raise UserError(f"archive {archive_path} lacks expected files:\n  " + "\n  ".join(missing))
    return {"archive": str(archive_path), "members": sorted(found)}


def _extracted_copy(spec: ArchiveSpec, raw_dir: Path) -> tuple[dict[str, Path], list[str]]:
    found, missing = {}, []
    for member in spec.members:
        candidates = (raw_dir / member, raw_dir / PurePosixPath(member).name)
        path = next((c for c in candidates if c.is_file()), None)
        if path is None:
            missing.append(str(raw_dir / member))
        else:
            found[member] = path
    return found, missing


def locate_members(
    spec: ArchiveSpec, raw_dir: Path | None, work: Path, runner: StageRunner
) -> dict[str, Path]:
    """Local paths of ``spec.members`` (see the module docstring for where they come from)."""
    if raw_dir is not None:
        found, missing = _extracted_copy(spec, raw_dir)
        if not missing:
            return found
        archive = raw_dir / spec.filename
        if not archive.is_file():
            raise UserError(
                f"--raw-dir {raw_dir} holds neither {spec.filename} nor its extracted files; missing:\n  "
                + "\n  ".join(missing)
            )
    else:
        archive = work / "downloads" / spec.filename
        if not archive.is_file():
            download_archive(spec.urls, archive, verify=verify_tar)
    outputs = {member: work / "orig" / member for member in spec.members}
    runner.run(
        f"extract-{spec.filename}",
        [archive],
        list(outputs.values()),
        {"members": list(spec.members)},
        lambda temps: extract_members(archive, {m: temps[p] for m, p in outputs.items()}),
    )
    return outputs


def locate_all(
    specs: Sequence[ArchiveSpec], raw_dir: Path | None, work: Path, runner: StageRunner
) -> dict[str, Path]:
    """:func:`locate_members` for several archives; problems of all of them are reported together."""
    located: dict[str, Path] = {}
    problems = []
    for spec in specs:
        try:
            located.update(locate_members(spec, raw_dir, work, runner))
        except UserError as exc:
            problems.append(str(exc))
    if problems:
        raise UserError("\n".join(problems))
    return located
