"""Building BERT's next-sentence pairs: fairseq's ``BlockPairDataset`` against
:mod:`macaron_fairseq.data.pair_index`, on the sentence sizes of a synthetic Wikipedia + BookCorpus-like
corpus, and loading the cached index (what every later start and every other rank does).

Sizes (pieces per sentence, ``</s>`` removed; 0 = document break): sentence lengths log-normal around 26
pieces clipped to 1..100 (mean ≈ 30); articles of 1..200 sentences (log-normal, median 9) and, for ≈ 45 %
of the sentences, books of 5,000..10,000 sentences, in random order. Every measurement runs in a fresh
process (``--child``): wall and CPU seconds, RSS before the build, peak RSS (``ru_maxrss``) and RSS after it
with the result alive (what a rank keeps). The pairs of both builders and those loaded from the cache are
hashed in the same layout and must be identical ("same"). The projection to a full corpus follows the line
through the smallest and the largest measurement (time and memory grow linearly with the sentences: the
pairs per sentence do not depend on the corpus size; the line's intercept takes fixed costs such as
buffers), with CPU time rather than wall time: on a shared machine the wall time also measures the other
users' load.

    python -m benchmarks.pair_index_build [--sentences 2000000 10000000] [--blocks 128] [--work DIR]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.results_file import RESULTS_DIR, machine_info, write_results

REPO = Path(__file__).resolve().parents[1]

SEED = 1
SHORT_SEQ_PROB = 0.1


def synthetic_sizes(sentences: int, seed: int = 0) -> np.ndarray:
    """About ``sentences`` sentence sizes with a 0 after every document (see the module docstring)."""
    rng = np.random.default_rng(seed)
    books = int(0.45 * sentences / 7500)
    article_lengths = np.clip(rng.lognormal(np.log(9), 1.0, sentences), 1, 200).astype(np.int64)
    articles = int(np.searchsorted(np.cumsum(article_lengths), sentences - books * 7500)) + 1
    documents = np.concatenate([article_lengths[:articles], rng.integers(5000, 10001, books)])
    documents = documents[rng.permutation(len(documents))]
    total = int(documents.sum())
    lengths = np.clip(np.rint(rng.lognormal(np.log(26), 0.6, total)), 1, 100).astype(np.int64)
    sizes = np.zeros(total + len(documents), dtype=np.int64)
    breaks = np.cumsum(documents + 1) - 1
    keep = np.ones(len(sizes), dtype=bool)
    keep[breaks] = False
    sizes[keep] = lengths
    return sizes


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def private_rss_mb() -> float:
    """Anonymous memory (RssAnon): the process's own, as opposed to mapped file pages, which the page
    cache shares between processes (the mmap'd cache file of every rank of a node)."""
    with open("/proc/self/status") as handle:
        fields = dict(line.split(":", 1) for line in handle)
    return int(fields["RssAnon"].split()[0]) / 1024


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pairs_digest(rows: np.ndarray) -> str:
    """SHA-256 of the pairs as an int64 table (a first, offset, last, length; b ...; is_next)."""
    return hashlib.sha256(np.ascontiguousarray(rows, dtype="<i8").data).hexdigest()


class _Sizes:
    def __init__(self, sizes: np.ndarray) -> None:
        self.sizes = sizes

    def __len__(self) -> int:
        return len(self.sizes)


class _Symbols:
    def pad(self) -> int:
        return 1

    eos = cls = mask = sep = pad


def child_fairseq(sizes: np.ndarray, block: int) -> dict[str, Any]:
    from fairseq.data import data_utils
    from fairseq.data.legacy.block_pair_dataset import BlockPairDataset

    before, private, wall, cpu = rss_mb(), private_rss_mb(), time.perf_counter(), time.process_time()
    with data_utils.numpy_seed(SEED):
        pairs = BlockPairDataset(_Sizes(sizes), _Symbols(), sizes, block, "doc", SHORT_SEQ_PROB, 0)
    result = {"build_s": time.perf_counter() - wall, "build_cpu_s": time.process_time() - cpu}
    result.update(rss_before_mb=before, peak_rss_mb=peak_rss_mb(), rss_after_mb=rss_mb(), pairs=len(pairs))
    result.update(private_before_mb=private, private_after_mb=private_rss_mb())
    rows = np.array([(*a, *b, label) for a, b, label in pairs.sent_pairs], dtype=np.int64)
    return {**result, "digest": pairs_digest(rows)}


def _table(pairs: np.ndarray) -> np.ndarray:
    from macaron_fairseq.data.pair_index import PAIR_FIELDS

    return np.stack([pairs[name] for name in (*PAIR_FIELDS, "is_next")], axis=1)


def child_ours(sizes: np.ndarray, block: int, cache: Path) -> dict[str, Any]:
    from fairseq.data import data_utils

    from macaron_fairseq.data.pair_cache import PairIndexKey, save
    from macaron_fairseq.data.pair_index import build_pair_index

    before, private, wall, cpu = rss_mb(), private_rss_mb(), time.perf_counter(), time.process_time()
    with data_utils.numpy_seed(SEED):
        index = build_pair_index(sizes, block, SHORT_SEQ_PROB)
    result = {"build_s": time.perf_counter() - wall, "build_cpu_s": time.process_time() - cpu}
    result.update(rss_before_mb=before, peak_rss_mb=peak_rss_mb(), rss_after_mb=rss_mb(), pairs=len(index))
    result.update(private_before_mb=private, private_after_mb=private_rss_mb())
    start = time.perf_counter()
    key = PairIndexKey.of(sizes, block, SHORT_SEQ_PROB, SEED)
    result["key_s"] = time.perf_counter() - start
    start = time.perf_counter()
    save(index, cache, key)
    result["save_s"] = time.perf_counter() - start
    result["cache_bytes"] = sum(path.stat().st_size for path in cache.parent.glob(f"{cache.name}.pairs-*"))
    return {**result, "digest": pairs_digest(_table(index.pairs))}


def child_cached(sizes: np.ndarray, block: int, cache: Path) -> dict[str, Any]:
    """What a later start (or another rank) does: key from the sizes, checked load of the cache."""
    from macaron_fairseq.data.pair_cache import PairIndexKey, load_or_build

    def refuse() -> Any:
        raise RuntimeError("the cache was not used")

    before, private, wall, cpu = rss_mb(), private_rss_mb(), time.perf_counter(), time.process_time()
    index = load_or_build(refuse, cache, PairIndexKey.of(sizes, block, SHORT_SEQ_PROB, SEED))
    sizes_of_pairs = index.sizes  # what BertPretrainingDataset keeps in memory besides the mapping
    result = {"build_s": time.perf_counter() - wall, "build_cpu_s": time.process_time() - cpu}
    result.update(rss_before_mb=before, peak_rss_mb=peak_rss_mb(), rss_after_mb=rss_mb(), pairs=len(index))
    result.update(private_before_mb=private, private_after_mb=private_rss_mb())
    del sizes_of_pairs
    return {**result, "digest": pairs_digest(_table(index.pairs))}


def run_child(kind: str, sizes_path: Path, block: int, cache: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.pair_index_build", "--child", kind]
    command += ["--sizes", str(sizes_path), "--blocks", str(block), "--cache", str(cache)]
    print(f"  {kind}, block {block}: ", end="", flush=True)
    proc = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{result['build_s']:.1f} s, peak RSS {result['peak_rss_mb']:.0f} MB", flush=True)
    return result


def measure(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    rows = []
    for sentences in args.sentences:
        sizes_path = work / f"sizes-{sentences}.npy"
        if not sizes_path.exists():
            np.save(sizes_path, synthetic_sizes(sentences))
        sizes = np.load(sizes_path, mmap_mode="r")
        breaks = int(np.count_nonzero(sizes == 0))
        print(f"{len(sizes) - breaks:,} sentences, {breaks:,} documents", flush=True)
        for block in args.blocks:
            cache = work / f"cache-{sentences}-{block}" / "train"
            cache.parent.mkdir(exist_ok=True)
            for old in cache.parent.iterdir():
                old.unlink()
            row = {"sentences": len(sizes) - breaks, "documents": breaks, "block": block}
            row["mean_pieces"] = float(sizes.sum() / (len(sizes) - breaks))
            for kind in ("fairseq", "ours", "cached"):
                row[kind] = run_child(kind, sizes_path, block, cache)
            row["identical"] = row["fairseq"]["digest"] == row["ours"]["digest"] == row["cached"]["digest"]
            if not row["identical"]:
                raise SystemExit(f"the pairs differ ({sentences} sentences, block {block})")
            rows.append(row)
    return rows


def child_main(args: argparse.Namespace) -> None:
    import fairseq.data  # noqa: F401 - imported (with torch) before any measurement, as in a trainer

    sizes = np.array(np.load(args.sizes), dtype=np.int64)  # in memory, as SentencesWithoutEos.sizes
    block = args.blocks[0]
    if args.child == "fairseq":
        result = child_fairseq(sizes, block)
    elif args.child == "ours":
        result = child_ours(sizes, block, args.cache)
    else:
        result = child_cached(sizes, block, args.cache)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sentences", type=int, nargs="+", default=[2_000_000, 10_000_000])
    parser.add_argument("--blocks", type=int, nargs="+", default=[128], help="--tokens-per-sample values")
    parser.add_argument("--work", type=Path, help="directory for sizes and caches (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "pair_index_build.json")
    parser.add_argument("--child", choices=["fairseq", "ours", "cached"], help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    machine = machine_info()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        rows = measure(args, work)
    payload = {"rows": rows, "seed": SEED, "short_seq_prob": SHORT_SEQ_PROB}
    write_results(args.json, payload, machine)


if __name__ == "__main__":
    main()
