"""The docs block of ``docs/results/glue_small.json`` (the retired study
``benchmarks.glue_small_run``): the table the small GLUE pipeline printed, its grid and its time."""

from __future__ import annotations

from typing import Any

from benchmarks.results_file import provenance


def render(payload: dict[str, Any]) -> str:
    results = payload["results"]
    grid = results["grid"]
    return (
        f"{results['table'].rstrip()}\n\n`{results['command']}`: {results['runs']} fine-tuning runs (batch "
        f"{grid['batch_sizes']}, lr {grid['lrs']}, epochs {grid['epochs']}, seeds {grid['seeds']}), "
        f"{results['seconds']:.0f} s for the whole command. Measured by {provenance(payload)}."
    )
