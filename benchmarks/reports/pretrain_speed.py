"""The docs' tables of ``docs/results/pretrain_speed.json`` (the retired study ``benchmarks.pretrain_speed``):
one BERT step of each model (``steps``), 1 vs 2 ranks (``ranks``), tokens/s and MFU on a GPU (``gpu``). Ratios
and speed-ups are computed here from the stored times, never stored."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.results_file import provenance

#: the results file's keys of Hugging Face's BertForPreTraining: as published, and with the MLM head on the
#: masked positions only
HF_NAME, HF_MASKED_NAME = "hf_bert", "hf_bert_masked_head"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def other_cores_text(part: dict[str, Any]) -> str:
    cores = part.get("other_cores")
    return "" if cores is None else f" Other processes used {cores:.2f} cores on average meanwhile."


MACARON_GOAL = 1.05  # macaron / vanilla step time
HF_GOAL = 1.0  # vanilla / HF step time
OURS_ATTENTION = "fairseq MultiheadAttention → torch F.multi_head_attention_forward → SDPA"


def run_throughput(run: dict[str, Any]) -> dict[str, float]:
    """Samples/s (all timed steps' samples over their summed wall time), tokens/s, median step seconds."""
    seconds = sum(run["seconds"])
    return {
        "samples_per_second": sum(run["pairs"]) / seconds,
        "tokens_per_second": sum(run["tokens"]) / seconds,
        "median_step_seconds": statistics.median(run["seconds"]),
    }


def ratio_summary(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, float]:
    """The ratio of the medians, and the range of the per-round ratios (rounds are paired: same round,
    adjacent in time)."""
    paired = [a / b for a, b in zip(numerator, denominator, strict=True)]
    return {
        "ratio": statistics.median(numerator) / statistics.median(denominator),
        "round_min": min(paired),
        "round_max": max(paired),
    }


def goal_text(value: float, goal: float) -> str:
    return f"≤ {goal:.2f} ({'met' if value <= goal else 'not met'})"


def render_steps(steps: dict[str, Any]) -> str:
    """The ``steps`` part: one BERT step of each model, and the step-time ratios."""
    macaron, vanilla = steps["archs"]
    times, models = steps["times"], steps["models"]
    tokens = steps["batch_size"] * steps["seq_len"]
    lines = [
        "| model | implementation | parameters | median step (s) | samples/s | tokens/s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, model in models.items():
        median = statistics.median(times[name])
        lines.append(
            f"| {model['label']} | {model['implementation']} | {model['params']:,} | {median:.3f} | "
            f"{steps['batch_size'] / median:.2f} | {tokens / median:,.0f} |"
        )
    ratios = [(f"`{macaron}` / `{vanilla}`", macaron, vanilla, goal_text, MACARON_GOAL)]
    if HF_NAME in times:
        ratios.append((f"`{vanilla}` / HF", vanilla, HF_NAME, goal_text, HF_GOAL))
        ratios.append(
            (f"`{vanilla}` / HF, MLM head on masked positions", vanilla, HF_MASKED_NAME, None, None)
        )
    lines += ["", "| step-time ratio | ratio of medians | per-round range | goal |", "|---|---:|---:|---|"]
    for label, a, b, goal, bound in ratios:
        r = ratio_summary(times[a], times[b])
        shown = goal(r["ratio"], bound) if goal else "— (same work as ours)"
        lines.append(f"| {label} | {r['ratio']:.3f} | {r['round_min']:.3f}–{r['round_max']:.3f} | {shown} |")
    hf = steps.get("hf_skipped")
    hf_line = f" HF column skipped: {hf}." if hf else ""
    hf_text = ""
    if "hf_attention" in steps:
        hf_text = (
            f'; HF `attn_implementation="{steps["hf_attention"]}"`, transformers {steps["transformers"]}'
        )
    settings = (
        f"Step = forward + loss + backward + optimizer step, one micro-batch of {steps['batch_size']} × "
        f"{steps['seq_len']} tokens ({steps['masked']} masked positions, vocabulary {steps['vocab']:,}); "
        f"{steps['device']}, {steps['threads']} threads; DeepSpeed config `{steps['config']}` "
        f"({steps['precision']}, ZeRO stage {steps['zero_stage']}, {steps['optimizer']}); "
        f"{plural(steps['rounds'], 'alternated round')} after {plural(steps['warmup'], 'warm-up step')} "
        "of each. "
        f"Attention: ours {OURS_ATTENTION}{hf_text}.{hf_line}{other_cores_text(steps)}"
    )
    return "\n".join(lines) + "\n\n" + settings


def pooled_runs(runs: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The timed steps of all runs with the same number of ranks, pooled."""
    pooled: dict[int, dict[str, Any]] = {}
    for run in runs:
        into = pooled.setdefault(run["ranks"], {**run, "seconds": [], "pairs": [], "tokens": [], "runs": 0})
        for key in ("seconds", "pairs", "tokens"):
            into[key] = into[key] + run[key]
        into["runs"] += 1
    return dict(sorted(pooled.items()))


def render_ranks(ranks: dict[str, Any]) -> str:
    """The ``ranks`` part: 1 vs 2 ranks of the pre-training command, the same global batch."""
    pooled = pooled_runs(ranks["runs"])
    first = next(iter(pooled.values()))
    base = run_throughput(first)
    lines = [
        "| ranks × threads | micro × accumulation × ranks = batch | timed steps | median step (s) "
        "| samples/s | tokens/s | speed-up | speed-up of the median step |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n, run in pooled.items():
        t = run_throughput(run)
        micro, accumulation = run["micro_batch"], run["accumulation"]
        batch = f"{micro} × {accumulation} × {n} = {micro * accumulation * n}"
        lines.append(
            f"| {n} × {run['threads']} | {batch} | {len(run['seconds'])} | {t['median_step_seconds']:.3f} | "
            f"{t['samples_per_second']:.2f} | {t['tokens_per_second']:,.0f} | "
            f"{t['samples_per_second'] / base['samples_per_second']:.2f}× | "
            f"{base['median_step_seconds'] / t['median_step_seconds']:.2f}× |"
        )
    flags = f" `{ranks['model_flags']}`" if ranks["model_flags"] else ""
    runs = first["runs"]
    settings = (
        f"`python -m macaron_fairseq.pretrain` under `torchrun --nproc_per_node N`, CPU (gloo): "
        f"`{ranks['arch']}`{flags} ({ranks['params']:,} parameters), `{ranks['config']}`, "
        f"{ranks['seq_len']} tokens per sample, generated corpus ({ranks['corpus']}); {ranks['steps']} steps "
        f"per run, the first {ranks['warmup']} not timed; {runs} run{'s' if runs != 1 else ''} per rank "
        f"count (order {' '.join(str(r['ranks']) for r in ranks['runs'])}). Samples/s = timed samples / "
        "their summed step times (`train_log.jsonl`); the median step is less sensitive to other processes "
        f"(the global batch is the same for every rank count). With {ranks['cores']} cores, both rank counts "
        "use every core: this compares process (data) parallelism with torch's intra-op threads."
        f"{other_cores_text(ranks)}"
    )
    return "\n".join(lines) + "\n\n" + settings


def model_flops_utilization(tokens_per_second: float, flops_token: float, peak_tflops: float) -> float:
    """Achieved model FLOP/s as a share of the peak (``peak_tflops`` in TFLOP/s)."""
    return tokens_per_second * flops_token / (peak_tflops * 1e12)


def render_gpu(gpu: dict[str, Any]) -> str:
    """The ``gpu`` part: tokens/s and MFU in bf16."""
    if "skipped" in gpu:
        return f"Tokens/s and MFU on a GPU: skipped ({gpu['skipped']})."
    median = statistics.median(gpu["seconds"])
    tokens_s = gpu["batch_size"] * gpu["seq_len"] / median
    per_token = gpu["model_flops_per_step"] / (gpu["batch_size"] * gpu["seq_len"])
    achieved = tokens_s * per_token / 1e12
    peak = gpu.get("peak_tflops")
    mfu = (
        f"{100 * model_flops_utilization(tokens_s, per_token, peak):.1f} %"
        if peak
        else "— (no --peak-tflops)"
    )
    peak_text = f"{peak:g}" if peak else "—"
    lines = [
        "| model | device | precision | batch × sequence | tokens/s | FLOPs/token | model TFLOP/s | "
        "peak TFLOP/s | MFU |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
        f"| `{gpu['arch']}` | {gpu['device_name']} | {gpu['precision']} | "
        f"{gpu['batch_size']} × {gpu['seq_len']} | {tokens_s:,.0f} | {per_token / 1e6:,.1f} M | "
        f"{achieved:.3g} | {peak_text} | {mfu} |",
    ]
    return (
        "\n".join(lines) + "\n\nFLOPs/token: the trainer's model FLOPs per step (`macaron_fairseq.pretrain."
        f"flops.BertFlops`: L = {gpu['layers']}, T = {gpu['seq_len']}, d = {gpu['hidden']}, MLM head on "
        f"{gpu['masked']} masked positions) / positions; median of {plural(len(gpu['seconds']), 'step')} "
        "after "
        f"{plural(gpu['warmup'], 'warm-up step')}; DeepSpeed config `{gpu['config']}` with bf16 enabled."
        f"{other_cores_text(gpu)}"
    )


#: the parts in the order of the docs' tables
PARTS = {"steps": render_steps, "ranks": render_ranks, "gpu": render_gpu}


def render(payload: dict[str, Any]) -> str:
    """The docs' tables of a results file: each part that ran, then where the numbers come from."""
    results = payload["results"]
    parts = [part(results[key]) for key, part in PARTS.items() if key in results]
    parts.append(f"Measured by {provenance(payload)}.")
    return "\n\n".join(parts)
