"""The docs blocks of ``docs/results/bert_corpus_*.json`` (the retired study
``benchmarks.bert_corpus_throughput``): throughput per stage and worker count, the projection to the English
dump, and the peak memory."""

from __future__ import annotations

from benchmarks.results_file import provenance, retired_code

#: the stages of ``macaron-preprocess-bert-corpus`` the study timed, in their order
STAGES = ("extract", "collect", "learn-bpe", "bpe-train", "bpe-valid", "binarize")

ENWIKI_BZ2_GB = 22.0
ENWIKI_XML_GB = 95.0
"""Approximate sizes of the English pages-articles dump (compressed, as the issue states; uncompressed, about
4.3:1), an input of the projection, not a measurement."""

FULL_NODE_CORES = 64


def _rate(amount: float, seconds: float, scale: float, unit: str) -> str:
    return f"{amount / scale / seconds:,.2f} {unit}" if seconds > 0 else "-"


def throughput_table(result: dict) -> str:
    """Per stage and end to end: seconds, MB of XML/s and words/s for each worker count, and speed-up."""
    workers = list(result["runs"])
    first, last = result["runs"][workers[0]], result["runs"][workers[-1]]
    head = " | ".join(f"{w} worker{'s' if w != '1' else ''}" for w in workers)
    lines = [f"| stage | {head} | speed-up |", "|---" * (len(workers) + 2) + "|"]
    for stage in (*STAGES, "end to end"):
        cells = []
        for w in workers:
            run = result["runs"][w]
            seconds = run["wall"] if stage == "end to end" else run["stages"][stage]
            rates = []
            if stage in ("extract", "end to end"):
                rates.append(_rate(run["xml_bytes"], seconds, 1e6, "MB XML/s"))
            if stage.startswith("bpe-"):
                rates.append(_rate(run["split_words"][stage[4:]], seconds, 1e3, "k words/s"))
            elif stage not in ("collect", "learn-bpe"):
                rates.append(_rate(run["words"], seconds, 1e3, "k words/s"))
            cells.append(f"{seconds:.1f} s" + (f" ({', '.join(rates)})" if rates else ""))
        base = first["wall"] if stage == "end to end" else first["stages"][stage]
        top = last["wall"] if stage == "end to end" else last["stages"][stage]
        lines.append(
            f"| {stage} | " + " | ".join(cells) + (f" | {base / top:.2f}× |" if top > 0 else " | - |")
        )
    if "baseline" in result:
        b = result["baseline"]
        lines.append(
            f"| baseline: wikiextractor --processes {b['processes']} + one-process spaCy/sacremoses loop | "
            f"wikiextractor {b['wikiextractor']:.1f} s + loop {b['loop']:.1f} s = **{b['wall']:.1f} s** "
            f"({_rate(last['xml_bytes'], b['wall'], 1e6, 'MB XML/s')}) | "
            f"bert_corpus with {workers[-1]} workers: **{b['wall'] / last['wall']:.2f}× faster** |  |"
        )
        lines.append(f"\nThe baseline's loop is a retired study: {retired_code('bert_corpus_baseline')}.")
    return "\n".join(lines)


def projection(result: dict) -> str:
    """Hours for the full English dump on a 64-core node, from the measured rates per worker."""
    workers = list(result["runs"])
    largest = result["runs"][workers[-1]]
    cores = int(workers[-1])
    scale = ENWIKI_XML_GB * 1e9 / largest["xml_bytes"]
    parallel = sum(largest["stages"][s] for s in ("extract", "bpe-train", "bpe-valid", "binarize"))
    parallel_hours = parallel * scale * cores / FULL_NODE_CORES / 3600
    serial_hours = (largest["stages"]["collect"] * scale + largest["stages"]["learn-bpe"]) / 3600
    total = parallel_hours + serial_hours
    return (
        f"Projection for the English dump (about {ENWIKI_BZ2_GB:.0f} GB of bz2, {ENWIKI_XML_GB:.0f} GB XML) "
        f"on a {FULL_NODE_CORES}-core node, from the per-worker rates measured with {cores} workers, scaled "
        f"linearly: {parallel_hours:.1f} h of parallel stages (extract, BPE, binarize) + "
        f"{serial_hours:.2f} h of serial ones (collect; BPE learning, bounded by its sample) = "
        f"**{total:.1f} h**."
    )


def memory_table(results: dict) -> str:
    """Peak memory per dump size: the whole run, each stage (summed PSS), the largest single process."""
    stages = [s for s in STAGES if any(s in r.get("peak_pss_mb_by_stage", {}) for r in results.values())]
    head = " | ".join(f"{stage} PSS" for stage in stages)
    lines = [
        f"| XML | bz2 | workers | wall | peak summed PSS | {head} | peak summed RSS | largest process |",
        "|---" * (7 + len(stages)) + "|",
    ]
    for r in results.values():
        by_stage = " | ".join(f"{r['peak_pss_mb_by_stage'].get(s, 0):,.0f} MB" for s in stages)
        lines.append(
            f"| {r['dump']['xml_bytes'] / 1e6:,.0f} MB | {r['dump']['bz2_bytes'] / 1e6:,.0f} MB | "
            f"{r['workers']} | {r['wall']:.0f} s | {r['peak_pss_mb']:,.0f} MB | {by_stage} | "
            f"{r['peak_rss_sum_mb']:,.0f} MB | {r['max_single_rss_mb']:,.0f} MB |"
        )
    largest = {r.get("largest_process", "").split(" --")[0] for r in results.values()} - {""}
    if largest:
        lines.append(f"\nLargest single process: {'; '.join(sorted(largest))}.")
    return "\n".join(lines)


def render_throughput(payload: dict) -> str:
    """The throughput table of a results file (with the dump it ran on, the projection and provenance)."""
    t = payload["results"]["throughput"]
    d = t["dump"]
    return (
        f"Generated multistream dump: {d['xml_bytes'] / 1e6:,.0f} MB of XML ({d['bz2_bytes'] / 1e6:,.0f} MB "
        f"bz2), {d['article']:,} articles, {d['redirect']:,} redirects, {d['other_namespace']:,} pages in "
        f"other namespaces, {d['disambiguation']:,} disambiguation pages.\n\n{throughput_table(t)}\n\n"
        f"{projection(t)}\n\nMeasured by {provenance(payload)}."
    )


def render(payload: dict) -> str:
    """Every table of a results file (throughput and/or memory), and where they come from."""
    r = payload["results"]
    if "memory" not in r:
        return render_throughput(payload)
    parts = [render_throughput(payload)] if "throughput" in r else []
    parts.append(f"{memory_table(r['memory'])}\n\nMeasured by {provenance(payload)}.")
    return "\n\n".join(parts)
