"""The depth-ablation summary never averages a failed run, says how many failed, and retries them."""

from __future__ import annotations

import sys

from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import dt_fixup_ablation as ablation


def row(scheme: str, depth: int, seed: int, nll: float, rc: int = 0) -> dict:
    return {"scheme": scheme, "depth": depth, "seed": seed, "seconds": 10.0, "rc": rc,
            "valid_nll": nll, "valid_accuracy": 50.0 if nll == nll else float("nan")}  # fmt: skip


def test_failed_and_diverged_runs_are_counted_but_not_averaged() -> None:
    rows = [
        row("standard", 4, 1, 2.0), row("standard", 4, 2, 4.0),
        row("dt-fixup", 4, 1, 3.0), row("dt-fixup", 4, 2, float("nan"), rc=1),  # crashed
        row("dt-fixup", 4, 3, float("inf")),  # rc 0 but no finite metric
    ]  # fmt: skip
    nll = ablation.summarise(rows, "valid_nll")
    assert nll[("standard", 4)] == (3.0, 2.0**0.5, 2)
    assert nll[("dt-fixup", 4)] == (3.0, 0.0, 1)
    assert ablation.failures(rows) == {("dt-fixup", 4): 2}
    table = ablation.markdown_table(rows)
    assert "3.000 ± 0.000 (n=1, 2 failed)" in table and "nan" not in table


def test_a_failed_run_that_later_succeeded_counts_once() -> None:
    rows = [row("dt-fixup", 2, 1, float("nan"), rc=1), row("dt-fixup", 2, 1, 1.5)]
    assert ablation.summarise(rows, "valid_nll")[("dt-fixup", 2)] == (1.5, 0.0, 1)
    assert ablation.failures(rows) == {}
    assert ablation.succeeded(rows[1]) and not ablation.succeeded(rows[0])
