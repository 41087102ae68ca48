"""Put the benchmarks' measured tables into the README and docs, from their results files.

    python -m benchmarks.doc_tables           # rewrite every marked block from docs/results/*.json
    python -m benchmarks.doc_tables --check   # exit 1 if a block differs from its results file

A block is the text between ``<!-- results:NAME:start -->`` and ``<!-- results:NAME:end -->`` in a
markdown file; its content is ``render(payload)`` of the benchmark module that wrote the results file.
``tests/test_docs_numbers.py`` runs the check, so a table in the docs is always a command's output.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from dataclasses import dataclass

from benchmarks.results_file import REPO, RESULTS_DIR, read_results


@dataclass(frozen=True)
class DocBlock:
    name: str  # the marker name
    doc: str  # markdown file, relative to the repository
    results: str  # results file in docs/results/
    module: str  # the benchmark module whose render(payload) makes the block
    function: str = "render"  # or another renderer of that module (one part of a results file)

    def render(self) -> str:
        renderer = getattr(importlib.import_module(f"benchmarks.{self.module}"), self.function)
        return renderer(read_results(RESULTS_DIR / self.results))


PREPROCESS = "preprocess_throughput"
BERT_CORPUS = "bert_corpus_throughput"
SPLITTERS = "sentence_splitters"
SPEED = "speed_macaron_vs_transformer"
ABLATION = "dt_fixup_ablation_report"
BUDGET = "render_budget"
MIXED = "dt_fixup_mixed"
CURVES = "render_curves"
PLATEAU = "dt_fixup_plateau"
USER_FLAG = "dt_fixup_user_flag"
REAL_MT = "macaron_real_translation"
REAL_BERT = "macaron_real_bert"
BLOCKS = (
    DocBlock("update-size", "docs/dt_fixup.md", "dt_fixup_update_size.json", "dt_fixup_update_size"),
    DocBlock("mu-cost", "docs/dt_fixup.md", "dt_fixup_mu_cost.json", "dt_fixup_mu_cost"),
    DocBlock("depth-ablation", "docs/dt_fixup.md", "dt_fixup_ablation.json", ABLATION),
    DocBlock("depth-ablation-summary", "README.md", "dt_fixup_ablation.json", ABLATION, "render_summary"),
    DocBlock("depth-ablation-macaron", "docs/dt_fixup.md", "dt_fixup_ablation_macaron.json", ABLATION),
    DocBlock("ablation-budget", "docs/dt_fixup.md", "dt_fixup_ablation_budget.json", ABLATION, BUDGET),
    DocBlock("dt-fixup-mixed", "docs/dt_fixup.md", "dt_fixup_mixed.json", MIXED),
    DocBlock("dt-fixup-mixed-budget", "docs/dt_fixup.md", "dt_fixup_mixed_budget.json", MIXED, CURVES),
    DocBlock("dt-fixup-plateau", "docs/dt_fixup.md", "dt_fixup_plateau.json", PLATEAU),
    DocBlock("dt-fixup-plateau-rates", "docs/dt_fixup.md", "dt_fixup_plateau_rates.json", PLATEAU),
    DocBlock("init-scheme-auto", "docs/dt_fixup.md", "dt_fixup_user_flag.json", USER_FLAG),
    DocBlock("init-scheme-auto", "README.md", "dt_fixup_user_flag.json", USER_FLAG),
    DocBlock("dt-fixup-user-flag-mu1", "docs/dt_fixup.md", "dt_fixup_user_flag_mu1.json", USER_FLAG),
    DocBlock("speed", "README.md", "speed_macaron_vs_transformer.json", SPEED),
    DocBlock("speed", "docs/macaron_speed.md", "speed_macaron_vs_transformer.json", SPEED),
    DocBlock("step-profile", "docs/macaron_speed.md", "macaron_step_profile.json", "profile_macaron_step"),
    DocBlock("preprocess-1m", "README.md", "preprocess_throughput_1m.json", PREPROCESS),
    DocBlock("preprocess-1m", "docs/preprocessing.md", "preprocess_throughput_1m.json", PREPROCESS),
    DocBlock("preprocess-100k", "docs/preprocessing.md", "preprocess_throughput_100k.json", PREPROCESS),
    DocBlock(
        "preprocess-100k-fairseq",
        "docs/preprocessing.md",
        "preprocess_throughput_100k_fairseq.json",
        PREPROCESS,
    ),
    DocBlock("preprocess-memory", "docs/preprocessing.md", "preprocess_memory_1m.json", PREPROCESS),
    DocBlock("bert-corpus", "README.md", "bert_corpus_throughput.json", BERT_CORPUS, "render_throughput"),
    DocBlock(
        "bert-corpus",
        "docs/pretraining_data.md",
        "bert_corpus_throughput.json",
        BERT_CORPUS,
        "render_throughput",
    ),
    DocBlock("bert-corpus-memory", "docs/pretraining_data.md", "bert_corpus_memory.json", BERT_CORPUS),
    DocBlock("sentence-splitters", "docs/pretraining_data.md", "sentence_splitters.json", SPLITTERS),
    DocBlock("pair-index-build", "docs/pretraining_data.md", "pair_index_build.json", "pair_index_build"),
    DocBlock("pretrain-speed", "docs/pretraining_speed.md", "pretrain_speed.json", "pretrain_speed"),
    DocBlock("pretrain-speed", "README.md", "pretrain_speed.json", "pretrain_speed", "render_summary"),
    DocBlock("glue-grid-time", "docs/glue.md", "glue_grid_time.json", "glue_grid_time"),
    DocBlock("glue-small", "docs/glue.md", "glue_small.json", "glue_small_run"),
    DocBlock("glue-small", "README.md", "glue_small.json", "glue_small_run"),
    DocBlock("real-translation", "docs/real_text.md", "macaron_real_translation.json", REAL_MT),
    DocBlock("real-translation", "README.md", "macaron_real_translation.json", REAL_MT, "render_summary"),
    DocBlock("real-bert", "docs/real_text.md", "macaron_real_bert.json", REAL_BERT),
    DocBlock("real-bert", "README.md", "macaron_real_bert.json", REAL_BERT, "render_summary"),
)


def block_pattern(name: str) -> re.Pattern[str]:
    marker = re.escape(name)
    return re.compile(rf"(<!-- results:{marker}:start -->)\n?(.*?)\n?(<!-- results:{marker}:end -->)", re.S)


def current(block: DocBlock) -> str | None:
    match = block_pattern(block.name).search((REPO / block.doc).read_text(encoding="utf-8"))
    return None if match is None else match.group(2)


def mismatches(blocks: tuple[DocBlock, ...] = BLOCKS) -> list[str]:
    """What differs between the docs and the results files (empty when in sync)."""
    problems = []
    for block in blocks:
        text = current(block)
        if text is None:
            problems.append(f"{block.doc}: no block <!-- results:{block.name}:start/end -->")
        elif text != block.render():
            problems.append(f"{block.doc}: block '{block.name}' differs from docs/results/{block.results}")
    return problems


def rewrite(blocks: tuple[DocBlock, ...] = BLOCKS) -> None:
    for block in blocks:
        path = REPO / block.doc
        text = path.read_text(encoding="utf-8")
        new, count = block_pattern(block.name).subn(
            lambda m, b=block: f"{m.group(1)}\n{b.render()}\n{m.group(3)}", text
        )
        if count != 1:
            raise SystemExit(f"{block.doc}: expected one block '{block.name}', found {count}")
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"updated {block.doc} ({block.name})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only report differences (exit 1 if any)")
    args = parser.parse_args()
    if args.check:
        problems = mismatches()
        print("\n".join(problems) or "every results block is in sync")
        sys.exit(1 if problems else 0)
    rewrite()


if __name__ == "__main__":
    main()
