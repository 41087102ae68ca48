"""The docs block of ``docs/results/glue_grid_time.json`` (:mod:`benchmarks.glue_grid_time`): per GLUE task,
the grid's updates and the hours they take at the measured step times."""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.glue_grid_time import TRAIN_EXAMPLES, batch_sizes, grid_updates
from macaron_pipelines.glue.grid import DEFAULT_PRESET, MAX_SEQ_LENGTH, PRESETS


def render(payload: dict[str, Any]) -> str:
    results, machine = payload["results"], payload["machine"]
    preset = PRESETS[results.get("preset", DEFAULT_PRESET)]
    seconds = {int(b): statistics.median(times) for b, times in results["seconds"].items()}
    lines = ["| task | train examples | grid updates | est. hours |", "|---|---:|---:|---:|"]
    total = 0.0
    for task, examples in TRAIN_EXAMPLES.items():
        updates = {b: grid_updates(examples, b, preset) for b in preset.batch_sizes_for(task)}
        hours = sum(updates[b] * seconds[b] for b in updates) / 3600
        total += hours
        lines.append(f"| {task} | {examples:,} | {sum(updates.values()):,} | {hours:,.1f} |")
    lines.append(f"| **all eight** | | | **{total:,.1f}** |")
    step_text = ", ".join(f"batch {b}: {s:.3g} s" for b, s in sorted(seconds.items()))
    return (
        "\n".join(lines) + f"\n\n`{results['arch']}` on {results['device']} ({results['threads']} threads): "
        f"one step of {MAX_SEQ_LENGTH} tokens per example takes {step_text} (median of {results['steps']}). "
        f"Grid `{preset.name}` ({preset.source}): batch {'/'.join(map(str, batch_sizes(preset)))} × lr "
        f"{'/'.join(f'{x:g}' for x in preset.lrs)} × {'/'.join(map(str, preset.epochs))} epochs × weight "
        f"decay {'/'.join(f'{x:g}' for x in preset.weight_decays)} × {len(preset.seeds)} seeds. "
        f"Measured {machine['date']}, "
        f"load {machine['load_average_1min_at_start']} → {machine['load_average_1min_at_end']}."
    )
