"""``macaron-gpu-check`` (``python -m macaron_pipelines.gpu_check``): its options, and the parts run in turn
into one table and one results file (what each part does: :mod:`macaron_pipelines.gpu_check`)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import macaron_pipelines.gpu_check
from macaron_pipelines.gpu_check.device import CheckError, peak_tflops, probe_device
from macaron_pipelines.gpu_check.report import RESULTS_FILE, Row, machine_info, render, write_json
from macaron_pipelines.gpu_check.wheels import WHEELS, missing_message, missing_packages
from macaron_workflow.cli import ArgumentParser, add_deprecated_alias, available_cores, program_name

PROG = ("macaron_pipelines.gpu_check", "macaron-gpu-check")
TINY_TRANSLATION = (
    "--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --decoder-embed-dim 32 "
    "--encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 "
    "--encoder-attention-heads 2 --decoder-attention-heads 2"
)
#: per --arch: batch per device and sequence length of the pre-training runs; the speed part's translation
#: model flags (base: macaron_base as shipped), tokens per batch, vocabulary, lengths and rounds
SIZES: dict[str, dict[str, Any]] = {
    "base": {
        "batch_size": 32,
        "seq_len": 128,
        "speed_model_flags": "",
        "speed_tokens": 4096,
        "speed_vocab": 10000,
        "speed_seq_len": 64,
        "speed_gen_len": 32,
        "speed_rounds": 5,
    },
    "tiny": {
        "batch_size": 4,
        "seq_len": 32,
        "speed_model_flags": TINY_TRANSLATION,
        "speed_tokens": 32,
        "speed_vocab": 100,
        "speed_seq_len": 8,
        "speed_gen_len": 4,
        "speed_rounds": 2,
    },
}


def what_it_runs() -> str:
    """The rows the check will produce (``--help``'s epilog): the gpu tests, the pre-training runs and their
    resume checks, the speed cases."""
    from macaron_pipelines.gpu_check.device import Device
    from macaron_pipelines.gpu_check.runs import plan
    from macaron_pipelines.gpu_check.suite import GPU_TESTS

    gpu = Device("cuda", "GPU", 1, bf16=True)
    lines = ["what it runs (one row each; --parts chooses among tests, pretrain, speed):", "  tests:"]
    lines += [f"    {what}  [{node}]" for node, what in GPU_TESTS.items()]
    lines.append("  pretrain (--arch base: vanilla_bert_base / macaron_bert_base, --steps each):")
    for run in plan(gpu, "base", 200, 20):
        resume = (
            "; resume: saved at --resume-at, resumed to 2x, vs a rerun's differences" if run.resume_at else ""
        )
        lines.append(f"    {run.name}: {run.arch}, {run.precision}, ZeRO-{run.zero}, {run.optimizer}{resume}")
    lines.append(
        "  speed: Macaron vs Transformer training step and beam-4 search, --macaron-ffn-impl "
        "plain, fused, compile"
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = ArgumentParser(
        prog=program_name(*PROG), description=macaron_pipelines.gpu_check.__doc__, epilog=what_it_runs()
    )
    p.add_argument(
        "--parts", nargs="+", default=["tests", "pretrain", "speed"], choices=["tests", "pretrain", "speed"]
    )
    p.add_argument("--arch", choices=list(SIZES), default="base", help="vanilla/macaron_bert_<arch>")
    p.add_argument("--steps", type=int, default=200, help="optimizer steps per pre-training run")
    p.add_argument("--resume-at", type=int, default=20, help="the resume check saves here, resumes to 2× it")
    p.add_argument("--warmup", type=int, default=10, help="steps left out of tokens/s and MFU")
    p.add_argument("--update-freq", type=int, default=2, help="micro-batches per optimizer step")
    p.add_argument("--only", default="", help="run only the pre-training runs whose name contains this")
    p.add_argument("--peak-tflops", type=float, default=None, help="per-GPU peak, for a GPU not in the table")
    p.add_argument("--corpus-mb", type=float, default=4.0, help="generated Wikipedia XML (MB)")
    p.add_argument("--vocab", type=int, default=8000, help="BPE vocabulary of the generated corpus")
    p.add_argument("--allow-cpu", action="store_true", help="run on the CPU (smoke test of the code paths)")
    p.add_argument(
        "--threads", type=int, default=0, help="OMP threads per process (0: usable cores / processes)"
    )
    p.add_argument("--workdir", type=Path, default=None, help="kept runs (default: a temporary directory)")
    add_deprecated_alias(p, "--work-dir", "--workdir")
    p.add_argument(
        "--json",
        type=lambda text: Path(text) if text else None,
        default=RESULTS_FILE,
        help="results file (default: %(default)s; '' for none)",
    )
    p.add_argument(
        "--wheels", action="store_true", help="print the pins scripts/gpu_wheels.sh downloads, exit"
    )
    args = p.parse_args(argv)
    for key, value in SIZES[args.arch].items():
        setattr(args, key, value)
    if args.steps < 2 * args.resume_at:
        args.resume_at = max(1, args.steps // 2)
    if args.steps < 2:
        p.error(f"--steps {args.steps}: at least 2 (a resume check saves half way)")
    args.impls = ["plain", "fused", "compile"]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.wheels:
        print("\n".join(f"{dist}=={version}" for dist, version, _ in WHEELS))
        return 0
    try:
        device = probe_device(args.allow_cpu)
        missing = missing_packages()
        if missing:
            raise CheckError(missing_message(missing))
    except CheckError as error:
        print(f"{program_name(*PROG)}: error: {str(error).removeprefix('gpu_check: ')}", file=sys.stderr)
        return 2
    # the parts import fairseq and the plugin: only now that they are known to be here
    from macaron_pipelines.gpu_check.runs import build_corpus, plan
    from macaron_pipelines.gpu_check.smoke import part_pretrain
    from macaron_pipelines.gpu_check.suite import part_tests

    if device.kind == "cpu":
        args.impls = ["plain", "fused"]  # torch.compile on a CPU needs a C++ compiler and minutes
    args.threads = args.threads or max(1, available_cores() // device.count)
    peak, source = peak_tflops(device.name, args.peak_tflops)
    peak_text = f"{peak:g} TFLOP/s ({source})" if peak else source
    header = (
        f"GPU check: {device.count} × {device.name}, peak {peak_text}, {args.arch} models, {args.steps} steps"
    )
    print(header, flush=True)
    began = time.monotonic()
    machine = machine_info()
    rows: list[Row] = []
    runs = [r for r in plan(device, args.arch, args.steps, args.resume_at) if args.only in r.name]
    with tempfile.TemporaryDirectory(prefix="gpu_check.") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if "tests" in args.parts:
            rows += part_tests(device, args.threads)
        if "pretrain" in args.parts:
            corpus = build_corpus(work / "corpus", args.corpus_mb, args.vocab)[0]
            for run in runs:
                rows += part_pretrain(run, corpus, work, args, device, peak)
        if "speed" in args.parts:
            try:
                from macaron_pipelines.gpu_check.speed import part_speed

                rows += part_speed(device, args)
            except Exception as error:
                rows.append(
                    Row("speed", "Macaron vs Transformer", "FAIL", f"{type(error).__name__}: {error}"[:400])
                )
    print(render(rows, header + f", {time.monotonic() - began:.0f} s in all"))
    context = {
        "device": asdict(device),
        "peak_tflops": peak,
        "peak_source": source,
        "arch": args.arch,
        "steps": args.steps,
        "plan": [asdict(r) for r in runs],
        "seconds": time.monotonic() - began,
    }
    if args.json:
        write_json(args.json, rows, context, machine, program_name(*PROG))
    return 1 if any(r.status == "FAIL" for r in rows) else 0


def cli() -> None:
    """The ``macaron-gpu-check`` console script: what ``python -m macaron_pipelines.gpu_check`` runs."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
