"""Downloading the newest finished Wikipedia dump from a local server in the dumps.wikimedia.org layout:
choosing the dump, resuming with Range requests, sha1 verification, and the errors a user sees."""

from __future__ import annotations

import bz2
import hashlib
import http.server
import json
import random
import re
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from macaron_preprocess.sources import wikipedia_download
from macaron_preprocess.sources.wikipedia_download import (
    MIRROR_ENV,
    download_latest_wikipedia,
    download_verified,
    find_latest_dump,
    partial_path,
    record_path,
)
from macaron_workflow.errors import OutputError, UserError

WIKI = "enwiki"
DONE = "20261101"
NEWER = "20261201"
DUMP = f"{WIKI}-{DONE}-pages-articles-multistream.xml.bz2"
INDEX = f"{WIKI}-{DONE}-pages-articles-multistream-index.txt.bz2"
DUMP_PATH = f"/{WIKI}/{DONE}/{DUMP}"
INDEX_PATH = f"/{WIKI}/{DONE}/{INDEX}"
RECOMBINE = "articlesmultistreamdumprecombine"
MULTISTREAM = "articlesmultistreamdump"


# --- the upstream layout ---------------------------------------------------------------------------


def multistream_dump(pages: int, seed: int) -> tuple[bytes, bytes]:
    """A pages-articles-multistream.xml.bz2 (a siteinfo stream, then one bz2 stream per 10 pages, then the
    closing tag) and its index ("offset:page_id:title" lines, bz2-compressed)."""
    rng = random.Random(seed)
    streams = [
        bz2.compress(b'<mediawiki xml:lang="en">\n  <siteinfo><sitename>Wikipedia</sitename></siteinfo>\n')
    ]
    index_lines = []
    offset = len(streams[0])
    for first in range(1, pages + 1, 10):
        xml = b""
        for page_id in range(first, min(first + 10, pages + 1)):
            title = f"Page {page_id}"
            words = " ".join(
                "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(120)
            )
            revision = f"<revision><text>{words}</text></revision>"
            xml += f"  <page><title>{title}</title><ns>0</ns><id>{page_id}</id>{revision}</page>\n".encode()
            index_lines.append(f"{offset}:{page_id}:{title}\n")
        streams.append(bz2.compress(xml))
        offset += len(streams[-1])
    streams.append(bz2.compress(b"</mediawiki>\n"))
    return b"".join(streams), bz2.compress("".join(index_lines).encode())


def _file_entry(wiki: str, date: str, name: str, data: bytes, with_sha1: bool) -> dict[str, object]:
    entry: dict[str, object] = {
        "size": len(data),
        "url": f"/{wiki}/{date}/{name}",
        "md5": hashlib.md5(data).hexdigest(),
    }
    if with_sha1:
        entry["sha1"] = hashlib.sha1(data).hexdigest()
    return entry


def write_dump(
    root: Path,
    date: str,
    *,
    wiki: str = WIKI,
    status: str = "done",
    recombine: bool = True,
    sha1_in_status: bool = True,
    seed: int = 0,
) -> dict[str, bytes]:
    """A dated dump directory: dumpstatus.json (as the dumps' StatusAPI writes it), the md5/sha1 sums files,
    and (when done) the multistream file and its index. Returns the files' contents by name.

    ``recombine``: a wiki dumped in parts (enwiki): ``articlesmultistreamdump`` writes part files and
    ``articlesmultistreamdumprecombine`` the single file; otherwise (small wikis) the first one writes it."""
    directory = root / wiki / date
    directory.mkdir(parents=True)
    dump_name = f"{wiki}-{date}-pages-articles-multistream.xml.bz2"
    index_name = f"{wiki}-{date}-pages-articles-multistream-index.txt.bz2"
    dump, index = multistream_dump(pages=60, seed=seed)
    files = {dump_name: dump, index_name: index}
    parts = {
        f"{wiki}-{date}-pages-articles-multistream1.xml-p1p41242.bz2": b"part",
        f"{wiki}-{date}-pages-articles-multistream-index1.txt-p1p41242.bz2": b"index part",
    }
    single_status = status
    jobs: dict[str, object] = {
        "xmlstubsdump": {"status": "done", "updated": "2026-11-01 10:37:39", "files": {}},
        "articlesdump": {"status": "done", "updated": "2026-11-01 20:00:00", "files": {}},
    }
    if recombine:
        jobs[MULTISTREAM] = {
            "status": "done",
            "updated": "2026-11-02 05:00:00",
            "files": {name: _file_entry(wiki, date, name, data, True) for name, data in parts.items()},
        }
    job_files = (
        {name: _file_entry(wiki, date, name, data, sha1_in_status) for name, data in files.items()}
        if single_status == "done"
        else {name: {} for name in files}
    )
    jobs[RECOMBINE if recombine else MULTISTREAM] = {
        "status": single_status,
        "updated": "2026-11-02 10:11:12",
        "files": job_files,
    }
    (directory / "dumpstatus.json").write_text(json.dumps({"jobs": jobs, "version": "0.8"}))
    if single_status == "done":
        for name, data in files.items():
            (directory / name).write_bytes(data)
        for algorithm in ("md5", "sha1"):
            lines = "".join(
                f"{hashlib.new(algorithm, data).hexdigest()}  {name}\n" for name, data in files.items()
            )
            (directory / f"{wiki}-{date}-{algorithm}sums.txt").write_text(lines)
    return files


