"""Line-oriented file access (macaron_workflow.files): lines as fairseq counts them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from macaron_workflow.errors import UserError
from macaron_workflow.files import (
    UTF8_BOM,
    OutputFile,
    count_lines,
    iter_lines,
    open_text_input,
    require_files,
)

DenyReading = Callable[[Path], None]  # the deny_reading fixture (tests/conftest.py)


def test_count_lines_matches_line_iteration(tmp_path: Path) -> None:
    cases = {
        "plain": b"a\nb\n",
        "no-final-newline": b"a\nb",
        "empty": b"",
        "crlf": b"a\r\nb\r\n",
        "unicode-separators": "x\u2028y\x85z\n".encode(),  # one line for fairseq, three for splitlines()
    }
    expected = {"plain": 2, "no-final-newline": 2, "empty": 0, "crlf": 2, "unicode-separators": 1}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert count_lines(path) == expected[name] == len(list(iter_lines(path))), name
    assert list(iter_lines(tmp_path / "crlf")) == [b"a", b"b"]


def test_a_byte_order_mark_starts_no_line(tmp_path: Path) -> None:
    with_bom, without = tmp_path / "bom.txt", tmp_path / "plain.txt"
    with_bom.write_bytes(UTF8_BOM + b"Hello\r\nworld\n")
    without.write_bytes(b"Hello\r\nworld\n")
    assert list(iter_lines(with_bom)) == list(iter_lines(without)) == [b"Hello", b"world"]
    assert count_lines(with_bom) == 2
    (tmp_path / "only-bom").write_bytes(UTF8_BOM)
    assert list(iter_lines(tmp_path / "only-bom")) == [b""]  # still one (empty) line, as fairseq counts
    with open_text_input(with_bom) as handle:  # for csv-style readers (GLUE's MRPC files start with one)
        assert handle.read() == "Hello\r\nworld\n"


def test_only_the_mark_at_the_start_of_a_file_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "inner.txt"
    path.write_bytes(b"a\n" + UTF8_BOM + b"b\n")  # U+FEFF inside the text is text (a zero-width space)
    assert list(iter_lines(path)) == [b"a", UTF8_BOM + b"b"]


def test_missing_and_unreadable_inputs_are_all_named(tmp_path: Path, deny_reading: DenyReading) -> None:
    readable, locked, folder = tmp_path / "ok.txt", tmp_path / "locked.txt", tmp_path / "folder.txt"
    readable.write_text("x\n")
    locked.write_text("x\n")
    folder.mkdir()
    deny_reading(locked)  # tests run as root, where chmod 000 does not stop reading
    with pytest.raises(UserError) as caught:
        require_files([readable, tmp_path / "gone.txt", locked, folder], "input files")
    assert str(caught.value).splitlines() == [
        "missing input files:",
        f"  {tmp_path / 'gone.txt'}",
        f"cannot read {locked} (one of the input files): Permission denied (EACCES)",
        f"cannot read {folder} (one of the input files): it is a directory, not a file",
    ]
    require_files([readable], "input files")  # no complaint about a good file


def test_reading_an_unreadable_file_names_it(tmp_path: Path, deny_reading: DenyReading) -> None:
    locked = tmp_path / "locked.txt"
    locked.write_text("x\n")
    deny_reading(locked)
    denied = rf"^cannot read {re.escape(str(locked))}: Permission denied \(EACCES\)$"
    for read in (count_lines, lambda path: list(iter_lines(path))):
        with pytest.raises(UserError, match=denied):
            read(locked)
    with pytest.raises(UserError, match=rf"^cannot read {re.escape(str(tmp_path))}: Is a directory \(EISDIR"):
        count_lines(tmp_path)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("size", [10, 3 << 20], ids=["buffered, fails on close", "fails on write"])
def test_output_file_names_itself_and_the_errno_when_the_disk_is_full(size: int) -> None:
    with pytest.raises(UserError) as caught, OutputFile(Path("/dev/full")) as out:  # always "disk full"
        out.write(b"x" * size)
    assert str(caught.value).startswith("cannot write /dev/full: No space left on device (ENOSPC); make room")


def test_output_file_that_cannot_be_created(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    target = not_a_directory / "x"
    with pytest.raises(UserError) as caught:
        OutputFile(target)
    assert str(caught.value) == f"cannot write {target}: Not a directory (ENOTDIR)"
