"""spaCy sentence splitters for the pre-training corpus: speed on Wikipedia-style paragraphs and the
sentences they give on hard cases (abbreviations, initials, decimals, quotes).

Compares the default rule-based ``sentencizer`` (``spacy.blank("en")``) with trained pipelines given by
name (``en_core_web_sm``, ...) when they are installed; a pipeline that is not installed is reported as
such, not skipped silently.

    python -m benchmarks.sentence_splitters [--splitters sentencizer en_core_web_sm] [--mb 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import RESULTS_DIR, machine_info, write_results
from macaron_preprocess.sources import mediawiki
from macaron_preprocess.text.sentences import SentenceSplitter
from macaron_preprocess.text.wikitext import article_paragraphs, drop_reason
from macaron_synthetic.wiki.dump import write_dump
from macaron_workflow.errors import UserError

REPO = Path(__file__).resolve().parents[1]

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


def wikipedia_paragraphs(megabytes: float, work: Path) -> list[str]:
    dump = work / "enwiki-pages-articles-multistream.xml.bz2"
    write_dump(dump, target_bytes=int(megabytes * 1e6), seed=11)
    paragraphs = []
    for chunk in mediawiki.iter_page_chunks(dump):
        page = mediawiki.parse_page(dump, chunk)
        if drop_reason(page) is None:
            paragraphs += article_paragraphs(page)[0]
    return paragraphs


def measure(name: str, paragraphs: list[str]) -> dict:
    try:
        splitter = SentenceSplitter(name)
    except UserError as exc:
        return {"splitter": name, "installed": False, "error": str(exc)}
    started = time.perf_counter()
    sentences = splitter.split(paragraphs)
    seconds = time.perf_counter() - started
    hard = [splitter.split([text])[0] for text, _ in HARD_CASES]
    return {
        "splitter": name,
        "installed": True,
        "seconds": seconds,
        "characters": sum(len(p) for p in paragraphs),
        "sentences": sum(len(s) for s in sentences),
        "hard_cases": hard,
        "hard_correct": sum(len(got) == want for got, (_, want) in zip(hard, HARD_CASES, strict=True)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splitters", nargs="+", default=["sentencizer", "en_core_web_sm"])
    parser.add_argument("--mb", type=float, default=2.0, help="MB of generated XML to take paragraphs from")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "sentence_splitters.json")
    args = parser.parse_args()
    machine = machine_info()
    with tempfile.TemporaryDirectory() as work:
        paragraphs = wikipedia_paragraphs(args.mb, Path(work))
    print(f"{len(paragraphs):,} paragraphs; load {os.getloadavg()[0]:.2f}", flush=True)
    results = {"splitters": [measure(name, paragraphs) for name in args.splitters]}
    write_results(args.json, results, machine)


if __name__ == "__main__":
    main()
