"""The newest finished Wikipedia dump (``--wikipedia latest``): resumable download, checked against the
dump's published sha1 checksums.

Where the files come from (the layout of https://dumps.wikimedia.org, which its mirrors copy)::

    MIRROR/WIKI/                                      index of the dated dump directories YYYYMMDD/
    MIRROR/WIKI/latest/WIKI-latest-pages-articles-multistream.xml.bz2-rss.xml
                                                      its <link> ends with the newest file's dated directory
    MIRROR/WIKI/DATE/dumpstatus.json                  per job its status; per file size, url, md5, sha1
    MIRROR/WIKI/DATE/WIKI-DATE-sha1sums.txt           "<sha1>  <file name>" lines
    MIRROR/WIKI/DATE/WIKI-DATE-pages-articles-multistream.xml.bz2
    MIRROR/WIKI/DATE/WIKI-DATE-pages-articles-multistream-index.txt.bz2

A dated directory exists while its dump is still being written, so the dump used is the newest one whose job
writing the single multistream file is ``done``: ``articlesmultistreamdumprecombine`` on wikis dumped in
parts such as enwiki (there ``articlesmultistreamdump`` writes numbered part files), otherwise
``articlesmultistreamdump``. The RSS feed's dump is asked first; when it is not usable, the dated
directories are tried newest first. The dated file names are downloaded, never the ``latest`` ones, which
change under a resumed download when the next dump finishes.

Resuming and verifying: bytes go to ``NAME.part``, which survives an interruption (network error, Ctrl-C, a
killed job). The next attempt (at once while attempts make progress, else on the next run) hashes the bytes
already there and asks for the rest with ``Range: bytes=N-``; a server that answers ``200`` instead (no
range support) sends the whole file, and the partial file starts again from 0. Only when its size and sha1
match the published ones is ``NAME.part`` renamed to ``NAME`` and ``NAME.sha1-verified`` written
(``sha1sum -c`` format); a later run trusts ``NAME`` only together with that record (else hashes it again).
A sha1 mismatch deletes the partial file and is a :class:`~macaron_workflow.errors.UserError` naming the file
and
both checksums.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.errors import UserError, cannot_read, cannot_write, os_error_reason

DEFAULT_MIRROR = "https://dumps.wikimedia.org"
MIRROR_ENV = "WIKIPEDIA_DUMPS_MIRROR"
"""Environment variable naming another mirror with the same layout, e.g.
``https://ftp.acc.umu.se/mirror/wikimedia.org/dumps``."""

MULTISTREAM_JOBS = ("articlesmultistreamdumprecombine", "articlesmultistreamdump")
"""The jobs of ``dumpstatus.json`` that write the single multistream file; the first one present is used."""

USER_AGENT = "macaron-fairseq-preprocess (resumable Wikipedia dump download)"
RETRY_DELAY = 5.0
"""Seconds to wait before retrying an attempt that received nothing (tests set it to 0)."""
MAX_STALLED_ATTEMPTS = 3
"""Attempts in a row that receive nothing before a download gives up (its partial file is kept)."""

_BLOCK = 1 << 20
_SHA1 = re.compile(r"[0-9a-f]{40}")
_NETWORK_ERRORS = (OSError, http.client.HTTPException)  # urllib.error.URLError is an OSError


@dataclass(frozen=True)
class DumpFile:
    """One file of a dump: its upstream name, where to get it, and what it must be."""

    name: str
    url: str
    sha1: str
    size: int | None


@dataclass(frozen=True)
class WikipediaDump:
    """A finished dump: its date, the job that wrote it, the multistream file and its index."""

    wiki: str
    date: str
    job: str
    articles: DumpFile
    index: DumpFile


