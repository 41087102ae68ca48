"""BERT-style pre-training of a plugin model with DeepSpeed.

The model, task (data) and criterion are fairseq's, built from fairseq's own command line exactly as
``fairseq-train`` builds them (``--task macaron_bert_pretraining --criterion macaron_bert_loss --arch
...``), so the weights export to a checkpoint fairseq loads. DeepSpeed owns what it is good at: the
optimizer and schedule from ``--deepspeed-config``, ZeRO stages 0-2, bf16 / fp16 with dynamic loss scaling,
gradient accumulation and clipping, and sharded checkpoints.

Resuming (the newest checkpoint in ``--save-dir``, or ``--restore-tag``) restores the engine's model,
optimizer, scheduler and loss scaler (DeepSpeed), the data position (fairseq's epoch iterator state: the
batches and their masks depend only on seed, epoch and index, see the task) and every rank's RNG state, so a
run stopped at step k and resumed logs the losses of an uninterrupted run.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from omegaconf import OmegaConf

from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.pretrain import checkpoints
from macaron_fairseq.pretrain.distributed import Placement
from macaron_fairseq.pretrain.flops import BertFlops, device_peak_tflops
from macaron_fairseq.pretrain.init_from import InitWeights, load_into
from macaron_fairseq.pretrain.progress import PretrainProgress
from macaron_fairseq.pretrain.tracking import Tracker
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.errors import UserError
from macaron_workflow.preemption import PREEMPTED_EXIT, Preemption

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


@dataclass
class StepLog:
    """Sums over the micro-batches of one optimizer step, on all ranks."""

    loss: float = 0.0
    mlm_loss: float = 0.0
    nsp_loss: float = 0.0
    masked: float = 0.0
    pairs: float = 0.0
    mlm_correct: float = 0.0
    nsp_correct: float = 0.0
    tokens: float = 0.0
    flops: float = 0.0  # model FLOPs (macaron_fairseq.pretrain.flops)

    FIELDS = (
        "loss",
        "mlm_loss",
        "nsp_loss",
        "masked",
        "pairs",
        "mlm_correct",
        "nsp_correct",
        "tokens",
        "flops",
    )

    def add(self, logging_output: dict[str, Any]) -> None:
        self.loss += float(logging_output["loss"])
        self.mlm_loss += float(logging_output["mlm_loss"])
        self.nsp_loss += float(logging_output["nsp_loss"])
        self.masked += float(logging_output["masked"])
        self.pairs += float(logging_output["nsentences"])
        self.mlm_correct += float(logging_output["mlm_correct"])
        self.nsp_correct += float(logging_output["nsp_correct"])
        self.tokens += float(logging_output["ntokens"])

    def all_reduced(self) -> StepLog:
        values = torch.tensor([getattr(self, name) for name in self.FIELDS], dtype=torch.float64)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(values)
        return StepLog(*values.tolist())

    def record(self) -> dict[str, float]:
        """Per-token / per-pair figures in fairseq's units (losses in bits)."""
        ln2 = math.log(2)
        masked, pairs = max(self.masked, 1.0), max(self.pairs, 1.0)
        return {
            "mlm_loss": self.mlm_loss / masked / ln2,
            "nsp_loss": self.nsp_loss / pairs / ln2,
            "mlm_accuracy": 100 * self.mlm_correct / masked,
            "nsp_accuracy": 100 * self.nsp_correct / pairs,
            "pairs": self.pairs,
            "tokens": self.tokens,
            "model_flops": self.flops,
        }


