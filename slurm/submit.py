"""Submit one of the project's Slurm jobs: ``python -m macaron_slurm.submit JOB [options] [-- script
arguments]``.

    python -m macaron_slurm.submit pretrain --nodes 4 --gpus-per-node 8 --time 24:00:00 --partition gpu \\
        --env DATA=data-bin/bert-corpus --env ARCH=macaron_bert_base -- --max-update 900000
    python -m macaron_slurm.submit translate --nodes 2 --env RECIPE=wmt14 --env WORKDIR=work/wmt14
    python -m macaron_slurm.submit bert_corpus --cpus-per-task 16 --max-parallel 8 \\
        --env DEST=data-bin/bert-corpus \\
        --env BOOKS=books -- dumps/enwiki-*-pages-articles[0-9]*.bz2 [-- corpus flags]
    python -m macaron_slurm.submit glue --max-parallel 16 --env WORKDIR=work/glue --env CHECKPOINT=model.pt \\
        -- --tasks RTE,MRPC [-- fairseq-train flags]

Jobs: ``pretrain`` and ``translate`` are one job of N nodes × G GPUs, one task per GPU; ``bert_corpus`` is a
job array with one task per source (dump parts, then ``BOOKS``) and the merge after it
(``--dependency=afterok``); ``glue`` is the preparation job, the grid as an array with one run per task
(its size from ``python -m macaron_pipelines.glue --step count``) and the collection job, chained by
``afterok``; every job that waits for another is submitted with ``--kill-on-invalid-dep=yes``, so Slurm
cancels it when what it waits for failed, instead of leaving it pending forever. ``--max-parallel`` is the
arrays' ``%`` throttle.

Checks the request before anything is submitted (a node count ≥ 1, one task per GPU, a time limit Slurm
reads, a preemption warning shorter than the time limit, a signal name, the dump parts exist, a grid with
cells, the environment a job needs, ``sbatch`` on the PATH), prints each ``sbatch`` command, then runs it
(``--dry-run``: print only, later job ids shown as ``$PREP``/``$ARRAY``). A chain is all or nothing: when a
later ``sbatch`` fails, the jobs already submitted are cancelled. Errors are one line, exit status 2. Every
``.sbatch`` also works with plain ``sbatch`` (its header shows how); this helper spares writing the options
and catches inconsistent ones early.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.preemption import signal_number

SLURM_DIR = Path(__file__).resolve().parent
REPO = SLURM_DIR.parent


@dataclass(frozen=True)
class Job:
    script: str
    kind: str  # "tasks": one task per GPU over N nodes; "array_merge": corpus; "grid": GLUE
    default_gpus: int
    preemptible: bool
    needs: tuple[tuple[str, ...], ...] = ()  # environment: at least one name of each tuple


JOBS = {
    "pretrain": Job("pretrain.sbatch", "tasks", 8, True, (("DATA",),)),
    "translate": Job("translate.sbatch", "tasks", 8, True, (("RECIPE", "DATA"),)),
    "bert_corpus": Job("bert_corpus.sbatch", "array_merge", 0, False, (("DEST",),)),
    "glue": Job("glue.sbatch", "grid", 1, True, (("WORKDIR",),)),
}

_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
#: what Slurm reads as "no time limit" (besides 0): ``sbatch --time=UNLIMITED``
NO_LIMIT = ("UNLIMITED", "INFINITE", "-1")


def time_limit_seconds(text: str) -> int | None:
    """Slurm's time formats: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``; None for no limit
    (``UNLIMITED``, ``INFINITE``, ``-1`` or ``0``: the partition's MaxTime applies)."""
    if text.strip().upper() in NO_LIMIT:
        return None
    match = _TIME.match(text.strip())
    if match is None:
        raise UserError(
            f"--time {text!r}: not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS, UNLIMITED)"
        )
    days, a, b, c = (int(g) if g is not None else None for g in match.groups())
    if not any((days, a, b, c)):
        return None
    if days is None:
        if b is None:  # minutes
            return a * 60
        return a * 60 + b if c is None else (a * 3600 + b * 60 + c)
    return days * 86400 + a * 3600 + (b or 0) * 60 + (c or 0)


def environment(args: argparse.Namespace) -> dict[str, str]:
    return dict(item.split("=", 1) for item in args.env)


def slurm_signal(text: str) -> str:
    """``--signal``: a signal name as Slurm's ``--signal=B:NAME@...`` and the trainers read it (``HUP``,
    ``SIGUSR2``, ``10``) -> ``HUP``/``USR2``/``USR1``."""
    try:
        return signal_number(text).name.removeprefix("SIG")
    except ValueError as err:
        raise UserError(f"--signal {text!r}: not a signal name (e.g. HUP, USR2, TERM)") from err


def check_request(args: argparse.Namespace, job: Job) -> None:
    if args.nodes < 1:
        raise UserError(f"--nodes {args.nodes}: at least 1")
    if job.kind == "tasks":
        tasks = args.ntasks_per_node if args.ntasks_per_node is not None else args.gpus_per_node
        if args.gpus_per_node > 0 and tasks != args.gpus_per_node:
            raise UserError(
                f"--ntasks-per-node {tasks} with --gpus-per-node {args.gpus_per_node}: {job.script} runs one "
                "task per GPU; make them equal (or give --gpus-per-node 0 for CPU tasks)"
            )
        if tasks < 1:
            raise UserError("--ntasks-per-node: at least 1 (with --gpus-per-node 0, give the CPU task count)")
    else:
        if args.nodes != 1 or args.ntasks_per_node not in (None, 1):
            raise UserError(f"{args.job}: each job is one task on one node; drop --nodes/--ntasks-per-node")
        if job.kind == "grid" and args.gpus_per_node > 1:
            raise UserError(f"--gpus-per-node {args.gpus_per_node}: a GLUE run uses one GPU (give 1, or 0)")
        if job.kind == "array_merge" and args.gpus_per_node > 0:
            raise UserError("--gpus-per-node: corpus preprocessing uses no GPU (give 0)")
    if args.max_parallel < 1:
        raise UserError(f"--max-parallel {args.max_parallel}: at least 1")
    args.signal = slurm_signal(args.signal)
    if args.signal_seconds < 0:
        raise UserError(f"--signal-seconds {args.signal_seconds}: at least 0")
    limit = time_limit_seconds(args.time)
    if job.preemptible and limit is not None and args.signal_seconds >= limit:
        raise UserError(
            f"--signal-seconds {args.signal_seconds} is not shorter than --time {args.time} ({limit} s): the "
            "preemption warning would come before the job starts"
        )
    env = environment(args)
    for names in job.needs:
        if not any(name in env for name in names):
            wanted = "=... or --env ".join(names)
            raise UserError(f"{args.job} needs --env {wanted}=... (see the header of {job.script})")


def common_options(args: argparse.Namespace, job: Job, gpus: int) -> list[str]:
    command = [f"--time={args.time}", f"--gpus-per-node={gpus}"]
    if job.preemptible:
        command.append(f"--signal=B:{args.signal}@{args.signal_seconds}")
    for option in ("partition", "account", "qos", "cpus_per_task", "job_name"):
        value = getattr(args, option)
        if value is not None:
            command.append(f"--{option.replace('_', '-')}={value}")
    exports = [f"PREEMPT_SIGNAL={args.signal}", *args.env] if job.preemptible else list(args.env)
    command.append("--export=" + ",".join(["ALL", *exports]))
    return command


def sbatch_command(args: argparse.Namespace, job: Job, extra: Sequence[str]) -> list[str]:
    """The one ``sbatch`` of a ``tasks`` job (pretrain, translate)."""
    tasks = args.ntasks_per_node if args.ntasks_per_node is not None else args.gpus_per_node
    head = ["sbatch", f"--nodes={args.nodes}", f"--ntasks-per-node={tasks}"]
    return [*head, *common_options(args, job, args.gpus_per_node), str(SLURM_DIR / job.script), *extra]


def corpus_commands(args: argparse.Namespace, job: Job, extra: Sequence[str]) -> list[list[str]]:
    """The array over the sources and the merge after it (``$ARRAY``: the array's job id)."""
    split = list(extra).index("--") if "--" in extra else len(extra)
    parts = list(extra[:split])
    missing = [part for part in parts if not Path(part).is_file()]
    if missing:
        raise UserError(f"dump part {missing[0]}: no such file")
    sources = len(parts) + (1 if "BOOKS" in environment(args) else 0)
    if sources == 0:
        raise UserError("bert_corpus: give the dump part files after -- and/or --env BOOKS=DIR")
    script = [str(SLURM_DIR / job.script), *extra]
    options = common_options(args, job, 0)
    return [
        ["sbatch", "--parsable", f"--array=0-{sources - 1}%{args.max_parallel}", *options, *script],
        [*sbatch_after("ARRAY"), *options, *script],
    ]


def sbatch_after(job: str) -> list[str]:
    """The start of an ``sbatch`` command whose job waits for job ``$JOB`` to succeed (and is killed when that
    one fails)."""
    return ["sbatch", "--parsable", f"--dependency=afterok:${job}", "--kill-on-invalid-dep=yes"]


def grid_size(args: argparse.Namespace, extra: Sequence[str]) -> int:
    # as the jobs will: their environment (--export=ALL plus --env) read through the pipeline's option table
    count = [sys.executable, "-m", "macaron_pipelines.glue", "--from-env", "--step", "count", *extra]
    env = {**os.environ, **environment(args)}
    proc = subprocess.run(count, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UserError(f"{shlex.join(count)} failed: {proc.stderr.strip()}")
    cells = int(proc.stdout.split()[-1])
    if cells < 1:
        raise UserError(
            f"the GLUE grid has no cells ({shlex.join(count[3:])}): give at least one task, "
            "seed and configuration"
        )
    return cells


def glue_commands(args: argparse.Namespace, job: Job, extra: Sequence[str]) -> list[list[str]]:
    """Preparation, the grid's array (``$PREP``), the collection (``$ARRAY``)."""
    cells = grid_size(args, extra)
    script = str(SLURM_DIR / job.script)
    no_gpu, gpu = common_options(args, job, 0), common_options(args, job, args.gpus_per_node)
    return [
        ["sbatch", "--parsable", *no_gpu, script, "prepare", *extra],
        [*sbatch_after("PREP"), f"--array=0-{cells - 1}%{args.max_parallel}", *gpu, script, "cell", *extra],
        [*sbatch_after("ARRAY"), *no_gpu, script, "collect", *extra],
    ]


def submit_chain(commands: Sequence[list[str]], names: Sequence[str], dry_run: bool) -> None:
    """Run the ``sbatch`` commands in order, each later one's ``$NAME`` replaced by an earlier job id; all or
    nothing: when one fails, the jobs already submitted are cancelled (``scancel``) before the error."""
    if not dry_run and shutil.which("sbatch") is None:
        raise UserError(
            "sbatch: not found on the PATH (run this on a Slurm login node, or use --dry-run to "
            "print the commands)"
        )
    ids: dict[str, str] = {}
    for command, name in zip(commands, names, strict=True):
        resolved = [_substitute(arg, ids) for arg in command]
        print(shlex.join(resolved), flush=True)
        if dry_run:
            continue
        try:
            proc = subprocess.run(resolved, capture_output=True, text=True, check=False)
        except OSError as err:
            proc = subprocess.CompletedProcess(resolved, 127, "", str(err))
        job_id = proc.stdout.strip().split(";")[0] if proc.returncode == 0 else ""
        if not job_id.isdigit():
            problem = (proc.stderr.strip() or proc.stdout.strip() or "no job id").replace("\n", "; ")
            raise UserError(
                f"sbatch of the {name.lower()} job failed (exit status {proc.returncode}: "
                f"{problem}){_cancel(ids)}"
            )
        ids[name] = job_id
        print(f"submitted {name.lower()} job {ids[name]}", flush=True)


def _cancel(ids: dict[str, str]) -> str:
    """``scancel`` the jobs of a chain that failed half-way; what happened, for the error message."""
    if not ids:
        return ""
    jobs = list(ids.values())
    try:
        proc = subprocess.run(["scancel", *jobs], capture_output=True, text=True, check=False, timeout=120)
        ok, why = proc.returncode == 0, proc.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        ok, why = False, str(err)
    if ok:
        return f"; cancelled the jobs already submitted: {' '.join(jobs)}"
    return f"; cancelling the jobs already submitted failed ({why}): scancel {' '.join(jobs)}"


def _substitute(arg: str, ids: dict[str, str]) -> str:
    """The job ids of the chain in its own ``--dependency=afterok:$NAME`` arguments only: a user's string
    (``--env 'WORKDIR=/w/wk$PREP'``, a pipeline flag) reaches every job as it was given."""
    if not arg.startswith("--dependency="):
        return arg
    for name, job_id in ids.items():
        arg = arg.replace(f"${name}", job_id)
    return arg


PROG = "python -m macaron_slurm.submit"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("job", choices=sorted(JOBS))
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument(
        "--gpus-per-node", type=int, help="pretrain/translate: default 8 (0: CPU tasks); glue: per run, 1"
    )
    parser.add_argument("--ntasks-per-node", type=int, help="default: --gpus-per-node (one task per GPU)")
    parser.add_argument("--cpus-per-task", type=int)
    parser.add_argument("--time", default="24:00:00", help="time limit of each job (Slurm format)")
    parser.add_argument("--partition")
    parser.add_argument("--account")
    parser.add_argument("--qos")
    parser.add_argument("--job-name")
    parser.add_argument("--max-parallel", type=int, default=8, help="the arrays' %% throttle (default 8)")
    parser.add_argument("--signal", default="HUP", help="preemption signal (default HUP; see docs/slurm.md)")
    parser.add_argument("--signal-seconds", type=int, default=300, help="its lead before the time limit")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="job environment")
    parser.add_argument("--dry-run", action="store_true", help="print the sbatch commands only")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = build_parser().parse_args(argv[:split])
    extra = argv[split + 1 :]
    bad = [item for item in args.env if "=" not in item or "," in item]
    if bad:
        raise UserError(f"--env {bad[0]!r}: give NAME=VALUE (no commas: sbatch --export splits on them)")
    job = JOBS[args.job]
    if args.gpus_per_node is None:
        args.gpus_per_node = job.default_gpus
    check_request(args, job)
    if job.kind == "tasks":
        submit_chain([sbatch_command(args, job, extra)], ["JOB"], args.dry_run)
    elif job.kind == "array_merge":
        submit_chain(corpus_commands(args, job, extra), ["ARRAY", "MERGE"], args.dry_run)
    else:
        submit_chain(glue_commands(args, job, extra), ["PREP", "ARRAY", "COLLECT"], args.dry_run)


def cli() -> None:
    """The ``macaron-submit`` console script: what ``python -m macaron_slurm.submit`` runs."""
    run_cli(main, PROG)


if __name__ == "__main__":
    cli()
