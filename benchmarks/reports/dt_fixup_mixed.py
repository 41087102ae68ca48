"""The docs blocks of ``docs/results/dt_fixup_mixed*.json``: DT-Fixup's own setting on real text, K new
encoder layers on a pre-trained encoder, fine-tuned on a small task (the English→German gettext messages
of one package; every other package's pre-train), per scheme at its own learning rate, and a longer-budget
check of one rate per scheme. A finished study: its results file and recorded command stay, its code is at
commit 7ce07f9 (``git show 7ce07f9:benchmarks/dt_fixup_mixed.py``; run it in a checkout of that commit)."""

from __future__ import annotations

from benchmarks.reports.dt_fixup_ablation import grid_table, render_budget, selected_table
from benchmarks.results_file import provenance


def protocol_line(r: dict) -> str:
    p, corpus = r["protocol"], r["corpus"]["pairs"]
    return (
        f"Small task: the {', '.join(r['corpus']['small_task_packages'])} messages, {corpus['task.train']} "
        f"training / {corpus['task.valid']} validation / {corpus['task.test']} test pairs; pre-training: "
        f"{corpus['pre.train']} pairs of the other packages ({r['corpus']['pre_train_after_cleaning']} after "
        f"macaron_preprocess.custom's cleaning), {p['pretrain_updates']} updates "
        f"({r['pretrain']['last_validation_nll']} bits valid nll at the end). Encoder: "
        f"{p['pretrained_layers']} pre-trained post-LN layers (d = {p['dim']}, FFN {p['ffn']}) at "
        f"{p['lr_multiplier']:g} × η, K new layers; new decoder of {p['decoder_layers']} layers; "
        f"{p['updates']} updates of {p['batch_size']} sentences; standard warm-up {p['warmup']} updates; "
        f"seeds {', '.join(map(str, r['seeds']))}."
    )


def render(payload: dict) -> str:
    """The docs block: both tables (rows = K new layers), the protocol and the provenance."""
    r = payload["results"]
    labelled = {**r, "depth_label": "new encoder layers K", "depth_symbol": "K"}
    return (
        "**Each scheme at its own learning rate** (chosen per K on the validation nll; test set; † = at the "
        f"edge of the grid)\n\n{selected_table(labelled)}\n\n**The whole grid: validation nll (bits), mean ± "
        f"std over seeds** (bold: the chosen rate)\n\n{grid_table(labelled)}\n\n{protocol_line(r)}\n\n"
        f"Measured by {provenance(payload)}."
    )


def render_curves(payload: dict) -> str:
    """A longer-budget check (one rate per scheme): the validation curves, the test nll at the end, the
    protocol and the provenance."""
    r = payload["results"]
    labelled = {**payload, "results": {**r, "depth_symbol": "K"}}
    return protocol_line(r) + "\n\n" + render_budget(labelled)