class Pretrainer:
    """One training run: the engine, the data iterator, logging, checkpoints."""

    def __init__(
        self,
        cfg: Any,
        args: Any,
        ds_config: dict[str, Any],
        where: Placement,
        init: InitWeights | None = None,
    ) -> None:
        import deepspeed
        from fairseq import tasks

        from macaron_fairseq.pretrain.ds_config import configured_weight_decay, parameter_groups

        self.cfg, self.args, self.where = cfg, args, where
        self.progress: PretrainProgress | None = None
        self.save_dir = Path(cfg.checkpoint.save_dir)
        self.task = tasks.setup_task(cfg.task)
        self.task.load_dataset("train", epoch=1)
        self.model = self.task.build_model(cfg.model)
        self.criterion = self.task.build_criterion(cfg.criterion)
        self.micro_batch = ds_config["train_micro_batch_size_per_gpu"]
        self.ds_config = ds_config
        self.choice = self._choose_checkpoint()
        self.resuming = self.choice.tag is not None
        if self.resuming and args.init_from:
            self._log(
                f"{self.save_dir} holds a checkpoint of this run: resuming it (--init-from is not used)"
            )
        elif init is not None:
            load_into(self.model, init, cfg.model._name)
            self._log(f"initialised from {init.source} (weights only: fresh optimizer, schedule and data "
                      "position)")  # fmt: skip
        elif not self.resuming:
            self._apply_init_scheme()
        self.flops = BertFlops.of(self.model)
        groups = parameter_groups(self.model, configured_weight_decay(ds_config))
        self.engine, *_ = deepspeed.initialize(model=self.model, model_parameters=groups, config=ds_config)
        self.epoch_itr = self._epoch_iterator(epoch=1)
        self.log_path = self.save_dir / "train_log.jsonl"
        self.preemption = Preemption(args.preemption_signal)

    def _apply_init_scheme(self) -> None:
        """DT-Fixup / T-Fixup (``--init-scheme``) rescale the new layers now, before the engine exists, so
        that its fp32 master weights and bf16/fp16 copies are made from the rescaled weights (a resumed run
        loads them from its checkpoint instead). DT-Fixup's μ pass reads the training data in the
        engine's micro-batches."""
        init_args = getattr(self.model, "init_args", None)
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
            init_args.batch_size = self.micro_batch
        run_init_scheme(self.model, self.task)

    # ------------------------------------------------------------------------------------------ data
    def _epoch_iterator(self, epoch: int) -> Any:
        """The batches of ``epoch``, from that epoch's training data: the task's sentence pairs change with
        the epoch (``--nsp-pairings``), so it is asked for the epoch's dataset first — here, at an epoch
        boundary and when a checkpoint is restored alike, which keeps a resumed run exact."""
        self.task.load_dataset("train", epoch=epoch)
        return self.task.get_batch_iterator(
            dataset=self.task.dataset("train"),
            max_sentences=self.micro_batch,
            max_positions=self.task.max_positions(),
            seed=self.cfg.common.seed,
            num_shards=self.where.world_size,
            shard_id=self.where.rank,
            epoch=epoch,
            required_batch_size_multiple=1,
        )

    def batches(self) -> Iterator[dict[str, Any]]:
        """Micro-batches forever, epoch after epoch, resuming inside an epoch after a restore."""
        while True:
            itr = self.epoch_itr.next_epoch_itr(shuffle=True)
            yield from itr
            self.epoch_itr = self._epoch_iterator(self.epoch_itr.next_epoch_idx)

    def _filler_batch(self) -> dict[str, Any]:
        """A batch for a rank whose shard of the epoch has run out: fairseq pads the shorter shards with empty
        batches when the batches do not divide among the ranks, but every rank must run the step's forward,
        backward and gradient all-reduce. Its loss is weighted 0 (as fairseq's trainer does with its dummy
        batch); the same steps get it in a resumed run, so the RNG streams stay aligned."""
        dataset = self.task.dataset("train")
        return dataset.collater([dataset[0]])

    def validate(self, step: int) -> dict[str, Any]:
        """MLM perplexity and NSP accuracy on the whole validation set (shared among the ranks).

        RNG-neutral (loading data and creating a DataLoader draw from torch's generator): a resumed run must
        not depend on where validations happened.
        """
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            totals = self._validation_totals()
        summary = totals.all_reduced().record()
        record = {
            "step": step,
            "split": "valid",
            "mlm_loss": summary["mlm_loss"],
            "ppl": 2 ** summary["mlm_loss"],
            "nsp_accuracy": summary["nsp_accuracy"],
            "pairs": summary["pairs"],
        }
        self._log(
            f"valid at step {step}: mlm {record['mlm_loss']:.3f} bits (ppl {record['ppl']:.1f}), "
            f"nsp accuracy {record['nsp_accuracy']:.1f}% on {record['pairs']:.0f} pairs"
        )
        return record

    def _validation_totals(self) -> StepLog:
        if "valid" not in self.task.datasets:
            self.task.load_dataset("valid", epoch=1)
        itr = self.task.get_batch_iterator(
            dataset=self.task.dataset("valid"),
            max_sentences=self.micro_batch,
            max_positions=self.task.max_positions(),
            seed=self.cfg.common.seed,
            num_shards=self.where.world_size,
            shard_id=self.where.rank,
            epoch=1,
        ).next_epoch_itr(shuffle=False)
        totals = StepLog()
        self.engine.eval()
        for sample in itr:
            if sample:  # a rank with fewer batches gets empty ones
                _, _, logging_output = self.criterion(self.engine, self._to_device(sample))
                totals.add(logging_output)
        self.engine.train()
        return totals

    # ---------------------------------------------------------------------------------- checkpoints
    def _choose_checkpoint(self) -> checkpoints.Choice:
        """The newest complete checkpoint of ``--save-dir`` (:mod:`.checkpoints`), rank 0's choice on every
        rank."""
        choice = [checkpoints.choose(self.save_dir) if self.where.rank == 0 else None]
        if dist.is_available() and dist.is_initialized():
            dist.broadcast_object_list(choice, src=0)
        return choice[0]

    def restore(self) -> int:
        """Load the newest complete checkpoint of ``--save-dir`` if there is one; the step to continue
        from. Newer checkpoints that a killed save left incomplete are skipped, saying so."""
        restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
        for note in self.choice.notes(self.save_dir):
            self._log(note)
        if self.choice.tag is None:
            if self.where.rank == 0:
                self._truncate_log(0)  # records of a run killed before its first checkpoint
            if restarts:
                job = os.environ.get("SLURM_JOB_ID")
                self._log(f"restart {restarts} of Slurm job {job}, but {self.save_dir} holds no checkpoint: "
                          "starting fresh")  # fmt: skip
            return 0
        tag, manifest = self.choice.tag, self.choice.manifest or {}
        checkpoints.check_matches(self.save_dir, self.choice, self.cfg.model._name, self.where.world_size)
        client = self._load_engine_state(tag)
        self.epoch_itr = self._epoch_iterator(client["iterator"]["epoch"])
        self.epoch_itr.load_state_dict(client["iterator"])
        scaler = self._grad_scaler()
        if scaler is not None and client.get("grad_scaler"):
            scaler.load_state_dict(client["grad_scaler"])
        warning = restore_rng(self._read_rng_state(tag))
        if warning:
            print(f"[pretrain] rank {self.where.rank}: {warning}", file=sys.stderr, flush=True)
        step = int(client["step"])
        if self.where.rank == 0:
            self._truncate_log(step)
            if not (self.save_dir / RUN_RECORD).exists():  # informative only: the manifest decides
                write_text_atomically(self.save_dir / RUN_RECORD, json.dumps({"arch": manifest["arch"]}))
            if self.choice.latest != tag:  # the pointer names what was resumed, not a skipped checkpoint
                checkpoints.commit_latest(self.save_dir, tag)
        restart = f" (restart {restarts} of Slurm job {os.environ.get('SLURM_JOB_ID')})" if restarts else ""
        self._log(f"resumed from {self.save_dir / tag} at step {step}{restart}")
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
            raise UserError(f"{self.save_dir / tag}: not written by python -m macaron_fairseq.pretrain (no "
                            f"step and data position in its client state); {hint}")  # fmt: skip
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

    def _truncate_log(self, step: int) -> None:
        """Drop the log records after ``step`` (a run killed after its last checkpoint logged them; the
        resumed run logs those steps again)."""
        if not self.log_path.exists():
            return
        kept = [line for line in self.log_path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line)["step"] <= step]  # fmt: skip
        write_text_atomically(self.log_path, "".join(f"{line}\n" for line in kept))

    def save(self, step: int) -> None:
        """Save and commit the checkpoint of ``step`` (:mod:`.checkpoints`: the manifest, written after
        every rank has written its files, is the commit; ``latest`` follows it)."""
        tag = checkpoints.tag_of(step)
        tag_dir = self.save_dir / tag
        if self.where.rank == 0 and tag_dir.exists():  # left by a save that was cut short
            shutil.rmtree(tag_dir)
        if dist.is_initialized():
            dist.barrier()
        client = {
            "version": CLIENT_STATE_VERSION,
            "step": step,
            "arch": self.cfg.model._name,
            "iterator": self.epoch_itr.state_dict(),
            "fairseq_cfg": OmegaConf.to_container(
                self.cfg, resolve=True, enum_to_str=True
            ),  # as fairseq saves it
        }
        scaler = self._grad_scaler()
        if scaler is not None:
            client["grad_scaler"] = scaler.state_dict()
        self.engine.save_checkpoint(str(self.save_dir), tag=tag, client_state=client, save_latest=False)
        torch.save(rng_state(), tag_dir / f"rng_rank{self.where.rank}.pt")
        if dist.is_initialized():
            dist.barrier()
        if self.where.rank == 0:
            record = {
                "step": step,
                "arch": self.cfg.model._name,
                "world_size": self.where.world_size,
                "zero_stage": self.engine.zero_optimization_stage(),
            }
            checkpoints.write_manifest(tag_dir, record)
            write_text_atomically(self.save_dir / RUN_RECORD, json.dumps({"arch": self.cfg.model._name}))
            checkpoints.commit_latest(self.save_dir, tag)
            checkpoints.prune(self.save_dir, keep=self.args.keep_last_checkpoints)
            self._plot()

    def _plot(self) -> None:
        """``SAVE_DIR/loss_curves.png`` from the log so far (a failed plot never stops training)."""
        from macaron_workflow.step_log import plot_step_log, read_step_log

        try:
            log = read_step_log(self.log_path)
            plot_step_log(log, self.save_dir / "loss_curves.png", self.cfg.model._name)
        except Exception as err:  # matplotlib, fonts, a full disk: the run matters more than its plot
            self._log(f"warning: loss_curves.png not written ({type(err).__name__}: {err})")

    # ------------------------------------------------------------------------------------------ loop
    def _log(self, message: str) -> None:
        if self.progress is not None:
            self.progress.message(message)
        elif self.where.rank == 0:
            print(f"[pretrain] {message}", file=sys.stderr, flush=True)

    def peak_flops(self) -> float | None:
        """The GPU's peak FLOP/s for MFU: ``--peak-tflops``, else a known device's; None on CPU."""
        if not torch.cuda.is_available():
            return None
        peak = self.args.peak_tflops or device_peak_tflops(torch.cuda.get_device_name(self.where.local_rank))
        if peak is None:
            self._log("MFU not shown: unknown GPU peak, pass --peak-tflops")
            return None
        return peak * 1e12 * self.where.world_size

    def _step_record(self, step: int, step_log: StepLog, seconds: float) -> dict[str, Any]:
        record = {"step": step, **step_log.all_reduced().record(), "lr": self.engine.get_lr()[0]}
        if self.engine.fp16_enabled():
            optimizer = self.engine.optimizer
            record["loss_scale"] = float(getattr(optimizer, "cur_scale", getattr(optimizer, "loss_scale", 0)))
            record["skipped_steps"] = int(self.engine.skipped_steps)
        scaler = self._grad_scaler()
        if scaler is not None:  # torch_autocast fp16: torch's GradScaler scales the loss
            record["loss_scale"] = float(scaler.get_scale())
        record["tokens_per_second"] = record["tokens"] / max(seconds, 1e-9)
        record["samples_per_second"] = record["pairs"] / max(seconds, 1e-9)
        if self.peak:  # model FLOPs utilisation of this step (the progress lines show it per interval)
            record["mfu"] = record["model_flops"] / max(seconds, 1e-9) / self.peak
        record["seconds"] = seconds
        record["time"] = time.time()
        return record

    def train(self) -> list[dict[str, Any]]:
        """Train to ``--max-update`` optimizer steps; returns the logged records (rank 0)."""
        self.save_dir.mkdir(parents=True, exist_ok=True)
        step = self.restore()
        max_update = self.cfg.optimization.max_update
        records: list[dict[str, Any]] = []
        self.engine.train()
        self.peak = self.peak_flops()
        self.progress = PretrainProgress(
            self.where.rank == 0, step, max_update, self.cfg.common.log_interval, self.peak
        )
        self.tracker = Tracker(
            active=self.where.rank == 0,
            tensorboard_logdir=self.cfg.common.tensorboard_logdir,
            wandb_project=self.cfg.common.wandb_project,
            save_dir=self.save_dir,
            run_name=f"{self.cfg.model._name}-{self.save_dir.name}",
            config={
                "arch": self.cfg.model._name,
                "deepspeed": self.ds_config,
                "seed": self.cfg.common.seed,
            },
            start_step=step,
        )
        try:
            self._train_loop(step, max_update, records)
        finally:
            self.tracker.close()
        self.progress.close()
        return records

    def _train_loop(self, step: int, max_update: int, records: list[dict[str, Any]]) -> None:
        accumulation = self.engine.gradient_accumulation_steps()
        batches = self.batches()
        started = time.monotonic()
        while step < max_update:
            step_log = StepLog()
            for _ in range(accumulation):
                sample = next(batches)
                weight = 1.0 if sample else 0.0
                if not sample:
                    sample = self._filler_batch()
                sample = self._to_device(sample)
                loss, sample_size, logging_output = self.criterion(self.engine, sample)
                self.engine.backward(loss * weight / sample_size)
                self.engine.step()
                if weight:
                    step_log.add(logging_output)
                    pairs, seq_len = sample["net_input"]["src_tokens"].shape
                    step_log.flops += self.flops.step(pairs, seq_len, int(logging_output["masked"]))
            step += 1
            record = self._step_record(step, step_log, time.monotonic() - started)
            started = time.monotonic()
            records.append(record)
            if self.where.rank == 0:
                with open(self.log_path, "a", encoding="utf-8") as log:
                    log.write(json.dumps(record) + "\n")
                self.tracker.log(record)
            self.progress.step(record)
            valid_every = self.cfg.dataset.validate_interval_updates
            if (valid_every and step % valid_every == 0) or (
                step == max_update and not self.args.no_validation
            ):
                valid = self.validate(step)
                records.append(valid)
                if self.where.rank == 0:
                    with open(self.log_path, "a", encoding="utf-8") as log:
                        log.write(json.dumps(valid) + "\n")
                    self.tracker.log(valid)
            interval = self.cfg.checkpoint.save_interval_updates
            preempted = step < max_update and self.preemption.should_stop()
            if (interval and step % interval == 0) or step == max_update or preempted:
                self.save(step)
            if preempted:
                self._preempted(step)

    def _preempted(self, step: int) -> None:
        """After the checkpoint of this step: rank 0 requeues the Slurm job (macaron_workflow.preemption:
        after the warning signal, or SIGTERM of a preemption), then a barrier, then every rank exits. The
        barrier comes after the requeue: a rank that exited earlier would make ``srun --kill-on-bad-exit``
        kill rank 0 before it requeued."""
        self._log(f"{self.preemption.reason} received: checkpoint saved at step {step}")
        self.progress.close()
        if self.where.rank == 0 and not self.preemption.requeue(self._log):
            self._log(f"stopped at step {step}; rerun the same command to resume from {self.save_dir}")
        if dist.is_initialized():
            dist.barrier()
        raise SystemExit(PREEMPTED_EXIT)

    def _grad_scaler(self) -> Any:
        """The GradScaler of DeepSpeed's ``torch_autocast`` with fp16 at ZeRO-0 (not in DeepSpeed's own
        checkpoint: saved in the client state), else None."""
        return getattr(self.engine, "torch_autocast_z0_gradscaler", None)

    def _to_device(self, sample: dict[str, Any]) -> dict[str, Any]:
        if torch.cuda.is_available():
            from fairseq import utils

            return utils.move_to_cuda(sample, device=torch.device("cuda", self.where.local_rank))
        return sample
