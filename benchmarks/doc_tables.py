"""The renderer: the one command that puts the measured and computed tables into the README and docs.

    python -m benchmarks.doc_tables                   # rewrite every marked block
    python -m benchmarks.doc_tables --check           # exit 1 if a block differs from what its renderer makes
    python -m benchmarks.doc_tables --check --skip-computed   # only the blocks rendered from results files
    python -m benchmarks.doc_tables --show FILE       # print the blocks of a results file (e.g. a test run's)

A block is the text between ``<!-- results:NAME:start -->`` and ``<!-- results:NAME:end -->``; it may live
in README.md or in any markdown file under docs/, and each NAME must appear there exactly once (the block is
found by its marker, so moving it to another page needs no change here). Its content is the block's renderer
(:data:`BLOCKS`) applied to its results file in docs/results/ (written by the benchmark,
:mod:`benchmarks.results_file`; the renderers are :mod:`benchmarks.reports`), or, for a *computed* block (no
results file: the parameter counts, the authors' recipes), the renderer's output from the code as it is
today. A renderer writes its links from the checkout root (``docs/x.png``); they are rebased to the page
that holds the block (``x.png`` in docs/, ``../x.png`` in docs/reports/). Files are rewritten atomically.
Benchmarks only write their results files; nothing imports this module, and ``tests/test_docs_numbers.py``
runs the check, so a table in the docs is always a command's output.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.reports import (
    authors_eval_cost,
    bert_corpus_throughput,
    dt_fixup_ablation,
    dt_fixup_mixed,
    dt_fixup_mu_cost,
    dt_fixup_plateau,
    dt_fixup_update_size,
    dt_fixup_user_flag,
    glue_grid_time,
    glue_small_run,
    macaron_real_bert,
    macaron_real_translation,
    pair_index_build,
    preprocess_throughput,
    pretrain_speed,
    profile_macaron_step,
    sentence_splitters,
    speed_macaron_vs_transformer,
)
from benchmarks.results_file import REPO, RESULTS_DIR, read_results
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.cli import quiet_loggers
from macaron_workflow.errors import UserError

MARKER = re.compile(r"<!-- results:([A-Za-z0-9_-]+):start -->")
#: a markdown link or image target that is a relative path: ``](docs/x.png)`` (not ``https:``, ``#anchor``)
RELATIVE_LINK = re.compile(r"(\]\()(?![a-z]+:|#|/)([^)\s]+)")


def rebase_links(rendered: str, page: Path, repo: Path = REPO) -> str:
    """A block's links, written from the checkout root, as seen from ``page`` (its holder)."""

    def rebased(match: re.Match[str]) -> str:
        target, _, anchor = match.group(2).partition("#")
        path = os.path.relpath(repo / target, page.parent).replace(os.sep, "/")
        return match.group(1) + path + (f"#{anchor}" if anchor else "")

    return RELATIVE_LINK.sub(rebased, rendered)


@dataclass(frozen=True)
class DocBlock:
    name: str  # the marker name
    renderer: Callable[..., str]  # renderer(payload of the results file), or renderer() for a computed block
    results: str | None = None  # the results file in docs/results/; None: a computed block

    @property
    def computed(self) -> bool:
        return self.results is None

    def results_path(self, results_dir: Path | None = None) -> Path | None:
        return None if self.results is None else (results_dir or RESULTS_DIR) / self.results

    def pending(self, results_dir: Path | None = None) -> bool:
        """Its results file does not exist yet (a benchmark not run, or not published, yet)."""
        path = self.results_path(results_dir)
        return path is not None and not path.exists()

    def render(self, results_dir: Path | None = None) -> str:
        path = self.results_path(results_dir)
        return self.renderer() if path is None else self.renderer(read_results(path))


def _quickstart_runs(payload: dict[str, Any]) -> str:
    from macaron_pipelines.quickstart.docs_table import results_table

    return results_table(payload["runs"])