def download_latest_wikipedia(
    directory: Path, *, wiki: str = "enwiki", mirror: str | None = None, timeout: float = 60
) -> Path:
    """Download the newest finished dump's multistream file and its index into ``directory``.

    Returns the path of ``WIKI-DATE-pages-articles-multistream.xml.bz2``; the index
    ``WIKI-DATE-pages-articles-multistream-index.txt.bz2`` sits next to it. ``mirror`` defaults to
    ``$WIKIPEDIA_DUMPS_MIRROR``, else https://dumps.wikimedia.org. Files already verified are not fetched
    again; an interrupted download resumes where it stopped.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(directory, exc) from exc
    dump = find_latest_dump(wiki=wiki, mirror=mirror, timeout=timeout)
    print(f"{wiki} dump of {dump.date} ({dump.job} done)", file=sys.stderr, flush=True)
    for file in (dump.articles, dump.index):
        download_verified(file.url, directory / file.name, sha1=file.sha1, size=file.size, timeout=timeout)
    return directory / dump.articles.name


# --- finding the newest finished dump ---------------------------------------------------------------


def resolve_mirror(mirror: str | None = None) -> str:
    """``mirror``, else ``$WIKIPEDIA_DUMPS_MIRROR``, else dumps.wikimedia.org (without a trailing ``/``)."""
    return (mirror or os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR).rstrip("/")


def multistream_names(wiki: str, date: str) -> tuple[str, str]:
    """The upstream names of a dump's multistream file and of its index."""
    stem = f"{wiki}-{date}-pages-articles-multistream"
    return f"{stem}.xml.bz2", f"{stem}-index.txt.bz2"


def find_latest_dump(
    *, wiki: str = "enwiki", mirror: str | None = None, timeout: float = 60
) -> WikipediaDump:
    """The newest dump of ``wiki`` whose multistream job is done: the RSS feed's, else the newest listed."""
    mirror = resolve_mirror(mirror)
    why_not: dict[str, str] = {}
    rss_date = _rss_date(mirror, wiki, timeout)
    if rss_date and (dump := _finished_dump(mirror, wiki, rss_date, timeout, why_not)):
        return dump
    for date in _listed_dates(mirror, wiki, timeout):
        if date not in why_not and (dump := _finished_dump(mirror, wiki, date, timeout, why_not)):
            return dump
    checked = "".join(f"\n  {date}: {reason}" for date, reason in why_not.items()) or " (no dated dumps)"
    raise UserError(
        f"no finished {wiki} dump on {mirror}/{wiki}/:{checked}\n"
        f"try again later, or choose another mirror with {MIRROR_ENV}=URL"
    )


def _rss_date(mirror: str, wiki: str, timeout: float) -> str | None:
    """The date in the ``latest`` RSS feed of the multistream file, or ``None`` if there is no feed."""
    url = f"{mirror}/{wiki}/latest/{wiki}-latest-pages-articles-multistream.xml.bz2-rss.xml"
    body = fetch_small(url, timeout, missing_ok=True)
    match = re.search(rb"<link>[^<]*/(\d{8})/?\s*</link>", body or b"")
    return match.group(1).decode() if match else None


def _listed_dates(mirror: str, wiki: str, timeout: float) -> list[str]:
    """The dated directories ``YYYYMMDD/`` of the wiki's directory index, newest first."""
    url = f"{mirror}/{wiki}/"
    body = fetch_small(url, timeout, missing_ok=True)
    if body is None:
        raise UserError(
            f"{url}: HTTP Error 404: Not Found: no dumps of {wiki!r} on this mirror "
            "(wikis are named by database name: enwiki, dewiki, simplewiki, ...)"
        )
    found = re.findall(r'href="(?:[^"]*/)?(\d{8})/?"', body.decode("utf-8", "replace"))
    return sorted(set(found), reverse=True)


