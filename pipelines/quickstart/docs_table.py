"""The markdown table of measured runs that docs/reports/quickstart_runs.md shows, made from run records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def results_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Run records as the markdown table docs/reports/quickstart_runs.md shows (tests check that it quotes
    docs/results/quickstart.json through this function), with notes: the machine and versions, the
    copy-the-source baseline, the first run's time by step and its first test translations."""

    def kernels(record: Mapping[str, Any]) -> str:
        capability, mkl = record["machine"]["torch_cpu_capability"], record["environment"].get("MKL_CBWR")
        return f"{capability}, MKL_CBWR={mkl}" if mkl else f"{capability}"

    def load(record: Mapping[str, Any]) -> str:
        return f"{record['load_average']['start'][0]:.1f} → {record['load_average']['end'][0]:.1f}"

    def minutes(seconds: float) -> str:
        return f"{seconds:.0f} s ({int(seconds // 60)} min {round(seconds) % 60:02d} s)"

    rows = [
        "| command | date | threads | torch CPU kernels | load average (1 min), start → end | wall time "
        "| CPU time | sacreBLEU | exact matches |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for record in records:
        rows.append(
            f"| `{record['command']}` | {record['date'][:10]} | {record['threads']} | {kernels(record)} "
            f"| {load(record)} | {minutes(record['wall_time_s'])} | {record['cpu_time_s']:.0f} s "
            f"| **{record['sacrebleu']:.2f}** | {record['exact_matches']} / {record['n_sentences']} |"
        )
    machines = sorted(
        {
            f"{r['machine']['cpu']}, {r['machine']['usable_cores']} usable cores, "
            + ", ".join(f"{name} {version}" for name, version in r["versions"].items())
            + f", Python {r['machine']['python']}"
            for r in records
        }
    )
    baselines = sorted({f"{r['copy_source_sacrebleu']:.2f}" for r in records})
    steps = ", ".join(f"{step} {seconds:.0f} s" for step, seconds in records[0]["seconds"].items())
    notes = [
        "Machine: " + "; ".join(machines) + ".",
        f"Copying the English source as the translation scores sacreBLEU {' / '.join(baselines)}.",
        f"Wall time of the first run by step: {steps}.",
    ]
    examples = "\n\n".join(
        f"{e['source']}\n{e['reference']}\n{e['hypothesis']}" for e in records[0].get("examples", [])
    )
    if examples:
        notes += ["", "The first test translations of the first run (source / reference / model output):"]
        notes += ["", "```", examples, "```"]
    return "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n"
