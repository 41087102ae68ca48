"""The plateau benchmark's variants: each is the ablation's command of its scheme with exactly the flags it
names changed, and its table reports every seed, failures counted and never averaged."""

from __future__ import annotations

from pathlib import Path

from benchmarks import dt_fixup_ablation as ablation
from benchmarks import dt_fixup_plateau as plateau


def argv(label: str) -> list[str]:
    key = ablation.RunKey(label, 8, 1e-3, 1)
    return plateau.variant_argv(Path("DATA"), Path("SAVE"), ablation.Protocol(), key)


def test_each_variant_differs_from_its_scheme_only_by_its_flags() -> None:
    dt = argv("DT-Fixup")
    assert dt == ablation.train_argv(Path("DATA"), Path("SAVE"), ablation.Protocol(),
                                     ablation.RunKey("dt-fixup", 8, 1e-3, 1))  # fmt: skip
    warm = argv("DT-Fixup + warm-up")
    assert warm.count("--warmup-updates") == 1
    assert warm[warm.index("--warmup-updates") + 1] == str(ablation.Protocol().warmup)
    assert [a for a in warm if a not in ("--warmup-updates", "0", "120")] == [
        a for a in dt if a not in ("--warmup-updates", "0", "120")
    ]
    assert argv("DT-Fixup, μ := 1") == [*dt, "--dt-fixup-mu", "1"]
    assert argv("DT-Fixup, no √d") == [*dt, "--no-scale-embedding"]
    assert "--init-scheme" not in argv("standard")
    assert argv("T-Fixup")[-3:] == ["t-fixup", "--warmup-updates", "0"]


def row(label: str, depth: int, seed: int, test: float, rc: int = 0, mu: float = 11.5) -> dict:
    return {"scheme": label, "depth": depth, "lr": 1e-3, "seed": seed, "rc": rc, "valid_updates": 600,
            "test_updates": 600, "valid_nll": test, "test_nll": test, "valid_accuracy": 50.0,
            "test_accuracy": 50.0 + seed, "mu_encoder": mu}  # fmt: skip


def test_summary_and_table_keep_every_seed_and_count_failures() -> None:
    rows = [row("DT-Fixup", 8, 1, 3.0), row("DT-Fixup", 8, 2, 4.0), row("DT-Fixup", 8, 3, float("nan"), 1),
            row("DT-Fixup, μ := 1", 8, 1, 1.0, mu=1.0),
            row("DT-Fixup, μ := 1", 8, 2, 2.0, mu=1.0)]  # fmt: skip
    summary = plateau.summary(rows, ["DT-Fixup", "DT-Fixup, μ := 1"], [8])
    assert [(e["variant"], e["lr"]) for e in summary] == [("DT-Fixup", 1e-3), ("DT-Fixup, μ := 1", 1e-3)]
    dt = summary[0]["cells"]["8"]
    assert dt["test_nll"] == [3.0, 4.0] and dt["mean"] == 3.5 and dt["failed"] == 1 and dt["accuracy"] == 51.5
    payload = {"command": "python -m benchmarks.dt_fixup_plateau",
               "machine": {"date": "d", "cpu": "c", "usable_cores": 2, "load_average_1min_at_start": 0,
                           "load_average_1min_at_end": 0},
               "results": {"summary": summary, "depths": [8], "lrs": [1e-3], "seeds": [1, 2, 3],
                           "protocol": ablation.asdict(ablation.Protocol())}}  # fmt: skip
    table = plateau.render(payload)
    lines = table.splitlines()
    dt_line = "| DT-Fixup | 0.001 | 11.50 | 3.50 ± 0.71 (3.00, 4.00) (1 of 3 diverged or failed) | 51.5 |"
    forced_line = (
        "| DT-Fixup, μ := 1 (`--dt-fixup-mu 1`) | 0.001 | 1.00 (forced) | 1.50 ± 0.71 (1.00, 2.00) | 51.5 |"
    )
    assert dt_line in lines and forced_line in lines
