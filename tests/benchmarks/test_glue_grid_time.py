"""benchmarks/glue_grid_time.py: the grid's update count by hand, its report, and one tiny measurement."""

from __future__ import annotations

import pytest

from benchmarks import glue_grid_time as bench
from benchmarks.reports import glue_grid_time as report


def test_grid_updates_by_hand() -> None:
    # RTE at batch 32, BERT's grid: 78 batches an epoch × (2 + 3 + 4) epochs × 3 rates × 1 decay × 5 seeds
    assert bench.grid_updates(2_490, 32) == 78 * 9 * 3 * 5 == 10_530
    # the Macaron authors' grid: (3 + 4 + 5) epochs × 2 rates × 2 weight decays × 6 seeds; MNLI also at 24
    macaron = bench.PRESETS["macaron"]
    assert bench.grid_updates(2_490, 32, macaron) == 78 * 12 * 2 * 2 * 6
    assert bench.batch_sizes(macaron) == [16, 24, 32]


def test_render_estimates_hours_from_the_median_step() -> None:
    payload = {
        "results": {
            "arch": "x",
            "device": "CPU",
            "threads": 2,
            "steps": 3,
            "seconds": {"16": [1.0, 2.0, 9.0], "32": [3.0, 3.0, 3.0]},
        },
        "machine": {"date": "d", "load_average_1min_at_start": 0.1, "load_average_1min_at_end": 0.2},
    }
    text = report.render(payload)
    rte16, rte32 = bench.grid_updates(2_490, 16), bench.grid_updates(2_490, 32)
    assert f"| RTE | 2,490 | {rte16 + rte32:,} | {(rte16 * 2.0 + rte32 * 3.0) / 3600:,.1f} |" in text
    assert "batch 16: 2 s, batch 32: 3 s (median of 3)" in text
    assert "Grid `bert` (Devlin et al. 2019 (BERT), appendix A.3" in text  # a file without a preset: BERT's


@pytest.mark.slow
def test_one_tiny_measurement(tmp_path) -> None:
    seconds = bench.measure("vanilla_bert_tiny", batch_size=2, steps=1, warmup=0)
    assert len(seconds) == 1 and seconds[0] > 0
