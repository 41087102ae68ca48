"""Where Macaron's training step spends its extra time: torch-profiler self time per operator, Macaron
(each ``--macaron-ffn-impl``) vs its parameter-matched Transformer, at one batch size.

    python -m benchmarks.profile_macaron_step [--tokens 4096] [--rounds 3] [--json OUT]

Both models are built as ``fairseq-train`` builds them (``benchmarks/speed_macaron_vs_transformer.py``
explains the batch); each variant runs one warm-up step, then ``--rounds`` profiled steps (forward +
cross-entropy + backward), alternated between the variants with the order reversed every other round.
Reported per operator: the median over rounds of its self CPU time per step for each variant and the
difference to the Transformer, the operators with the largest differences first. The results go to
``docs/results/macaron_step_profile.json``; ``docs/reports/macaron_speed.md`` is rendered from it.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.results_file import RESULTS_DIR, machine_info, write_results
from macaron_fairseq.build_without_data import build_translation_model, joined_dictionary_dir
from macaron_fairseq.models.architectures import COUNTERPARTS
from macaron_pipelines.gpu_check.speed import TRANSFORMER, random_batch, set_impl, train_step_seconds
from macaron_workflow.cli import quiet_loggers


def profile_step(model: torch.nn.Module, batch: Any) -> dict[str, tuple[float, float]]:
    """{operator: (self CPU ms, calls)} of one profiled training step."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_step_seconds(model, batch)
    return {e.key: (e.self_cpu_time_total / 1e3, float(e.count)) for e in prof.key_averages()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    torch.manual_seed(args.seed)
    flags = ["--share-all-embeddings", "--dropout", str(args.dropout)]
    with joined_dictionary_dir(args.vocab) as data_dir:
        macaron, task = build_translation_model(data_dir, args.macaron, flags)
        transformer, _ = build_translation_model(data_dir, COUNTERPARTS[args.macaron], flags)
    d = task.target_dictionary
    batch = random_batch(len(d), d.nspecial, args.tokens // args.seq_len, args.seq_len, args.seed)

    def step(name: str) -> dict[str, tuple[float, float]]:
        if name == TRANSFORMER:
            return profile_step(transformer, batch)
        set_impl(macaron, name.split(":", 1)[1])
        return profile_step(macaron, batch)

    names = [TRANSFORMER, *(f"macaron:{impl}" for impl in args.impls)]
    for name in names:  # warm-up
        step(name)
    rounds: dict[str, list[dict[str, tuple[float, float]]]] = {n: [] for n in names}
    for r in range(args.rounds):  # alternated, the order reversed every other round
        for name in names if r % 2 == 0 else reversed(names):
            rounds[name].append(step(name))
    profiles = {}
    for name, measured in rounds.items():
        ops = set().union(*measured)
        profiles[name] = {
            "ms": {op: statistics.median(m.get(op, (0.0, 0.0))[0] for m in measured) for op in ops},
            "calls": {op: statistics.median(m.get(op, (0.0, 0.0))[1] for m in measured) for op in ops},
            "total_ms": [sum(v[0] for v in m.values()) for m in measured],
        }
    return {
        "macaron": args.macaron,
        "transformer": COUNTERPARTS[args.macaron],
        "tokens": args.tokens,
        "seq_len": args.seq_len,
        "dropout": args.dropout,
        "rounds": args.rounds,
        "threads": torch.get_num_threads(),
        "impls": args.impls,
        "profiles": profiles,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--macaron", default="macaron_base", choices=list(COUNTERPARTS))
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3, help="profiled steps per variant")
    parser.add_argument("--impls", nargs="+", default=["plain", "fused"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "macaron_step_profile.json")
    args = parser.parse_args()
    quiet_loggers("fairseq", "filelock", "torch")
    machine = machine_info()
    results = run(args)
    write_results(args.json, results, machine)


if __name__ == "__main__":
    main()
