"""The docs block of ``docs/results/authors_eval_cost.json`` (a retired study, see
``benchmarks.results_file.RETIRED``): what evaluating the Macaron authors' IWSLT14 model costs here, one row
per run, the assumptions, the load."""

from __future__ import annotations

from typing import Any

from benchmarks.results_file import provenance

#: other jobs' 1-min load from which the times are those of a shared machine
SHARED_LOAD = 0.5


def other_jobs_load(machine: dict[str, Any], runs: list[dict[str, Any]]) -> float:
    """The largest 1-min load that other jobs put on the machine during the measurement: the load at the
    start and before the first run, and after each run less the threads that run itself kept busy (the
    load taken at a run's end counts its own threads; the load before a later run still holds the previous
    one's)."""
    loads = [machine["load_average_1min_at_start"]]
    loads += [runs[0]["load_1min_before"]] if runs else []
    loads += [r["load_1min_after"] - r["torch_threads"] for r in runs]
    return round(max(loads), 2)


def render(payload: dict[str, Any]) -> str:
    """The docs block: what was measured, one row per run, the assumptions, the load, provenance."""
    r, machine = payload["results"], payload["machine"]
    model, test, cap = r["model"], r["test_set"], r["length_cap"]
    runs = r["runs"]
    overrides = model["overrides"]
    size = f"a SCALED-DOWN size ({' '.join(overrides)})" if overrides else "exactly their size"
    lines = [
        f"Evaluating the Macaron authors' IWSLT14 De→En model with their test command, measured with a "
        f"randomly initialised `{model['arch']}` of {size}: {model['parameters']:,} parameters (d "
        f"{model['embed_dim']}, {model['attention_heads']} heads, {model['encoder_layers']}+"
        f"{model['decoder_layers']} layers, two FFNs of {model['ffn_embed_dim']}, shared embeddings of "
        f"{model['embedding_rows']:,} rows), on {test['sentences']:,} synthetic sentence pairs:",
        "",
        f"`{r['generate_command']}`",
        "",
        "| torch threads | wall (s) | CPU (s) | beam search (s) | sentences/s | generated tokens/s | "
        "peak RSS (MB) | 1-min load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        threads = run["threads_setting"]
        setting = "default" if threads == "default" else f"OMP_NUM_THREADS={threads}"
        lines.append(
            f"| {run['torch_threads']} ({setting}) | {run['wall_seconds']:,.1f} "
            f"({run['wall_seconds'] / 60:.1f} min) | "
            f"{run['cpu_seconds']:,.1f} | {run['generation_seconds']:,.1f} | "
            f"{run['sentences_per_second']:.2f} | {run['tokens_per_second']:,.0f} | "
            f"{run['peak_rss_mb']:,.0f} | "
            f"{run['load_1min_before']} → {run['load_1min_after']} |"
        )
    tokens = runs[0]["generated_tokens"]
    estimate = cap["trained_model_tokens_estimate"]
    lengths = test["length_model"]
    sentences = test["sentences"]
    scaled = f" scaled to {sentences:,} sentences" if sentences != r["authors"]["sentences"] else ""
    lines += [
        "",
        f"Wall and CPU: the whole `fairseq-generate` process (start-up, loading, beam search, BLEU); beam "
        f"search: fairseq's own time of the generation steps; tokens/s: the {tokens:,} generated BPE tokens "
        f"(with `</s>`) per wall second. A random model never ends a hypothesis, so decoding stops at the "
        f"source length (`--max-len-a {cap['max_len_a']:g} --max-len-b {cap['max_len_b']}` instead of "
        f"fairseq's 200 tokens); fairseq caps per batch (its longest source + 2 tokens), hence "
        f"{tokens / estimate:.2f}× the ≈ {estimate:,.0f} tokens a trained model would generate (their syslen "
        f"{r['authors']['syslen']:,} words{scaled} × {1 + lengths['en_split']:.3f} BPE tokens per word + "
        f"`</s>`).",
        "",
        f"Assumed: a joined dictionary of {r['dictionary']['bpe_types']:,} BPE types (theirs is not known "
        f"here); words per pair ~ Gamma(shape {lengths['shape']:g}, mean {lengths['mean_words']:.2f} = their "
        f"reflen / sentences) on both sides, {1 + lengths['de_split']:.3f} (de) / "
        f"{1 + lengths['en_split']:.3f} (en) BPE tokens per word as in fairseq's prepare-iwslt14.sh test set "
        f"(drawn: {test['words_per_sentence']:.2f} words, {test['de_bpe_tokens_per_sentence']:.2f} de / "
        f"{test['en_bpe_tokens_per_sentence']:.2f} en BPE tokens per sentence); binarized by "
        f"`fairseq-preprocess --dataset-impl lazy` (the fairseq 0.6 format of their data).",
    ]
    busy = other_jobs_load(machine, runs)
    if busy >= SHARED_LOAD:
        lines += [
            "",
            f"**The machine was not idle**: other jobs' 1-min load reached {busy} on its "
            f"{machine['usable_cores']} cores during these runs (the load less the runs' own threads), so "
            f"the times are those of a shared machine and longer than on an idle one (the wall time includes "
            f"the waits for a core).",
        ]
    else:
        lines += ["", f"The machine was otherwise idle (other jobs' 1-min load at most {busy})."]
    started = r.get("commit_at_start")
    moved = f" (started at commit `{started}`)" if started and started != payload.get("commit") else ""
    lines += ["", f"Measured by {provenance(payload)}{moved}."]
    return "\n".join(lines)
