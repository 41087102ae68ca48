"""Command line of the Wikipedia generator: a dump and/or a books directory.

    python -m macaron_synthetic.wiki --out enwiki-pages-articles-multistream.xml.bz2 --mb 200 \\
        [--books-dir DIR --books N]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from macaron_synthetic.wiki.books import write_books
from macaron_synthetic.wiki.dump import write_dump
from macaron_workflow.cli import ArgumentParser


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="python -m macaron_synthetic.wiki",
        description="Write a generated English-Wikipedia pages-articles dump (and BookCorpus-style books).",
    )
    parser.add_argument("--out", type=Path, help="dump file: .xml, .xml.bz2, *multistream*.xml.bz2")
    parser.add_argument("--mb", type=float, default=200.0, help="uncompressed XML size in MB (default 200)")
    parser.add_argument("--pages", type=int, help="a page count instead of --mb")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-id", type=int, default=1)
    parser.add_argument("--pages-per-stream", type=int, default=100)
    parser.add_argument("--compresslevel", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2, help="bz2 compression threads (0: inline)")
    parser.add_argument("--books-dir", type=Path)
    parser.add_argument("--books", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out is None and not args.books_dir:
        parser.error("nothing to write: give --out and/or --books-dir")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        m = write_dump(
            args.out,
            pages=args.pages,
            target_bytes=None if args.pages else int(args.mb * 1e6),
            seed=args.seed,
            start_id=args.start_id,
            pages_per_stream=args.pages_per_stream,
            compresslevel=args.compresslevel,
            threads=args.threads,
        )
        size = m.compressed_bytes / 1e6
        print(f"wrote {m.path} ({m.flavour}, {size:.1f} MB on disk, {m.streams} bz2 streams)")
        if m.index_path:
            print(f"wrote {m.index_path} ({m.index_path.stat().st_size / 1e6:.2f} MB)")
        print(f"{m.pages} pages, " + ", ".join(f"{k} {n}" for k, n in m.counts().items()))
        mb = m.xml_bytes / 1e6
        print(f"{mb:.1f} MB of XML in {m.seconds:.1f} s: {mb / m.seconds:.1f} MB/s")

    if args.books_dir:
        start = time.perf_counter()
        paths = write_books(args.books_dir, args.books, seed=args.seed)
        size = sum(p.stat().st_size for p in paths)
        seconds = time.perf_counter() - start
        print(f"wrote {len(paths)} books to {args.books_dir} ({size / 1e6:.1f} MB in {seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
