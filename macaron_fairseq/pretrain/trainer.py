"""BERT-style pre-training of a plugin model with DeepSpeed: the training loop.

The model, task (data) and criterion are fairseq's, built from fairseq's own command line exactly as
``fairseq-train`` builds them (:mod:`.engine`), so the weights export to a checkpoint fairseq loads. DeepSpeed
owns what it is good at: the optimizer and schedule from ``--deepspeed-config``, ZeRO stages 0-2, bf16 / fp16
with dynamic loss scaling, gradient accumulation and clipping, and sharded checkpoints (:mod:`.run_state`:
a run stopped at step k and resumed logs the losses of an uninterrupted run).

The loop runs ``--max-update`` optimizer steps of ``gradient_accumulation_steps`` micro-batches
(:mod:`.batches`), logs every step (:mod:`.step_stats`, :mod:`.run_log`), validates (:mod:`.evaluation`) and
saves at their intervals, and on the preemption signal saves, requeues the Slurm job and exits.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch.distributed as dist

from macaron_fairseq.pretrain.batches import Batches
from macaron_fairseq.pretrain.distributed import Placement
from macaron_fairseq.pretrain.engine import build
from macaron_fairseq.pretrain.evaluation import validate
from macaron_fairseq.pretrain.init_from import InitWeights
from macaron_fairseq.pretrain.run_log import RunLog
from macaron_fairseq.pretrain.run_state import RunState
from macaron_fairseq.pretrain.step_stats import StepLog, peak_flops, step_record
from macaron_workflow.preemption import PREEMPTED_EXIT, Preemption


class Pretrainer:
    """One training run: the engine and its data, the loop, its log and its checkpoints."""

    def __init__(
        self,
        cfg: Any,
        args: Any,
        ds_config: dict[str, Any],
        where: Placement,
        init: InitWeights | None = None,
    ) -> None:
        self.cfg, self.args, self.ds_config, self.where = cfg, args, ds_config, where
        self.save_dir = Path(cfg.checkpoint.save_dir)
        self.log = RunLog(where.rank, self.save_dir, cfg.model._name)
        self.parts = build(cfg, args, ds_config, where, init, self.log.message)
        self.engine, self.criterion = self.parts.engine, self.parts.criterion
        micro_batch = ds_config["train_micro_batch_size_per_gpu"]
        self.batches = Batches(self.parts.task, cfg.common.seed, micro_batch, where, cfg.dataset.num_workers)
        self.state = RunState(cfg, self.engine, self.batches, where, self.log)
        self.preemption = Preemption(args.preemption_signal)

    def train(self) -> list[dict[str, Any]]:
        """Train to ``--max-update`` optimizer steps; returns the logged records (rank 0)."""
        self.save_dir.mkdir(parents=True, exist_ok=True)
        step = self.state.restore(self.parts.choice)
        max_update = self.cfg.optimization.max_update
        records: list[dict[str, Any]] = []
        self.engine.train()
        self.peak = peak_flops(
            self.args.peak_tflops, self.where.local_rank, self.where.world_size, self.log.message
        )
        common = self.cfg.common
        config = {"arch": self.cfg.model._name, "deepspeed": self.ds_config, "seed": common.seed}
        self.log.start(
            step,
            max_update,
            common.log_interval,
            self.peak,
            config=config,
            tensorboard_logdir=common.tensorboard_logdir,
            wandb_project=common.wandb_project,
        )
        try:
            self._train_loop(step, max_update, records)
        finally:
            self.log.close_tracker()
        self.log.close_display()
        return records

    def _train_loop(self, step: int, max_update: int, records: list[dict[str, Any]]) -> None:
        accumulation = self.engine.gradient_accumulation_steps()
        batches = iter(self.batches)
        started = time.monotonic()
        while step < max_update:
            step_log = StepLog()
            for _ in range(accumulation):
                sample = next(batches)
                weight = 1.0 if sample else 0.0
                if not sample:
                    sample = self.batches.filler()
                sample = self.batches.to_device(sample)
                loss, sample_size, logging_output = self.criterion(self.engine, sample)
                self.engine.backward(loss * weight / sample_size)
                self.engine.step()
                if weight:
                    step_log.add(logging_output)
                    pairs, seq_len = sample["net_input"]["src_tokens"].shape
                    step_log.flops += self.parts.flops.step(pairs, seq_len, int(logging_output["masked"]))
            step += 1
            record = step_record(step, step_log, time.monotonic() - started, self.engine, self.peak)
            started = time.monotonic()
            records.append(record)
            self.log.write(record)
            valid_every = self.cfg.dataset.validate_interval_updates
            at_end = step == max_update and not self.args.no_validation
            if (valid_every and step % valid_every == 0) or at_end:
                valid = validate(self.engine, self.criterion, self.batches, step, self.log.message)
                records.append(valid)
                self.log.write(valid)
            interval = self.cfg.checkpoint.save_interval_updates
            preempted = step < max_update and self.preemption.should_stop()
            if (interval and step % interval == 0) or step == max_update or preempted:
                self.state.save(step, keep=self.args.keep_last_checkpoints)
            if preempted:
                self._preempted(step)

    def _preempted(self, step: int) -> None:
        """After the checkpoint of this step: rank 0 requeues the Slurm job (macaron_workflow.preemption:
        after the warning signal, or SIGTERM of a preemption), then a barrier, then every rank exits. The
        barrier comes after the requeue: a rank that exited earlier would make ``srun --kill-on-bad-exit``
        kill rank 0 before it requeued."""
        self.log.message(f"{self.preemption.reason} received: checkpoint saved at step {step}")
        self.log.close_display()
        if self.where.rank == 0 and not self.preemption.requeue(self.log.message):
            self.log.message(f"stopped at step {step}; rerun the same command to resume from {self.save_dir}")
        if dist.is_initialized():
            dist.barrier()
        raise SystemExit(PREEMPTED_EXIT)
