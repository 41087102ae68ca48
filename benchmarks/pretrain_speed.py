"""Pre-training speed, three measurements written to one results file (``docs/results/pretrain_speed.json``):

    python -m benchmarks.pretrain_speed [--rounds 6] [--parts steps ranks gpu] [--json OUT]
    python -m benchmarks.doc_tables      # docs/reports/pretraining_speed.md from that results file

- ``steps`` (:mod:`benchmarks.pretrain_step_speed`): one DeepSpeed BERT step of ``macaron_bert_base``,
  ``vanilla_bert_base`` and Hugging Face's ``BertForPreTraining``, alternated in one process;
- ``ranks`` (:mod:`benchmarks.pretrain_rank_scaling`): 1 vs 2 ranks of the real pre-training command on the
  CPU, the same global batch;
- ``gpu`` (:mod:`benchmarks.pretrain_mfu`): tokens/s and MFU in bf16 (only with CUDA, or ``--mfu-on-cpu``).

Every part records the CPU time other processes used meanwhile (``other_cores``: the machine may be shared),
besides the load averages of the results file. Ratios and speed-ups are computed from the stored times when
rendering (:mod:`benchmarks.reports.pretrain_speed`), never stored.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import pretrain_mfu, pretrain_rank_scaling, pretrain_step_speed
from benchmarks.pretrain_bench import quiet_libraries, usable_cores
from benchmarks.results_file import RESULTS_DIR, machine_info, write_results

DEFAULT_JSON = RESULTS_DIR / "pretrain_speed.json"
#: the parts in the order of the docs' tables; measured (and stored) in the order steps, gpu, ranks: the GPU
#: part right after the in-process steps, the subprocess runs last
PARTS = {"steps": pretrain_step_speed, "ranks": pretrain_rank_scaling, "gpu": pretrain_mfu}
MEASURE_ORDER = ("steps", "gpu", "ranks")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.pretrain_speed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--parts", nargs="+", choices=tuple(PARTS), default=list(PARTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="results file (default: %(default)s)")
    for part in PARTS.values():
        part.add_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    quiet_libraries()
    machine = machine_info()
    import torch

    torch.set_num_threads(args.threads or usable_cores())
    results: dict[str, Any] = {}
    for key in (k for k in MEASURE_ORDER if k in args.parts):
        results[key] = PARTS[key].measure(args)
        if "skipped" in results[key]:
            print(f"tokens/s and MFU: skipped ({results[key]['skipped']})", flush=True)
    if args.json:
        write_results(args.json, results, machine)


if __name__ == "__main__":
    main()
