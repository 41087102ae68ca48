"""The docs block of ``docs/results/macaron_step_profile.json`` (a retired study,
see ``benchmarks.results_file.RETIRED``): the operators whose self CPU time differs most between the
Transformer and Macaron."""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.results_file import provenance

TRANSFORMER = "transformer"  # the baseline's key in the results file


def render(payload: dict, top: int = 14) -> str:
    r = payload["results"]
    base = r["profiles"][TRANSFORMER]["ms"]
    names = [f"macaron:{i}" for i in r["impls"]]
    first = r["profiles"][names[0]]["ms"]
    ops = sorted(set(base) | set(first), key=lambda k: -abs(first.get(k, 0.0) - base.get(k, 0.0)))[:top]
    header = "| operator | Transformer ms | " + " | ".join(f"Macaron {n.split(':')[1]} ms (Δ)" for n in names)
    lines = [header + " |", "|---|---:|" + "---:|" * len(names)]

    def row(label: str, get: Any) -> str:
        cells = [f"{get(TRANSFORMER):.0f}"]
        for n in names:
            cells.append(f"{get(n):.0f} ({get(n) - get(TRANSFORMER):+.0f})")
        return f"| {label} | " + " | ".join(cells) + " |"

    for op in ops:
        lines.append(row(f"`{op}`", lambda n, op=op: r["profiles"][n]["ms"].get(op, 0.0)))
    lines.append(row("**all operators**", lambda n: statistics.median(r["profiles"][n]["total_ms"])))
    sentences = r["tokens"] // r["seq_len"]
    return (
        "\n".join(lines)
        + "\n\nSelf CPU time per training step (forward + cross-entropy + backward), median over "
        f"{r['rounds']} profiled steps per variant (alternated); batch of {r['tokens']:,} tokens "
        f"({sentences} × {r['seq_len']}) "
        f"each side, dropout {r['dropout']}, `{r['macaron']}` vs `{r['transformer']}`, {r['threads']} "
        f"thread(s); the {top} operators whose time differs most between the Transformer and Macaron "
        f"{r['impls'][0]}. Measured by {provenance(payload)}."
    )
