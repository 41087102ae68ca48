"""Training-step and beam-search speed of a Macaron architecture vs its parameter-matched Transformer, at
several batch sizes, for each implementation of Macaron's extra half-step FFN (``--macaron-ffn-impl``).

    python -m benchmarks.speed_macaron_vs_transformer [--tokens 1024 4096 8192] [--rounds 5] [--compile]

The results go to ``docs/results/speed_macaron_vs_transformer.json`` (``--json``) with the machine and the
date; the README table is rendered from that file (``python -m benchmarks.doc_tables``).

Both models are built as ``fairseq-train`` builds them (shared embeddings, joined vocabulary, dropout 0.1)
and live in one process. Per batch size and round, every variant is measured once, in an order that is
reversed every other round (A B C, then C B A, ...), on the same batch, so that machine drift hits all of
them alike. The Macaron variants are one model whose layers are switched between implementations
(same weights). Measured:

* training: forward + cross-entropy over all logits + backward of one batch of ``tokens / seq_len``
  sentence pairs of ``seq_len`` tokens each side (train mode, dropout on);
* generation: beam-4 search for ``tokens / seq_len`` source sentences of ``seq_len`` tokens, with
  ``min_len = max_len = gen_len`` so that every variant decodes exactly the same number of steps whatever
  its (untrained) predictions.

Reported per cell: median and range over rounds; ratio = Macaron median / Transformer median (< 1 means
Macaron is faster), and the median of the per-round ratios (paired, less sensitive to drift). ``compile``
rows exclude the one-off compilation (done in the warm-up rounds, and reported separately).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from fairseq.sequence_generator import SequenceGenerator

from benchmarks.results_file import RESULTS_DIR, machine_info, write_results
from macaron_fairseq.build_without_data import build_translation_model, joined_dictionary_dir
from macaron_fairseq.models.architectures import COUNTERPARTS
from macaron_pipelines.gpu_check.speed import (
    TRANSFORMER,
    alternate,
    generation_seconds,
    random_batch,
    set_impl,
    summarise,
    train_step_seconds,
    variants,
)
from macaron_workflow.cli import quiet_loggers


def measure_size(
    args: argparse.Namespace,
    models: dict[str, torch.nn.Module],
    tgt_dict: Any,
    tokens: int,
    compile_seconds: dict[str, float],
) -> dict[str, Any]:
    bsz = max(1, tokens // args.seq_len)
    nspecial, vocab = tgt_dict.nspecial, len(tgt_dict)
    batch = random_batch(vocab, nspecial, bsz, args.seq_len, args.seed + tokens)

    def model_of(name: str) -> torch.nn.Module:
        if name == TRANSFORMER:
            return models[TRANSFORMER]
        macaron = models["macaron"]
        set_impl(macaron, name.split(":", 1)[1])
        return macaron

    def timed_warmup(name: str, fn: Callable[[], float], key: str) -> None:
        start = time.perf_counter()
        fn()
        if name.endswith(":compile"):
            compile_seconds[key] = compile_seconds.get(key, 0.0) + time.perf_counter() - start

    names = variants(args.impls)
    train_fns = {n: (lambda n=n: train_step_seconds(model_of(n), batch)) for n in names}
    for name, fn in train_fns.items():
        timed_warmup(name, fn, f"train {tokens}")
    train = alternate(train_fns, args.rounds, args.warmup)
    result: dict[str, Any] = {"tokens": tokens, "sentences": bsz}
    result["train"] = summarise(train, bsz * args.seq_len)
    print_cell("training", tokens, result["train"])
    if args.gen_rounds > 0:
        generators = {
            n: SequenceGenerator(
                [models[n]], tgt_dict, beam_size=4, max_len_a=0, max_len_b=args.gen_len, min_len=args.gen_len
            )
            for n in models
        }
        gen_fns = {
            n: (lambda n=n: generation_seconds(generators[n.split(":")[0]], model_of(n), batch))
            for n in names
        }
        for name, fn in gen_fns.items():
            timed_warmup(name, fn, f"generation {tokens}")
        gen = alternate(gen_fns, args.gen_rounds, 0)
        result["generation"] = summarise(gen, bsz)
        print_cell("beam-4 generation", tokens, result["generation"])
    return result


def print_cell(direction: str, tokens: int, cell: dict[str, Any]) -> None:
    for name, c in cell.items():
        print(
            f"{direction:18s} {tokens:6d} tokens  {name:16s} median {c['median_s']:8.3f} s "
            f"[{c['min_s']:.3f}, {c['max_s']:.3f}]  ratio {c['ratio']:.3f} "
            f"(paired {c['paired_ratio_median']:.3f})",
            flush=True,
        )


def run(args: argparse.Namespace) -> dict[str, Any]:
    torch.manual_seed(args.seed)
    transformer_arch = COUNTERPARTS[args.macaron]
    flags = ["--share-all-embeddings", "--dropout", str(args.dropout), *args.model_flags]
    with joined_dictionary_dir(args.vocab) as data_dir:
        macaron, task = build_translation_model(data_dir, args.macaron, flags)
        transformer, _ = build_translation_model(data_dir, transformer_arch, flags)
    models = {"macaron": macaron, TRANSFORMER: transformer}
    compile_seconds: dict[str, float] = {}
    sizes = [measure_size(args, models, task.target_dictionary, t, compile_seconds) for t in args.tokens]
    return {
        "macaron": args.macaron,
        "transformer": transformer_arch,
        "params_macaron": sum(p.numel() for p in macaron.parameters()),
        "params_transformer": sum(p.numel() for p in transformer.parameters()),
        "threads": torch.get_num_threads(),
        "seq_len": args.seq_len,
        "gen_len": args.gen_len,
        "dropout": args.dropout,
        "rounds": args.rounds,
        "gen_rounds": args.gen_rounds,
        "impls": args.impls,
        "warmup_seconds_with_compile": compile_seconds,
        "sizes": sizes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--macaron", default="macaron_base", choices=list(COUNTERPARTS))
    parser.add_argument("--vocab", type=int, default=10000, help="joined vocabulary size")
    parser.add_argument(
        "--tokens", type=int, nargs="+", default=[1024, 4096, 8192], help="tokens per batch (each side)"
    )
    parser.add_argument("--seq-len", type=int, default=64, help="source = target length (tokens)")
    parser.add_argument("--gen-len", type=int, default=32, help="decoded steps per sentence")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=5, help="measured training rounds per variant")
    parser.add_argument("--gen-rounds", type=int, default=3, help="measured generation rounds (0: none)")
    parser.add_argument("--warmup", type=int, default=1, help="extra unmeasured training rounds")
    parser.add_argument(
        "--compile", action="store_true", help="also measure --macaron-ffn-impl compile (torch.compile)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULTS_DIR / "speed_macaron_vs_transformer.json",
        help="results file (default: %(default)s, which the README quotes)",
    )
    parser.add_argument(
        "model_flags",
        nargs=argparse.REMAINDER,
        help="extra fairseq model flags after --, e.g. -- --encoder-layers 2",
    )
    args = parser.parse_args()
    args.model_flags = [f for f in args.model_flags if f != "--"]
    args.impls = ["plain", "fused", *(["compile"] if args.compile else [])]
    quiet_loggers("fairseq", "filelock", "torch")
    machine = machine_info()
    results = run(args)
    if args.json:
        write_results(args.json, results, machine)


if __name__ == "__main__":
    main()
