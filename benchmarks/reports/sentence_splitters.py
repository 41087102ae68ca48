"""The docs block of ``docs/results/sentence_splitters.json`` (:mod:`benchmarks.sentence_splitters`): speed,
sentences and the hard cases each splitter gets wrong."""

from __future__ import annotations

from benchmarks.results_file import provenance
from benchmarks.sentence_splitters import HARD_CASES


def render(payload: dict) -> str:
    rows = ["| splitter | MB of text/s | sentences | hard cases right |", "|---|---|---|---|"]
    notes = []
    for r in payload["results"]["splitters"]:
        if not r["installed"]:
            rows.append(f"| {r['splitter']} | not installed here | | |")
            continue
        rate = r["characters"] / 1e6 / r["seconds"]
        rows.append(
            f"| {r['splitter']} | {rate:.2f} | {r['sentences']:,} | {r['hard_correct']}/{len(HARD_CASES)} |"
        )
        wrong = [
            f"`{text}` → {len(got)} sentence(s): " + " ‖ ".join(got)
            for got, (text, want) in zip(r["hard_cases"], HARD_CASES, strict=True)
            if len(got) != want
        ]
        if wrong:
            notes.append(f"{r['splitter']} gets wrong:\n\n" + "\n".join(f"- {line}" for line in wrong))
    return "\n".join(rows) + "\n\n" + "\n\n".join(notes) + f"\n\nMeasured by {provenance(payload)}."
