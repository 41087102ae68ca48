"""``python -m macaron_fairseq.pretrain DATA_BIN --arch macaron_bert_base --deepspeed-config CFG.json
--save-dir DIR --max-update N ...``, launched by ``torchrun``, ``deepspeed`` or ``srun`` alike.

Every fairseq training option is accepted (it is fairseq's own parser with ``--task
macaron_bert_pretraining --criterion macaron_bert_loss`` as defaults); the optimizer, schedule, precision,
ZeRO stage and batch sizes come from the DeepSpeed config (``configs/deepspeed/``), checked against
``--batch-size`` / ``--update-freq`` when those are given.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch

import macaron_fairseq  # noqa: F401  (registers models, task, criterion)
from macaron_fairseq.pretrain import checkpoints
from macaron_fairseq.pretrain.distributed import export_placement, placement
from macaron_fairseq.pretrain.ds_config import (
    check_supported,
    checkpoints_activations,
    complete_precision,
    read_config,
    reconcile_batch,
)
from macaron_fairseq.pretrain.flags import given, refuse_ignored, run_length
from macaron_fairseq.pretrain.init_from import check_init_arch, read_init_weights
from macaron_fairseq.pretrain.ops import check_buildable, complete_optimizer, prebuilt_ops, skip_shm_comm
from macaron_workflow.cli import HelpFormatter, program_name, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.overlap import refuse_file_as_directory, refuse_overlap
from macaron_workflow.preemption import DEFAULT_SIGNAL, PREEMPTED_EXIT, signal_number

if TYPE_CHECKING:
    from macaron_fairseq.pretrain.trainer import Pretrainer

T = TypeVar("T")
#: the process group's timeout (minutes): rank 0 builds the pair cache (about 6 minutes per NSP pairing of
#: the full corpus, docs/reports/pair_index_build.md) while the other ranks wait at a barrier
PROCESS_GROUP_TIMEOUT_MINUTES = 60
PROG = ("macaron_fairseq.pretrain", "macaron-pretrain")
DEFAULTS = {"--task": "macaron_bert_pretraining", "--criterion": "macaron_bert_loss"}


def add_pretrain_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("DeepSpeed pre-training")
    # a str, not a Path: the fairseq config (with this Namespace inside) goes into checkpoints, which
    # fairseq loads with an allow-list of types
    group.add_argument("--deepspeed-config", required=True, help="DeepSpeed JSON config")
    group.add_argument(
        "--no-validation",
        action="store_true",
        help="no validation at the end (validation every --validate-interval-updates steps still runs)",
    )
    group.add_argument(
        "--peak-tflops",
        type=float,
        help="peak TFLOP/s of one GPU at the run's precision, for the MFU shown in the progress lines "
        "(default: the data sheet's for the GPUs of macaron_fairseq.pretrain.flops.PEAK_TFLOPS)",
    )
    group.add_argument(
        "--preemption-signal",
        default=DEFAULT_SIGNAL,
        help=f"on this signal: checkpoint at the next step, requeue the Slurm job, exit {PREEMPTED_EXIT} "
        f"(default {DEFAULT_SIGNAL}: NCCL/RCCL have caught USR1/USR2; see slurm/pretrain.sbatch)",
    )
    group.add_argument(
        "--init-from",
        metavar="SAVE_DIR_OR_EXPORT",
        help="start from these weights (a pre-training --save-dir, its newest complete checkpoint, or an "
        "exported model.pt) with a fresh optimizer, schedule and data position: BERT's phase 2 from phase 1; "
        "a run with a checkpoint of its own in --save-dir resumes from that instead",
    )
    group.add_argument(
        "--keep-last-checkpoints", type=int, default=3, help="checkpoints kept in --save-dir (default: 3)"
    )
    group.add_argument(
        "--process-group-timeout",
        type=float,
        default=PROCESS_GROUP_TIMEOUT_MINUTES,
        metavar="MINUTES",
        help="how long a rank waits for the others at a collective before the run fails (default: "
        f"{PROCESS_GROUP_TIMEOUT_MINUTES}; DeepSpeed's own is 10, shorter than rank 0's work while the "
        "others wait: building the sentence-pair cache, ~6 min per --nsp-pairings at full scale, and the "
        "DT-Fixup μ pass)",
    )


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, object]:
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    argv = list(argv)
    for flag, value in DEFAULTS.items():
        if flag not in argv:
            argv = [flag, value, *argv]
    parser = options.get_training_parser()
    parser.prog = program_name(*PROG)
    parser.formatter_class = HelpFormatter  # every default shown, as in every command of the project
    add_pretrain_args(parser)
    args = options.parse_args_and_arch(parser, argv)
    return args, quietly(convert_namespace_to_omegaconf, args)


def quietly(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` without the deprecation warnings and DEBUG lines of Hydra 1.3 composing fairseq's
    Hydra 1.0-era config (two dozen lines of fairseq's internals in every job log)."""
    hydra_logger = logging.getLogger("hydra")
    level = hydra_logger.level
    hydra_logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return function(*args)
    finally:
        hydra_logger.setLevel(level)


def quiet_job_log() -> None:
    """A job log shows the run, not fairseq's internals: the epoch iterator's four INFO lines per epoch and
    validation, and torch's pin_memory warning on a machine without a GPU, are dropped (Hydra's deprecation
    warnings and DEBUG lines: :func:`quietly`)."""
    logging.getLogger("fairseq.tasks.fairseq_task").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message="'pin_memory' argument is set as true but no accelerator")


