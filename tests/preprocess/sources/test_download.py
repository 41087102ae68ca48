"""Downloading archives from a local HTTP server: mirror fallback, integrity check, nothing half-written."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from upstream_layouts import write_tgz

from macaron_preprocess.sources.archives import verify_tar
from macaron_preprocess.sources.download import download_archive
from macaron_workflow import files
from macaron_workflow.atomic import temporary_path
from macaron_workflow.errors import UserError


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output free of one access-log line per request."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_falls_back_to_the_second_mirror(server: tuple[str, Path], tmp_path: Path) -> None:
    url, root = server
    write_tgz(root / "de-en.tgz", {"de-en/a.txt": b"hello\n"})
    target = tmp_path / "downloads" / "de-en.tgz"
    download_archive([f"{url}/missing/de-en.tgz", f"{url}/de-en.tgz"], target, verify=verify_tar)
    assert target.read_bytes() == (root / "de-en.tgz").read_bytes()
    assert list(target.parent.iterdir()) == [target]


def test_corrupt_download_is_refused_and_not_kept(server: tuple[str, Path], tmp_path: Path) -> None:
    url, root = server
    data = write_tgz(root / "full.tgz", {"x": b"y" * 100000}).read_bytes()
    (root / "de-en.tgz").write_bytes(data[: len(data) // 2])
    target = tmp_path / "downloads" / "de-en.tgz"
    with pytest.raises(UserError) as info:
        download_archive([f"{url}/nothing-here.tgz", f"{url}/de-en.tgz"], target, verify=verify_tar)
    message = str(info.value)
    assert "nothing-here.tgz: HTTP Error 404" in message and "truncated or corrupt" in message
    assert "--raw-dir" in message
    assert list(target.parent.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux), which is always full")
def test_a_full_disk_stops_the_download_and_blames_no_mirror(
    server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = server
    write_tgz(root / "de-en.tgz", {"x": b"y" * 100000})
    target = tmp_path / "downloads" / "de-en.tgz"
    target.parent.mkdir()
    real_open = open

    def full_disk_open(path: object, *args: object, **kwargs: object) -> object:
        """The download's temporary file is on a full "disk" (its writes go to /dev/full)."""
        full = Path(str(path)) == temporary_path(target)
        return real_open("/dev/full" if full else path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(files, "open", full_disk_open, raising=False)
    with pytest.raises(UserError) as info:
        download_archive([f"{url}/de-en.tgz", f"{url}/de-en.tgz"], target, verify=verify_tar)
    message = str(info.value)
    assert message.startswith(f"cannot write {temporary_path(target)}: No space left on device (ENOSPC)")
    assert "could not download" not in message and "--raw-dir" not in message  # no mirror is to blame
    assert not target.exists() and Path("/dev/full").exists()
