"""Submit one of the project's Slurm jobs: ``python -m slurm.submit JOB [options] [-- job flags]``.

    python -m slurm.submit pretrain --nodes 4 --gpus-per-node 8 --time 24:00:00 --partition gpu \\
        --env DATA=data-bin/bert-corpus --env ARCH=macaron_bert_base -- --max-update 900000

Checks the request before anything is submitted (a node count ≥ 1, one task per GPU, a time limit Slurm
reads, a preemption warning shorter than the time limit), prints the ``sbatch`` command, then runs it
(``--dry-run``: print only). Every ``.sbatch`` also works with plain ``sbatch``; this helper only spares
writing the options and catches inconsistent ones early.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workflow.cli import run_cli
from workflow.errors import UserError

SLURM_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Job:
    script: str
    gpu_tasks: bool  # one task per GPU (srun launches the training processes)


JOBS = {"pretrain": Job("pretrain.sbatch", gpu_tasks=True)}

_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def time_limit_seconds(text: str) -> int:
    """Slurm's time formats: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``."""
    match = _TIME.match(text.strip())
    if match is None:
        raise UserError(f"--time {text!r}: not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS)")
    days, a, b, c = (int(g) if g is not None else None for g in match.groups())
    if days is None:
        if b is None:  # minutes
            return a * 60
        return a * 60 + b if c is None else (a * 3600 + b * 60 + c)
    return days * 86400 + a * 3600 + (b or 0) * 60 + (c or 0)


def check_request(args: argparse.Namespace, job: Job) -> None:
    if args.nodes < 1:
        raise UserError(f"--nodes {args.nodes}: at least 1")
    if job.gpu_tasks:
        tasks = args.ntasks_per_node if args.ntasks_per_node is not None else args.gpus_per_node
        if args.gpus_per_node > 0 and tasks != args.gpus_per_node:
            raise UserError(
                f"--ntasks-per-node {tasks} with --gpus-per-node {args.gpus_per_node}: {job.script} runs one "
                "task per GPU; make them equal (or give --gpus-per-node 0 for CPU tasks)"
            )
        if tasks < 1:
            raise UserError("--ntasks-per-node: at least 1 (with --gpus-per-node 0, give the CPU task count)")
    limit = time_limit_seconds(args.time)
    if args.signal_seconds >= limit:
        raise UserError(
            f"--signal-seconds {args.signal_seconds} is not shorter than --time {args.time} ({limit} s): the "
            "preemption warning would come before the job starts"
        )


def sbatch_command(args: argparse.Namespace, job: Job, extra: Sequence[str]) -> list[str]:
    tasks = args.ntasks_per_node if args.ntasks_per_node is not None else args.gpus_per_node
    command = ["sbatch", f"--nodes={args.nodes}", f"--ntasks-per-node={tasks}", f"--time={args.time}",
               f"--signal=B:{args.signal}@{args.signal_seconds}"]  # fmt: skip
    if args.gpus_per_node > 0:
        command.append(f"--gpus-per-node={args.gpus_per_node}")
    for option in ("partition", "account", "qos", "cpus_per_task", "job_name"):
        value = getattr(args, option)
        if value is not None:
            command.append(f"--{option.replace('_', '-')}={value}")
    exports = [f"PREEMPT_SIGNAL={args.signal}", *args.env]
    command.append("--export=ALL," + ",".join(exports))
    return [*command, str(SLURM_DIR / job.script), *extra]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m slurm.submit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("job", choices=sorted(JOBS))
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--gpus-per-node", type=int, default=8, help="0 for CPU-only tasks")
    parser.add_argument("--ntasks-per-node", type=int, help="default: --gpus-per-node (one task per GPU)")
    parser.add_argument("--cpus-per-task", type=int)
    parser.add_argument("--time", default="24:00:00", help="time limit (Slurm format)")
    parser.add_argument("--partition")
    parser.add_argument("--account")
    parser.add_argument("--qos")
    parser.add_argument("--job-name")
    parser.add_argument("--signal", default="HUP", help="preemption signal (default HUP; see docs/slurm.md)")
    parser.add_argument("--signal-seconds", type=int, default=300, help="its lead before the time limit")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="job environment")
    parser.add_argument("--dry-run", action="store_true", help="print the sbatch command only")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = build_parser().parse_args(argv[:split])
    bad = [item for item in args.env if "=" not in item or "," in item]
    if bad:
        raise UserError(f"--env {bad[0]!r}: give NAME=VALUE (no commas: sbatch --export splits on them)")
    job = JOBS[args.job]
    check_request(args, job)
    command = sbatch_command(args, job, argv[split + 1 :])
    print(shlex.join(command), flush=True)
    if not args.dry_run:
        completed = subprocess.run(command, check=False)
        if completed.returncode != 0:
            raise UserError(f"sbatch failed with exit status {completed.returncode}")


if __name__ == "__main__":
    run_cli(main)
