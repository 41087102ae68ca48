"""``fairseq-train`` that survives preemption and time limits: on a signal it saves ``checkpoint_last.pt`` at
the next update, requeues its Slurm job and exits; the requeued job resumes from that checkpoint by itself.

    python -m macaron_tools.train_preemptible [--preemption-signal HUP] DATA --user-dir macaron_fairseq ...

Everything but ``--preemption-signal`` is passed to fairseq's own ``fairseq_cli.train.cli_main`` unchanged
(``slurm/translate.sbatch`` and the GLUE runs of :mod:`macaron_pipelines.glue.run_one` start it this way).
fairseq has no signal handling of its own, so this adds three hooks to its training loop, the protocol of
:mod:`macaron_workflow.preemption`:

* the handlers of the signal and of SIGTERM (Slurm's own preemption) only record it (forked data-loader
  workers inherit the handlers, so a signal sent to the whole Slurm step does not kill them);
* after every update (fairseq's ``validate_and_save``) the ranks all-reduce the flags; when one is set, every
  rank calls fairseq's ``save_checkpoint`` (rank 0 writes ``checkpoint_last.pt`` atomically, with the
  iterator's position inside the epoch), rank 0 requeues the job (after SIGTERM only when Slurm is
  preempting it, :meth:`macaron_workflow.preemption.Preemption.requeue`), a barrier keeps every rank until
  then (``srun --kill-on-bad-exit`` would otherwise end the step before the requeue), and training stops; the
  process exits with :data:`macaron_workflow.preemption.PREEMPTED_EXIT` (3);
* the checkpoint load says where training resumes from (``resumed from SAVE_DIR/checkpoint_last.pt at update
  U``), or, in a restarted Slurm job, that the checkpoint is gone and training starts fresh;
* fairseq writes a checkpoint to ``NAME.tmp`` and renames it, but copies it to its other names
  (``checkpoint_last.pt`` after ``checkpoint_1_2000.pt``) in place: a job killed during that copy left a
  truncated ``checkpoint_last.pt`` that every restart failed on. The copy goes through a temporary file and
  a rename too (:func:`copy_atomically`, :mod:`macaron_workflow.atomic`).

A requeue without a signal (a node failure) resumes from the last checkpoint fairseq wrote on its own
(``--save-interval-updates``, end of epoch).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from macaron_tools.train_progress import option_value
from macaron_workflow.atomic import atomic_output, missing_parents, remove_created
from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.preemption import DEFAULT_SIGNAL, PREEMPTED_EXIT, Preemption

logger = logging.getLogger("macaron_tools.train_preemptible")
SIGNAL_OPTION = "--preemption-signal"
PROG = "python -m macaron_tools.train_preemptible"
HELP_FLAGS = ("-h", "--help")


def help_parser() -> ArgumentParser:
    """This command's own options, for ``--help`` (the rest is fairseq-train's, which parses it)."""
    parser = ArgumentParser(
        prog=PROG,
        usage=f"%(prog)s [-h] [{SIGNAL_OPTION} SIGNAL] DATA [fairseq-train options]",
        description=__doc__,
        epilog="Every other argument goes to fairseq-train unchanged: 'fairseq-train --help' lists them\n"
        "(with --user-dir macaron_fairseq --arch ARCH, also the architecture's own).",
    )
    parser.add_argument(
        SIGNAL_OPTION,
        metavar="SIGNAL",
        default=DEFAULT_SIGNAL,
        help="the signal (name) that makes training save checkpoint_last.pt, requeue its Slurm job and exit "
        "(SIGTERM does too)",
    )
    parser.add_argument(
        "fairseq_args", nargs=argparse.REMAINDER, metavar="DATA ...", help="fairseq-train's arguments"
    )
    return parser


def split_signal_option(argv: Sequence[str]) -> tuple[str, list[str]]:
    """(the ``--preemption-signal`` value, the remaining fairseq-train arguments)."""
    name, rest, args = DEFAULT_SIGNAL, [], list(argv)
    while args:
        arg = args.pop(0)
        if arg == SIGNAL_OPTION:
            if not args:
                raise UserError(f"{SIGNAL_OPTION}: give a signal name (e.g. HUP, USR2)")
            name = args.pop(0)
        elif arg.startswith(SIGNAL_OPTION + "="):
            name = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return name, rest


def restart_text() -> str:
    restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
    return f" (restart {restarts} of Slurm job {os.environ.get('SLURM_JOB_ID')})" if restarts else ""


def copy_atomically(src_path: str, dst_path: str, overwrite: bool = False) -> str:
    """``fairseq.file_io.PathManager.copy`` for local files, through
    :func:`macaron_workflow.atomic.atomic_output`: a reader (a restart) sees the old file or the whole new
    one, never a part."""
    with atomic_output(Path(dst_path)) as tmp:
        shutil.copyfile(src_path, tmp)
    return dst_path


def is_rank_zero() -> bool:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return int(os.environ.get("SLURM_PROCID", "0") or 0) == 0


class PreemptibleTraining:
    """The hooks around ``fairseq_cli.train`` (installed by :meth:`installed`, removed afterwards)."""

    def __init__(self, signal_name: str) -> None:
        self.preemption = Preemption(signal_name)
        self.preempted = False

    @contextmanager
    def installed(self) -> Iterator[None]:
        import fairseq_cli.train as fairseq_train
        from fairseq import checkpoint_utils

        validate_and_save, load_checkpoint = fairseq_train.validate_and_save, checkpoint_utils.load_checkpoint

        def validate_and_save_or_stop(cfg: Any, trainer: Any, task: Any, epoch_itr: Any, *args: Any) -> Any:
            valid_losses, should_stop = validate_and_save(cfg, trainer, task, epoch_itr, *args)
            if should_stop:  # the end of training (fairseq has saved): nothing to resume
                return valid_losses, should_stop
            if self.preemption.should_stop():  # collective: every rank asks after every update
                checkpoint_utils.save_checkpoint(cfg.checkpoint, trainer, epoch_itr, None)
                self._stop(trainer, epoch_itr)
                return valid_losses, True
            return valid_losses, should_stop

        def load_checkpoint_and_say(cfg: Any, trainer: Any, **kwargs: Any) -> Any:
            last = Path(cfg.save_dir) / f"checkpoint_last{cfg.checkpoint_suffix}.pt"
            resuming = cfg.restore_file == "checkpoint_last.pt" and last.exists()
            extra_state, epoch_itr = load_checkpoint(cfg, trainer, **kwargs)
            if resuming:
                logger.info(
                    f"resumed from {last} at update {trainer.get_num_updates()} "
                    f"(epoch {epoch_itr.epoch}){restart_text()}"
                )
            elif restart_text():
                logger.warning(
                    f"{last} does not exist (the checkpoint directory is gone, or no checkpoint "
                    f"was written yet): starting fresh{restart_text()}"
                )
            return extra_state, epoch_itr

        import torch

        set_device = torch.cuda.set_device
        if not torch.cuda.is_available():
            # fairseq's Slurm inference calls torch.cuda.set_device(SLURM_LOCALID) on ranks > 0 even with
            # --cpu (fairseq/distributed/utils.py, infer_init_method), which fails on a machine without CUDA
            torch.cuda.set_device = lambda device: None
        from fairseq.file_io import PathManager

        copy = PathManager.copy

        def copy_checkpoint(src_path: str, dst_path: str, overwrite: bool = False) -> Any:
            if "://" in str(dst_path):  # a remote path of iopath's: its own copy
                return copy(src_path, dst_path, overwrite)
            return copy_atomically(src_path, dst_path, overwrite)

        fairseq_train.validate_and_save = validate_and_save_or_stop
        checkpoint_utils.load_checkpoint = load_checkpoint_and_say
        PathManager.copy = staticmethod(copy_checkpoint)
        try:
            yield
        finally:
            fairseq_train.validate_and_save = validate_and_save
            checkpoint_utils.load_checkpoint = load_checkpoint
            PathManager.copy = staticmethod(copy)
            torch.cuda.set_device = set_device
            self.preemption.restore()

    def _stop(self, trainer: Any, epoch_itr: Any) -> None:
        import torch.distributed as dist

        self.preempted = True
        name = self.preemption.reason
        logger.info(
            f"{name} received: checkpoint saved at update {trainer.get_num_updates()} "
            f"(epoch {epoch_itr.epoch}); stopping"
        )
        if is_rank_zero():
            self.preemption.requeue(logger.info)
        if dist.is_available() and dist.is_initialized():
            dist.barrier()  # rank 0 has written the checkpoint and asked for the requeue before anyone exits


def import_plugin_first(fairseq_args: Sequence[str]) -> None:
    """Import the ``--user-dir`` plugin ``macaron_fairseq`` before fairseq, as fairseq would import it: its
    repairs then keep ``import fairseq`` from loading DeepSpeed and scikit-learn
    (:mod:`macaron_fairseq.repairs.lazy_deepspeed`, :mod:`~macaron_fairseq.repairs.lazy_metrics`): about 2 s
    less at every run's start. The directory is found as ``fairseq.utils.import_user_module`` finds it (the
    path given, else beside fairseq's package) and imported with its parent first on ``sys.path``, as that
    function does, so that it accepts the module as already imported; a plugin of another name is left to
    fairseq."""
    user_dir = option_value(fairseq_args, "--user-dir")
    fairseq = importlib.util.find_spec("fairseq")
    if user_dir is None or fairseq is None or "macaron_fairseq" in sys.modules:
        return
    # fairseq_cli/train.py's logging, set before it imports fairseq; imported first, fairseq's
    # models/wav2vec/wav2vec2_classification.py would set it (stderr, DEBUG), and fairseq_cli.train's no more
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        level=os.environ.get("LOGLEVEL", "INFO").upper(),
        stream=sys.stdout,
    )
    module_path = os.path.abspath(user_dir)
    if not os.path.exists(module_path) and not os.path.isfile(os.path.dirname(module_path)):
        fairseq_dir = os.path.dirname(str(fairseq.origin))
        candidates = [os.path.join(fairseq_dir, user_dir), os.path.join(fairseq_dir, "..", user_dir)]
        module_path = next((path for path in candidates if os.path.exists(path)), module_path)
    parent, name = os.path.split(module_path)
    if name == "macaron_fairseq" and os.path.isfile(os.path.join(module_path, "__init__.py")):
        sys.path.insert(0, parent)
        importlib.import_module(name)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(flag in argv for flag in HELP_FLAGS):
        help_parser().print_help()
        return 0
    signal_name, fairseq_args = split_signal_option(argv)
    try:
        training = PreemptibleTraining(signal_name)
    except ValueError as err:
        raise UserError(str(err)) from None
    import_plugin_first(fairseq_args)
    import fairseq_cli.train as fairseq_train

    sys.argv = ["fairseq-train", *fairseq_args]
    save_dir = Path(option_value(fairseq_args, "--save-dir") or "checkpoints")
    created = missing_parents(save_dir)  # the directories fairseq will create, deepest first
    try:
        with training.installed():
            fairseq_train.cli_main()
    except BaseException:
        remove_created(created)  # a refused --restore-file leaves no empty --save-dir behind
        raise
    if training.preempted:
        if is_rank_zero() and not os.environ.get("SLURM_JOB_ID"):
            print(
                "train_preemptible: stopped by the signal after saving checkpoint_last.pt; rerun the same "
                "command to resume",
                file=sys.stderr,
            )
        return PREEMPTED_EXIT
    return 0


def cli() -> None:
    """Console script ``macaron-train-preemptible``: runs as ``python -m macaron_tools.train_preemptible``."""
    run_cli(main, PROG)


if __name__ == "__main__":
    cli()
