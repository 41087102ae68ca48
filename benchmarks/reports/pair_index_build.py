"""The docs block of ``docs/results/pair_index_build.json`` (the retired study
``benchmarks.pair_index_build``): the builders' time and memory, and both extrapolated to the full corpus."""

from __future__ import annotations

from typing import Any

from benchmarks.results_file import provenance

FULL_CORPUS_SENTENCES = 150_000_000
"""English Wikipedia + BookCorpus, ≈ 3.3 B words: on the order of 100-150 M sentences (the upper end)."""


def _mb(value: float) -> str:
    return f"{value:,.0f} MB" if value < 10_000 else f"{value / 1024:,.1f} GB"


def _seconds(value: float) -> str:
    if value >= 120:
        return f"{value / 60:,.1f} min" if value < 600 else f"{value / 60:,.0f} min"
    return f"{value:,.1f} s" if value < 100 else f"{value:,.0f} s"


NAMES = {"fairseq": "fairseq `BlockPairDataset`", "ours": "`pair_index` build", "cached": "cache load"}


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| sentences | block | pairs | builder | time | CPU time | peak RSS | RSS kept (private) | same |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for kind in ("fairseq", "ours", "cached"):
            r = row[kind]
            lines.append(
                f"| {row['sentences']:,} | {row['block']} | {r['pairs']:,} | {NAMES[kind]} | "
                f"{_seconds(r['build_s'])} | {_seconds(r['build_cpu_s'])} | {_mb(r['peak_rss_mb'])} | "
                f"{_mb(r['rss_after_mb'])} ({_mb(r['private_after_mb'])}) | "
                f"{'yes' if row['identical'] else 'NO'} |"
            )
    return "\n".join(lines)


def _extrapolate(runs: list[dict[str, Any]], measured: list[dict[str, Any]], value: Any) -> float:
    """``value`` of the ``measured`` results of ``runs`` (sorted by size) at :data:`FULL_CORPUS_SENTENCES`:
    on the line through the smallest and the largest run (a per-sentence part and a fixed part, e.g. a
    buffer), or proportional with one run."""
    (n_small, v_small), (n_large, v_large) = ((runs[i]["sentences"], value(measured[i])) for i in (0, -1))
    if n_small == n_large:
        return v_large * FULL_CORPUS_SENTENCES / n_large
    return v_large + (v_large - v_small) / (n_large - n_small) * (FULL_CORPUS_SENTENCES - n_large)


def projection(rows: list[dict[str, Any]]) -> str:
    """Each builder's CPU time (the wall time of a shared machine varies with the others' load) and its
    memory above the process's RSS before the build, extrapolated to the full corpus."""
    lines = [
        f"| block | builder | CPU time for {FULL_CORPUS_SENTENCES / 1e6:.0f} M sentences | peak RSS added | "
        "private RSS kept | cache files |",
        "|---|---|---|---|---|---|",
    ]
    for block in sorted({row["block"] for row in rows}):
        runs = sorted((row for row in rows if row["block"] == block), key=lambda row: row["sentences"])
        for kind in ("fairseq", "ours", "cached"):
            measured = [row[kind] for row in runs]
            cpu = _extrapolate(runs, measured, lambda r: r["build_cpu_s"])
            peak = _extrapolate(runs, measured, lambda r: r["peak_rss_mb"] - r["rss_before_mb"])
            kept = _extrapolate(runs, measured, lambda r: r["private_after_mb"] - r["private_before_mb"])
            cache = _extrapolate(runs, measured, lambda r: r.get("cache_bytes", 0) / 2**20)
            lines.append(
                f"| {block} | {NAMES[kind]} | {_seconds(cpu)} | {_mb(peak)} | {_mb(kept)} | "
                f"{_mb(cache) if cache else ''} |"
            )
    return "\n".join(lines)


def render(payload: dict[str, Any]) -> str:
    rows = payload["results"]["rows"]
    sizes = sorted({row["sentences"] for row in rows})
    measured = " and ".join(f"{n / 1e6:.0f} M" for n in (sizes[0], sizes[-1]) if n) if len(sizes) > 1 else ""
    return (
        f"{table(rows)}\n\nExtrapolated to {FULL_CORPUS_SENTENCES / 1e6:.0f} M sentences (on the line "
        f"through the {measured or f'{sizes[0]:,}-sentence'} measurements):\n\n"
        f"{projection(rows)}\n\nMeasured by {provenance(payload)}."
    )
