"""Saving a run and resuming it. A checkpoint (``SAVE_DIR/stepN/``, committed as :mod:`.checkpoints` says)
holds DeepSpeed's engine state (model, optimizer, scheduler, loss scaler), this trainer's client state (step,
data position, the autocast GradScaler, fairseq's config) and every rank's RNG state; a resumed run reads all
of it back, every file through the checkpoint allow-list (DeepSpeed's own reads too), and logs the losses of
an uninterrupted run."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from omegaconf import OmegaConf

from macaron_fairseq.pretrain import checkpoints
from macaron_fairseq.pretrain.batches import Batches
from macaron_fairseq.pretrain.distributed import Placement
from macaron_fairseq.pretrain.engine import grad_scaler
from macaron_fairseq.pretrain.run_log import RunLog
from macaron_workflow.atomic import save_torch, write_text_atomically
from macaron_workflow.errors import UserError, storage_failure

CLIENT_STATE_VERSION = 1
RUN_RECORD = "run.json"
"""What a save directory holds (its architecture), checked before a checkpoint is loaded into the engine."""


def rng_state() -> dict[str, Any]:
    """This rank's random generators: torch's CPU generator and every CUDA generator of the process (dropout
    on a GPU draws from the CUDA one)."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> str | None:
    """Set the generators :func:`rng_state` saved. A checkpoint of a CUDA run restored where the process
    sees another number of devices restores the devices both have; the returned warning says so."""
    torch.set_rng_state(state["torch"])
    cuda = state.get("cuda")
    if cuda is None:
        return None
    devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for index in range(min(devices, len(cuda))):
        torch.cuda.set_rng_state(cuda[index], index)
    if devices != len(cuda):
        return (
            f"warning: the checkpoint holds the CUDA RNG state of {len(cuda)} device(s) per rank, this "
            f"process sees {devices}: the random streams differ from an uninterrupted run's"
        )
    return None