def _finished_dump(
    mirror: str, wiki: str, date: str, timeout: float, why_not: dict[str, str]
) -> WikipediaDump | None:
    """The dump of ``date`` if its multistream job is done; otherwise ``None``, and why in ``why_not``."""
    status_url = f"{mirror}/{wiki}/{date}/dumpstatus.json"
    body = fetch_small(status_url, timeout, missing_ok=True)
    try:
        jobs = json.loads(body)["jobs"] if body is not None else None
    except (ValueError, KeyError, TypeError):
        jobs = None
    if not isinstance(jobs, dict):
        why_not[date] = "no dumpstatus.json" if body is None else "unreadable dumpstatus.json"
        return None
    job_name = next((name for name in MULTISTREAM_JOBS if isinstance(jobs.get(name), dict)), None)
    if job_name is None:
        why_not[date] = f"dumpstatus.json has none of the jobs {', '.join(MULTISTREAM_JOBS)}"
        return None
    job = jobs[job_name]
    if job.get("status") != "done":
        why_not[date] = f"{job_name} is {job.get('status')!r}, not 'done'"
        return None
    files = job.get("files") if isinstance(job.get("files"), dict) else {}
    names = multistream_names(wiki, date)
    if missing := [name for name in names if not isinstance(files.get(name), dict)]:
        why_not[date] = f"{job_name} lists no {', '.join(missing)}"
        return None
    sha1s = {name: _sha1_of(files[name]) for name in names}
    if None in sha1s.values():
        sums = _published_sha1sums(mirror, wiki, date, timeout)
        sha1s = {name: sha1 or sums.get(name) for name, sha1 in sha1s.items()}
    if missing := [name for name, sha1 in sha1s.items() if sha1 is None]:
        why_not[date] = f"no published sha1 for {', '.join(missing)}"
        return None
    articles, index = (
        DumpFile(name, f"{mirror}/{wiki}/{date}/{name}", str(sha1s[name]), _size_of(files[name]))
        for name in names
    )
    return WikipediaDump(wiki, date, job_name, articles, index)


def _sha1_of(entry: dict[str, Any]) -> str | None:
    value = entry.get("sha1")
    return value.lower() if isinstance(value, str) and _SHA1.fullmatch(value.lower()) else None


def _size_of(entry: dict[str, Any]) -> int | None:
    value = entry.get("size")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _published_sha1sums(mirror: str, wiki: str, date: str, timeout: float) -> dict[str, str]:
    """``WIKI-DATE-sha1sums.txt`` as ``{file name: sha1}`` (empty if the file is missing)."""
    body = fetch_small(f"{mirror}/{wiki}/{date}/{wiki}-{date}-sha1sums.txt", timeout, missing_ok=True)
    sums = {}
    for line in (body or b"").decode("utf-8", "replace").splitlines():
        parts = line.split(maxsplit=1)
        if len(parts) == 2 and _SHA1.fullmatch(parts[0].lower()):
            sums[parts[1].strip().lstrip("*")] = parts[0].lower()
    return sums


# --- HTTP ------------------------------------------------------------------------------------------


def _request(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    return urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})


def _reason(exc: BaseException) -> str:
    """A network error in words (``Connection refused (ECONNREFUSED)``, ``timed out``, ...)."""
    cause = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return os_error_reason(cause) if isinstance(cause, OSError) else str(cause) or type(cause).__name__


def _unreachable(url: str, exc: BaseException) -> UserError:
    return UserError(
        f"cannot reach {url}: {_reason(exc)}; check the network connection, "
        f"or choose another mirror with {MIRROR_ENV}=URL"
    )