def _computed(module: str, function: str, quiet: bool = False) -> Callable[[], str]:
    """A computed block's renderer: ``module.function()``, imported only when the block renders (``quiet``:
    fairseq's loggers silenced first)."""

    def render() -> str:
        if quiet:
            quiet_loggers("fairseq", "macaron_fairseq")
        return getattr(importlib.import_module(module), function)()

    return render


def _param_parity() -> str:
    from macaron_fairseq.param_parity import markdown_table, parity_rows

    quiet_loggers("fairseq", "macaron_fairseq")
    return markdown_table(parity_rows(32768), 32768)


def _bert_parity() -> str:
    from macaron_fairseq.param_parity import BERT_VOCAB, bert_markdown_table, bert_parity_rows

    quiet_loggers("fairseq", "macaron_fairseq")
    return bert_markdown_table(bert_parity_rows(), BERT_VOCAB)


ABLATION = dt_fixup_ablation
PREPROCESS = preprocess_throughput.render
PARITY = "macaron_fairseq.param_parity"
BLOCKS = (
    DocBlock("update-size", dt_fixup_update_size.render, "dt_fixup_update_size.json"),
    DocBlock("mu-cost", dt_fixup_mu_cost.render, "dt_fixup_mu_cost.json"),
    DocBlock("depth-ablation", ABLATION.render, "dt_fixup_ablation.json"),
    DocBlock("depth-ablation-macaron", ABLATION.render, "dt_fixup_ablation_macaron.json"),
    DocBlock("ablation-budget", ABLATION.render_budget, "dt_fixup_ablation_budget.json"),
    DocBlock("dt-fixup-mixed", dt_fixup_mixed.render, "dt_fixup_mixed.json"),
    DocBlock("dt-fixup-mixed-budget", dt_fixup_mixed.render_curves, "dt_fixup_mixed_budget.json"),
    DocBlock("dt-fixup-plateau", dt_fixup_plateau.render, "dt_fixup_plateau.json"),
    DocBlock("dt-fixup-plateau-rates", dt_fixup_plateau.render, "dt_fixup_plateau_rates.json"),
    DocBlock("init-scheme-auto", dt_fixup_user_flag.render, "dt_fixup_user_flag.json"),
    DocBlock("dt-fixup-user-flag-mu1", dt_fixup_user_flag.render, "dt_fixup_user_flag_mu1.json"),
    DocBlock("speed", speed_macaron_vs_transformer.render, "speed_macaron_vs_transformer.json"),
    DocBlock("step-profile", profile_macaron_step.render, "macaron_step_profile.json"),
    DocBlock("preprocess-1m", PREPROCESS, "preprocess_throughput_1m.json"),
    DocBlock("preprocess-100k", PREPROCESS, "preprocess_throughput_100k.json"),
    DocBlock("preprocess-100k-fairseq", PREPROCESS, "preprocess_throughput_100k_fairseq.json"),
    DocBlock("preprocess-memory", PREPROCESS, "preprocess_memory_1m.json"),
    DocBlock("bert-corpus", bert_corpus_throughput.render_throughput, "bert_corpus_throughput.json"),
    DocBlock("bert-corpus-memory", bert_corpus_throughput.render, "bert_corpus_memory.json"),
    DocBlock("sentence-splitters", sentence_splitters.render, "sentence_splitters.json"),
    DocBlock("pair-index-build", pair_index_build.render, "pair_index_build.json"),
    DocBlock("pretrain-speed", pretrain_speed.render, "pretrain_speed.json"),
    DocBlock("glue-grid-time", glue_grid_time.render, "glue_grid_time.json"),
    DocBlock("glue-small", glue_small_run.render, "glue_small.json"),
    DocBlock("real-translation", macaron_real_translation.render, "macaron_real_translation.json"),
    DocBlock(
        "real-translation-authors", macaron_real_translation.render, "macaron_real_translation_authors.json"
    ),
    DocBlock(
        "real-translation-authors-fairseq-init",
        macaron_real_translation.render,
        macaron_real_translation.PREVIOUS,
    ),
    DocBlock(
        "real-translation-authors-paired",
        macaron_real_translation.render_paired,
        "macaron_real_translation_authors.json",
    ),
    DocBlock("real-bert", macaron_real_bert.render, "macaron_real_bert.json"),
    DocBlock("authors-eval-cost", authors_eval_cost.render, "authors_eval_cost.json"),
    DocBlock("quickstart-runs", _quickstart_runs, "quickstart.json"),
    DocBlock("architectures", _computed("macaron_fairseq.models.arch_table", "markdown_table", quiet=True)),
    DocBlock("param-parity", _param_parity),
    DocBlock("authors-recipes", _computed("macaron_pipelines.authors_table", "render", quiet=True)),
    DocBlock("does-it-work", _computed("benchmarks.reports.readme_summary", "render")),
    DocBlock("bert-parity", _bert_parity),
    DocBlock("plugin-options", _computed("macaron_fairseq.plugin_options", "markdown_table")),
    DocBlock("authors-bert-parity", _computed(PARITY, "authors_bert_markdown_table", quiet=True)),
    DocBlock("authors-glue-recipe", _computed("macaron_pipelines.glue.authors_best", "render")),
)


