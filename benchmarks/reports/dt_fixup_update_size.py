"""The docs block of ``docs/results/dt_fixup_update_size.json``: ‖Δf‖ / η after one SGD step at
initialisation, for stacks of N norm-free layers (vanilla and Macaron; without scaling, with DT-Fixup's,
post-LN), on the weight matrices only and on all parameters. A finished study: its results file and
recorded command stay, its code is at commit 7ce07f9 (``git show
7ce07f9:benchmarks/dt_fixup_update_size.py``; run it in a checkout of that commit)."""

from __future__ import annotations

from benchmarks.results_file import provenance

VANILLA_DT_FIXUP = "vanilla: DT-Fixup"
MACARON_DT_FIXUP = "Macaron: DT-Fixup (3μ² derivation)"
TABLE_TITLES = {
    "weights only": "SGD step on the weight matrices only (biases frozen)",
    "all parameters": "SGD step on all parameters (weights and biases)",
}


def render(payload: dict) -> str:
    """The tables of docs/reports/dt_fixup_update_size.md (entries ‖Δf‖/η, 3 significant digits)."""
    r = payload["results"]
    columns = r["columns"]
    vanilla, macaron = columns.index(VANILLA_DT_FIXUP), columns.index(MACARON_DT_FIXUP)
    lines = [
        f"μ = {r['mu']:.3f}, η = {r['lr']:g}, d = {r['dim']}, FFN: vanilla {r['ffn']}, Macaron 2 × "
        f"{r['ffn'] // 2} (parameter-matched), seed = {r['seed']}; entries: ‖Δf‖ / η; last column: "
        "Macaron DT-Fixup / vanilla DT-Fixup"
    ]
    for key, title in TABLE_TITLES.items():
        header = "| N | " + " | ".join(columns) + " | Macaron / vanilla (DT-Fixup) |"
        lines += ["", f"**{title}**", "", header]
        lines.append("|---" * (2 + len(columns)) + "|")
        for n, values in r["tables"][key].items():
            ratio = values[macaron] / values[vanilla]
            lines.append(f"| {n} | " + " | ".join(f"{v:.3g}" for v in values) + f" | {ratio:.2f} |")
    lines += ["", f"Measured by {provenance(payload)}."]
    return "\n".join(lines)
