"""benchmarks.real_text_grid, the machinery both real-text grids share: resumable runs, attempts, the grid on
macaron_workflow.grid publishing the results file and plot after every run, atomic figures; and the docs
blocks' layout they share (benchmarks.reports.real_text)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks import real_text_grid as grid
from benchmarks.reports import real_text
from macaron_workflow.grid import RowFile, Slot


@dataclass(frozen=True, order=True)
class Key:
    arm: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.arm}-s{self.seed}"


def finished(row: dict) -> bool:
    return row.get("rc") == 0


def publication(tmp_path: Path, wanted: list[Key], plots: list[int]) -> grid.Publication:
    def results(rows: list[dict]) -> dict[str, Any]:
        return {"seeds": sorted({k.seed for k in wanted}), "arms": ["a", "b"], "rows": rows}

    def plot(r: dict, path: Path) -> None:
        plots.append(len(r["rows"]))
        path.write_text(str(len(r["rows"])))

    machine = {"date": "d", "cpu": "c", "usable_cores": 1, "load_average_1min_at_start": 0.0}
    return grid.Publication(
        RowFile(tmp_path),
        wanted,
        finished,
        results,
        plot,
        machine,
        tmp_path / "out.json",
        tmp_path / "out.png",
    )


def test_a_grid_runs_what_is_not_finished_publishing_after_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = str(grid.REPO / "benchmarks" / "g.py")
    monkeypatch.setattr(sys, "argv", [script, "--seeds", "1", "--publish-only"])
    wanted = [Key(arm, seed) for seed in (1, 2) for arm in ("a", "b")]
    (tmp_path / "results.jsonl").write_text(
        json.dumps({"arm": "a", "seed": 1, "rc": 0})
        + "\n"  # finished
        + json.dumps({"arm": "b", "seed": 1, "rc": 1})
        + "\n"  # failed: redone
        + '{"arm": "b", "se'  # cut by a kill: redone
    )
    plots: list[int] = []
    ran: list[Key] = []

    def run_one(key: Key, slot: Slot) -> dict:
        ran.append(key)
        assert slot.env({})["OMP_NUM_THREADS"] == "1"
        return {"arm": key.arm, "seed": key.seed, "rc": 0 if key != Key("b", 2) else 3}

    runs = publication(tmp_path, wanted, plots)
    grid.run(runs, run_one, lambda key, row: f"row {row['rc']}", jobs=1)
    assert ran == [Key("b", 1), Key("a", 2), Key("b", 2)]  # seed by seed
    assert plots == [2, 3, 3, 3]  # after every run, and once at the end
    written = json.loads((tmp_path / "out.json").read_text())
    assert [(r["arm"], r["seed"]) for r in written["results"]["rows"]] == [("a", 1), ("b", 1), ("a", 2)]
    assert written["command"] == "python benchmarks/g.py --seeds 1"  # the grid's, never --publish-only
    assert "b-s2: row 3 [FAILED rc=3]" in capsys.readouterr().out
    assert set(RowFile(tmp_path).done(lambda r: (r["arm"], r["seed"]), finished)) == {
        ("a", 1),
        ("b", 1),
        ("a", 2),
    }
    grid.run(runs, run_one, lambda key, row: "", jobs=1)  # a rerun redoes the failed run only
    assert ran[3:] == [Key("b", 2)]


def test_attempts_add_up_and_a_run_without_a_checkpoint_starts_cleanly(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    save = grid.prepare_run_dir(run_dir, "save", "log.txt", lambda d: (d / "ckpt").exists())
    argv = [sys.executable, "-c", "print('step'); raise SystemExit(4)"]
    assert grid.run_attempt(argv, {}, run_dir, "log.txt")[::2] == (4, 1)
    assert grid.run_attempt(argv, {}, run_dir, "log.txt")[::2] == (4, 2)
    assert (run_dir / "log.txt").read_text() == "step\nstep\n"
    save.mkdir()
    (save / "partial").write_text("x")
    grid.prepare_run_dir(run_dir, "save", "log.txt", lambda d: (d / "ckpt").exists())
    assert not save.exists() and not (run_dir / "log.txt").exists()
    assert not (run_dir / "attempts.jsonl").exists()
    save.mkdir()
    (save / "ckpt").write_text("x")
    (run_dir / "log.txt").write_text("kept")
    grid.prepare_run_dir(run_dir, "save", "log.txt", lambda d: (d / "ckpt").exists())
    assert (save / "ckpt").exists() and (run_dir / "log.txt").read_text() == "kept"


def test_report_layout_status_line_and_parity() -> None:
    payload = {
        "command": "python -m benchmarks.x",
        "results": {},
        "machine": {
            "date": "D",
            "cpu": "C",
            "usable_cores": 2,
            "load_average_1min_at_start": 1.0,
            "load_average_1min_at_end": 2.0,
        },
    }
    text = real_text.report(payload, "S", [("Title", "| t |"), (None, "| u |")], "P")
    assert text == (
        "S\n\n**Title**\n\n| t |\n\n| u |\n\nP\n\nMeasured by `python -m benchmarks.x` on D: C, 2 cores, "
        "1-min load 1.0 → 2.0."
    )
    r = {"seeds": [1, 2], "rows": [{"rc": 0}, {"rc": 1}]}
    assert real_text.status_line(r, ["a", "b"], finished, "IMG") == (
        "Finished runs: 1 of 4 (the grid is still running).\n\nIMG"
    )
    assert real_text.mean_std([]) == "—" and real_text.mean_std([1.0]) == "1.00"
    assert real_text.mean_std([1, 3]) == "2.00 ± 1.41"
    assert grid.check_parity({"m": 1001, "t": 1000}, "m", "t", 2e-3) == pytest.approx(1e-3)
    with pytest.raises(SystemExit, match=r"differ by \+0\.200 %"):
        grid.check_parity({"m": 1002, "t": 1000}, "m", "t", 1e-3)


def test_a_figure_is_written_atomically(tmp_path: Path) -> None:
    plt = grid.pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    grid.save_figure(fig, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]


@dataclass(frozen=True)
class ToyProtocol:
    steps: int = 100
    lr: float = 1e-3
    config: str = "a"
    fixed: int = 7


def test_a_protocols_options_come_from_its_dataclass() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    grid.add_protocol_arguments(ap, ToyProtocol, ("steps", "lr", "config"), {"lr": "peak"}, {"config": "ab"})
    assert grid.protocol_from_args(ToyProtocol, ap.parse_args([]), ("steps", "lr", "config")) == ToyProtocol()
    args = ap.parse_args(["--steps", "5", "--lr", "0.5", "--config", "b"])
    assert grid.protocol_from_args(ToyProtocol, args, ("steps", "lr", "config")) == ToyProtocol(
        5, 0.5, "b", 7
    )
    assert "peak; default: 0.001" in ap.format_help() and "--fixed" not in ap.format_help()
    with pytest.raises(SystemExit):
        ap.parse_args(["--config", "c"])


@pytest.mark.parametrize("name", ["macaron_real_translation", "macaron_real_bert"])
def test_each_recorded_grid_command_parses_to_its_recorded_protocol(name: str) -> None:
    """The results files' commands, parsed by today's options, give the protocol those files record."""
    import importlib
    import shlex

    from benchmarks.results_file import RESULTS_DIR, read_results

    module = importlib.import_module(f"benchmarks.{name}")
    protocol = module.TranslationProtocol if "translation" in name else module.BertProtocol
    checked = []
    for path in sorted(RESULTS_DIR.glob(f"{name}*.json")):
        payload = read_results(path)
        words = shlex.split(payload["command"])
        at = [i for i, word in enumerate(words) if word in (f"benchmarks.{name}", f"benchmarks/{name}.py")]
        if not at:
            continue  # written by another benchmark (benchmarks.lenpen_on_valid)
        args = module.parser().parse_args(words[at[0] + 1 :])
        parsed = grid.protocol_from_args(protocol, args, module.PROTOCOL_OPTIONS)
        recorded = {k: v for k, v in payload["results"]["protocol"].items() if k in module.PROTOCOL_OPTIONS}
        assert {k: getattr(parsed, k) for k in recorded} == recorded, path.name
        checked.append(path.name)
    assert checked