class RunState:
    """The checkpoints of one run in ``SAVE_DIR``."""

    def __init__(self, cfg: Any, engine: Any, batches: Batches, where: Placement, log: RunLog) -> None:
        self.cfg, self.engine, self.batches, self.where, self.log = cfg, engine, batches, where, log
        self.save_dir = Path(cfg.checkpoint.save_dir)
        self.arch = cfg.model._name

    def restore(self, choice: checkpoints.Choice) -> int:
        """Load ``choice``, the newest complete checkpoint of ``--save-dir`` if there is one; the step to
        continue from. Newer checkpoints that a killed save left incomplete are skipped, saying so."""
        restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
        for note in choice.notes(self.save_dir):
            self.log.message(note)
        if choice.tag is None:
            if self.where.rank == 0:
                self.log.truncate(0)  # records of a run killed before its first checkpoint
            if restarts:
                job = os.environ.get("SLURM_JOB_ID")
                self.log.message(
                    f"restart {restarts} of Slurm job {job}, but {self.save_dir} holds no "
                    "checkpoint: starting fresh"
                )
            return 0
        tag, manifest = choice.tag, choice.manifest or {}
        checkpoints.check_matches(self.save_dir, choice, self.arch, self.where.world_size)
        client = self._load_engine_state(tag)
        self.batches.load_state_dict(client["iterator"])
        scaler = grad_scaler(self.engine)
        if scaler is not None and client.get("grad_scaler"):
            scaler.load_state_dict(client["grad_scaler"])
        warning = restore_rng(self._read_rng_state(tag))
        if warning:
            print(f"[pretrain] rank {self.where.rank}: {warning}", file=sys.stderr, flush=True)
        step = int(client["step"])
        if self.where.rank == 0:
            self.log.truncate(step)
            if not (self.save_dir / RUN_RECORD).exists():  # informative only: the manifest decides
                write_text_atomically(self.save_dir / RUN_RECORD, json.dumps({"arch": manifest["arch"]}))
            if choice.latest != tag:  # the pointer names what was resumed, not a skipped checkpoint
                checkpoints.commit_latest(self.save_dir, tag)
        restart = f" (restart {restarts} of Slurm job {os.environ.get('SLURM_JOB_ID')})" if restarts else ""
        self.log.message(f"resumed from {self.save_dir / tag} at step {step}{restart}")
        return step

    def _load_engine_state(self, tag: str) -> dict[str, Any]:
        """DeepSpeed's ``load_checkpoint`` of ``tag`` (model, optimizer, scheduler, loss scaler), its every
        ``torch.load`` restricted to the allow-list (DeepSpeed asks for ``weights_only=False``; the files
        were also checked before the engine was built: :func:`.checkpoints.check_resumable`); the client
        state this trainer saved. A checkpoint DeepSpeed cannot load into this run is one line."""
        from macaron_workflow.checkpoint_safety import deepspeed_globals, restricted_loads

        hint = checkpoints.resume_hint(self.save_dir, tag)
        try:
            with restricted_loads(deepspeed_globals()):
                path, client = self.engine.load_checkpoint(str(self.save_dir), tag=tag)
        except UserError as err:
            raise UserError(f"cannot resume from {self.save_dir / tag}: {err}") from None
        except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as err:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise UserError(
                f"cannot resume from {self.save_dir / tag}: DeepSpeed could not load it into this run "
                f"({type(err).__name__}: {reason}); {hint}"
            ) from None
        if path is None:
            raise UserError(f"{self.save_dir / tag}: the checkpoint could not be loaded; {hint}")
        if not isinstance(client, dict) or not {"step", "iterator"} <= client.keys():
            raise UserError(
                f"{self.save_dir / tag}: not written by python -m macaron_fairseq.pretrain (no "
                f"step and data position in its client state); {hint}"
            )
        return client

    def _read_rng_state(self, tag: str) -> dict[str, Any]:
        """This rank's ``rng_rank{R}.pt`` of ``tag``, through the allow-list; one line if it is unusable."""
        from macaron_workflow.checkpoint_safety import load_checkpoint

        path = self.save_dir / tag / f"rng_rank{self.where.rank}.pt"
        hint = checkpoints.resume_hint(self.save_dir, tag)
        state = load_checkpoint(path, hint=hint)
        generator = state.get("torch")
        if not isinstance(generator, torch.Tensor) or generator.dtype != torch.uint8:
            raise UserError(
                f"{path}: not a random-generator state of python -m macaron_fairseq.pretrain; {hint}"
            )
        return {**state, "torch": generator.clone()}  # a copy in memory, not a view of the file

    def save(self, step: int, keep: int) -> None:
        """Save and commit the checkpoint of ``step`` (:mod:`.checkpoints`: every rank writes into the
        staging directory, rank 0 writes the manifest after the barrier and renames the directory to
        ``stepN``, the commit; ``latest`` follows it), keep the newest ``keep``. A storage failure (a full
        disk) is one line, and the staging directory is removed: no ``stepN`` appears."""
        tag = checkpoints.tag_of(step)
        tag_dir, staging = self.save_dir / tag, checkpoints.staging_dir(self.save_dir, tag)
        if self.where.rank == 0:
            if tag_dir.exists() and not checkpoints.is_own(tag_dir):
                raise UserError(
                    f"{tag_dir} is in the way of the checkpoint of step {step} and is not one of "
                    f"this trainer's: move it out of {self.save_dir}"
                )
            shutil.rmtree(staging, ignore_errors=True)  # left by a save that was cut short
        if dist.is_initialized():
            dist.barrier()
        client = {
            "version": CLIENT_STATE_VERSION,
            "step": step,
            "arch": self.arch,
            "iterator": self.batches.state_dict(),
            # as fairseq saves it
            "fairseq_cfg": OmegaConf.to_container(self.cfg, resolve=True, enum_to_str=True),
        }
        scaler = grad_scaler(self.engine)
        if scaler is not None:
            client["grad_scaler"] = scaler.state_dict()
        try:
            self.engine.save_checkpoint(
                str(self.save_dir), tag=staging.name, client_state=client, save_latest=False
            )
        except (OSError, RuntimeError) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            error = storage_failure(staging, exc)
            if error is None:
                raise
            raise UserError(f"checkpoint of step {step} not saved (nothing of it is kept): {error}") from None
        try:
            save_torch(rng_state(), staging / f"rng_rank{self.where.rank}.pt")
        except UserError as error:
            shutil.rmtree(staging, ignore_errors=True)
            raise UserError(f"checkpoint of step {step} not saved (nothing of it is kept): {error}") from None
        if dist.is_initialized():
            dist.barrier()
        if self.where.rank == 0:
            record = {
                "step": step,
                "arch": self.arch,
                "world_size": self.where.world_size,
                "zero_stage": self.engine.zero_optimization_stage(),
            }
            checkpoints.write_manifest(staging, record)
            if tag_dir.exists():  # an incomplete one of this trainer, left by a save that was cut short
                shutil.rmtree(tag_dir)
            os.replace(staging, tag_dir)
            write_text_atomically(self.save_dir / RUN_RECORD, json.dumps({"arch": self.arch}))
            checkpoints.commit_latest(self.save_dir, tag)
            checkpoints.prune(self.save_dir, keep=keep)
            self.log.plot()
