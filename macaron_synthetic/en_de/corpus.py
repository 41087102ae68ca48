"""The corpus: seeded, unique sentence pairs per split, and the files ``DEST/{split}.{src,tgt}``.

Each split has its own ``random.Random`` seeded by ``"SEED:SPLIT"``, and the splits are sampled test first:
the test and validation sets do not depend on the requested training-set size. An English sentence
appears at most once in the whole corpus.
"""

from __future__ import annotations

import random
from pathlib import Path

from macaron_synthetic.en_de.sampler import Sampler
from macaron_synthetic.en_de.surface import detokenize, word_count
from macaron_workflow.atomic import write_text_atomically

MIN_WORDS = 4
MAX_WORDS = 25
SPLIT_ORDER = ("test", "valid", "train")  # test first: its content never depends on --train

Pairs = list[tuple[str, str]]


def generate_pairs(n: int, seed: int, split: str, seen: set[str]) -> Pairs:
    """n unique (English, German) pairs for one split; ``seen`` holds English sentences already used."""
    rng = random.Random(f"{seed}:{split}")
    sampler = Sampler(rng)
    pairs: Pairs = []
    attempts = 0
    while len(pairs) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise RuntimeError(f"could not sample {n} unique sentences for split {split!r}")
        en_words, de_words = sampler.sentence()
        if not MIN_WORDS <= word_count(en_words) <= MAX_WORDS:
            continue
        en, de = detokenize(en_words), detokenize(de_words)
        if en in seen:
            continue
        seen.add(en)
        pairs.append((en, de))
    return pairs


def generate_corpus(sizes: dict[str, int], seed: int) -> dict[str, Pairs]:
    """The pairs of each split named in ``sizes`` (``"train"``, ``"valid"``, ``"test"``), unique overall."""
    seen: set[str] = set()
    return {split: generate_pairs(sizes[split], seed, split, seen) for split in SPLIT_ORDER if split in sizes}


def write_corpus(dest: Path, corpus: dict[str, Pairs], src: str = "en", tgt: str = "de") -> None:
    """Write DEST/{split}.{src,tgt}, one sentence a line; each file appears complete or not at all."""
    dest.mkdir(parents=True, exist_ok=True)
    for split, pairs in corpus.items():
        for lang, column in ((src, 0), (tgt, 1)):
            write_text_atomically(dest / f"{split}.{lang}", "".join(pair[column] + "\n" for pair in pairs))
