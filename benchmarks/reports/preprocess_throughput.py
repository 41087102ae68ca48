"""The docs blocks of ``docs/results/preprocess_*.json`` (the retired study
``benchmarks.preprocess_throughput``): seconds and pairs/s per stage and worker count, and the peak memory."""

from __future__ import annotations

from benchmarks.results_file import provenance

STAGE_NAMES = {
    "tokenize-train": "tokenize (+ cleaning)",
    "learn-bpe": "learn BPE (sentencepiece)",
    "bpe-train": "apply BPE (train)",
    "binarize": "binarize",
    "end to end": "end to end",
}


def throughput_table(result: dict) -> str:
    """Per stage: seconds and pairs/s for each worker count, and the speed-up over the first."""
    workers = list(result["best"])
    base = result["best"][workers[0]]
    head = " | ".join(f"{w} worker{'s' if w != '1' else ''}" for w in workers)
    lines = [f"| stage | {head} | speed-up |", "|---" * (len(workers) + 2) + "|"]
    for stage, name in STAGE_NAMES.items():
        cells = []
        for w in workers:
            r = result["best"][w]
            seconds = r["wall"] if stage == "end to end" else r["stages"][stage]
            rate = "" if stage == "learn-bpe" else f", {result['lines'] / seconds:,.0f} pairs/s"
            cells.append(f"{seconds:.1f} s{rate}")
        last = result["best"][workers[-1]]
        seconds_base = base["wall"] if stage == "end to end" else base["stages"][stage]
        seconds_last = last["wall"] if stage == "end to end" else last["stages"][stage]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {seconds_base / seconds_last:.2f}× |")
    return "\n".join(lines)


def memory_line(result: dict) -> str:
    return (
        f"Peak memory of the whole process tree on {result['lines']:,} pairs with {result['workers']} "
        f"workers (binarizer {result['binarizer']}): {result['peak_pss_mb']:.0f} MB summed PSS, "
        f"{result['peak_rss_sum_mb']:.0f} MB summed RSS; the largest single process "
        f"{result['max_single_rss_mb']:.0f} MB."
    )


def render(payload: dict) -> str:
    """The docs' tables of one results file (throughput and/or memory), and where they come from."""
    r = payload["results"]
    parts = []
    if "throughput" in r:
        t = r["throughput"]
        best = f", best of {t['repeats']} runs per worker count" if t["repeats"] > 1 else ""
        parts.append(
            f"{t['lines']:,} pairs, binarizer {t['binarizer']}, {t['vocab']} BPE vocabulary{best}:\n\n"
            + throughput_table(t)
        )
    if "memory" in r:
        parts.append(memory_line(r["memory"]))
    parts.append(f"Measured by {provenance(payload)}.")
    return "\n\n".join(parts)
