"""Throughput and peak memory of ``python -m macaron_preprocess.bert_corpus`` on a generated English-Wikipedia
dump.

1. Throughput: the whole command on a multistream dump of ``--mb`` MB of XML (realistic wikitext from
   :mod:`macaron_synthetic.wiki`: templates, infoboxes, tables, references, lists, headings,
   redirects, other namespaces, disambiguation pages) with each ``--workers`` count, from scratch. Per
   stage: seconds, MB of XML per second (extraction) and words per second; end to end; the speed-up of the
   largest worker count over the first.
2. Peak memory (``--memory-mb``): the whole command with the largest worker count on dumps of each size;
   the summed PSS/RSS of the process tree, sampled from ``/proc``.

The recorded throughput file also holds a baseline row (what a user would otherwise write: the
``wikiextractor`` command line, then a one-process spaCy + sacremoses loop), measured by a finished study
whose code is retired (``benchmarks.results_file.RETIRED``).

The projection for the full English dump on a 64-core node uses the measured per-worker rates; see
docs/reports/bert_corpus_throughput.md for its assumptions.

    python -m benchmarks.bert_corpus_throughput [--mb 200] [--workers 1 2] [--memory-mb 100 1000]
        [--skip-throughput] [--work DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.process_memory import TreeMemorySampler
from benchmarks.results_file import RESULTS_DIR, machine_info, write_results
from macaron_synthetic.wiki.dump import write_dump
from macaron_workflow.atomic import write_text_atomically

REPO = Path(__file__).resolve().parents[1]

STAGES = ("extract", "collect", "learn-bpe", "bpe-train", "bpe-valid", "binarize")


def ensure_dump(work: Path, megabytes: int) -> tuple[Path, dict]:
    """A multistream dump of about ``megabytes`` MB of XML (with its index), generated once per size."""
    directory = work / f"dump-{megabytes}mb"
    dump = directory / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    record = directory / "manifest.json"
    if not record.exists():
        directory.mkdir(parents=True, exist_ok=True)
        print(f"generating {megabytes} MB of XML in {dump}", flush=True)
        manifest = write_dump(dump, target_bytes=megabytes * 10**6, seed=megabytes)
        counts = {"xml_bytes": manifest.xml_bytes, "bz2_bytes": dump.stat().st_size, **manifest.counts()}
        write_text_atomically(record, json.dumps(counts))
    return dump, json.loads(record.read_text())


def run_corpus(dump: Path, dest: Path, workers: int, sample_memory: bool = False) -> dict:
    """The whole command from scratch; wall time, per-stage seconds and counts (and peak memory)."""
    shutil.rmtree(dest, ignore_errors=True)
    command = [sys.executable, "-m", "macaron_preprocess.bert_corpus", "--dest", str(dest)]
    command += ["--wikipedia", str(dump), "--workers", str(workers)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = TreeMemorySampler(process.pid) if sample_memory else None
    if sampler:
        sampler.start()
    assert process.stderr is not None
    log = []
    for raw in process.stderr:  # "[stage] running" lines tell the sampler which stage is running
        line = raw.decode(errors="replace")
        log.append(line)
        started_stages = re.findall(r"\[([\w.-]+)\] running", line)  # progress bars share lines (\r)
        if sampler and started_stages:
            sampler.phase = started_stages[-1].split("-wikipedia")[0]
    process.wait()
    stderr = "".join(log).encode()
    wall = time.monotonic() - started
    if sampler:
        sampler.stop_event.set()
        sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"bert_corpus failed:\n{stderr.decode()[-3000:]}")
    summary = json.loads((dest / "summary.json").read_text())
    seconds = summary["stage_seconds"]
    stages = {
        stage: sum(s for name, s in seconds.items() if name.split("-wikipedia")[0] == stage)
        for stage in STAGES
    }
    wiki = summary["sources"]["wikipedia"]
    result = {
        "wall": wall,
        "stages": stages,
        "xml_bytes": wiki["xml_bytes"],
        "words": summary["total"]["train"]["tokens"] + summary["total"]["valid"]["tokens"],
        "split_words": {split: summary["total"][split]["tokens"] for split in ("train", "valid")},
        "documents": summary["total"]["train"]["documents"] + summary["total"]["valid"]["documents"],
    }
    if sampler:
        result.update(
            peak_pss_mb=sampler.peak_pss_kb / 1024,
            peak_rss_sum_mb=sampler.peak_rss_kb / 1024,
            max_single_rss_mb=sampler.max_single_rss_kb / 1024,
            largest_process=sampler.largest_process,
            peak_pss_mb_by_stage={
                stage: kb / 1024 for stage, kb in sampler.peak_pss_kb_by_phase.items() if stage in STAGES
            },
        )
    return result


def throughput(args: argparse.Namespace, work: Path) -> dict:
    dump, manifest = ensure_dump(work, args.mb)
    runs = {}
    for workers in args.workers:
        runs[str(workers)] = run_corpus(dump, work / f"out-w{workers}", workers)
        r = runs[str(workers)]
        print(f"  {workers} worker(s): {r['wall']:.1f}s, stages {r['stages']}", flush=True)
    return {"mb": args.mb, "dump": manifest, "runs": runs}


def peak_memory(args: argparse.Namespace, work: Path) -> dict:
    workers = max(args.workers)
    results = {}
    for megabytes in args.memory_mb:
        dump, manifest = ensure_dump(work, megabytes)
        run = run_corpus(dump, work / f"out-mem-{megabytes}", workers, sample_memory=True)
        results[str(megabytes)] = {"dump": manifest, "workers": workers, **run}
        print(f"  {megabytes} MB: peak PSS {run['peak_pss_mb']:.0f} MB, wall {run['wall']:.0f}s", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="MB of XML of the throughput dump")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to compare")
    parser.add_argument("--memory-mb", type=int, nargs="*", default=[], help="dump sizes for the memory runs")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--work", type=Path, help="directory for dumps and outputs (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "bert_corpus_throughput.json")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bert-corpus-bench-"))
    machine = machine_info()
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), cores: {os.cpu_count()}", flush=True)
    results = {}
    if not args.skip_throughput:
        results["throughput"] = throughput(args, work)
    if args.memory_mb:
        results["memory"] = peak_memory(args, work)
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
    write_results(args.json, results, machine)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
