"""Archive extraction errors are told apart by the side that failed: a damaged archive (delete it and get it
again) versus a destination that cannot be written (disk full, file-size limit, not a directory, permission),
which names the file being written and the errno and leaves the archive alone."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import REPO
from upstream_layouts import iwslt_members, write_tgz

from macaron_preprocess.iwslt14 import TEST_SETS
from macaron_preprocess.sources.archives import extract_members, verify_tar
from macaron_synthetic.toy_bitext import sentence_pairs
from macaron_workflow.errors import UserError

MEMBER = "corpus/train.en"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    lines = "".join(f"{en}\n" for en, _ in sentence_pairs(400, seed=5))
    return write_tgz(tmp_path / "corpus.tgz", {MEMBER: lines.encode(), "corpus/README": b"readme\n"})


def extraction_error(archive: Path, destination: Path) -> str:
    unchanged = archive.read_bytes()
    with pytest.raises(UserError) as caught:
        extract_members(archive, {MEMBER: destination})
    assert archive.read_bytes() == unchanged
    return str(caught.value)


def assert_output_side(message: str, destination: Path, reason: str) -> None:
    assert message.startswith(f"cannot write {destination}: {reason}"), message
    assert "corrupt" not in message and "delete" not in message and "get it again" not in message


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux), which is always full")
def test_a_full_disk_is_not_a_corrupt_archive(archive: Path) -> None:
    message = extraction_error(archive, Path("/dev/full"))
    assert_output_side(message, Path("/dev/full"), "No space left on device (ENOSPC); make room")


def test_a_destination_folder_that_is_a_file(archive: Path, tmp_path: Path) -> None:
    (tmp_path / "orig").write_text("a file where the output folder should be")
    destination = tmp_path / "orig" / "train.en"
    assert_output_side(extraction_error(archive, destination), destination, "Not a directory (ENOTDIR)")


def test_a_destination_without_write_permission(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    destination = tmp_path / "train.en"
    real_open = open

    def read_only_folder(file, mode="r", *args, **kwargs):  # tests run as root: chmod cannot refuse writing
        if Path(file) == destination and "w" in mode:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", read_only_folder)
    assert_output_side(extraction_error(archive, destination), destination, "Permission denied (EACCES)")


def test_a_truncated_archive_still_says_delete_it_and_get_it_again(archive: Path, tmp_path: Path) -> None:
    archive.write_bytes(archive.read_bytes()[:-200])
    message = extraction_error(archive, tmp_path / "train.en")
    assert message.startswith(f"archive {archive} is truncated or corrupt (")
    assert message.endswith("; delete it and get it again")


def test_an_unreadable_archive_is_not_called_corrupt(
    archive: Path, tmp_path: Path, deny_reading: Callable[[Path], None]
) -> None:
    deny_reading(archive)
    for check in (lambda: verify_tar(archive), lambda: extract_members(archive, {MEMBER: tmp_path / "x"})):
        with pytest.raises(UserError) as caught:
            check()
        assert str(caught.value) == f"cannot read {archive}: Permission denied (EACCES)"


LIMITED_FILE_SIZE = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # so that a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 10, 16 << 10))
sys.argv = ["macaron_preprocess.iwslt14", *sys.argv[1:]]
runpy.run_module("macaron_preprocess.iwslt14", run_name="__main__", alter_sys=True)
"""
"""``python -c LIMITED_FILE_SIZE ARGS``: ``python -m macaron_preprocess.iwslt14 ARGS`` unable to write past
16 KiB, the way a full disk stops it (only the test's child is limited, and no mount is needed)."""


def test_file_size_limit_ends_the_cli_with_an_output_side_error(tmp_path: Path) -> None:
    talks = [[(de, en) for en, de in sentence_pairs(300, seed=9)]]  # train.tags members of about 20 KB
    tests = {name: sentence_pairs(3, seed=i) for i, name in enumerate(TEST_SETS)}
    members = iwslt_members(talks, tests)
    assert all(len(data) > 16 << 10 for name, data in members.items() if "train.tags" in name)
    write_tgz(tmp_path / "raw" / "de-en.tgz", members)
    dest = tmp_path / "out"
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run(
        [sys.executable, "-c", LIMITED_FILE_SIZE, "--dest", str(dest), "--raw-dir", str(tmp_path / "raw")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    prog = "python -m macaron_preprocess.iwslt14: "  # the program name starts its one error line (#34)
    error = [line.removeprefix(prog) for line in result.stderr.splitlines() if line.startswith(prog)]
    assert len(error) == 1 and "Traceback" not in result.stderr, result.stderr
    assert error[0].startswith(f"error: cannot write {dest / 'work' / 'orig' / 'de-en'}/.train.tags.de-en.")
    assert ": File too large (EFBIG); raise the file-size limit (ulimit -f)" in error[0]
    assert "corrupt" not in result.stderr and "delete" not in result.stderr
    assert not list((dest / "work" / "orig").rglob("*.tmp-*"))  # the partial member was removed
