"""The renderers the docs' tables come from: speed-ups and ratios are computed from the measured values."""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
import types
from pathlib import Path

import pytest

from benchmarks import results_file
from benchmarks.reports import preprocess_throughput

MACHINE = {
    "date": "2026-11-23 03:00 UTC",
    "cpu": "CPU",
    "usable_cores": 2,
    "python": "3.11",
    "load_average_1min_at_start": 0.5,
    "load_average_1min_at_end": 0.7,
    "torch": "2.13.0",
    "torch_threads": 1,
}


def run(wall: float, tokenize: float) -> dict:
    stages = {"tokenize-train": tokenize, "learn-bpe": 1.0, "bpe-train": 2.0, "binarize": 4.0}
    return {"wall": wall, "stages": stages}


def test_throughput_table_computes_rates_and_speed_ups() -> None:
    result = {
        "lines": 1000,
        "repeats": 1,
        "binarizer": "pool",
        "vocab": 100,
        "best": {"1": run(20.0, 10.0), "2": run(10.0, 4.0)},
    }
    text = preprocess_throughput.render(
        {"command": "python x.py", "machine": MACHINE, "results": {"throughput": result}}
    )
    assert "| tokenize (+ cleaning) | 10.0 s, 100 pairs/s | 4.0 s, 250 pairs/s | 2.50× |" in text
    assert "| end to end | 20.0 s, 50 pairs/s | 10.0 s, 100 pairs/s | 2.00× |" in text
    assert "| learn BPE (sentencepiece) | 1.0 s | 1.0 s | 1.00× |" in text


def test_provenance_names_command_machine_threads_and_load() -> None:
    line = results_file.provenance({"command": "python x.py", "machine": MACHINE})
    assert line == (
        "`python x.py` on 2026-11-23 03:00 UTC: CPU, 2 cores, torch 2.13.0 (1 thread), 1-min load 0.5 → 0.7"
    )


def test_a_results_file_records_command_commit_machine_and_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [str(results_file.REPO / "benchmarks" / "x.py"), "--n", "2"])
    out = tmp_path / "x.json"
    results_file.write_results(out, {"rows": [1]}, MACHINE)
    payload = results_file.read_results(out)
    assert list(payload) == ["command", "commit", "machine", "results"]
    assert payload["command"] == "python benchmarks/x.py --n 2" and payload["results"] == {"rows": [1]}
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"],
        cwd=results_file.REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert payload["commit"] in (head, f"{head}+changes")
    assert payload["machine"]["load_average_1min_at_end"] >= 0
    line = results_file.provenance(payload)
    assert line.startswith(f"`python -m benchmarks.x --n 2` at commit `{payload['commit']}` on 2026-11-23")
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_a_module_run_with_python_m_is_recorded_so(monkeypatch: pytest.MonkeyPatch) -> None:
    main = types.ModuleType("__main__")
    main.__spec__ = importlib.machinery.ModuleSpec("benchmarks.glue_grid_time", None)
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", ["/anywhere/glue_grid_time.py", "--steps", "3"])
    assert results_file.command_line() == "python -m benchmarks.glue_grid_time --steps 3"


def test_macaron_speed_table_computes_ratios_from_the_measured_times() -> None:
    from benchmarks import speed_macaron_vs_transformer as speed
    from benchmarks.reports import speed_macaron_vs_transformer as report

    times = {
        "transformer": [2.0, 4.0, 3.0],
        "macaron:plain": [2.4, 4.4, 3.3],
        "macaron:fused": [2.0, 4.2, 3.0],
    }
    results = {
        "macaron": "macaron_base",
        "transformer": "transformer_wmt_en_de",
        "params_macaron": 10,
        "params_transformer": 9,
        "threads": 1,
        "seq_len": 64,
        "gen_len": 32,
        "dropout": 0.1,
        "rounds": 3,
        "gen_rounds": 0,
        "impls": ["plain", "fused"],
        "warmup_seconds_with_compile": {},
        "sizes": [{"tokens": 4096, "sentences": 64, "train": speed.summarise(times, 4096)}],
    }
    text = report.render({"command": "python b.py", "machine": MACHINE, "results": results})
    # medians 3.0 / 3.3 / 3.0; paired ratios plain 1.2, 1.1, 1.1 → 1.1; fused 1.0, 1.05, 1.0 → 1.0
    assert (
        "| training step | 4,096 | 3.00 s [2.00–4.00] | **1.100×** (3.30 s [2.40–4.40]; paired 1.100) | "
        "**1.000×** (3.00 s [2.00–4.20]; paired 1.000) |"
    ) in text
    assert "beam-4 generation" not in text


def test_a_command_recorded_before_benchmarks_became_a_package_is_shown_in_its_current_form() -> None:
    from benchmarks.results_file import current_form

    assert current_form("python benchmarks/dt_fixup_ablation.py --jobs 2") == (
        "python -m benchmarks.dt_fixup_ablation --jobs 2"
    )
    assert current_form("python -m benchmarks.gpu_check --out x") == "python -m benchmarks.gpu_check --out x"