def doc_files(repo: Path = REPO) -> list[Path]:
    """Where blocks may live: README.md and every markdown file under docs/."""
    return [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]


def block_pattern(name: str) -> re.Pattern[str]:
    marker = re.escape(name)
    return re.compile(rf"(<!-- results:{marker}:start -->)\n?(.*?)\n?(<!-- results:{marker}:end -->)", re.S)


def _shown(path: Path, repo: Path) -> str:
    return str(path.relative_to(repo)) if path.is_relative_to(repo) else str(path)


def locate(blocks: Iterable[DocBlock], files: list[Path], repo: Path = REPO) -> dict[str, Path]:
    """The one file holding each block's marker pair. A marker that is missing, appears more than once
    (in one file or several), has no end marker, or that no block renders is a :class:`UserError` listing
    every such problem."""
    texts = {path: path.read_text(encoding="utf-8") for path in files if path.is_file()}
    names = [block.name for block in blocks]
    known = set(names) | {block.name for block in BLOCKS}
    problems = []
    for name in sorted({m for text in texts.values() for m in MARKER.findall(text)} - known):
        where = ", ".join(_shown(p, repo) for p, t in texts.items() if f"<!-- results:{name}:start" in t)
        problems.append(f"{where}: block '{name}' has no renderer in benchmarks/doc_tables.py BLOCKS")
    found: dict[str, Path] = {}
    for name in names:
        start = f"<!-- results:{name}:start -->"
        holders = [(path, text.count(start)) for path, text in texts.items() if start in text]
        count = sum(n for _, n in holders)
        if count != 1:
            where = ", ".join(f"{_shown(p, repo)} ({n}x)" for p, n in holders) or "no file"
            problems.append(
                f"block '{name}': its marker {start} must appear exactly once in README.md and docs/**/*.md, "
                f"found {count} ({where})"
            )
            continue
        path = holders[0][0]
        if not block_pattern(name).search(texts[path]):
            problems.append(f"{_shown(path, repo)}: block '{name}' has no <!-- results:{name}:end -->")
            continue
        found[name] = path
    if problems:
        raise UserError("\n".join(problems))
    return found


def _replace(text: str, block: DocBlock, rendered: str) -> str:
    return block_pattern(block.name).sub(lambda m: f"{m.group(1)}\n{rendered}\n{m.group(3)}", text, count=1)