def write_latest_feed(root: Path, date: str, wiki: str = WIKI) -> None:
    """latest/WIKI-latest-pages-articles-multistream.xml.bz2-rss.xml as the dumps' feed template writes it
    (its links name the real host: only the date in them may be used)."""
    link = f"https://dumps.wikimedia.org/{wiki}/{date}"
    name = f"{wiki}-{date}-pages-articles-multistream.xml.bz2"
    feed = f"""<?xml version="1.0"?>
<rss version="2.0">
        <channel>
                <title>pages-articles-multistream.xml.bz2</title>
                <link>{link}</link>
                <description>Wikimedia dump updates for {wiki}</description>
                <item>
                        <title>{link}</title>
                        <link>{link}</link>
                        <description>&lt;a href="{link}/{name}"&gt;{name}&lt;/a&gt;</description>
                        <pubDate>Mon, 02 Nov 2026 10:11:12 GMT</pubDate>
                </item>
        </channel>
</rss>
"""
    latest = root / wiki / "latest"
    latest.mkdir(parents=True, exist_ok=True)
    (latest / f"{wiki}-latest-pages-articles-multistream.xml.bz2-rss.xml").write_text(feed)


# --- a server that understands Range, and can ignore it or break off --------------------------------


@dataclass
class DumpServer:
    url: str
    root: Path
    ignore_range: bool = False
    script: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """per path, what its next requests get instead of the file: ("drop", K) sends the first K bytes of
    the answer and closes the connection; ("status", CODE) answers with that HTTP error"""
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    """(path, Range header) of every request, in order"""

    def requested(self, path: str) -> list[str | None]:
        """The Range headers of the requests for ``path``."""
        return [range_ for requested, range_ in self.requests if requested == path]


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """GET with ``Range: bytes=N-`` (206, 416), directory indexes like nginx's autoindex, and the
    misbehaviours a test asks for."""

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output free of one access-log line per request."""

    @property
    def dumps(self) -> DumpServer:
        return self.server.dumps  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        dumps = self.dumps
        range_header = self.headers.get("Range")
        dumps.requests.append((self.path, range_header))
        action, value = dumps.script[self.path].pop(0) if dumps.script.get(self.path) else ("serve", 0)
        if action == "status":
            self.send_error(value)
            return
        local = dumps.root / urllib.parse.unquote(self.path.lstrip("/"))
        if local.is_dir():
            links = "".join(
                f'<a href="{p.name}{"/" if p.is_dir() else ""}">{p.name}</a>\n'
                for p in sorted(local.iterdir())
            )
            self._answer(200, f"<html><body><pre>{links}</pre></body></html>".encode(), {})
            return
        if not local.is_file():
            self.send_error(404)
            return
        data = local.read_bytes()
        if range_header is None or dumps.ignore_range:
            self._answer(200, data, {}, drop_after=value if action == "drop" else None)
            return
        start = int(re.fullmatch(r"bytes=(\d+)-", range_header).group(1))  # type: ignore[union-attr]
        if start >= len(data):
            self._answer(416, b"", {"Content-Range": f"bytes */{len(data)}"})
            return
        headers = {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
        self._answer(206, data[start:], headers, drop_after=value if action == "drop" else None)

    def _answer(self, code: int, body: bytes, headers: dict[str, str], drop_after: int | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "none" if self.dumps.ignore_range else "bytes")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body if drop_after is None else body[:drop_after])
        self.close_connection = True


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DumpServer]:
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    dumps = DumpServer(url=f"http://127.0.0.1:{httpd.server_address[1]}", root=root)
    httpd.dumps = dumps  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield dumps
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    """The folder the dump is downloaded into."""
    (tmp_path / "downloads").mkdir()
    return tmp_path / "downloads"


@pytest.fixture(autouse=True)
def no_retry_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wikipedia_download, "RETRY_DELAY", 0)
    monkeypatch.delenv(MIRROR_ENV, raising=False)


@pytest.fixture
def published(server: DumpServer) -> dict[str, bytes]:
    """enwiki with a finished dump 20261101 that the latest feed points to."""
    files = write_dump(server.root, DONE)
    write_latest_feed(server.root, DONE)
    return files


def assert_downloaded(directory: Path, files: dict[str, bytes]) -> None:
    """Exactly the files and their verification records, nothing partial."""
    expected = set(files) | {record_path(directory / name).name for name in files}
    assert {p.name for p in directory.iterdir()} == expected
    for name, data in files.items():
        assert (directory / name).read_bytes() == data
        assert record_path(directory / name).read_text() == f"{hashlib.sha1(data).hexdigest()}  {name}\n"


# --- tests -------------------------------------------------------------------------------------------


def test_fresh_download_is_verified_and_recorded(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    directory = downloads / "wikipedia"
    path = download_latest_wikipedia(directory, mirror=server.url)
    assert path == directory / DUMP
    assert_downloaded(directory, published)
    assert bz2.decompress(path.read_bytes()).startswith(b'<mediawiki xml:lang="en">')
    assert server.requested(DUMP_PATH) == [None] and server.requested(INDEX_PATH) == [None]
    assert not any(path.startswith(f"/{WIKI}/latest/{WIKI}-latest-pages") and path.endswith(".bz2")
                   for path, _ in server.requests)  # fmt: skip  # the dated names, never the latest ones


def test_an_interrupted_download_resumes_with_a_range_request(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    server.script[DUMP_PATH] = [("drop", 20000)]
    path = download_latest_wikipedia(downloads, mirror=server.url)
    assert server.requested(DUMP_PATH) == [None, "bytes=20000-"]
    assert path.read_bytes() == published[DUMP]
    assert_downloaded(downloads, published)


def test_a_rerun_resumes_the_partial_file_of_a_failed_run(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    server.script[DUMP_PATH] = [("drop", 20000), ("status", 503)]
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, mirror=server.url)
    message = str(info.value)
    assert f"{server.url}{DUMP_PATH}: HTTP Error 503" in message
    assert f"20000 bytes received are kept in {partial_path(downloads / DUMP)}: rerun to resume" in message
    assert partial_path(downloads / DUMP).read_bytes() == published[DUMP][:20000]
    assert not (downloads / DUMP).exists()

    server.requests.clear()
    download_latest_wikipedia(downloads, mirror=server.url)
    assert server.requested(DUMP_PATH) == ["bytes=20000-"]
    assert_downloaded(downloads, published)


def test_a_partial_file_left_by_a_killed_run_is_continued(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    partial_path(downloads / DUMP).write_bytes(published[DUMP][:12345])
    download_latest_wikipedia(downloads, mirror=server.url)
    assert server.requested(DUMP_PATH) == ["bytes=12345-"]
    assert_downloaded(downloads, published)


def test_a_partial_file_longer_than_the_published_size_is_started_again(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    partial_path(downloads / DUMP).write_bytes(published[DUMP] + b"more")
    download_latest_wikipedia(downloads, mirror=server.url)
    assert server.requested(DUMP_PATH) == [None]
    assert_downloaded(downloads, published)


def test_attempts_that_receive_nothing_end_the_download(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    server.script[DUMP_PATH] = [("drop", 5000)] + [("drop", 0)] * 3
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, mirror=server.url)
    assert str(info.value) == (
        f"downloading {server.url}{DUMP_PATH} failed 3 times in a row: the connection closed early; "
        f"the 5000 bytes received are kept in {partial_path(downloads / DUMP)}: rerun to resume"
    )
    assert server.requested(DUMP_PATH) == [None] + ["bytes=5000-"] * 3


def test_a_server_without_range_support_restarts_from_zero(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    server.ignore_range = True
    partial_path(downloads / DUMP).write_bytes(published[DUMP][:12345])
    download_latest_wikipedia(downloads, mirror=server.url)
    assert server.requested(DUMP_PATH) == ["bytes=12345-"]  # answered with 200 and the whole file
    assert_downloaded(downloads, published)


def test_a_corrupt_file_on_the_server_is_a_checksum_error_and_is_not_kept(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    served = server.root / WIKI / DONE / DUMP
    corrupt = bytearray(published[DUMP])
    corrupt[len(corrupt) // 2] ^= 0xFF
    served.write_bytes(bytes(corrupt))
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, mirror=server.url)
    message = str(info.value)
    assert DUMP in message and "rerun" in message
    assert f"expected {hashlib.sha1(published[DUMP]).hexdigest()}" in message
    assert f"actual   {hashlib.sha1(bytes(corrupt)).hexdigest()}" in message
    assert list(downloads.iterdir()) == []  # no final file, no partial file, no record


def test_a_longer_file_on_the_server_is_refused(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    (server.root / WIKI / DONE / DUMP).write_bytes(published[DUMP] + b"trailing garbage")
    with pytest.raises(UserError, match="is longer than the published"):
        download_latest_wikipedia(downloads, mirror=server.url)
    assert list(downloads.iterdir()) == []


@pytest.mark.parametrize("feed", ["no feed", "feed names the unfinished dump"])
def test_an_unfinished_newest_dump_falls_back_to_the_previous_finished_one(
    server: DumpServer, downloads: Path, feed: str
) -> None:
    files = write_dump(server.root, DONE)
    write_dump(server.root, NEWER, status="in-progress", seed=1)  # its part files are done already
    write_dump(server.root, "20261020", seed=2)  # an older finished one
    if feed != "no feed":
        write_latest_feed(server.root, NEWER)
    path = download_latest_wikipedia(downloads, mirror=server.url)
    assert path == downloads / DUMP
    assert_downloaded(downloads, files)
    assert f"/{WIKI}/20261020/dumpstatus.json" not in [p for p, _ in server.requests]


def test_a_wiki_without_a_recombine_job_uses_the_multistream_job(server: DumpServer, downloads: Path) -> None:
    files = write_dump(server.root, DONE, wiki="simplewiki", recombine=False)
    dump = find_latest_dump(wiki="simplewiki", mirror=server.url)
    assert (dump.date, dump.job) == (DONE, MULTISTREAM)
    path = download_latest_wikipedia(downloads, wiki="simplewiki", mirror=server.url)
    assert path.name == f"simplewiki-{DONE}-pages-articles-multistream.xml.bz2"
    assert_downloaded(downloads, files)


def test_no_finished_dump_says_which_dumps_were_checked(server: DumpServer, downloads: Path) -> None:
    write_dump(server.root, NEWER, status="waiting")
    (server.root / WIKI / DONE).mkdir()  # a dated directory without dumpstatus.json
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, mirror=server.url)
    message = str(info.value)
    assert f"no finished {WIKI} dump on {server.url}/{WIKI}/" in message
    assert f"{NEWER}: {RECOMBINE} is 'waiting', not 'done'" in message
    assert f"{DONE}: no dumpstatus.json" in message
    assert MIRROR_ENV in message
    assert list(downloads.iterdir()) == []


def test_verified_files_are_not_requested_again(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    download_latest_wikipedia(downloads, mirror=server.url)
    server.requests.clear()
    assert download_latest_wikipedia(downloads, mirror=server.url) == downloads / DUMP
    assert server.requested(DUMP_PATH) == [] and server.requested(INDEX_PATH) == []
    assert_downloaded(downloads, published)


def test_a_final_file_without_a_record_is_verified_instead_of_downloaded(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    (downloads / DUMP).write_bytes(published[DUMP])  # e.g. killed between the rename and the record
    download_latest_wikipedia(downloads, mirror=server.url)
    assert server.requested(DUMP_PATH) == []
    assert_downloaded(downloads, published)


def test_a_final_file_that_does_not_match_is_an_error(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    (downloads / DUMP).write_bytes(published[DUMP][:-1] + b"X")
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, mirror=server.url)
    message = str(info.value)
    assert f"{downloads / DUMP} exists but is not the published file" in message
    assert f"not the published {hashlib.sha1(published[DUMP]).hexdigest()}" in message
    assert "delete it" in message
    assert (downloads / DUMP).exists() and server.requested(DUMP_PATH) == []


def test_a_complete_partial_file_is_verified_without_a_request(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    partial_path(downloads / DUMP).write_bytes(published[DUMP])  # killed before the rename
    download_latest_wikipedia(downloads, mirror=server.url)
    assert server.requested(DUMP_PATH) == []
    assert_downloaded(downloads, published)


def test_range_not_satisfiable_means_complete_when_the_size_is_unknown(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    target = downloads / DUMP
    partial_path(target).write_bytes(published[DUMP])
    sha1 = hashlib.sha1(published[DUMP]).hexdigest()
    download_verified(f"{server.url}{DUMP_PATH}", target, sha1=sha1, size=None)
    assert server.requested(DUMP_PATH) == [f"bytes={len(published[DUMP])}-"]  # answered 416
    assert target.read_bytes() == published[DUMP] and not partial_path(target).exists()


def test_a_missing_sha1_in_dumpstatus_is_taken_from_the_sha1sums_file(
    server: DumpServer, downloads: Path
) -> None:
    files = write_dump(server.root, DONE, sha1_in_status=False)
    write_latest_feed(server.root, DONE)
    download_latest_wikipedia(downloads, mirror=server.url)
    assert f"/{WIKI}/{DONE}/{WIKI}-{DONE}-sha1sums.txt" in [p for p, _ in server.requests]
    assert_downloaded(downloads, files)


def test_a_missing_file_is_an_error_naming_its_url(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    (server.root / WIKI / DONE / INDEX).unlink()
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, mirror=server.url)
    assert str(info.value) == f"{server.url}{INDEX_PATH}: HTTP Error 404: Not Found"
    assert (downloads / DUMP).exists()  # the dump itself was verified and stays


def test_an_unknown_wiki_is_an_error_naming_the_url(server: DumpServer, downloads: Path) -> None:
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, wiki="xxwiki", mirror=server.url)
    assert str(info.value).startswith(f"{server.url}/xxwiki/: HTTP Error 404: Not Found")


def test_an_unreachable_mirror_is_an_error_naming_the_url(downloads: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(UserError) as info:
        download_latest_wikipedia(downloads, mirror=f"http://127.0.0.1:{port}")
    message = str(info.value)
    assert message.startswith(f"cannot reach http://127.0.0.1:{port}/{WIKI}/latest/")
    assert "Connection refused" in message and MIRROR_ENV in message


def test_the_mirror_can_be_chosen_by_environment_variable(
    server: DumpServer, downloads: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = server.root / "mirror" / "wikimedia.org" / "dumps"  # a mirror below a path, like ftp.acc.umu.se
    files = write_dump(prefix, DONE)
    write_latest_feed(prefix, DONE)
    monkeypatch.setenv(MIRROR_ENV, f"{server.url}/mirror/wikimedia.org/dumps/")
    download_latest_wikipedia(downloads)
    assert_downloaded(downloads, files)
    assert server.requested(f"/mirror/wikimedia.org/dumps{DUMP_PATH}") == [None]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux), which is always full")
def test_a_full_disk_is_an_output_error_naming_the_file(
    server: DumpServer, published: dict[str, bytes], downloads: Path
) -> None:
    partial_path(downloads / DUMP).symlink_to("/dev/full")
    with pytest.raises(OutputError) as info:
        download_latest_wikipedia(downloads, mirror=server.url)
    assert str(info.value).startswith(
        f"cannot write {partial_path(downloads / DUMP)}: No space left on device"
    )
    assert not (downloads / DUMP).exists()
