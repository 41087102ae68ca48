"""The docs blocks of ``docs/results/macaron_real_bert.json`` (:mod:`benchmarks.macaron_real_bert`): per arm
and per seed, validation perplexity and NSP accuracy (with its majority-class floor), the curves, the
protocol."""

from __future__ import annotations

from benchmarks.macaron_real_bert import ARMS, finished
from benchmarks.reports import real_text
from benchmarks.reports.real_text import mean_std


def final(row: dict) -> list[float]:
    return row["valid_curve"][-1]


def summary_table(r: dict) -> str:
    """Per arm: the last validation's perplexity, MLM loss and NSP accuracy, and the training speed (median
    tokens/s of a run's steps, wall clock on a shared machine), mean ± std over seeds."""
    rows = [row for row in r["rows"] if finished(row)]
    lines = [
        "| model | parameters | seeds | valid MLM perplexity | valid MLM loss (bits) | valid NSP accuracy "
        "| tokens/s (wall clock, not a speed comparison) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for arm, arch in ARMS.items():
        mine = [row for row in rows if row["arm"] == arm]
        tps = [row["tokens_per_second"] for row in mine if row.get("tokens_per_second")]
        nsp_cell = f"{mean_std([final(x)[3] for x in mine])} %" if mine else "—"
        lines.append(
            f"| {arm} (`{arch}`) | {r['parameters'][arm]:,} | {len(mine)} | "
            f"{mean_std([final(x)[2] for x in mine])} | {mean_std([final(x)[1] for x in mine])} | "
            f"{nsp_cell} | {mean_std(tps)} |"
        )
    return "\n".join(lines)


def per_seed_table(r: dict) -> str:
    by = {(row["arm"], row["seed"]): row for row in r["rows"] if finished(row)}
    seeds = sorted({seed for _, seed in by})
    lines = [
        "| seed | ppl vanilla | ppl Macaron | Δ ppl | NSP vanilla | NSP Macaron | Δ NSP (points) "
        "| NSP floor (majority class) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    floors = r.get("valid_nsp", {})  # results files written before the floor was recorded have none
    dp, dn = [], []
    for seed in seeds:
        v, m = by.get(("vanilla", seed)), by.get(("macaron", seed))
        if v is None or m is None:
            continue
        dp.append(final(m)[2] - final(v)[2])
        dn.append(final(m)[3] - final(v)[3])
        lines.append(
            f"| {seed} | {final(v)[2]:.2f} | {final(m)[2]:.2f} | {dp[-1]:+.2f} | {final(v)[3]:.1f} | "
            f"{final(m)[3]:.1f} | {dn[-1]:+.1f} | {nsp_floor(floors.get(str(seed)))} |"
        )
    if len(dp) > 1:
        lines.append(f"| mean ± std | | | {mean_std(dp)} | | | {mean_std(dn)} | |")
    return "\n".join(lines)


def nsp_floor(pairs: dict | None) -> str:
    """``59.6 (402 of 675 NotNext)``: the accuracy of always answering the more frequent class."""
    if pairs is None:
        return "—"
    not_next = pairs["pairs"] - pairs["is_next"]
    label, majority = ("IsNext", pairs["is_next"]) if pairs["is_next"] >= not_next else ("NotNext", not_next)
    return f"{pairs['majority_accuracy']:.1f} ({majority} of {pairs['pairs']} {label})"


def steps_table(r: dict) -> str:
    """Validation perplexity and NSP accuracy at every validation step, mean ± std over seeds."""
    rows = [row for row in r["rows"] if finished(row)]
    per: dict[tuple[str, int], list[list[float]]] = {}
    for row in rows:
        for step, _bits, ppl, nsp in row["valid_curve"]:
            per.setdefault((row["arm"], step), []).append([ppl, nsp])
    steps = sorted({step for _, step in per})
    lines = ["| step | ppl vanilla | ppl Macaron | NSP vanilla | NSP Macaron |", "|---:|---:|---:|---:|---:|"]
    for step in steps:
        v, m = per.get(("vanilla", step), []), per.get(("macaron", step), [])
        lines.append(
            f"| {step} | {mean_std([x[0] for x in v])} | {mean_std([x[0] for x in m])} | "
            f"{mean_std([x[1] for x in v])} | {mean_std([x[1] for x in m])} |"
        )
    return "\n".join(lines)


def protocol_line(r: dict) -> str:
    p, b, c = r["protocol"], r["books"], r["corpus"]
    return (
        f"Data: Debian's `python3.11-doc` ({b.get('package_version') or '?'}): {b['documents']} pages of the "
        f"Python documentation as documents ({b['words']:,} words of prose, {b['text_bytes'] / 1e6:.1f} MB "
        f"of text from {b['html_bytes'] / 1e6:.1f} MB of HTML); `macaron_preprocess.bert_corpus`: "
        f"{c['train_documents']} training documents ({c['train_sentences']:,} sentences, "
        f"{c['train_tokens']:,} BPE tokens), {c['valid_documents']} held-out validation documents "
        f"({c['valid_sentences']:,} sentences), BPE {p['vocab_size']}. Models: d 256, 4 layers, 4 heads, FFN "
        f"1024 vs 2 × 512; parameters differ by {100 * r['parity']:+.3f} %. Training: "
        f"{p['steps']} steps of {p['micro_batch']} pairs × {p['tokens_per_sample']} tokens, AdamW η = "
        f"{p['lr']:g} (warm-up {p['warmup']} steps, linear decay), weight decay {p['weight_decay']}, "
        f"clipping {p['clipping']}, fp32, one process with one thread per run."
    )


def status_line(r: dict, image: str) -> str:
    """How many of the planned runs have finished, and the plot once there is one."""
    alt = "validation MLM perplexity and NSP accuracy of every run over steps"
    return real_text.status_line(r, ARMS, finished, f"![{alt}]({image})")


def render(payload: dict) -> str:
    """The docs block: final values, per-seed differences, the validation curves, protocol, provenance."""
    r = payload["results"]
    sections = [
        ("Final validation values, mean ± std over seeds", summary_table(r)),
        ("Per seed (Macaron − vanilla)", per_seed_table(r)),
        ("Validation over steps, mean ± std over seeds", steps_table(r)),
    ]
    return real_text.report(payload, status_line(r, "docs/macaron_real_bert.png"), sections, protocol_line(r))
