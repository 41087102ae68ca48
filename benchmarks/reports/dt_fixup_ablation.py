"""The docs blocks of ``docs/results/dt_fixup_ablation*.json`` (:mod:`benchmarks.dt_fixup_ablation`): each
scheme at the learning rate chosen per depth on validation (:func:`benchmarks.dt_fixup_ablation.best_lr`),
the whole grid, and the learning curves of the budget check (:func:`render_budget`). A failed run is never
averaged; the cells say how many failed or diverged.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter

from benchmarks.dt_fixup_ablation import Cell, best_lr, cell_values, finished, is_diverged, latest, mean_std
from benchmarks.results_file import provenance

NAMES = {
    "standard": "standard",
    "standard-clip": "standard + clip",
    "dt-fixup": "DT-Fixup",
    "t-fixup": "T-Fixup",
}


def failed_counts(rows: list[dict]) -> dict[Cell, int]:
    """Per (scheme, depth, lr): how many seeds have no finished run."""
    ok = set(latest(rows))
    tried = {(r["scheme"], r["depth"], r["lr"], r["seed"]) for r in rows}
    return dict(Counter(run[:3] for run in tried - ok))


def diverged_cells(rows: list[dict]) -> set[Cell]:
    """(scheme, depth, lr) cells whose every unfinished seed diverged in its latest run."""
    ok = set(latest(rows))
    last = {(r["scheme"], r["depth"], r["lr"], r["seed"]): r for r in rows}
    kinds: dict[Cell, set[bool]] = {}
    for key, r in last.items():
        if key not in ok:
            kinds.setdefault(key[:3], set()).add(is_diverged(r))
    return {cell for cell, seen in kinds.items() if seen == {True}}


def tried_rates(rows: list[dict], scheme: str, depth: int) -> list[float]:
    """The rates the rows hold for (scheme, depth): the grid at that depth (``--extra-lrs`` adds rates at
    some depths only), whose edges the † marks."""
    return sorted({r["lr"] for r in rows if r["scheme"] == scheme and r["depth"] == depth})


def _fmt_lr(lr: float) -> str:
    return f"{lr:g}"


def selected_table(payload: dict) -> str:
    """Per depth, each scheme at its selected rate: test nll and accuracy, mean ± std over seeds; plus
    DT-Fixup and T-Fixup at the rate selected for *standard* (what a user gets who keeps the standard
    recipe's rate), where that rate is in their grid."""
    rows, schemes, seeds = payload["rows"], list(payload["grid"]), len(payload["seeds"])
    chosen = best_lr(rows, seeds)
    nll, acc = cell_values(rows, "test_nll"), cell_values(rows, "test_accuracy")
    head = [payload.get("depth_label", "encoder depth")] + [
        f"{NAMES[s]}: test nll (bits) @ η" for s in schemes
    ]
    head += [f"{NAMES[s]}: test acc. (%)" for s in schemes]
    others = [s for s in schemes if s != "standard"] if "standard" in schemes else []
    tried_cells = {(r["scheme"], r["depth"], r["lr"]) for r in rows}
    head += [f"{NAMES[s]} at standard's η: test nll" for s in others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for depth in sorted({r["depth"] for r in rows}):
        nll_cells, acc_cells, same_cells = [], [], []
        for scheme in schemes:
            lr = chosen.get((scheme, depth))
            if lr is None:
                ran = any(r["scheme"] == scheme and r["depth"] == depth for r in rows)
                nll_cells.append("no rate with every seed finished" if ran else "not run")
                acc_cells.append("–")
                continue
            m, s = mean_std(nll[(scheme, depth, lr)])
            tried = tried_rates(rows, scheme, depth) or payload["grid"][scheme]
            edge = "†" if lr in (min(tried), max(tried)) else ""
            nll_cells.append(f"{m:.3f} ± {s:.3f} @ {_fmt_lr(lr)}{edge}")
            m, s = mean_std(acc[(scheme, depth, lr)])
            acc_cells.append(f"{m:.1f} ± {s:.1f}")
        for scheme in others:
            lr = chosen.get(("standard", depth))
            values = nll.get((scheme, depth, lr), []) if lr is not None else []
            if len(values) == seeds:
                m, s = mean_std(values)
                same_cells.append(f"{m:.3f} ± {s:.3f}")
            elif lr is None or (scheme, depth, lr) not in tried_cells:
                same_cells.append("not in its grid" if lr not in payload["grid"][scheme] else "not run")
            else:
                same_cells.append("failed")
        lines.append("| " + " | ".join([str(depth), *nll_cells, *acc_cells, *same_cells]) + " |")
    return "\n".join(lines)


def grid_table(payload: dict) -> str:
    """Every (scheme, rate) × depth: validation nll, mean ± std over the finished seeds; the selected
    rate of each column in bold."""
    rows, seeds = payload["rows"], len(payload["seeds"])
    chosen, valid, failed = best_lr(rows, seeds), cell_values(rows, "valid_nll"), failed_counts(rows)
    diverged = diverged_cells(rows)
    depths = sorted({r["depth"] for r in rows})
    lines = [
        "| scheme | η | " + " | ".join(f"{payload.get('depth_symbol', 'N')} = {d}" for d in depths) + " |",
        "|---|---|" + "---|" * len(depths),
    ]
    for scheme, lrs in payload["grid"].items():
        for lr in lrs:
            cells = []
            for depth in depths:
                values = valid.get((scheme, depth, lr), [])
                lost = failed.get((scheme, depth, lr), 0)
                how = "diverged" if (scheme, depth, lr) in diverged else "failed"
                if not values:
                    cells.append(f"– ({lost} {how})" if lost else "–")
                    continue
                m, s = mean_std(values)
                if lost:
                    text = f"{m:.2f} ± {s:.2f} (n={len(values)}, {lost} {how})"
                elif len(values) < seeds:  # seeds not run (yet): never a candidate for the choice
                    text = f"{m:.2f} ± {s:.2f} (n={len(values)} of {seeds} seeds run)"
                else:
                    text = f"{m:.2f} ± {s:.2f}"
                cells.append(f"**{text}**" if chosen.get((scheme, depth)) == lr else text)
            lines.append(f"| {NAMES[scheme]} | {_fmt_lr(lr)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def mu_line(payload: dict) -> str:
    mus = [r["mu_encoder"] for r in latest(payload["rows"]).values() if "mu_encoder" in r]
    return f"μ (encoder input, per run's log): {min(mus):.2f}–{max(mus):.2f}." if mus else ""


def render_rows(payload: dict) -> str:
    """Both tables and the protocol line (without the machine line: for the terminal)."""
    p = payload["protocol"]
    proto = (
        f"{p['splits']['train']} training pairs, {p['updates']} updates of {p['batch_size']} sentences, "
        f"d = {p['dim']}, FFN {p['ffn']}, {p['decoder_layers']} decoder layers, arch {p['arch']}, "
        f"standard warm-up {p['warmup']} updates, seeds {', '.join(map(str, payload['seeds']))}. "
        + mu_line(payload)
    )
    return (
        "**Each scheme at its own learning rate** (chosen per depth on the validation nll; test set; "
        "† = the chosen rate is at the edge of the rates the scheme tried at that depth)\n\n"
        f"{selected_table(payload)}\n\n**The whole grid: validation nll (bits), mean ± std over seeds** "
        f"(bold: the chosen rate)\n\n{grid_table(payload)}\n\n{proto}"
    )


def render(payload: dict) -> str:
    """The docs block: both tables, the protocol and the provenance of the results file."""
    return render_rows(payload["results"]) + "\n\nMeasured by " + provenance(payload) + "."


def curve_means(
    rows: list[dict], split: str = "valid"
) -> dict[tuple[str, int, float], list[tuple[int, float]]]:
    """Per (scheme, depth, lr): the mean nll over the finished seeds at every evaluated update."""
    points: dict[tuple[str, int, float], dict[int, list[float]]] = {}
    for (scheme, depth, lr, _seed), row in latest(rows).items():
        for update, value, _acc in row["curves"][split]:
            points.setdefault((scheme, depth, lr), {}).setdefault(update, []).append(value)
    return {
        key: [(u, statistics.fmean(v)) for u, v in sorted(by_update.items())]
        for key, by_update in points.items()
    }


def render_budget(payload: dict) -> str:
    """The budget check: validation nll (bits, mean over seeds) at up to 9 evenly spaced evaluations, one
    row per (scheme, depth, η)."""
    results = payload["results"]
    curves = curve_means(results["rows"])
    every = results["protocol"]["eval_every"]  # fairseq also validates at each epoch's end: not columns
    step = every * math.ceil(results["protocol"]["updates"] / every / 9)  # at most 9 columns
    updates = sorted({u for points in curves.values() for u, _ in points if u % step == 0})
    test = cell_values([r for r in results["rows"] if finished(r)], "test_nll")
    symbol = results.get("depth_symbol", "N")
    lines = [
        f"| scheme | {symbol} | η | " + " | ".join(f"{u}" for u in updates) + " | test nll at the end |",
        "|---|---|---|" + "---|" * (len(updates) + 1),
    ]
    for (scheme, depth, lr), points in sorted(curves.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        by_update = dict(points)
        cells = [f"{by_update[u]:.2f}" if u in by_update else "–" for u in updates]
        values = test.get((scheme, depth, lr), [])
        mean, std = mean_std(values) if values else (float("nan"), 0.0)
        cells.append(f"{mean:.2f} ± {std:.2f}" if values else "–")
        lines.append(f"| {NAMES[scheme]} | {depth} | {_fmt_lr(lr)} | " + " | ".join(cells) + " |")
    n = len(results["seeds"])
    return (
        f"Validation nll (bits/token) after each number of updates, mean over {n} seeds "
        f"(columns: updates); test nll (bits) after the last update, mean ± std."
        "\n\n" + "\n".join(lines) + "\n\nMeasured by " + provenance(payload) + "."
    )
