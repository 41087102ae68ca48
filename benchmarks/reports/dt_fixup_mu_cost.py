"""The docs block of ``docs/results/dt_fixup_mu_cost.json``: the time of DT-Fixup's μ passes against one
training epoch on the same data. A finished study: its results file and recorded command stay, its code is
at commit 7ce07f9 (``git show 7ce07f9:benchmarks/dt_fixup_mu_cost.py``; run it in a checkout of that
commit)."""

from __future__ import annotations

from benchmarks.results_file import provenance


def render(payload: dict) -> str:
    """The table of docs/reports/dt_fixup_mu_cost.md from a results file."""
    setup = payload["results"]["setup"]
    lines = ["| arch | encoder layers | μ passes (s) | one epoch (s) | ratio |", "|---|---|---|---|---|"]
    for r in payload["results"]["rows"]:
        mu_s, epoch_s = r["mu_seconds"], r["epoch_seconds"]
        cells = [r["arch"], r["encoder_layers"], f"{mu_s:.2f}", f"{epoch_s:.1f}", f"{mu_s / epoch_s:.3f}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        f"{setup['train_pairs']} training pairs, {setup['updates_per_epoch']} updates of "
        f"{setup['batch_sentences']} sentences per epoch, d = {setup['dim']}, FFN {setup['ffn']}, "
        f"{setup['decoder_layers']} decoder layers. Measured by {provenance(payload)}.",
    ]
    return "\n".join(lines)
