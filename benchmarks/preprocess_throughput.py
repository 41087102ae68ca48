"""Throughput and peak memory of the preprocessing pipeline (``python -m macaron_preprocess.custom``).

1. Throughput: the full pipeline on ``--lines`` generated sentence pairs, ``--repeats`` times per
   ``--workers`` value, each from scratch (a fresh output directory). Prints wall time and sentence pairs
   per second for every stage and end to end (the fastest of the repeats, i.e. the run least disturbed by
   other load on the machine), and the speed-up over the first worker count.
2. Peak memory: the full pipeline on ``--rss-lines`` pairs with the largest worker count. A sampler reads
   ``/proc`` every 0.1 s for the whole process tree (pipeline, its pool workers, the sentencepiece trainer,
   fairseq-preprocess and its workers) and reports the peak of the summed PSS (shared pages divided between
   the processes that share them), the peak of the summed RSS (shared pages counted in every process), and
   the peak RSS of the largest single process.

The load average is printed too: the numbers only mean something on an otherwise idle machine.

Usage::

    python -m benchmarks.preprocess_throughput [--lines 100000] [--rss-lines 1000000] [--workers 1 2]
        [--repeats 1] [--binarizer pool] [--work DIR] [--skip-rss] [--skip-throughput]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.process_memory import TreeMemorySampler
from benchmarks.results_file import RESULTS_DIR, machine_info, write_results
from macaron_synthetic.toy_bitext import Lexicon, SentenceStyle, sentence_pair, write_bitext, zipf_weights

REPO = Path(__file__).resolve().parents[1]

STAGES = ("tokenize-train", "learn-bpe", "bpe-train", "binarize")


# --------------------------------------------------------------------------------------------- corpus
def write_corpus(prefix: Path, pairs: int, seed: int = 0) -> None:
    """``pairs`` lines per side: Zipf-distributed pseudo-words (30k per side), 3-40 words, punctuation,
    numbers, hyphens (:mod:`macaron_synthetic.toy_bitext`, decorated sentence style)."""
    rng = random.Random(seed)
    lexicon = Lexicon.pseudo_words(30000, rng)
    style = SentenceStyle(min_words=3, max_words=40, zipf=zipf_weights(len(lexicon)), decorate=True)
    write_bitext(prefix, (sentence_pair(rng, lexicon, style) for _ in range(pairs)), "en", "de")


def ensure_corpus(work: Path, pairs: int) -> Path:
    directory = work / f"corpus-{pairs}"
    prefix = directory / "train"
    done = directory / ".complete"
    if not done.exists():
        print(f"generating {pairs} sentence pairs in {directory}", flush=True)
        write_corpus(prefix, pairs)
        write_corpus(directory / "valid", 2000, seed=1)
        done.write_text("ok\n")
    return directory


# ------------------------------------------------------------------------------------------- runs
def run_pipeline(
    corpus: Path, dest: Path, workers: int, vocab: int, binarizer: str, sample_memory: bool = False
) -> dict:
    shutil.rmtree(dest, ignore_errors=True)
    q = shlex.quote
    command = shlex.split(
        f"{q(sys.executable)} -m macaron_preprocess.custom --src en --tgt de "
        f"--trainpref {q(str(corpus / 'train'))} --validpref {q(str(corpus / 'valid'))} "
        f"--dest {q(str(dest))} --workers {workers} --bpe-vocab-size {vocab} --binarizer {q(binarizer)}"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = TreeMemorySampler(process.pid) if sample_memory else None
    if sampler:
        sampler.start()
    _, stderr = process.communicate()
    wall = time.monotonic() - started
    if sampler:
        sampler.stop_event.set()
        sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"pipeline failed:\n{stderr.decode()[-3000:]}")
    stages = {
        name: json.loads((dest / ".stages" / f"{name}.json").read_text())["report"]["seconds"]
        for name in STAGES
    }
    result = {"wall": wall, "stages": stages}
    if sampler:
        result["peak_pss_mb"] = sampler.peak_pss_kb / 1024
        result["peak_rss_sum_mb"] = sampler.peak_rss_kb / 1024
        result["max_single_rss_mb"] = sampler.max_single_rss_kb / 1024
        result["largest_process"] = sampler.largest_process
    return result


def best_of(runs: list[dict]) -> dict:
    """Per stage (and end to end) the fastest of several runs: the one least disturbed by other load."""
    return {
        "wall": min(run["wall"] for run in runs),
        "stages": {stage: min(run["stages"][stage] for run in runs) for stage in STAGES},
    }


def throughput(args: argparse.Namespace, work: Path) -> dict:
    corpus = ensure_corpus(work, args.lines)
    runs: dict[int, list[dict]] = {w: [] for w in args.workers}
    for repeat in range(args.repeats):
        order = args.workers if repeat % 2 == 0 else list(reversed(args.workers))  # alternate the order
        for w in order:
            runs[w].append(run_pipeline(corpus, work / f"out-w{w}", w, args.vocab, args.binarizer))
            stages = ", ".join(f"{k} {v:.1f}s" for k, v in runs[w][-1]["stages"].items())
            print(
                f"  run {repeat + 1}, {w} worker(s): {stages}, total {runs[w][-1]['wall']:.1f}s", flush=True
            )
    best = {str(w): best_of(runs[w]) for w in args.workers}
    return {
        "lines": args.lines,
        "repeats": args.repeats,
        "binarizer": args.binarizer,
        "vocab": args.vocab,
        "best": best,
        "runs": {str(w): runs[w] for w in args.workers},
    }


def peak_memory(args: argparse.Namespace, work: Path) -> dict:
    corpus = ensure_corpus(work, args.rss_lines)
    workers = max(args.workers)
    result = run_pipeline(corpus, work / "out-rss", workers, args.vocab, args.binarizer, sample_memory=True)
    print(f"\npeak memory on {args.rss_lines} sentence pairs, {workers} workers, wall {result['wall']:.0f}s")
    print(f"  peak summed PSS of the process tree: {result['peak_pss_mb']:8.0f} MB")
    rss_sum = result["peak_rss_sum_mb"]
    print(f"  peak summed RSS of the process tree: {rss_sum:8.0f} MB (shared pages counted in each process)")
    print(f"  peak RSS of the largest process:     {result['max_single_rss_mb']:8.0f} MB")
    print(f"    (that process: {result['largest_process']})")
    print("  stage seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in result["stages"].items()))
    return {"lines": args.rss_lines, "workers": workers, "binarizer": args.binarizer, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000, help="sentence pairs for the throughput runs")
    parser.add_argument("--rss-lines", type=int, default=1_000_000, help="sentence pairs for the memory run")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to compare")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs per worker count; the fastest per stage is reported"
    )
    parser.add_argument("--vocab", type=int, default=8000, help="--bpe-vocab-size of the runs")
    parser.add_argument(
        "--binarizer", default="pool", help="--binarizer of the runs: pool or fairseq-preprocess"
    )
    parser.add_argument("--work", type=Path, help="directory for corpora and outputs (default: a temp dir)")
    parser.add_argument("--skip-rss", action="store_true", help="only measure throughput")
    parser.add_argument("--skip-throughput", action="store_true", help="only measure peak memory")
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULTS_DIR / "preprocess_throughput.json",
        help="results file (default: %(default)s; the docs quote docs/results/preprocess_*.json)",
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="preprocess-bench-"))
    machine = machine_info()
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), cores: {os.cpu_count()}", flush=True)
    results = {}
    if not args.skip_throughput:
        results["throughput"] = throughput(args, work)
    if not args.skip_rss:
        results["memory"] = peak_memory(args, work)
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
    write_results(args.json, results, machine)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
