"""Why DT-Fixup stays on the plateau at a rate tuned for post-LN: its recipe varied one thing at a time.

    python -m benchmarks.dt_fixup_plateau --out-dir runs/dt_fixup_plateau --jobs 2 \\
        --results docs/results/dt_fixup_plateau.json

The depth ablation (``dt_fixup_ablation.py``, same task and model) found DT-Fixup at η = 1e-3 still near the
unigram plateau after 600 updates at every depth, where T-Fixup at the same rate learns the task. This
benchmark runs, at the rates given (default 1e-3) and the depths given (default 2 and 8), the variants that
separate the candidate causes, each a real ``fairseq-train`` run differing from *DT-Fixup* by the flags shown:

* *standard*: post-LN + warm-up (the reference the rate was tuned for);
* *DT-Fixup*: ``--init-scheme dt-fixup --warmup-updates 0`` (μ measured: ≈ 12 here, the √d-scaled token
  embeddings plus the sinusoidal positions);
* *DT-Fixup + warm-up*: what a user gets who only adds ``--init-scheme dt-fixup`` to the standard recipe;
* *DT-Fixup, μ := 3* and *μ := 1* (``--dt-fixup-mu``): the same layers initialised 4× and 12× larger —
  does the size of the scaled weights decide the plateau?
* *DT-Fixup, no √d* (``--no-scale-embedding``): μ made smaller by shrinking the token embeddings (the
  positions then dominate the input) — is it the embeddings' scale?
* *T-Fixup*: ``--init-scheme t-fixup --warmup-updates 0`` (the from-scratch reference), and *T-Fixup +
  warm-up* (the warm-up of the standard recipe kept);
* *only --init-scheme auto*: the standard command with that flag added and nothing else changed — on this
  from-scratch model ``auto`` applies T-Fixup (``dt_fixup_user_flag.py`` runs it at every depth).

``--init-scheme dt-fixup`` is DT-Fixup's data-dependent factors on every model (the paper's on vanilla
encoder layers; on the decoder, which the paper does not cover, this project's, docs/dt_fixup.md §3.2).
(From commit ea06d3f to issue #29 it applied T-Fixup to a from-scratch model unless
``--dt-fixup-from-scratch dt-fixup`` was given; rows of that time carry the flag in their command, the same
initialisation as the flag alone now.)

Rows go to ``OUT_DIR/results.jsonl`` as runs finish (a rerun resumes); ``--results`` writes the results
file the docs' table is rendered from (``render``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import asdict
from pathlib import Path

from benchmarks.dt_fixup_ablation import Protocol, RunKey, prepare_out_dir, run_grid, train_argv
from benchmarks.dt_fixup_ablation_report import finished
from benchmarks.grid_rows import read_rows
from benchmarks.results_file import REPO, machine_info, provenance, read_results, write_results

# label -> (scheme of the ablation, flags changed with respect to it)
VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "standard": ("standard", ()),
    "DT-Fixup": ("dt-fixup", ()),
    "DT-Fixup + warm-up": ("dt-fixup", ("--warmup-updates", "{warmup}")),
    "DT-Fixup, μ := 3": ("dt-fixup", ("--dt-fixup-mu", "3")),
    "DT-Fixup, μ := 1": ("dt-fixup", ("--dt-fixup-mu", "1")),
    "DT-Fixup, no √d": ("dt-fixup", ("--no-scale-embedding",)),
    "T-Fixup": ("t-fixup", ()),
    "T-Fixup + warm-up": ("t-fixup", ("--warmup-updates", "{warmup}")),
    # the standard command with nothing but the flag added (warm-up kept): what a user gets
    "only --init-scheme auto": ("standard", ("--init-scheme", "auto")),
}


def variant_argv(data: Path, save_dir: Path, p: Protocol, key: RunKey) -> list[str]:
    """The ablation's command for the variant's scheme, with the variant's flags replacing its own."""
    scheme, flags = VARIANTS[key.scheme]
    argv = train_argv(data, save_dir, p, RunKey(scheme, key.depth, key.lr, key.seed))
    flags = tuple(f.format(warmup=p.warmup) for f in flags)
    if flags and flags[0] in argv:  # a flag the scheme sets already: the variant's value replaces it
        at = argv.index(flags[0])
        del argv[at : at + 2]
    return [*argv, *flags]


def seed_cell(rows: list[dict]) -> dict:
    """One cell's runs: test nll per finished seed (bits, by seed), mean, std, mean test accuracy, the number
    of runs and of those that did not finish (diverged or failed)."""
    done = sorted((r for r in rows if finished(r)), key=lambda r: r["seed"])
    nll = [r["test_nll"] for r in done]
    return {
        "test_nll": nll,
        "mean": statistics.fmean(nll) if nll else None,
        "std": statistics.stdev(nll) if len(nll) > 1 else 0.0,
        "accuracy": statistics.fmean(r["test_accuracy"] for r in done) if done else None,
        "runs": len(rows),
        "failed": len(rows) - len(done),
    }


