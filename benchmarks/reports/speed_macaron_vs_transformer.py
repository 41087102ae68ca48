"""The README block of ``docs/results/speed_macaron_vs_transformer.json``
(:mod:`benchmarks.speed_macaron_vs_transformer`): Macaron's step and generation times over the
Transformer's."""

from __future__ import annotations

from typing import Any

from benchmarks.results_file import provenance

TRANSFORMER = "transformer"  # the baseline's key in the results file
IMPL_LABELS = {"plain": "plain", "fused": "fused (default)", "compile": "torch.compile"}


def render_table(r: dict[str, Any]) -> str:
    lines = [
        "| direction | tokens / batch | Transformer | Macaron, "
        + " | Macaron, ".join(IMPL_LABELS[i] for i in r["impls"])
        + " |",
        "|---|---:|---:|" + "---:|" * len(r["impls"]),
    ]
    for size in r["sizes"]:
        for direction, label in (("train", "training step"), ("generation", "beam-4 generation")):
            cell = size.get(direction)
            if cell is None:
                continue
            base = cell[TRANSFORMER]
            spread = f"{base['median_s']:.2f} s [{base['min_s']:.2f}–{base['max_s']:.2f}]"
            row = [label, f"{size['tokens']:,}", spread]
            for impl in r["impls"]:
                c = cell[f"macaron:{impl}"]
                row.append(
                    f"**{c['ratio']:.3f}×** ({c['median_s']:.2f} s [{c['min_s']:.2f}–{c['max_s']:.2f}]; "
                    f"paired {c['paired_ratio_median']:.3f})"
                )
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render(payload: dict) -> str:
    """The README table of a results file: the measurements, then where they come from."""
    r = payload["results"]
    params = (
        f"`{r['macaron']}` {r['params_macaron']:,} vs `{r['transformer']}` {r['params_transformer']:,} "
        "parameters"
    )
    compile_note = ""
    if r["warmup_seconds_with_compile"]:
        total = sum(r["warmup_seconds_with_compile"].values())
        compile_note = f" The warm-up rounds that compiled took {total:.0f} s in all (not counted)."
    return (
        f"{render_table(r)}\n\n"
        f"Ratio = Macaron median / Transformer median (< 1: Macaron faster); times are medians per batch "
        f"[min–max] over {r['rounds']} training / {r['gen_rounds']} generation rounds; paired = median of "
        f"the per-round ratios. {params}; {r['threads']} threads; sentences of {r['seq_len']} tokens, "
        f"dropout {r['dropout']}; generation decodes {r['gen_len']} steps per sentence with beam 4."
        f"{compile_note}\nMeasured by {provenance(payload)}."
    )
