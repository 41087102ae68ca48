"""A run's model and DeepSpeed engine: fairseq's task, model and criterion built from fairseq's config as
``fairseq-train`` builds them, their starting weights (a checkpoint of ``--save-dir`` to resume, else
``--init-from``'s weights, else the ``--init-scheme``), and ``deepspeed.initialize`` over BERT's weight-decay
groups with the optimizer, schedule and precision of the DeepSpeed config."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.pretrain import checkpoints
from macaron_fairseq.pretrain.distributed import Placement
from macaron_fairseq.pretrain.flops import BertFlops
from macaron_fairseq.pretrain.init_from import InitWeights, load_into
from macaron_workflow.errors import UserError


@dataclass
class Parts:
    """What :func:`build` made."""

    task: Any
    criterion: Any
    engine: Any  # DeepSpeed's, around the model
    flops: BertFlops
    choice: checkpoints.Choice  # the checkpoint the run resumes (its tag is None for a fresh run)


def build(
    cfg: Any,
    args: Any,
    ds_config: dict[str, Any],
    where: Placement,
    init: InitWeights | None,
    log: Callable[[str], None],
) -> Parts:
    import deepspeed
    from fairseq import tasks

    from macaron_fairseq.pretrain.ds_config import configured_weight_decay, parameter_groups

    task = tasks.setup_task(cfg.task)
    task.load_dataset("train", epoch=1)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    save_dir = Path(cfg.checkpoint.save_dir)
    choice = choose_checkpoint(save_dir, where.rank)
    if choice.tag is not None and args.init_from:
        log(f"{save_dir} holds a checkpoint of this run: resuming it (--init-from is not used)")
    elif init is not None:
        load_into(model, init, cfg.model._name)
        log(f"initialised from {init.source} (weights only: fresh optimizer, schedule and data position)")
    elif choice.tag is None:
        model.to(training_device(where))  # the μ pass runs where training will (DeepSpeed keeps it there)
        apply_init_scheme(model, task, ds_config["train_micro_batch_size_per_gpu"])
    flops = BertFlops.of(model)
    groups = parameter_groups(model, configured_weight_decay(ds_config))
    engine, *_ = deepspeed.initialize(model=model, model_parameters=groups, config=ds_config)
    return Parts(task, criterion, engine, flops, choice)


def training_device(where: Placement) -> torch.device:
    """This rank's GPU (``cuda:LOCAL_RANK``, where DeepSpeed puts the model), else the CPU."""
    return torch.device("cuda", where.local_rank) if torch.cuda.is_available() else torch.device("cpu")


def choose_checkpoint(save_dir: Path, rank: int) -> checkpoints.Choice:
    """The newest complete checkpoint of ``save_dir`` (:mod:`.checkpoints`), rank 0's choice on every rank."""
    choice = [checkpoints.choose(save_dir) if rank == 0 else None]
    if dist.is_available() and dist.is_initialized():
        dist.broadcast_object_list(choice, src=0)
    return choice[0]  # type: ignore[return-value]


def apply_init_scheme(model: Any, task: Any, micro_batch: int) -> None:
    """DT-Fixup / T-Fixup (``--init-scheme``) rescale the new layers now, before the engine exists, so that
    its fp32 master weights and bf16/fp16 copies are made from the rescaled weights (a resumed run loads them
    from its checkpoint instead). DT-Fixup's μ pass reads this rank's shard of the training data in the
    engine's micro-batches, on the model's device (the training GPU: :func:`training_device`), and
    all-reduces the maxima on the backend's device (:mod:`macaron_workflow.collectives`)."""
    init_args = getattr(model, "init_args", None)
    if init_args is None:
        return
    if getattr(init_args, "pretrained_encoder", None):
        multiplier = getattr(init_args, "pretrained_lr_multiplier", None)
        if multiplier is None or float(multiplier) != 1.0:
            raise UserError(
                "--pretrained-encoder: DeepSpeed's schedulers give every parameter group the same "
                "learning rate, so a --pretrained-lr-multiplier cannot be honoured here; pass "
                "--pretrained-lr-multiplier 1 to train the pre-trained layers at the full rate"
            )
    if getattr(init_args, "batch_size", None) is None and getattr(init_args, "max_tokens", None) is None:
        init_args.batch_size = micro_batch
    run_init_scheme(model, task)


def grad_scaler(engine: Any) -> Any:
    """The GradScaler of DeepSpeed's ``torch_autocast`` with fp16 at ZeRO-0 (not in DeepSpeed's own
    checkpoint: saved in the client state), else None."""
    return getattr(engine, "torch_autocast_z0_gradscaler", None)