def summary(rows: list[dict], variants: list[str], depths: list[int]) -> list[dict]:
    """Per (variant, η) that has runs, per depth: the test nll (bits) of each finished seed, mean, std, test
    accuracy, the μ logged and the number of runs that did not finish (diverged or failed)."""
    out = []
    for label in variants:
        for lr in sorted({r["lr"] for r in rows if r["scheme"] == label}):
            cells = {}
            for depth in depths:
                cell = [r for r in rows if (r["scheme"], r["depth"], r["lr"]) == (label, depth, lr)]
                done = [r for r in cell if finished(r)]
                mus = sorted({r["mu_encoder"] for r in done if r.get("mu_encoder") is not None})
                cells[str(depth)] = {**seed_cell(cell), "mu": [mus[0], mus[-1]] if mus else None}
            out.append({"variant": label, "lr": lr, "cells": cells})
    return out


def mu_cell(entry: dict, flags: tuple[str, ...]) -> str:
    """The μ a row's DT-Fixup runs used: forced (``--dt-fixup-mu``) or the measured range; '–' without μ."""
    mus = [m for c in entry["cells"].values() if c["mu"] for m in c["mu"]]
    if not mus:
        return "–"
    text = f"{min(mus):.2f}" if min(mus) == max(mus) else f"{min(mus):.2f}–{max(mus):.2f}"
    return f"{text} (forced)" if "--dt-fixup-mu" in flags else text


def render(payload: dict) -> str:
    """The docs block: one row per (variant, η), test nll (bits) and accuracy per depth, then the protocol
    and the provenance."""
    r = payload["results"]
    depths = [str(d) for d in r["depths"]]
    head = "| variant (flags changed) | η | μ | " + " | ".join(
        f"N = {d}: test nll (bits) | N = {d}: test acc. (%)" for d in depths
    )
    lines = [head + " |", "|---|---|---|" + "---|" * (2 * len(depths))]
    for entry in r["summary"]:
        label, flags = entry["variant"], VARIANTS[entry["variant"]][1]
        shown = " ".join(flags).format(warmup=r["protocol"]["warmup"]) if flags else ""
        parts = [f"{label} (`{shown}`)" if shown else label, f"{entry['lr']:g}", mu_cell(entry, flags)]
        for d in depths:
            c = entry["cells"][d]
            failed = f" ({c['failed']} of {c['runs']} diverged or failed)" if c["failed"] else ""
            if c["mean"] is None:
                parts += [f"–{failed}" if c["runs"] else "not run", "–"]
            else:
                seeds = ", ".join(f"{v:.2f}" for v in c["test_nll"])
                parts += [f"{c['mean']:.2f} ± {c['std']:.2f} ({seeds}){failed}", f"{c['accuracy']:.1f}"]
        lines.append("| " + " | ".join(parts) + " |")
    p = r["protocol"]
    return (
        "\n".join(lines)
        + f"\n\nη·(1 − t/T)^½, {p['updates']} updates of {p['batch_size']} sentences, d = {p['dim']}, "
        f"FFN {p['ffn']}, {p['decoder_layers']} decoder layers, seeds {', '.join(map(str, r['seeds']))} "
        "(test nll per seed in brackets); the task and model of the depth ablation; μ: the encoder "
        "input's, as measured (range over the row's runs), or as forced by `--dt-fixup-mu`."
        f"\n\nMeasured by {provenance(payload)}."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=REPO / "runs" / "dt_fixup_plateau")
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    ap.add_argument("--depths", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--lrs", type=float, nargs="+", default=[1e-3], help="peak learning rates η")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--results", type=Path, help="write the results file (docs/results/...)")
    a = ap.parse_args()
    protocol = Protocol()
    machine = machine_info()
    data = prepare_out_dir(a.out_dir, protocol)
    results = a.out_dir / "results.jsonl"
    wanted = [RunKey(v, d, lr, s) for v in a.variants for d in a.depths for lr in a.lrs for s in a.seeds]
    start = time.perf_counter()
    run_grid(data, protocol, wanted, results, a.jobs, variant_argv)
    rows = [r for r in read_rows(results) if RunKey(r["scheme"], r["depth"], r["lr"], r["seed"]) in wanted]
    payload = {
        "protocol": asdict(protocol), "lrs": a.lrs, "depths": a.depths, "seeds": a.seeds,
        "summary": summary(rows, a.variants, a.depths), "rows": rows,
        "wall_seconds_this_call": round(time.perf_counter() - start, 1),
    }  # fmt: skip
    if a.results:
        write_results(a.results, payload, machine)
        print(render(read_results(a.results)))


if __name__ == "__main__":
    main()
