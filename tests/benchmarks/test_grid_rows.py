"""benchmarks.grid_rows: the row file and the protocol claim every benchmark grid uses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks import grid_rows


@dataclass(frozen=True)
class Protocol:
    updates: int = 10
    lrs: tuple[float, ...] = (1e-3,)


def test_rows_survive_a_line_cut_by_a_kill(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.jsonl"
    grid_rows.append_row(path, {"run": 1})
    with path.open("a") as f:
        f.write('{"run": 2, "lo')  # killed while writing
    grid_rows.append_row(path, {"run": 3})
    assert grid_rows.read_rows(path) == [{"run": 1}, {"run": 3}]
    assert f"{path}:2: not a JSON row, ignored (its run is redone)" in capsys.readouterr().err
    assert grid_rows.read_rows(tmp_path / "none.jsonl") == []


def test_an_out_dir_keeps_the_protocol_it_was_claimed_for(tmp_path: Path) -> None:
    grid_rows.claim_out_dir(tmp_path / "out", Protocol())
    grid_rows.claim_out_dir(tmp_path / "out", Protocol())  # the same protocol: resumes
    assert (tmp_path / "out" / "protocol.json").read_text() == (
        '{\n  "updates": 10,\n  "lrs": [\n    0.001\n  ]\n}\n'
    )
    with pytest.raises(SystemExit, match="holds runs of another protocol"):
        grid_rows.claim_out_dir(tmp_path / "out", Protocol(updates=20))
