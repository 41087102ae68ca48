"""The user-flag benchmark: standard's command with only ``--init-scheme auto`` added, at the rate
standard chose per depth, compared cell by cell with standard's own runs; every seed shown, failures never
averaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import dt_fixup_ablation as ablation
from benchmarks import dt_fixup_plateau as plateau
from benchmarks import dt_fixup_user_flag as user_flag


def test_the_variant_is_the_standard_command_plus_the_flag_and_nothing_else() -> None:
    p = ablation.Protocol()
    key = ablation.RunKey(user_flag.VARIANT, 16, 3e-4, 2)
    standard = ablation.train_argv(Path("D"), Path("S"), p, ablation.RunKey("standard", 16, 3e-4, 2))
    assert plateau.variant_argv(Path("D"), Path("S"), p, key) == [*standard, "--init-scheme", "auto"]
    assert standard[standard.index("--warmup-updates") + 1] == str(p.warmup)  # the warm-up is kept


def row(scheme: str, depth: int, lr: float, seed: int, valid: float, rc: int = 0) -> dict:
    return {"scheme": scheme, "depth": depth, "lr": lr, "seed": seed, "rc": rc, "valid_updates": 600,
            "test_updates": 600, "valid_nll": valid, "test_nll": valid + 0.01, "valid_accuracy": 50.0,
            "test_accuracy": 60.0 + seed}  # fmt: skip


def test_rates_cells_and_table() -> None:
    standard = [row("standard", 2, lr, s, v) for lr, v in ((1e-3, 2.0), (3e-3, 1.0)) for s in (1, 2)]
    standard += [row("standard", 8, 1e-3, s, 3.0 + s) for s in (1, 2)] + [row("dt-fixup", 8, 3e-3, 1, 0.1)]
    rates = user_flag.standard_rates({"rows": standard, "seeds": [1, 2]})
    assert rates == {2: 3e-3, 8: 1e-3}  # dt-fixup's rate is not standard's
    v = user_flag.VARIANT
    flag = [row(v, 2, 3e-3, 1, 0.5), row(v, 2, 3e-3, 2, 0.7),
            row(v, 8, 1e-3, 1, 0.2), row(v, 8, 1e-3, 2, float("nan"), rc=1)]  # fmt: skip
    summary = user_flag.summary(rates, standard, flag)
    two, eight = summary
    assert two["standard"]["test_nll"] == [1.01, 1.01] and two["flag"]["mean"] == pytest.approx(0.61)
    assert eight["flag"]["test_nll"] == [pytest.approx(0.21)] and eight["flag"]["failed"] == 1
    payload = {"command": "python -m benchmarks.dt_fixup_user_flag",
               "machine": {"date": "d", "cpu": "c", "usable_cores": 2, "load_average_1min_at_start": 0,
                           "load_average_1min_at_end": 0},
               "results": {"summary": summary, "seeds": [1, 2], "ablation_results": "docs/results/a.json",
                           "protocol": ablation.asdict(ablation.Protocol())}}  # fmt: skip
    lines = user_flag.render(payload).splitlines()
    assert lines[2] == (
        "| 2 | 0.003 | 1.01 ± 0.00 (1.01, 1.01) | 0.61 ± 0.14 (0.51, 0.71) | -0.40 | 61.5 | 61.5 |"
    )
    assert lines[3].startswith("| 8 | 0.001 | 4.51 ± 0.71 (4.01, 5.01) | 0.21 ± 0.00 (0.21) (1 of 2 diverged")
    assert lines[3].split(" | ")[4] == "–"  # no difference quoted over a cell with a failed seed