def config_argument(argv: Sequence[str]) -> str:
    """The ``--deepspeed-config`` value of ``argv`` (for messages before parsing)."""
    for index, token in enumerate(argv):
        if token.startswith("--deepspeed-config="):
            return token.split("=", 1)[1]
        if token == "--deepspeed-config" and index + 1 < len(argv):
            return argv[index + 1]
    return "the --deepspeed-config file"


def check_data_bin(data: Path) -> None:
    """A clear error for a missing or incomplete data-bin, before anything is built."""
    if not data.is_dir():
        raise UserError(f"{data}: no such data-bin (build one with python -m macaron_preprocess.bert_corpus)")
    for name in ("dict.txt", "train.bin", "train.idx"):
        if not (data / name).is_file():
            raise UserError(f"{data}: not a data-bin of python -m macaron_preprocess.bert_corpus (no {name})")


def check_paths(args: argparse.Namespace, save_dir: Path, config: Path) -> None:
    """The run's outputs (``--save-dir``, a ``--pair-cache`` directory) apart from its inputs (the data-bin,
    the DeepSpeed config, ``--init-from``), and ``--save-dir`` not an existing file: one line each, before
    anything is built or written (pruning and caches never touch an input)."""
    refuse_file_as_directory("--save-dir", save_dir)
    outputs = {"--save-dir": save_dir}
    if args.pair_cache not in ("", "off"):
        refuse_file_as_directory("--pair-cache", Path(args.pair_cache))
        outputs["--pair-cache"] = Path(args.pair_cache)
    inputs = {
        "DATA": Path(args.data),
        "--deepspeed-config": config,
        "--init-from": Path(args.init_from) if args.init_from else None,
    }
    refuse_overlap(outputs, inputs)


def require_deepspeed() -> Any:
    """The ``deepspeed`` module, or a one-line error saying how to install it (the ``pretrain`` extra)."""
    try:
        import deepspeed
    except ImportError as err:
        raise UserError(
            f"pre-training needs DeepSpeed, which is not installed ({err}): "
            "bash scripts/install.sh --extras pretrain (or pip install -e '.[pretrain]')"
        ) from err
    return deepspeed


def build_pretrainer(argv: Sequence[str]) -> Pretrainer:
    """Everything up to the first step: options, placement, process group, the :class:`Pretrainer` (model,
    init scheme, DeepSpeed engine, data)."""
    argv = list(argv)
    quiet_job_log()
    refuse_ignored(argv, config_argument(argv))
    args, cfg = parse(argv)  # --help and usage errors need no DeepSpeed
    try:
        signal_number(args.preemption_signal)
    except ValueError as err:
        raise UserError(str(err)) from err
    if not args.process_group_timeout > 0:
        raise UserError(f"--process-group-timeout {args.process_group_timeout}: give a number of minutes > 0")
    where = placement()
    update_freq = args.update_freq[0] if any(a.split("=")[0] == "--update-freq" for a in argv) else None
    config_path = Path(args.deepspeed_config)
    ds_config = reconcile_batch(
        read_config(config_path), config_path, where.world_size, args.batch_size, update_freq
    )
    cuda = torch.cuda.is_available()
    check_supported(ds_config, config_path, cuda=cuda)
    ds_config, notes = complete_precision(ds_config, config_path)
    check_data_bin(Path(args.data))
    save_dir = Path(cfg.checkpoint.save_dir)
    check_paths(args, save_dir, config_path)
    deepspeed = require_deepspeed()  # after the checks that need none: a refusal comes ~1 s sooner
    from macaron_fairseq.pretrain.trainer import Pretrainer

    ds_config, optimizer_notes = complete_optimizer(ds_config, config_path, cuda, prebuilt_ops())
    notes += optimizer_notes
    check_buildable(ds_config, config_path, cuda)  # a compiled op it needs can be loaded: one line otherwise
    max_update = args.max_update if given(argv, "--max-update") else None
    cfg.optimization.max_update = args.max_update = run_length(ds_config, config_path, max_update)
    choice = checkpoints.choose(save_dir)
    init = None
    if choice.tag is not None:  # read through the allow-list before DeepSpeed (weights_only=False) sees it
        checkpoints.check_resumable(save_dir, choice, cfg.model._name, where.world_size)
    elif args.init_from:
        init = read_init_weights(Path(args.init_from))  # before anything is built: refused early
        check_init_arch(init, cfg.model._name)
    if checkpoints_activations(ds_config) and not getattr(cfg.model, "checkpoint_activations", False):
        cfg.model.checkpoint_activations = args.checkpoint_activations = True
        notes.append(
            f"{config_path.name}: activation_checkpointing: every encoder layer is recomputed in "
            "the backward pass (fairseq's --checkpoint-activations)"
        )
    if where.rank == 0:
        for note in notes:
            print(f"[pretrain] {note}", file=sys.stderr, flush=True)
    export_placement(where)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if torch.cuda.is_available():
        torch.cuda.set_device(where.local_rank)
    timeout = datetime.timedelta(minutes=args.process_group_timeout)
    skip_shm_comm()
    deepspeed.init_distributed(dist_backend=backend, auto_mpi_discovery=False, timeout=timeout)
    torch.manual_seed(cfg.common.seed)
    return Pretrainer(cfg, args, ds_config, where, init)


def main(argv: Sequence[str] | None = None) -> None:
    build_pretrainer(sys.argv[1:] if argv is None else list(argv)).train()


def cli() -> None:
    """The ``macaron-pretrain`` console script: what ``python -m macaron_fairseq.pretrain`` runs."""
    run_cli(main, program_name(*PROG))


if __name__ == "__main__":
    cli()
