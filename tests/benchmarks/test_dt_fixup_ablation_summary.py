"""The depth ablation: the log parser reads what fairseq-train prints, the learning rate of each scheme is
chosen on the validation set among the rates whose every seed finished, failed runs are counted but never
averaged (benchmarks.reports.dt_fixup_ablation), and a rerun retries crashed runs, not diverged ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks import dt_fixup_ablation as ablation
from benchmarks.reports import dt_fixup_ablation as report
from macaron_workflow.grid import RowFile

LOG = """\
2026-11-24 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 4.85 | nll_loss 4.85 | total 221.5 \
| n_correct 32.2 | ppl 28.8 | accuracy 14.555 | wps 6348.7 | wpb 221.5 | bsz 29.4 | num_updates 50
2026-11-24 | INFO | valid | epoch 001 | valid on 'test' subset | loss 4.826 | nll_loss 4.826 | total 220 \
| n_correct 32 | ppl 28.3 | accuracy 14.568 | wps 6000 | wpb 220 | bsz 29.4 | num_updates 50
2026-11-24 | INFO | init | init scheme dt-fixup applied: scheme=dt-fixup, mu_encoder=11.544, n_encoder=2
2026-11-24 | INFO | valid | epoch 001 | valid on 'valid' subset | loss nan | nll_loss nan | total 221.5 \
| n_correct 1 | ppl nan | accuracy 0.5 | wps 6348.7 | wpb 221.5 | bsz 29.4 | num_updates 100
2026-11-24 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 3.932 | nll_loss 3.932 | total 221.5 \
| n_correct 53.8 | ppl 15.3 | accuracy 24.276 | wps 6348.7 | wpb 221.5 | bsz 29.4 | num_updates 100
2026-11-24 | INFO | valid | epoch 001 | valid on 'test' subset | loss 3.913 | nll_loss 3.913 | total 220 \
| n_correct 53 | ppl 15.1 | accuracy 24.253 | wps 6000 | wpb 220 | bsz 29.4 | num_updates 100
"""


def test_the_log_parser_keeps_both_curves_and_the_last_evaluation() -> None:
    parsed = ablation.parse_log(LOG)
    # the end-of-training validation at update 100 replaces the interval's (the nan one) instead of adding
    assert parsed["curves"]["valid"] == [[50, 4.85, 14.555], [100, 3.932, 24.276]]
    assert parsed["curves"]["test"] == [[50, 4.826, 14.568], [100, 3.913, 24.253]]
    assert (parsed["valid_updates"], parsed["valid_nll"], parsed["valid_accuracy"]) == (100, 3.932, 24.276)
    assert (parsed["test_nll"], parsed["test_accuracy"], parsed["mu_encoder"]) == (3.913, 24.253, 11.544)
    empty = ablation.parse_log("Traceback ... FloatingPointError")
    assert math.isnan(empty["valid_nll"]) and empty["curves"] == {"valid": [], "test": []}


def row(
    scheme: str, depth: int, lr: float, seed: int, valid: float, test: float | None = None, rc: int = 0
) -> dict:
    test = valid + 0.5 if test is None else test
    return {
        "scheme": scheme,
        "depth": depth,
        "lr": lr,
        "seed": seed,
        "rc": rc,
        "seconds": 1.0,
        "valid_updates": 600,
        "test_updates": 600,
        "valid_nll": valid,
        "test_nll": test,
        "valid_accuracy": 100 - 10 * valid,
        "test_accuracy": 100 - 10 * test,
        "curves": {"valid": [[300, valid + 1, 0.0], [600, valid, 0.0]], "test": []},
    }


def payload(rows: list[dict], grid: dict[str, list[float]], seeds: int = 2) -> dict:
    return {
        "rows": rows,
        "grid": grid,
        "seeds": list(range(1, seeds + 1)),
        "protocol": {
            "splits": {"train": 10},
            "updates": 600,
            "batch_size": 32,
            "dim": 8,
            "ffn": 16,
            "decoder_layers": 1,
            "arch": "a",
            "warmup": 120,
            "eval_every": 300,
        },
    }


def test_a_run_counts_only_when_it_exited_0_with_finite_valid_and_test_metrics() -> None:
    assert ablation.finished(row("standard", 2, 1e-3, 1, 1.0))
    assert not ablation.finished(row("standard", 2, 1e-3, 1, 1.0, rc=1))
    assert not ablation.finished(row("standard", 2, 1e-3, 1, float("nan")))
    assert not ablation.finished(row("standard", 2, 1e-3, 1, 1.0, test=float("inf")))
    stopped_early = {**row("standard", 2, 1e-3, 1, 1.0), "test_updates": 500}
    assert not ablation.finished(stopped_early)


def test_the_rate_is_chosen_on_validation_among_rates_whose_every_seed_finished() -> None:
    rows = [
        # standard: 3e-3 has the best validation mean but its test is worse: the choice follows validation
        row("standard", 2, 1e-3, 1, 2.0, test=1.0),
        row("standard", 2, 1e-3, 2, 2.2, test=1.2),
        row("standard", 2, 3e-3, 1, 1.0, test=3.0),
        row("standard", 2, 3e-3, 2, 1.2, test=3.2),
        # dt-fixup: 1e-2 is best on seed 1 but crashed on seed 2: not a usable rate
        row("dt-fixup", 2, 1e-2, 1, 0.1),
        row("dt-fixup", 2, 1e-2, 2, float("nan"), rc=1),
        row("dt-fixup", 2, 3e-3, 1, 0.8),
        row("dt-fixup", 2, 3e-3, 2, 0.6),
        row("dt-fixup", 2, 6e-3, 1, 0.7),
        row("dt-fixup", 2, 6e-3, 2, 0.7),  # ties 3e-3 (mean 0.7)
    ]
    assert ablation.best_lr(rows, seeds=2) == {("standard", 2): 3e-3, ("dt-fixup", 2): 3e-3}
    table = report.selected_table(payload(rows, {"standard": [1e-3, 3e-3], "dt-fixup": [3e-3, 6e-3, 1e-2]}))
    line = next(x for x in table.splitlines() if x.startswith("| 2 |"))
    assert "3.100 ± 0.141 @ 0.003†" in line  # standard: the validation-chosen rate's test nll; grid edge
    assert "1.200 ± 0.141 @ 0.003† |" in line  # dt-fixup at its own rate (test = valid + 0.5)
    assert line.rstrip(" |").endswith("1.200 ± 0.141")  # dt-fixup at standard's rate (also 3e-3)


def test_a_failed_run_is_counted_never_averaged_and_a_later_success_replaces_it() -> None:
    rows = [
        row("dt-fixup", 4, 1e-2, 1, 5.0),
        row("dt-fixup", 4, 1e-2, 2, float("nan"), rc=1),
        row("dt-fixup", 4, 3e-3, 1, float("nan"), rc=1),
        row("dt-fixup", 4, 3e-3, 1, 2.0),  # retried
        row("dt-fixup", 4, 3e-3, 2, 2.0),
    ]
    assert report.failed_counts(rows) == {("dt-fixup", 4, 1e-2): 1}
    grid = report.grid_table(payload(rows, {"dt-fixup": [3e-3, 1e-2]}))
    assert "| DT-Fixup | 0.003 | **2.00 ± 0.00** |" in grid
    assert "| DT-Fixup | 0.01 | 5.00 ± 0.00 (n=1, 1 failed) |" in grid
    assert "nan" not in grid
    rows[1]["diverged"] = True  # fairseq said "gradients are Nan/Inf"
    grid = report.grid_table(payload(rows, {"dt-fixup": [3e-3, 1e-2]}))
    assert "| DT-Fixup | 0.01 | 5.00 ± 0.00 (n=1, 1 diverged) |" in grid


def test_a_diverged_run_is_not_retried_a_crashed_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = RowFile(tmp_path)
    diverged = {**row("dt-fixup", 8, 1e-2, 1, float("nan"), rc=1), "diverged": True}
    crashed = {**row("dt-fixup", 8, 1e-2, 2, float("nan"), rc=1), "diverged": False}
    rows.path.write_text("".join(json.dumps(r) + "\n" for r in (diverged, crashed)))
    ran = []
    monkeypatch.setattr(ablation, "run_one", lambda data, p, key, slot: ran.append(key) or {**crashed})
    keys = [ablation.RunKey("dt-fixup", 8, 1e-2, seed) for seed in (1, 2)]
    ablation.run_grid(tmp_path, ablation.Protocol(), keys, rows, jobs=1)
    assert ran == [keys[1]]
    assert len(rows.read()) == 3  # the retried run's row is appended


def test_a_depth_with_no_usable_rate_and_a_rate_outside_the_grid_are_said() -> None:
    rows = [
        row("standard", 8, 1e-3, 1, 2.0),
        row("standard", 8, 1e-3, 2, 2.0),
        row("t-fixup", 8, 6e-3, 1, 1.0),
        row("t-fixup", 8, 6e-3, 2, float("nan"), rc=1),
    ]
    table = report.selected_table(payload(rows, {"standard": [1e-3], "t-fixup": [6e-3]}))
    assert "no rate with every seed finished" in table and "not in its grid" in table


def test_the_budget_table_averages_the_curves_over_seeds() -> None:
    rows = [row("dt-fixup", 2, 1e-3, 1, 1.0), row("dt-fixup", 2, 1e-3, 2, 2.0)]
    machine = {
        "date": "d",
        "cpu": "c",
        "usable_cores": 2,
        "load_average_1min_at_start": 0,
        "load_average_1min_at_end": 0,
    }
    rows[0]["curves"]["valid"].insert(1, [500, 9.0, 0.0])  # an epoch-end validation: not a column
    text = report.render_budget(
        {"results": payload(rows, {"dt-fixup": [1e-3]}), "command": "python x", "machine": machine}
    )
    assert "| DT-Fixup | 2 | 0.001 | 2.50 | 1.50 |" in text


def test_the_commands_of_the_schemes() -> None:
    p = ablation.Protocol()
    standard = ablation.train_argv(Path("d"), Path("s"), p, ablation.RunKey("standard", 4, 3e-3, 1))
    clip = ablation.train_argv(Path("d"), Path("s"), p, ablation.RunKey("standard-clip", 4, 3e-3, 1))
    dt = ablation.train_argv(Path("d"), Path("s"), p, ablation.RunKey("dt-fixup", 4, 3e-3, 1))
    assert standard[-2:] == ["--warmup-updates", "120"] and "--init-scheme" not in standard
    assert dt[-4:] == ["--init-scheme", "dt-fixup", "--warmup-updates", "0"]  # the flag alone: the paper's
    # the clipping variant differs from standard only in --clip-norm
    assert standard[standard.index("--clip-norm") + 1] == "0" and clip[clip.index("--clip-norm") + 1] == "1.0"
    at = standard.index("--clip-norm") + 1
    assert clip[:at] + clip[at + 1 :] == standard[:at] + standard[at + 1 :]
    for argv in (standard, dt):
        assert (
            argv[argv.index("--lr") + 1] == "0.003" and argv[argv.index("--valid-subset") + 1] == "valid,test"
        )
    assert ablation.parse_lrs(["t-fixup=1e-3,2e-3"])["t-fixup"] == (1e-3, 2e-3)
    assert ablation.parse_lrs(["standard-clip="])["standard-clip"] == ()  # rates from --extra-lrs only
    with pytest.raises(SystemExit, match="SCHEME"):
        ablation.parse_lrs(["fixup=1e-3"])
    extra = ablation.parse_extra_lrs(["standard@16,32=3e-5,1e-4"])
    assert extra == {("standard", 16): (3e-5, 1e-4), ("standard", 32): (3e-5, 1e-4)}
    with pytest.raises(SystemExit, match="SCHEME@"):
        ablation.parse_extra_lrs(["standard=1e-4"])


def test_the_grid_edge_mark_uses_the_rates_tried_at_that_depth() -> None:
    """Rates added at some depths only (--extra-lrs): at 16 layers 3e-4 is inside the rates tried there,
    at 2 layers it is the smallest tried (edge)."""
    cells = ((2, 3e-4, 1.0), (2, 1e-3, 2.0), (16, 1e-4, 3.0), (16, 3e-4, 1.0), (16, 1e-3, 2.0))
    rows = [row("standard", d, lr, s, v) for d, lr, v in cells for s in (1, 2)]
    table = report.selected_table(payload(rows, {"standard": [1e-4, 3e-4, 1e-3]}))
    lines = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()[2:]}
    assert "@ 0.0003†" in lines["2"] and "@ 0.0003 |" in lines["16"]


def test_a_cell_with_seeds_not_run_yet_says_so_and_is_not_chosen() -> None:
    rows = [row("standard", 16, 3e-4, s, 2.0) for s in (1, 2)] + [row("standard", 16, 1e-4, 1, 1.0)]
    p = payload(rows, {"standard": [1e-4, 3e-4]})
    assert ablation.best_lr(rows, seeds=2) == {("standard", 16): 3e-4}
    assert "| standard | 0.0001 | 1.00 ± 0.00 (n=1 of 2 seeds run) |" in report.grid_table(p)
    p["grid"]["standard-clip"] = [1e-3]  # a scheme run at other depths only
    p["rows"] = rows + [row("standard-clip", 32, 1e-3, s, 1.0) for s in (1, 2)]
    assert "| 16 | 2.500 ± 0.000 @ 0.0003† | not run |" in report.selected_table(p)
    p["grid"]["standard-clip"] = [3e-4, 1e-3]  # standard's rate at 16 is in its grid there, but not run
    assert report.selected_table(p).splitlines()[2].endswith("| not run |")


@pytest.mark.slow
def test_one_real_run_is_parsed(tiny_data_bin: Path) -> None:
    """A real fairseq-train run through the runner: its validation and test curves and μ are read."""
    p = ablation.Protocol(dim=16, ffn=32, decoder_layers=1, updates=20, eval_every=10, batch_size=32)
    result = ablation.run_one(tiny_data_bin, p, ablation.RunKey("dt-fixup", 2, 3e-3, 1))
    assert result["rc"] == 0, result.get("error")
    assert ablation.finished(result)
    # every 10 updates, and at the end of each epoch (13 batches of the 400 pairs)
    assert [u for u, _, _ in result["curves"]["valid"]] == [10, 13, 20]
    assert [u for u, _, _ in result["curves"]["test"]] == [10, 13, 20]
    assert result["mu_encoder"] > 0 and result["command"].startswith("fairseq-train DATA ")
