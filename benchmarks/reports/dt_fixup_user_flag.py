"""The docs blocks of ``docs/results/dt_fixup_user_flag*.json``: what a user gets who only adds
``--init-scheme auto`` (or another variant of :data:`benchmarks.reports.dt_fixup_plateau.VARIANTS`) to the
standard recipe, at the rate the depth ablation chose for *standard* at each depth, against standard's own
runs. A finished study: its results file and recorded command stay, its code is at commit 7ce07f9
(``git show 7ce07f9:benchmarks/dt_fixup_user_flag.py``; run it in a checkout of that commit)."""

from __future__ import annotations

from benchmarks.reports.dt_fixup_plateau import VARIANTS
from benchmarks.results_file import provenance

VARIANT = "only --init-scheme auto"


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
