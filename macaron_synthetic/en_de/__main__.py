"""Command line of the quickstart's synthetic English→German-like parallel corpus.

    python -m macaron_synthetic.en_de --dest DIR [--train N --valid N --test N --seed S]

writes raw, detokenized ``DIR/{train,valid,test}.{en,de}`` (one sentence per line, aligned). The same seed
and sizes give byte-identical files. The grammar and the sampler are the
rest of :mod:`macaron_synthetic.en_de`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from macaron_synthetic.en_de.corpus import generate_corpus, write_corpus
from macaron_workflow.cli import ArgumentParser

SPLITS = ("train", "valid", "test")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m macaron_synthetic.en_de",
        description="Write a synthetic English→German-like parallel corpus: DEST/{train,valid,test}.{en,de}.",
    )
    parser.add_argument("--dest", required=True, type=Path, help="output directory")
    parser.add_argument("--train", type=int, default=20000, help="training pairs (default 20000)")
    parser.add_argument("--valid", type=int, default=500, help="validation pairs (default 500)")
    parser.add_argument("--test", type=int, default=500, help="test pairs (default 500)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = parser.parse_args(argv)
    for split in SPLITS:
        if getattr(args, split) < 1:
            parser.error(f"--{split} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus = generate_corpus({split: getattr(args, split) for split in SPLITS}, args.seed)
    write_corpus(args.dest, corpus)
    total = sum(len(pairs) for pairs in corpus.values())
    size = sum((args.dest / f"{s}.{lang}").stat().st_size for s in corpus for lang in ("en", "de"))
    print(
        f"[synthetic_en_de] wrote {total} sentence pairs ({size / 1e6:.2f} MB) to {args.dest}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