def fetch_small(url: str, timeout: float, *, missing_ok: bool = False) -> bytes | None:
    """The body of a small file (status, checksums, feed, directory index).

    HTTP 404 gives ``None`` when ``missing_ok``; other HTTP errors and an unreachable server are a
    ``UserError`` naming the URL.
    """
    try:
        with urllib.request.urlopen(_request(url), timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        exc.close()
        if missing_ok and exc.code == 404:
            return None
        raise UserError(f"{url}: HTTP Error {exc.code}: {exc.reason}") from exc
    except _NETWORK_ERRORS as exc:
        raise _unreachable(url, exc) from exc


# --- resumable, verified download --------------------------------------------------------------------


def partial_path(target: Path) -> Path:
    """Where the bytes of ``target`` are collected until they are verified: ``NAME.part``."""
    return target.with_name(target.name + ".part")


def record_path(target: Path) -> Path:
    """The record that ``target`` was verified: ``NAME.sha1-verified`` (``sha1sum -c`` format)."""
    return target.with_name(target.name + ".sha1-verified")


def download_verified(url: str, target: Path, *, sha1: str, size: int | None, timeout: float = 60) -> Path:
    """Make ``target`` the file at ``url`` whose sha1 is ``sha1`` (and size ``size``, if known).

    A ``target`` recorded as verified is kept without a request; an unrecorded one is hashed (and must
    match); otherwise the download continues ``NAME.part`` and renames it once it matches.
    """
    sha1 = sha1.lower()
    if _recorded_as_verified(target, sha1, size):
        print(f"{target.name}: already downloaded and verified", file=sys.stderr, flush=True)
        return target
    if target.exists():
        _verify_existing(target, sha1, size)
        return target
    partial = _Partial(partial_path(target), size)
    if size is None or partial.length != size:
        print(f"downloading {url}", file=sys.stderr, flush=True)
        with _byte_bar(size, f"download {target.name}", initial=partial.length) as progress:
            _fill(url, partial, size, timeout, progress)
    _accept(partial, target, url, sha1)
    return target


def _recorded_as_verified(target: Path, sha1: str, size: int | None) -> bool:
    """Whether ``NAME.sha1-verified`` vouches for ``target`` (same sha1, and the file has the size)."""
    try:
        recorded = record_path(target).read_text(encoding="utf-8").split()
        actual_size = target.stat().st_size
    except (OSError, UnicodeDecodeError):
        return False
    return bool(recorded) and recorded[0].lower() == sha1 and size in (None, actual_size)


def _verify_existing(target: Path, sha1: str, size: int | None) -> None:
    """Accept an existing ``target`` without a record if it matches (and record it), else fail."""
    actual_size = target.stat().st_size
    if size in (None, actual_size):
        actual, _ = _hash_prefix(target, actual_size, f"verify {target.name}")
        if actual.hexdigest() == sha1:
            _write_record(target, sha1)
            return
        problem = f"its sha1 is {actual.hexdigest()}, not the published {sha1}"
    else:
        problem = f"it has {actual_size} bytes, not the published {size}"
    raise UserError(
        f"{target} exists but is not the published file ({problem}); delete it (or move it away) and rerun"
    )


def _write_record(target: Path, sha1: str) -> None:
    try:
        write_text_atomically(record_path(target), f"{sha1}  {target.name}\n")
    except OSError as exc:
        raise cannot_write(record_path(target), exc) from exc


def _byte_bar(total: int | None, desc: str, initial: int = 0) -> tqdm:
    return tqdm(
        total=total, initial=initial, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr
    )


def _hash_prefix(path: Path, length: int, description: str) -> tuple[Any, int]:
    """The sha1 of the first ``length`` bytes of ``path`` (streamed) and how many bytes it covers."""
    digest = hashlib.sha1()
    done = 0
    try:
        with open(path, "rb") as handle, _byte_bar(length, description) as progress:
            while done < length and (block := handle.read(min(_BLOCK, length - done))):
                digest.update(block)
                done += len(block)
                progress.update(len(block))
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    return digest, done


class _TooLong(UserError):
    """The server sent more bytes than the published size."""


def _note(message: str) -> None:
    """A line on stderr that does not break a progress bar."""
    tqdm.write(message, file=sys.stderr)


class _Partial:
    """``NAME.part``: the bytes received so far (``length``) and their running sha1."""

    def __init__(self, path: Path, size: int | None) -> None:
        self.path = path
        self.sha1: Any = hashlib.sha1()
        self.length = 0
        try:
            existing = path.stat().st_size if path.exists() else 0
        except OSError as exc:
            raise cannot_read(path, exc) from exc
        if existing and (size is None or existing <= size):  # a longer one is not this file: start over
            self.sha1, self.length = _hash_prefix(path, existing, f"check {path.name}")

    def restart(self) -> None:
        """Forget the bytes received so far (the next :meth:`receive` truncates the file)."""
        self.sha1, self.length = hashlib.sha1(), 0

    def receive(self, response: http.client.HTTPResponse, size: int | None, progress: tqdm) -> None:
        """Append the response body; a write error is an ``OutputError``, a network error an ``OSError``
        (or ``HTTPException``)."""
        try:
            handle = open(self.path, "ab" if self.length else "wb")
        except OSError as exc:
            raise cannot_write(self.path, exc) from exc
        try:
            while block := response.read(_BLOCK):
                try:
                    handle.write(block)
                except OSError as exc:
                    raise cannot_write(self.path, exc) from exc
                self.sha1.update(block)
                self.length += len(block)
                progress.update(len(block))
                if size is not None and self.length > size:
                    raise _TooLong(
                        f"{response.geturl()} is longer than the published {size} bytes; the download was "
                        f"deleted: choose another mirror with {MIRROR_ENV}=URL"
                    )
        finally:
            try:
                handle.close()
            except OSError as exc:  # the last buffered block is written here (disk full shows here too)
                raise cannot_write(self.path, exc) from exc


def _fill(url: str, partial: _Partial, size: int | None, timeout: float, progress: tqdm) -> None:
    """Request the missing bytes until ``partial`` is complete; give up after attempts receiving nothing."""
    stalled = 0
    while True:
        before = partial.length
        try:
            if _attempt(url, partial, size, timeout, progress):
                return
            reason = "the connection closed early"
        except urllib.error.HTTPError as exc:
            exc.close()
            raise UserError(f"{url}: HTTP Error {exc.code}: {exc.reason}{_kept(partial)}") from exc
        except _TooLong:
            partial.path.unlink(missing_ok=True)
            raise
        except _NETWORK_ERRORS as exc:
            reason = _reason(exc)
        stalled = 0 if partial.length > before else stalled + 1
        if stalled >= MAX_STALLED_ATTEMPTS:
            advice = f"; check the network connection, or choose another mirror with {MIRROR_ENV}=URL"
            raise UserError(
                f"downloading {url} failed {stalled} times in a row: {reason}{_kept(partial) or advice}"
            )
        _note(f"{reason}; resuming {partial.path.name} at byte {partial.length}")
        if stalled:
            time.sleep(RETRY_DELAY)


def _kept(partial: _Partial) -> str:
    if not partial.length:
        return ""
    return f"; the {partial.length} bytes received are kept in {partial.path}: rerun to resume"


def _attempt(url: str, partial: _Partial, size: int | None, timeout: float, progress: tqdm) -> bool:
    """One request for the bytes ``partial`` lacks; whether ``partial`` then holds the whole file."""
    headers = {"Range": f"bytes={partial.length}-"} if partial.length else {}
    try:
        response = urllib.request.urlopen(_request(url, headers), timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code != 416 or not partial.length:
            raise
        exc.close()
        return _complete_after_416(exc, partial, size, progress)
    with response:
        if response.status == 206:
            start = _content_range_start(response.headers.get("Content-Range", ""))
            if start != partial.length:
                raise UserError(
                    f"{url}: asked for bytes {partial.length}- but the server sent "
                    f"Content-Range: {response.headers.get('Content-Range')}; choose another mirror with "
                    f"{MIRROR_ENV}=URL"
                )
        elif partial.length:
            _note(f"{url}: the server ignores Range requests; downloading from the start")
            partial.restart()
            progress.reset(total=size)
        announced = response.headers.get("Content-Length")
        end = partial.length + int(announced) if announced and announced.isdigit() else None
        partial.receive(response, size, progress)
    if size is not None:
        return partial.length == size
    return end is None or partial.length == end


def _content_range_start(header: str) -> int | None:
    """The first byte of ``Content-Range: bytes START-END/TOTAL``."""
    match = re.fullmatch(r"\s*bytes\s+(\d+)-\d+/(?:\d+|\*)\s*", header)
    return int(match.group(1)) if match else None


def _complete_after_416(
    exc: urllib.error.HTTPError, partial: _Partial, size: int | None, progress: tqdm
) -> bool:
    """``416 Range Not Satisfiable`` for ``bytes=N-``: complete if the file has N bytes, else start over."""
    match = re.fullmatch(
        r"\s*bytes\s+\*/(\d+)\s*", exc.headers.get("Content-Range", "") if exc.headers else ""
    )
    total = size if size is not None else int(match.group(1)) if match else None
    if total == partial.length:
        return True
    partial.restart()
    progress.reset(total=size)
    return False


def _accept(partial: _Partial, target: Path, url: str, sha1: str) -> None:
    """Rename the complete ``partial`` to ``target`` if its sha1 is the published one; else delete it."""
    actual = partial.sha1.hexdigest()
    if actual != sha1:
        partial.path.unlink(missing_ok=True)
        raise UserError(
            f"{target.name} (from {url}) does not match its published sha1:\n"
            f"  expected {sha1}\n  actual   {actual}\n"
            f"the corrupt download was deleted; rerun to download it again "
            f"(if this repeats, choose another mirror with {MIRROR_ENV}=URL)"
        )
    try:
        os.replace(partial.path, target)
    except OSError as exc:
        raise cannot_write(target, exc) from exc
    _write_record(target, sha1)