def mismatches(
    blocks: tuple[DocBlock, ...] = BLOCKS, repo: Path = REPO, results_dir: Path | None = None
) -> list[str]:
    """What differs between the docs and the renderers (empty when in sync), including markers that are
    missing, duplicated or unknown."""
    try:
        where = locate(blocks, doc_files(repo), repo)
    except UserError as exc:
        return str(exc).splitlines()
    problems = []
    for block in blocks:
        path = where[block.name]
        if block.pending(results_dir):
            missing = f"docs/results/{block.results} does not exist (run its benchmark)"
            problems.append(f"{_shown(path, repo)}: block '{block.name}': {missing}")
            continue
        match = block_pattern(block.name).search(path.read_text(encoding="utf-8"))
        assert match is not None  # located above
        if match.group(2) != rebase_links(block.render(results_dir), path, repo):
            source = "the code" if block.computed else f"docs/results/{block.results}"
            problems.append(f"{_shown(path, repo)}: block '{block.name}' differs from {source}")
    return problems


def rewrite(
    blocks: tuple[DocBlock, ...] = BLOCKS, repo: Path = REPO, results_dir: Path | None = None
) -> list[Path]:
    """Rewrite the blocks in place (each changed file atomically); the files changed. A block whose results
    file does not exist yet is left as it is (with a warning)."""
    where = locate(blocks, doc_files(repo), repo)
    by_file: dict[Path, list[DocBlock]] = {}
    for block in blocks:
        if block.pending(results_dir):
            warning = f"warning: block '{block.name}' left as it is: no docs/results/{block.results} yet"
            print(warning, file=sys.stderr)
            continue
        by_file.setdefault(where[block.name], []).append(block)
    changed = []
    for path, in_file in by_file.items():
        text = original = path.read_text(encoding="utf-8")
        for block in in_file:
            text = _replace(text, block, rebase_links(block.render(results_dir), path, repo))
        if text != original:
            write_text_atomically(path, text)
            changed.append(path)
            print(f"updated {_shown(path, repo)} ({', '.join(b.name for b in in_file)})")
    return changed


def show(path: Path) -> str:
    """What a results file renders to, wherever it is (a test run's, an out-dir's): the blocks of a results
    file of its name, else those of the benchmark its command names (``python -m benchmarks.NAME``: the
    renderers of ``benchmarks/reports/NAME.py``)."""
    if not path.is_file():
        raise UserError(f"{path}: no such results file")
    payload = read_results(path)
    blocks = [block for block in BLOCKS if block.results == path.name]
    if not blocks:
        name = re.sub(r"^python (-m benchmarks\.|benchmarks/)(\w+).*", r"\2", payload.get("command", ""))
        modules = (f"benchmarks.reports.{name}", f"benchmarks.{name}")
        renderers: dict[Callable[..., str], DocBlock] = {}
        for block in BLOCKS:
            if not block.computed and block.renderer.__module__ in modules:
                renderers.setdefault(block.renderer, block)
        blocks = list(renderers.values())
    if not blocks:
        raise UserError(f"{path}: no docs block is rendered from it (its command: {payload.get('command')})")
    return "\n\n".join(f"<!-- {block.name} -->\n{block.renderer(payload)}" for block in blocks)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.doc_tables",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--check", action="store_true", help="only report differences (exit 1 if any)")
    parser.add_argument(
        "--skip-computed",
        action="store_true",
        help="leave out the computed blocks (parameter counts: they build the big models, ~1 min)",
    )
    parser.add_argument("--show", type=Path, metavar="FILE", help="print the blocks of this results file")
    args = parser.parse_args()
    if args.show:
        print(show(args.show))
        return 0
    blocks = tuple(b for b in BLOCKS if not (args.skip_computed and b.computed))
    if args.check:
        problems = mismatches(blocks)
        print("\n".join(problems) or f"all {len(blocks)} blocks are in sync")
        return 1 if problems else 0
    rewrite(blocks)
    return 0


if __name__ == "__main__":
    from macaron_workflow.cli import run_cli

    run_cli(main, "python -m benchmarks.doc_tables")
