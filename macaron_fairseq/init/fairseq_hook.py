"""fairseq glue: run the chosen init scheme once, after checkpoint loading and before the optimizer exists.

``fairseq_cli/train.py`` builds the model, builds the trainer (which casts the model to fp16/bf16 and
moves it to its device), loads ``checkpoint_last.pt`` if there is one (restoring the weights *and* the
model's :class:`InitRecord`; a resumed run builds its optimizer there, after the weights are loaded), then
asks the trainer for its learning rate, which builds the optimizer on a fresh run. Under ``--fp16`` /
``--bf16`` fairseq's ``FP16Optimizer`` copies the parameters into fp32 master weights at that moment, and
from then on steps the copies and overwrites the model with them; scaling the model's weights in place any
later would be undone by the first update. So :func:`attach_init_scheme` (called by ``build_model``)
installs :func:`install_optimizer_hook`: ``Trainer._build_optimizer`` first runs the scheme on the
trainer's (cast, placed) model, then builds the optimizer and its master copies from the rescaled weights.
The memory-efficient wrappers and ``--amp`` step the model's own parameters, so for them the order does
not matter. ``task.begin_epoch`` keeps a hook too (:func:`install_init_hook`), for trainers that build
their optimizer elsewhere. Either hook runs the scheme if the record says it has not been applied; later
calls and resumed runs only log the stored record. Pre-trained weights are loaded inside ``build_model``,
i.e. before this point.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any

import torch
from fairseq import utils
from fairseq.logging import progress_bar
from torch import nn

from macaron_fairseq.init.errors import EmptyTrainingSplitError
from macaron_fairseq.init.record import InitRecord
from macaron_fairseq.init.stacks import dt_fixup_stacks, initialise_new_layers, t_fixup_stacks

logger = logging.getLogger(__name__)


def _data_parallel() -> tuple[int, int, object | None]:
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return 0, 1, None
    from fairseq.distributed import utils as dist_utils

    return (
        dist_utils.get_data_parallel_rank(),
        dist_utils.get_data_parallel_world_size(),
        dist_utils.get_data_parallel_group(),
    )


def _arg(args: Any, name: str, default: Any) -> Any:
    value = getattr(args, name, None)
    return default if value is None else value


def train_batches(task: Any, model: nn.Module, args: Any, split: str) -> Callable[[str], Iterable[dict]]:
    """A factory of streamed passes over this worker's shard of ``split``, batched by the task's own
    iterator with the training batch sizes, unshuffled, with fairseq's progress display."""
    shards = utils.split_paths(str(_arg(args, "data", "")))
    if len(shards) > 1:
        logger.warning(
            "DT-Fixup μ is estimated on the first of %d epoch shards (%s), the data of epoch 1; the other "
            "shards are not read (pass --dt-fixup-mu to set μ yourself)",
            len(shards),
            shards[0],
        )
    if split not in task.datasets:
        task.load_dataset(split, combine=True, epoch=1)
    dataset = task.dataset(split)
    if len(dataset) == 0:
        raise EmptyTrainingSplitError(
            f"the '{split}' split holds no example: μ for DT-Fixup cannot be estimated; check the data, "
            "or pass --dt-fixup-mu"
        )
    rank, world, _ = _data_parallel()
    # exactly what fairseq's training iterator sees (trainer.get_train_iterator): the same position limits,
    # max_tokens among them, and over-long examples skipped rather than fatal
    max_positions = utils.resolve_max_positions(
        task.max_positions(), model.max_positions(), _arg(args, "max_tokens", None)
    )
    use_cuda = next(model.parameters()).is_cuda

    def passes(stack: str) -> Iterable[dict]:
        itr = task.get_batch_iterator(
            dataset=dataset,
            max_tokens=_arg(args, "max_tokens", None),
            max_sentences=_arg(args, "batch_size", None),
            max_positions=max_positions,
            ignore_invalid_inputs=True,
            required_batch_size_multiple=_arg(args, "required_batch_size_multiple", 1),
            seed=_arg(args, "seed", 1),
            num_shards=world,
            shard_id=rank,
            num_workers=0,  # forward-only pass: loading in the main process (no worker start-up)
            epoch=1,
            data_buffer_size=_arg(args, "data_buffer_size", 0),
            disable_iterator_cache=True,
        ).next_epoch_itr(shuffle=False, set_dataset_epoch=False)
        bar = progress_bar.progress_bar(
            itr,
            log_format=_arg(args, "log_format", None),
            log_interval=_arg(args, "log_interval", 100),
            prefix=f"DT-Fixup μ ({stack})",
            default_log_format="simple" if _arg(args, "no_progress_bar", False) else "tqdm",
        )
        for sample in bar:
            yield utils.move_to_cuda(sample) if use_cuda and sample else sample

    return passes


