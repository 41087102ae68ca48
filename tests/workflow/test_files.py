"""Line-oriented file access (workflow.files): lines as fairseq counts them."""

from __future__ import annotations

from pathlib import Path

from workflow.files import count_lines, iter_lines


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
