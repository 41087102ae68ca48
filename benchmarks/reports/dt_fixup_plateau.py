"""The docs blocks of ``docs/results/dt_fixup_plateau*.json``: why DT-Fixup stays on the plateau at a rate
tuned for post-LN, its recipe varied one flag at a time (:data:`VARIANTS`) on the depth ablation's task
and model. A finished study: its results file and recorded command stay, its code is at commit 7ce07f9
(``git show 7ce07f9:benchmarks/dt_fixup_plateau.py``; run it in a checkout of that commit)."""

from __future__ import annotations

from benchmarks.results_file import provenance

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
