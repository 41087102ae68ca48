"""The docs block of ``docs/results/sentence_splitters.json`` (the retired study
``benchmarks.sentence_splitters``): speed, sentences and the hard cases each splitter gets wrong."""

from __future__ import annotations

from benchmarks.results_file import provenance

#: the hard cases of the study (its code is retired: benchmarks.results_file.RETIRED), in its order
HARD_CASES = (
    # (paragraph, the sentences a careful reader finds)
    ("Dr. Smith arrived at 5 p.m. on Jan. 3. He left early.", 2),
    ("The U.S. Army was founded in 1775. It is large.", 2),
    ("He moved to the U.S. He found work in Boston.", 2),
    ("Prices rose by 3.5 per cent in 2019. Analysts were surprised.", 2),
    ('She said, "Stop!" and left the room.', 1),
    ("See e.g. the works of St. Augustine. They still matter.", 2),
    ("J. R. R. Tolkien wrote it in 1937. It sold well.", 2),
    ("It reached No. 1 in the U.K. charts. Fans cheered!", 2),
    ("The film (released in 2001.) was a hit. Critics agreed.", 2),
    ("Was it worth it? Most historians think so.", 2),
)


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
