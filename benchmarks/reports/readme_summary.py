"""The README's "Does it work?" table: one row per question, each answered from a results file under
docs/results/ (a computed block of :mod:`benchmarks.doc_tables`: it reads several files), with the link to
the page that renders the same results file (the full table).

A Macaron-vs-baseline difference is called one only by the rule of docs/reports/real_text.md: every seed's
difference has the same sign and their mean exceeds their standard deviation; otherwise "within seed noise".
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks import macaron_real_bert, macaron_real_translation
from benchmarks.dt_fixup_ablation import best_lr, cell_values
from benchmarks.reports import authors_eval_cost as eval_cost
from benchmarks.reports.macaron_real_bert import final as bert_final
from benchmarks.reports.macaron_real_translation import PREVIOUS, final_nll
from benchmarks.reports.real_text import mean_std
from benchmarks.results_file import RESULTS_DIR, read_results


def load(name: str, results_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    return read_results(results_dir / name)


def paired_runs(rows: list[dict], arm: str, baseline: str) -> tuple[dict[tuple[str, int], dict], list[int]]:
    """The finished runs by (arm, seed), and the seeds where both arms finished."""
    by = {(row["arm"], row["seed"]): row for row in rows}
    return by, sorted({seed for _, seed in by if (arm, seed) in by and (baseline, seed) in by})


def verdict(deltas: list[float], better_if_negative: bool, what: str) -> str:
    """The rule of docs/reports/real_text.md applied to per-seed differences (Macaron − baseline)."""
    consistent = len(deltas) > 1 and (all(d > 0 for d in deltas) or all(d < 0 for d in deltas))
    mean, std = statistics.mean(deltas), statistics.stdev(deltas)
    if not (consistent and abs(mean) > std):
        return f"no {what} difference beyond seed noise"
    worse = (mean > 0) == better_if_negative
    return f"Macaron {'worse' if worse else 'better'} in {what} in every seed"


def translation_row(payload: dict[str, Any]) -> str:
    """Test BLEU per arm and the verdicts on BLEU and on the paired validation nll."""
    rows = [row for row in payload["results"]["rows"] if macaron_real_translation.finished(row)]
    by, seeds = paired_runs(rows, "macaron", "transformer")
    r = payload["results"]
    planned = len(r["seeds"]) * len(r["arms"])
    if not seeds:
        return f"running: {len(rows)} of {planned} runs finished, no seed paired yet"
    bleu = {arm: [by[(arm, s)]["test_bleu"] for s in seeds] for arm in ("macaron", "transformer")}
    d_bleu = [by[("macaron", s)]["test_bleu"] - by[("transformer", s)]["test_bleu"] for s in seeds]
    d_nll = [final_nll(by[("macaron", s)]) - final_nll(by[("transformer", s)]) for s in seeds]
    return (
        f"BLEU {mean_std(bleu['macaron'])} vs {mean_std(bleu['transformer'])} ({len(seeds)} seeds): "
        f"{verdict(d_bleu, False, 'BLEU')}; {verdict(d_nll, True, 'validation nll')}"
    )


def quickstart_row(payload: dict[str, Any]) -> str:
    """The latest default run (no option but the work dir) of the recorded quickstart runs."""
    default = [
        run
        for run in payload["runs"]
        if "--threads" not in run["command"] and "--cpu-kernels" not in run["command"]
    ]
    run = max(default, key=lambda r: r["date"])
    return (
        f"sacreBLEU {run['sacrebleu']:.2f} on {run['n_sentences']} test sentences, "
        f"{run['exact_matches']} exact (copying the source: {run['copy_source_sacrebleu']:.2f}), "
        f"{run['cpu_time_s']:.0f} CPU-s"
    )


def bert_row(payload: dict[str, Any]) -> str:
    rows = [row for row in payload["results"]["rows"] if macaron_real_bert.finished(row)]
    by, seeds = paired_runs(rows, "macaron", "vanilla")
    # a validation point is [step, bits, perplexity, NSP accuracy]
    ppl = {arm: [bert_final(by[(arm, s)])[2] for s in seeds] for arm in ("macaron", "vanilla")}
    deltas = [m - v for m, v in zip(ppl["macaron"], ppl["vanilla"], strict=True)]
    return (
        f"validation MLM perplexity {mean_std(ppl['macaron'], 1)} vs BERT's layers "
        f"{mean_std(ppl['vanilla'], 1)} ({len(seeds)} seeds): {verdict(deltas, True, 'perplexity')}"
    )


def depth_row(payload: dict[str, Any]) -> str:
    """Test nll at the deepest depth, each scheme at its own selected rate."""
    r = payload["results"]
    rows, seeds = r["rows"], len(r["seeds"])
    chosen, nll = best_lr(rows, seeds), cell_values(rows, "test_nll")
    depth = max(row["depth"] for row in rows)
    cells = []
    for scheme, name in (("standard", "post-LN standard"), ("dt-fixup", "DT-Fixup"), ("t-fixup", "T-Fixup")):
        lr = chosen.get((scheme, depth))
        if lr is not None:
            cells.append(f"{name} {statistics.mean(nll[(scheme, depth, lr)]):.2f}")
    return f"{depth} layers, test nll in bits (each scheme at its own rate): " + ", ".join(cells)


def speed_row(payload: dict[str, Any]) -> str:
    """Macaron's (fused) training step and generation over the Transformer's, at the middle batch size."""
    r = payload["results"]
    size = r["sizes"][len(r["sizes"]) // 2]
    train = size["train"]["macaron:fused"]["paired_ratio_median"]
    generation = size.get("generation", {}).get("macaron:fused", {}).get("paired_ratio_median")
    text = f"{r['macaron']} / {r['transformer']}, {size['tokens']} tokens, 1 thread: training step"
    text += f" ×{train:.2f}"
    return text + (f", generation ×{generation:.2f}" if generation else "")


def eval_cost_row(payload: dict[str, Any]) -> str:
    runs = sorted(payload["results"]["runs"], key=lambda run: -run["torch_threads"])
    costs = ", ".join(f"{r['wall_seconds'] / 60:.0f} min with {r['torch_threads']} threads" for r in runs)
    costs = costs.replace(" 1 threads", " 1 thread")
    shared = eval_cost.other_jobs_load(payload["machine"], runs) >= eval_cost.SHARED_LOAD
    shared_note = " (a shared machine)" if shared else ""
    return (
        "upgraded checkpoints give their logits within 1e-5 and the same beams (tests); evaluating their "
        f"IWSLT14 model with their test command: {costs}{shared_note}"
    )


def render(results_dir: Path = RESULTS_DIR) -> str:
    """The table (computed from the results files as they are)."""
    rows = [
        (
            "Does the quickstart learn? (generated En→De)",
            quickstart_row(load("quickstart.json", results_dir)),
            "[quickstart runs](docs/reports/quickstart_runs.md)",
        ),
        (
            "Macaron vs Transformer, real En→De text (post-LN)",
            translation_row(load("macaron_real_translation.json", results_dir)),
            "[real text](docs/reports/real_text.md)",
        ),
        (
            "… in the authors' configuration (pre-LN, their dropouts), fairseq 0.12's initialisation",
            translation_row(load(PREVIOUS, results_dir)),
            "[real text §1b](docs/reports/real_text.md#1b-the-same-grid-in-the-authors-configuration)",
        ),
        (
            "… the same with their initialisation too",
            translation_row(load("macaron_real_translation_authors.json", results_dir)),
            "[real text §1b](docs/reports/real_text.md#1b-the-same-grid-in-the-authors-configuration)",
        ),
        (
            "Macaron vs BERT, pre-training on real text",
            bert_row(load("macaron_real_bert.json", results_dir)),
            "[real text §2](docs/reports/real_text.md#2-bert-pre-training-the-python-documentation)",
        ),
        (
            "The authors' released models, here",
            eval_cost_row(load("authors_eval_cost.json", results_dir)),
            "[evaluation cost](docs/reports/authors_eval_cost.md)",
        ),
        (
            "DT-Fixup / T-Fixup for deep stacks (generated task)",
            depth_row(load("dt_fixup_ablation.json", results_dir)),
            "[depth ablation](docs/reports/dt_fixup_depth.md)",
        ),
        (
            "What Macaron's extra FFN costs (time, CPU)",
            speed_row(load("speed_macaron_vs_transformer.json", results_dir)),
            "[speed](docs/reports/macaron_speed.md)",
        ),
    ]
    lines = ["| question | measured here | more |", "|---|---|---|"]
    lines += [f"| {q} | {a} | {link} |" for q, a, link in rows]
    return "\n".join(lines)
