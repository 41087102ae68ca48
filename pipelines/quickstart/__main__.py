"""The quickstart's orchestration: its stages in order, their timings, and the run record at the end
(``python -m macaron_pipelines.quickstart``; ``bash pipelines/quickstart.sh`` installs what is missing
first)."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from macaron_pipelines import fairseq_steps
from macaron_pipelines.commands import Console, report_errors
from macaron_pipelines.fairseq_steps import BleuSettings
from macaron_pipelines.quickstart import threads
from macaron_pipelines.quickstart.data import preprocess, synthetic_corpus
from macaron_pipelines.quickstart.options import PROG, parse_args
from macaron_pipelines.quickstart.run_record import run_record, stage_markers, wrapper_start_time
from macaron_pipelines.quickstart.training import train_command
from macaron_pipelines.quickstart.workdir import SPLITS, Workdir
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.stages import StageRunner


def run_quickstart(args: argparse.Namespace) -> None:
    started = wrapper_start_time() or time.time()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    timings = {"before the stages (installer, start-up)": time.time() - started}

    @contextmanager
    def timed(step: str) -> Iterator[None]:
        step_started = time.time()
        try:
            yield
        finally:
            timings[step] = time.time() - step_started

    console = Console(PROG, elapsed=True, echo_commands=False)
    paths = Workdir(args.workdir)
    paths.root.mkdir(parents=True, exist_ok=True)
    threads.set_thread_environment(args.threads, args.cpu_kernels)
    runner = StageRunner(paths.state_dir, force=args.force, log=console.say)
    state_dirs = (paths.state_dir, paths.data / ".stages")
    markers_before = stage_markers(*state_dirs)
    torch_probe = threads.start_torch_probe()
    if args.force:
        console.say(f"--force: redoing every stage in {paths.root}")

    try:
        if args.own_corpus:
            prefixes = [args.train_prefix, args.valid_prefix, args.test_prefix]
        else:
            with timed("corpus"):
                synthetic_corpus(runner, console, args, paths.corpus)
            prefixes = [paths.corpus / split for split in SPLITS]
        with timed("preprocess"):
            preprocess(console, args, paths, prefixes)

        with timed("train"):
            fairseq_steps.train(
                runner,
                console,
                stage="train",
                command=train_command(args, paths),
                data_bin=paths.data_bin,
                save_dir=paths.checkpoints,
                log=paths.train_log,
                outputs=("checkpoint_best.pt", "checkpoint_last.pt"),
                log_per_training=True,
                announce=f"training a Macaron model (dim {args.embed_dim}, 2x{args.ffn_dim} FFN, "
                f"{args.layers}+{args.layers} layers, max {args.max_update} updates, {args.threads} threads)",
            )
        with timed("generate"):
            fairseq_steps.generate(
                runner,
                console,
                stage="generate",
                data_bin=paths.data_bin,
                checkpoint=paths.checkpoints / "checkpoint_best.pt",
                src=args.src,
                tgt=args.tgt,
                beam=args.beam,
                lenpen=args.lenpen,
                output=paths.generated,
                cpu=True,
                announce=f"translating the test split (beam {args.beam})",
            )
        hypotheses = paths.results / f"test.hyp.{args.tgt}"
        with timed("score"):
            bleu = fairseq_steps.score(
                runner,
                stage="score",
                generated=paths.generated,
                ref=paths.data / "raw" / f"test.{args.tgt}",
                tok_ref=paths.data / "tok" / f"test.{args.tgt}",
                lang=args.tgt,
                bleu=BleuSettings(lowercase=args.lowercase),
                name="quickstart test",
                json_out=paths.results / "bleu.json",
                hyp_out=hypotheses,
            )
        curves = paths.results / "loss_curves.png"
        title = f"Macaron quickstart ({args.src}→{args.tgt})"
        with timed("plot"):
            fairseq_steps.plot(runner, stage="plot", log=paths.train_log, out=curves, title=title)
        cpu_capability = threads.read_torch_probe(torch_probe)
    finally:
        if torch_probe is not None and torch_probe.poll() is None:
            torch_probe.kill()
            torch_probe.wait()

    markers_after = stage_markers(*state_dirs)
    ran = sorted(name for name, mtime in markers_after.items() if markers_before.get(name) != mtime)
    skipped = sorted(name for name in markers_after if name not in ran)
    record = run_record(
        args,
        paths,
        bleu,
        started=started,
        load_at_start=load_at_start,
        timings=timings,
        ran=ran,
        skipped=skipped,
        cpu_capability=cpu_capability,
    )
    write_text_atomically(paths.run_record, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    console.say(
        f"{record['exact_matches']} of {record['n_sentences']} test translations are exactly the reference; "
        f"copying the source would score sacreBLEU {record['copy_source_sacrebleu']:.2f}"
    )
    console.say(f"done. results: {paths.results / 'bleu.json'}, {curves}, {hypotheses}")
    console.say(f"run record: {paths.run_record} ({record['wall_time_s']:.0f} s, {args.threads} threads)")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    report_errors(PROG, lambda: run_quickstart(args))


if __name__ == "__main__":
    main()
