"""Pre-training step time: one DeepSpeed BERT step of ``macaron_bert_base``, ``vanilla_bert_base`` and
Hugging Face's ``BertForPreTraining`` (the ``steps`` part of ``python -m benchmarks.pretrain_speed``).

1. The Macaron model against the BERT baseline (``--archs``, default ``macaron_bert_base
   vanilla_bert_base``), each built exactly as the trainer builds it (fairseq's parser, BERT's 30,522-symbol
   vocabulary) and wrapped in a DeepSpeed engine from ``--config`` (batch fields replaced: one optimizer
   step = one micro-batch of ``--batch-size``), with BERT's weight-decay groups. A step is what the trainer
   does: forward, the ``macaron_bert_loss`` criterion (MLM on the masked positions + NSP),
   ``engine.backward``, ``engine.step``. All models live in one process and run the same synthetic batch
   (fixed seed: random tokens, [CLS] A [SEP] B [SEP] with a random split, 15 % of the positions masked,
   random NSP labels, no padding), alternately (A B C, then C B A, ...) after ``--warmup`` steps each, so
   machine drift hits all of them alike; medians over ``--rounds``.
2. In the same rounds: ``transformers.BertForPreTraining`` with the baseline's sizes (for
   ``vanilla_bert_base``: ``BertConfig()``'s defaults, BERT-base), dropout 0.1, train mode,
   ``attn_implementation="sdpa"``, under the same DeepSpeed config and batch, in two forms: its own
   ``forward(labels=..., next_sentence_label=...)`` (the MLM head on every position, as HF computes it), and
   the same model with the MLM head on the masked positions only (the work our model does; this separates
   the head's design from the encoder's speed). transformers is not a project requirement: without it this
   column is skipped and the install command printed (:data:`HF_INSTALL`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.pretrain_bench import (
    BertBatch,
    OtherCpuUse,
    OurModel,
    bert_batch,
    deepspeed_engine,
    device_in_use,
    init_single_process_distributed,
    one_micro_batch_config,
    optimizer_text,
    precision,
    shown_path,
    timed,
)
from benchmarks.results_file import REPO

HF_VERSION = "5.23.0"
HF_INSTALL = (
    f"pip install --no-deps transformers=={HF_VERSION} huggingface_hub==2.4.0 tokenizers==0.23.3 "
    "safetensors==0.8.0 hf-xet==1.8.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 idna==3.20 "
    "click==8.5.1"
)
"""transformers and what of its dependencies this project's environment lacks (or has too old: click, idna),
without letting pip touch torch. ``pip install transformers==5.23.0 torch==<installed>`` resolves to the same
set (checked with ``pip install --dry-run``)."""

HF_ATTENTION = "sdpa"
HF_NAME, HF_MASKED_NAME = "hf_bert", "hf_bert_masked_head"


def alternate(steps: dict[str, Callable[[], float]], rounds: int, warmup: int) -> dict[str, list[float]]:
    """``warmup`` untimed steps of each, then ``rounds`` rounds, forward and backward order in turn."""
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            times[name].append(steps[name]())
        print(
            f"  round {r + 1}/{rounds}: " + ", ".join(f"{n} {times[n][-1]:.3f} s" for n in names), flush=True
        )
    return times


def hf_module(sizes: dict[str, int]) -> tuple[Any, str]:
    """``BertForPreTraining`` with ``sizes`` (BERT-base: BertConfig's defaults) in a module whose forward
    is a pre-training loss, with the MLM head on every position (HF's own forward) or on the masked ones."""
    import torch.nn.functional as F
    import transformers
    from torch import nn
    from transformers import BertConfig, BertForPreTraining

    config = BertConfig(
        vocab_size=sizes["vocab"],
        hidden_size=sizes["hidden"],
        num_hidden_layers=sizes["layers"],
        num_attention_heads=sizes["heads"],
        intermediate_size=sizes["ffn"],
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
    )

    class HfPretraining(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hf = BertForPreTraining._from_config(config, attn_implementation=HF_ATTENTION)

        def forward(self, batch: BertBatch, labels: Any, masked_head: bool) -> Any:
            if not masked_head:
                out = self.hf(
                    input_ids=batch.tokens,
                    token_type_ids=batch.segments,
                    labels=labels,
                    next_sentence_label=batch.nsp,
                )
                return out.loss
            out = self.hf.bert(input_ids=batch.tokens, token_type_ids=batch.segments)
            scores = self.hf.cls.predictions(out.last_hidden_state[batch.masked])
            nsp = self.hf.cls.seq_relationship(out.pooler_output)
            return F.cross_entropy(scores.float(), labels[batch.masked]) + F.cross_entropy(
                nsp.float(), batch.nsp
            )

    return HfPretraining(), transformers.__version__


def hf_step_functions(engine: Any, batch: BertBatch, device: Any) -> dict[str, Callable[[], float]]:
    labels = batch.hf_labels()

    def step(masked_head: bool) -> None:
        loss = engine(batch, labels, masked_head)
        engine.backward(loss)
        engine.step()

    return {
        HF_NAME: lambda: timed(lambda: step(False), device),
        HF_MASKED_NAME: lambda: timed(lambda: step(True), device),
    }


def default_config() -> Path:
    import torch

    name = "bert_phase1.json" if torch.cuda.is_available() else "tiny_cpu.json"
    return REPO / "configs" / "deepspeed" / name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_argument_group("steps: macaron vs BERT vs Hugging Face, one process")
    steps.add_argument(
        "--archs",
        nargs=2,
        metavar=("MACARON", "BASELINE"),
        default=["macaron_bert_base", "vanilla_bert_base"],
        help="the Macaron model and its vanilla_bert_* baseline (HF gets the baseline's sizes)",
    )
    steps.add_argument("--vocab", type=int, default=30522, help="vocabulary (BERT's: %(default)s)")
    steps.add_argument("--seq-len", type=int, default=128)
    steps.add_argument("--batch-size", type=int, default=8, help="micro batch = the step's batch")
    steps.add_argument("--rounds", type=int, default=6, help="timed rounds (one step of each model)")
    steps.add_argument("--warmup", type=int, default=2, help="untimed steps of each model first")
    steps.add_argument("--threads", type=int, default=None, help="torch threads (default: the usable cores)")
    steps.add_argument(
        "--config",
        type=Path,
        default=None,
        help="DeepSpeed config (default: configs/deepspeed/tiny_cpu.json on CPU, bert_phase1.json "
        "with a GPU); its batch fields are replaced by --batch-size",
    )


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The step times of our two models and HF's, alternated in this process."""
    import deepspeed
    import torch

    device = device_in_use()
    config_path = args.config or default_config()
    config = one_micro_batch_config(config_path, args.batch_size)
    init_single_process_distributed()
    torch.manual_seed(args.seed)
    batch = bert_batch(args.vocab, args.batch_size, args.seq_len, args.seed).to(device)
    macaron, vanilla = args.archs
    steps: dict[str, Callable[[], float]] = {}
    models: dict[str, dict[str, Any]] = {}
    sizes: dict[str, int] = {}
    for arch in (macaron, vanilla):
        ours = OurModel.build(arch, args.vocab)
        sizes = ours.sizes()  # the baseline's (built last) sizes are HF's
        engine = deepspeed_engine(ours.model, config)
        steps[arch] = ours.step_function(engine, batch, device)
        models[arch] = {
            "label": f"`{arch}`",
            "implementation": "this project (fairseq layers)",
            "params": ours.params,
        }
    result: dict[str, Any] = {}
    try:
        module, version = hf_module(sizes)
    except ImportError as exc:
        torch_pin = torch.__version__.split("+")[0]
        result["hf_skipped"] = f"transformers not installed ({exc.name or exc}): {HF_INSTALL}"
        print(
            f"transformers is not installed; the HF column is skipped. Install it with:\n  {HF_INSTALL}\n"
            f"or let pip resolve it with torch pinned:\n  pip install transformers=={HF_VERSION} "
            f"torch=={torch_pin}",
            flush=True,
        )
    else:
        params = sum(p.numel() for p in module.parameters())
        hf_engine = deepspeed_engine(module, config)
        steps.update(hf_step_functions(hf_engine, batch, device))
        result.update(transformers=version, hf_attention=module.hf.config._attn_implementation)
        models[HF_NAME] = {
            "label": "HF `BertForPreTraining`",
            "implementation": "its forward with labels: MLM head on every position",
            "params": params,
        }
        models[HF_MASKED_NAME] = {
            "label": "HF `BertForPreTraining`",
            "implementation": "MLM head on the masked positions only (as ours)",
            "params": params,
        }
    print(
        f"step times ({device}, {torch.get_num_threads()} threads, batch {args.batch_size} × "
        f"{args.seq_len}): {', '.join(steps)}",
        flush=True,
    )
    with OtherCpuUse() as other:
        times = alternate(steps, args.rounds, args.warmup)
    result.update(
        archs=[macaron, vanilla],
        models=models,
        times=times,
        device=device.type if device.type == "cpu" else torch.cuda.get_device_name(device),
        threads=torch.get_num_threads(),
        config=shown_path(config_path),
        precision=precision(config),
        zero_stage=config.get("zero_optimization", {}).get("stage", 0),
        optimizer=optimizer_text(config),
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        masked=int(batch.masked.sum()),
        vocab=args.vocab,
        rounds=args.rounds,
        warmup=args.warmup,
        deepspeed=deepspeed.__version__,
        other_cores=other.cores,
    )
    return result
