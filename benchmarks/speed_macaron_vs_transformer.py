"""Training-step and beam-search speed of a Macaron architecture vs its parameter-matched Transformer.

    python benchmarks/speed_macaron_vs_transformer.py [--macaron macaron_base] [--rounds 8] [--json OUT]

The results go to ``docs/results/speed_macaron_vs_transformer.json`` (``--json``) with the machine and the
date; the README table is rendered from that file (``python benchmarks/doc_tables.py``).

Both models are built as ``fairseq-train`` builds them (shared embeddings, joined vocabulary), live in
one process and are measured alternately (A B, then B A, ...) on the same batches so that machine
drift hits both equally. Reported:

* forward+backward time per target token (train mode, label-smoothed-free cross entropy on random
  tokens: the cost does not depend on the values);
* beam-4 generation time per sentence, with ``min_len = max_len`` so that both models decode exactly
  the same number of steps whatever their (untrained) predictions.

Numbers are medians over rounds; ratios are Macaron / Transformer (< 1 means Macaron is faster).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from fairseq.sequence_generator import SequenceGenerator
from results_file import RESULTS_DIR, machine_info, provenance, write_results

from macaron_fairseq.build_without_data import build_translation_model, joined_dictionary_dir
from macaron_fairseq.models.architectures import COUNTERPARTS


@dataclass
class Batch:
    src_tokens: torch.Tensor
    src_lengths: torch.Tensor
    prev_output_tokens: torch.Tensor
    target: torch.Tensor

    @property
    def target_tokens(self) -> int:
        return self.target.numel()


def random_batch(vocab: int, nspecial: int, bsz: int, length: int, seed: int) -> Batch:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(nspecial, vocab, (bsz, length), generator=g)
    tgt = torch.randint(nspecial, vocab, (bsz, length), generator=g)
    prev = torch.cat([torch.full((bsz, 1), 2), tgt[:, :-1]], dim=1)  # eos-shifted, as fairseq does
    return Batch(src, torch.full((bsz,), length), prev, tgt)


def train_step_seconds(model: torch.nn.Module, batch: Batch) -> float:
    model.train()
    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    logits, _ = model(batch.src_tokens, batch.src_lengths, batch.prev_output_tokens)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), batch.target.view(-1), reduction="sum")
    loss.backward()
    return time.perf_counter() - start


def generation_seconds(generator: SequenceGenerator, model: torch.nn.Module, batch: Batch) -> float:
    model.eval()
    sample = {"net_input": {"src_tokens": batch.src_tokens, "src_lengths": batch.src_lengths}}
    start = time.perf_counter()
    with torch.no_grad():
        generator.generate([model], sample)
    return time.perf_counter() - start


def alternate(measure: dict[str, Callable[[], float]], rounds: int, warmup: int) -> dict[str, list[float]]:
    names = list(measure)
    for _ in range(warmup):
        for name in names:
            measure[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            times[name].append(measure[name]())
    return times


@dataclass
class SpeedReport:
    macaron: str
    transformer: str
    params_macaron: int
    params_transformer: int
    threads: int
    train_batch: str
    gen_batch: str
    train_ms_per_token_macaron: float
    train_ms_per_token_transformer: float
    train_ratio: float
    gen_ms_per_sentence_macaron: float
    gen_ms_per_sentence_transformer: float
    gen_ratio: float

    @classmethod
    def from_results(cls, results: dict) -> SpeedReport:
        return cls(**results)

    def table(self) -> str:
        rows = [
            ("forward+backward, ms/target token", self.train_ms_per_token_macaron,
             self.train_ms_per_token_transformer, self.train_ratio),
            ("beam-4 generation, ms/sentence", self.gen_ms_per_sentence_macaron,
             self.gen_ms_per_sentence_transformer, self.gen_ratio),
        ]  # fmt: skip
        lines = [
            f"| measurement | `{self.macaron}` | `{self.transformer}` | ratio |",
            "|---|---:|---:|---:|",
            *(f"| {name} | {m:.4f} | {t:.4f} | {ratio:.3f} |" for name, m, t, ratio in rows),
        ]
        return "\n".join(lines)


def run(args: argparse.Namespace) -> SpeedReport:
    torch.manual_seed(args.seed)
    transformer_arch = COUNTERPARTS[args.macaron]
    flags = ["--share-all-embeddings", *args.model_flags]
    with joined_dictionary_dir(args.vocab) as data_dir:
        models = {
            arch: build_translation_model(data_dir, arch, flags) for arch in (args.macaron, transformer_arch)
        }
    tgt_dict = models[args.macaron][1].target_dictionary
    nspecial, vocab = tgt_dict.nspecial, len(tgt_dict)
    train_batch = random_batch(vocab, nspecial, args.batch_size, args.seq_len, args.seed)
    gen_batch = random_batch(vocab, nspecial, args.gen_sentences, args.seq_len, args.seed + 1)

    train_times = alternate(
        {arch: (lambda m=m: train_step_seconds(m, train_batch)) for arch, (m, _) in models.items()},
        args.rounds,
        args.warmup,
    )
    generators = {
        arch: SequenceGenerator(
            [m], tgt_dict, beam_size=4, max_len_a=0, max_len_b=args.gen_len, min_len=args.gen_len
        )
        for arch, (m, _) in models.items()
    }
    gen_times = alternate(
        {
            arch: (lambda m=m, a=arch: generation_seconds(generators[a], m, gen_batch))
            for arch, (m, _) in models.items()
        },
        args.gen_rounds,
        1,
    )

    def per_token(arch: str) -> float:
        return 1e3 * statistics.median(train_times[arch]) / train_batch.target_tokens

    def per_sentence(arch: str) -> float:
        return 1e3 * statistics.median(gen_times[arch]) / args.gen_sentences

    train_m, train_t = per_token(args.macaron), per_token(transformer_arch)
    gen_m, gen_t = per_sentence(args.macaron), per_sentence(transformer_arch)
    return SpeedReport(
        macaron=args.macaron,
        transformer=transformer_arch,
        params_macaron=sum(p.numel() for p in models[args.macaron][0].parameters()),
        params_transformer=sum(p.numel() for p in models[transformer_arch][0].parameters()),
        threads=torch.get_num_threads(),
        train_batch=f"{args.batch_size}x{args.seq_len} tokens, {args.rounds} rounds",
        gen_batch=f"{args.gen_sentences} sentences, {args.gen_len} steps, {args.gen_rounds} rounds",
        train_ms_per_token_macaron=train_m,
        train_ms_per_token_transformer=train_t,
        train_ratio=train_m / train_t,
        gen_ms_per_sentence_macaron=gen_m,
        gen_ms_per_sentence_transformer=gen_t,
        gen_ratio=gen_m / gen_t,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--macaron", default="macaron_base", choices=list(COUNTERPARTS))
    parser.add_argument("--vocab", type=int, default=10000, help="joined vocabulary size")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per training batch")
    parser.add_argument("--seq-len", type=int, default=32, help="source = target length (tokens)")
    parser.add_argument("--rounds", type=int, default=10, help="measured training rounds per model")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--gen-sentences", type=int, default=16)
    parser.add_argument("--gen-len", type=int, default=24, help="decoded steps per sentence")
    parser.add_argument("--gen-rounds", type=int, default=4)
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
    warnings.simplefilter("ignore")
    logging.getLogger("fairseq").setLevel(logging.WARNING)
    machine = machine_info()
    report = run(args)
    print(f"torch {torch.__version__}, {report.threads} threads; params: {report.macaron} "
          f"{report.params_macaron:,} vs {report.transformer} {report.params_transformer:,}")  # fmt: skip
    print(f"train batch: {report.train_batch}; generation: {report.gen_batch}")
    print(report.table())
    if args.json:
        write_results(args.json, asdict(report), machine)


def render(payload: dict) -> str:
    """The README table of a results file: the measurements, then where they come from."""
    r = SpeedReport.from_results(payload["results"])
    params = f"{r.macaron} {r.params_macaron:,} vs {r.transformer} {r.params_transformer:,} parameters"
    return (
        f"{r.table()}\n\n{params}; {r.threads} threads; training batch {r.train_batch}; generation "
        f"{r.gen_batch}.\nMeasured by {provenance(payload)}."
    )


if __name__ == "__main__":
    main()