def unwrap(model: nn.Module) -> nn.Module:
    while hasattr(model, "module") and isinstance(model.module, nn.Module):
        model = model.module
    return model


def attach_init_scheme(model: Any, scheme: str, task: Any, requested: str | None = None) -> None:
    """At ``build_model`` time: the scheme's initialisation of the new layers, the model's
    :class:`InitRecord`, and the hook that applies the data-dependent part before the first update.
    ``scheme`` is the applied scheme (``dt-fixup``, ``t-fixup`` or ``default``), ``requested`` what
    ``--init-scheme`` said (``auto`` resolves to one of them; default: ``scheme``); the record keeps both.
    ``model.new_stacks()`` says what the new layers are (any model: encoder-decoder, encoder only, a
    classifier with extra layers)."""
    if scheme == "default":
        return
    stacks = model.new_stacks()
    initialise_new_layers(stacks, scheme)
    model.init_record = InitRecord(
        scheme,
        [s.name for s in stacks if s.layers],
        [s.name for s in stacks if s.layers and s.cross_probe],
        requested=requested,
    )
    install_init_hook(task)
    install_optimizer_hook()


def run_init_scheme(model: nn.Module, task: Any) -> None:
    """Apply the model's init scheme unless its record (possibly restored from a checkpoint) says done."""
    target = unwrap(model)
    record = getattr(target, "init_record", None)
    if record is None:
        return
    if record.is_applied:
        if not getattr(target, "_init_record_logged", False):
            logger.info(
                "init scheme already applied (restored from checkpoint), not re-applied: %s",
                record.describe(),
            )
            target._init_record_logged = True
        return
    scheme = record.scheme_name
    stacks = target.new_stacks()
    if scheme == "t-fixup":
        record.store_results(t_fixup_stacks(stacks), with_pass=False)
    elif scheme == "dt-fixup":
        args = target.init_args
        split = _arg(args, "dt_fixup_split", None) or _arg(args, "train_subset", "train")
        mu = _arg(args, "dt_fixup_mu", None)
        batches = None if mu is not None else train_batches(task, target, args, split)
        _, _, group = _data_parallel()
        record.store_results(dt_fixup_stacks(stacks, batches, target, mu=mu, group=group, split=split), True)
    record.set(applied=1.0)
    target._init_record_logged = True
    logger.info("init scheme %s applied: %s", scheme, record.describe())


def install_init_hook(task: Any) -> None:
    """Make ``task.begin_epoch`` run :func:`run_init_scheme` first (once per task instance)."""
    if getattr(task, "_macaron_init_hook_installed", False):
        return
    original = task.begin_epoch

    def begin_epoch(epoch: int, model: nn.Module) -> Any:
        run_init_scheme(model, task)
        return original(epoch, model)

    task.begin_epoch = begin_epoch
    task._macaron_init_hook_installed = True


def install_optimizer_hook() -> None:
    """Make fairseq's ``Trainer._build_optimizer`` run :func:`run_init_scheme` on the trainer's model first
    (idempotent; a no-op for models without an init record)."""
    from fairseq.trainer import Trainer

    original = Trainer._build_optimizer
    if getattr(original, "__macaron_runs_init_scheme__", False):
        return

    @functools.wraps(original)
    def _build_optimizer(self: Any) -> Any:
        # the model as cast and placed by the trainer; ``self.model`` would wrap it for data parallelism
        run_init_scheme(self._model, self.task)
        return original(self)

    _build_optimizer.__macaron_runs_init_scheme__ = True  # type: ignore[attr-defined]
    Trainer._build_optimizer = _build_optimizer
