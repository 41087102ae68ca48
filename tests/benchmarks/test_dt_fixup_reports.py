"""The reports of the finished DT-Fixup studies (their code is at commit 7ce07f9; their results files and
docs blocks stay): every seed is shown, failures are counted and never averaged, a forced μ is said, and no
difference is quoted over a cell with a failed seed. (Each block's rendering of its real results file is
checked by tests/test_docs_numbers.py.)"""

from __future__ import annotations

import statistics

from benchmarks.reports import dt_fixup_plateau as plateau
from benchmarks.reports import dt_fixup_user_flag as user_flag

MACHINE = {
    "date": "d",
    "cpu": "c",
    "usable_cores": 2,
    "load_average_1min_at_start": 0,
    "load_average_1min_at_end": 0,
}
PROTOCOL = {
    "arch": "fixup_transformer_iwslt_de_en",
    "dim": 64,
    "ffn": 128,
    "heads": 4,
    "decoder_layers": 2,
    "updates": 600,
    "warmup": 120,
    "batch_size": 32,
    "eval_every": 100,
}


def cell(test_nll: list[float], runs: int, accuracy: float | None, mu: list[float] | None = None) -> dict:
    """A cell as the studies stored it: the finished seeds' test nll, mean, std, accuracy, runs, failures."""
    return {
        "test_nll": test_nll,
        "mean": statistics.fmean(test_nll) if test_nll else None,
        "std": statistics.stdev(test_nll) if len(test_nll) > 1 else 0.0,
        "accuracy": accuracy,
        "runs": runs,
        "failed": runs - len(test_nll),
        "mu": mu,
    }


def test_the_plateau_table_keeps_every_seed_counts_failures_and_says_a_forced_mu() -> None:
    summary = [
        {"variant": "DT-Fixup", "lr": 1e-3, "cells": {"8": cell([3.0, 4.0], 3, 51.5, [11.5, 11.5])}},
        {"variant": "DT-Fixup, μ := 1", "lr": 1e-3, "cells": {"8": cell([1.0, 2.0], 2, 51.5, [1.0, 1.0])}},
    ]
    payload = {
        "command": "python -m benchmarks.dt_fixup_plateau",
        "machine": MACHINE,
        "results": {
            "summary": summary,
            "depths": [8],
            "lrs": [1e-3],
            "seeds": [1, 2, 3],
            "protocol": PROTOCOL,
        },
    }
    lines = plateau.render(payload).splitlines()
    failed = "(1 of 3 diverged or failed)"
    assert f"| DT-Fixup | 0.001 | 11.50 | 3.50 ± 0.71 (3.00, 4.00) {failed} | 51.5 |" in lines
    assert (
        "| DT-Fixup, μ := 1 (`--dt-fixup-mu 1`) | 0.001 | 1.00 (forced) | 1.50 ± 0.71 (1.00, 2.00) | 51.5 |"
    ) in lines


def test_the_user_flag_table_compares_cell_by_cell_and_quotes_no_difference_over_a_failure() -> None:
    two = {"standard": cell([1.01, 1.01], 2, 61.5), "flag": cell([0.51, 0.71], 2, 61.5)}
    summary = [
        {"depth": 2, "lr": 3e-3, **two},
        {"depth": 8, "lr": 1e-3, "standard": cell([4.01, 5.01], 2, 61.5), "flag": cell([0.21], 2, 61.0)},
    ]
    payload = {
        "command": "python -m benchmarks.dt_fixup_user_flag",
        "machine": MACHINE,
        "results": {
            "summary": summary,
            "seeds": [1, 2],
            "ablation_results": "docs/results/a.json",
            "protocol": PROTOCOL,
        },
    }
    lines = user_flag.render(payload).splitlines()
    assert lines[2] == (
        "| 2 | 0.003 | 1.01 ± 0.00 (1.01, 1.01) | 0.61 ± 0.14 (0.51, 0.71) | -0.40 | 61.5 | 61.5 |"
    )
    assert lines[3].startswith("| 8 | 0.001 | 4.51 ± 0.71 (4.01, 5.01) | 0.21 ± 0.00 (0.21) (1 of 2 diverged")
    assert lines[3].split(" | ")[4] == "–"
    assert "standard + `--init-scheme auto`: the standard command + `--init-scheme auto`." in lines[5]
