"""What a user gets who only adds ``--init-scheme auto`` to the standard recipe, at every depth.

    python -m benchmarks.dt_fixup_user_flag --out-dir runs/dt_fixup_plateau --jobs 2 \\
        --results docs/results/dt_fixup_user_flag.json

At each depth of the depth ablation (``dt_fixup_ablation.py``, same task and model) this runs the standard
command (post-LN + warm-up) at the rate *standard* chose there on validation, with ``--init-scheme auto``
added and nothing else changed — the warm-up kept — for the ablation's seeds; and compares it with
standard's own runs at that rate, read from the ablation's results file (the same commands without the
flag). On this from-scratch model ``auto`` applies T-Fixup; each row's command and log are kept in
``OUT_DIR/results.jsonl``. (The stored rows were measured as ``--init-scheme dt-fixup`` while that flag
applied T-Fixup to a from-scratch model, commit ea06d3f; docs/dt_fixup.md §4.2 reruns a cell with ``auto``.)

``--variant`` runs another variant of ``dt_fixup_plateau.py`` at the same rates instead (e.g.
``"DT-Fixup, μ := 1"``: would a larger DT-Fixup factor have done it?).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from pathlib import Path

from benchmarks.dt_fixup_ablation import Protocol, RunKey, prepare_out_dir, run_grid
from benchmarks.dt_fixup_ablation_report import best_lr
from benchmarks.dt_fixup_plateau import VARIANTS, seed_cell, variant_argv
from benchmarks.grid_rows import read_rows
from benchmarks.results_file import REPO, RESULTS_DIR, machine_info, provenance, read_results, write_results

VARIANT = "only --init-scheme auto"


def standard_rates(ablation: dict) -> dict[int, float]:
    """Per depth: the rate standard chose on validation in the ablation's results."""
    chosen = best_lr(ablation["rows"], len(ablation["seeds"]))
    return {depth: lr for (scheme, depth), lr in sorted(chosen.items()) if scheme == "standard"}


def summary(rates: dict[int, float], standard_rows: list[dict], flag_rows: list[dict]) -> list[dict]:
    """Per depth: the rate, standard's cell and the flag's cell at it."""

    def at(rows: list[dict], depth: int, lr: float) -> list[dict]:
        return [r for r in rows if r["depth"] == depth and r["lr"] == lr]

    return [
        {
            "depth": depth,
            "lr": lr,
            "standard": seed_cell(at(standard_rows, depth, lr)),
            "flag": seed_cell(at(flag_rows, depth, lr)),
        }
        for depth, lr in sorted(rates.items())
    ]


def _nll(c: dict) -> str:
    if c["mean"] is None:
        return f"– ({c['failed']} of {c['runs']} diverged or failed)" if c["runs"] else "not run"
    failed = f" ({c['failed']} of {c['runs']} diverged or failed)" if c["failed"] else ""
    seeds = ", ".join(f"{v:.2f}" for v in c["test_nll"])
    return f"{c['mean']:.2f} ± {c['std']:.2f} ({seeds}){failed}"


def verdict(entry: dict) -> str:
    s, f = entry["standard"]["mean"], entry["flag"]["mean"]
    if s is None or f is None or entry["flag"]["failed"]:
        return "–"
    return f"{f - s:+.2f}"


def variant_text(variant: str) -> str:
    """How the variant's command differs: from the standard one (the user's flag) or from its scheme's."""
    scheme, flags = VARIANTS[variant]
    base = "the standard command" if scheme == "standard" else f"the ablation's {scheme} command"
    return f"{base} + `{' '.join(flags)}`" if flags else base


def render(payload: dict) -> str:
    """The docs block: per depth, standard's rate, both test nll (every seed), the difference, accuracies."""
    r = payload["results"]
    variant = r.get("variant", VARIANT)
    name = "standard + `--init-scheme auto`" if variant == VARIANT else variant
    warmed = "both columns" if VARIANTS[variant][0] == "standard" else "standard only"
    lines = [
        f"| encoder depth | η (standard's choice) | standard: test nll (bits) | {name}: test nll (bits) | "
        f"difference (bits) | standard: test acc. (%) | {name}: test acc. (%) |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in r["summary"]:
        cells = (e["standard"], e["flag"])
        acc = [f"{c['accuracy']:.1f}" if c["accuracy"] is not None else "–" for c in cells]
        lines.append(
            f"| {e['depth']} | {e['lr']:g} | {_nll(e['standard'])} | {_nll(e['flag'])} | {verdict(e)} | "
            f"{acc[0]} | {acc[1]} |"
        )
    p = r["protocol"]
    return (
        "\n".join(lines)
        + f"\n\n{name}: {variant_text(variant)}. η·(1 − t/T)^½ after a linear warm-up of {p['warmup']} "
        f"updates ({warmed}), {p['updates']} updates of {p['batch_size']} sentences, d = {p['dim']}, "
        f"FFN {p['ffn']}, "
        f"{p['decoder_layers']} decoder layers, seeds {', '.join(map(str, r['seeds']))} "
        "(test nll per seed in brackets); "
        f"standard's runs and rates: `{r['ablation_results']}`; difference: {name} − standard (negative: "
        "better than standard)."
        f"\n\nMeasured by {provenance(payload)}."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=REPO / "runs" / "dt_fixup_plateau")
    ap.add_argument("--ablation", type=Path, default=RESULTS_DIR / "dt_fixup_ablation.json",
                    help="the depth ablation's results file (standard's rates and runs)")  # fmt: skip
    ap.add_argument("--variant", choices=list(VARIANTS), default=VARIANT,
                    help=f"the variant of dt_fixup_plateau.py to run (default: {VARIANT!r})")  # fmt: skip
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--results", type=Path, help="write the results file (docs/results/...)")
    a = ap.parse_args()
    ablation = read_results(a.ablation)["results"]
    protocol = Protocol(**ablation["protocol"])
    if protocol != Protocol():
        raise SystemExit(f"{a.ablation}: its protocol differs from this benchmark's ({asdict(Protocol())})")
    rates, seeds = standard_rates(ablation), ablation["seeds"]
    machine = machine_info()
    data = prepare_out_dir(a.out_dir, protocol)
    results = a.out_dir / "results.jsonl"
    wanted = [RunKey(a.variant, depth, lr, seed) for depth, lr in rates.items() for seed in seeds]
    start = time.perf_counter()
    run_grid(data, protocol, wanted, results, a.jobs, variant_argv)
    keys = set(wanted)
    flag_rows = [r for r in read_rows(results) if RunKey(r["scheme"], r["depth"], r["lr"], r["seed"]) in keys]
    standard_rows = [r for r in ablation["rows"] if r["scheme"] == "standard" and r["seed"] in seeds]
    payload = {
        "variant": a.variant, "protocol": asdict(protocol), "seeds": seeds,
        "rates": {str(d): lr for d, lr in rates.items()},
        "ablation_results": str(a.ablation.resolve().relative_to(REPO)),
        "summary": summary(rates, standard_rows, flag_rows), "rows": flag_rows,
        "wall_seconds_this_call": round(time.perf_counter() - start, 1),
    }  # fmt: skip
    if a.results:
        write_results(a.results, payload, machine)
        print(render(read_results(a.results)))


if __name__ == "__main__":
    main()
