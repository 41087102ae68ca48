"""Depth ablation in the spirit of DT-Fixup's Table 5: *standard* (post-LN layers, learning-rate warm-up)
vs *DT-Fixup* (norm-free layers, no warm-up) at encoder depths {2, 4, 8, 16, 32}, ≥ 3 seeds each, the same
number of updates, small batches, ≤ 10k training pairs. Every run is a real ``fairseq-train``.

    python benchmarks/dt_fixup_ablation.py --out-dir runs/dt_fixup_ablation --jobs 2

Both schemes use Adam (β = 0.9, 0.98), peak learning rate η and the paper's η·(1 − t/T)^½ decay
(``--lr-scheduler polynomial_decay --power 0.5``); *standard* adds ``--warmup-updates W`` and keeps
fairseq's post-LN layers and default init; *DT-Fixup* uses ``--init-scheme dt-fixup --warmup-updates 0``.
The metric is the validation loss (nats→bits as fairseq logs it: ``nll_loss`` in base 2) and token
accuracy after the last update. Results are appended to ``results.jsonl`` (re-running skips finished
runs), then summarised as a markdown table and a plot.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout
from preprocess.sources.toy_bitext import SymbolTask

REPO = Path(__file__).resolve().parents[1]
SCHEMES = ("standard", "dt-fixup")


def train_argv(
    data: Path, save_dir: Path, a: argparse.Namespace, scheme: str, depth: int, seed: int
) -> list[str]:
    argv = [
        "fairseq-train", str(data), "--user-dir", str(REPO / "macaron_fairseq"),
        "--task", "translation", "-s", "src", "-t", "tgt", "--arch", a.arch,
        "--encoder-embed-dim", str(a.dim), "--decoder-embed-dim", str(a.dim),
        "--encoder-ffn-embed-dim", str(a.ffn), "--decoder-ffn-embed-dim", str(a.ffn),
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
        "--encoder-layers", str(depth), "--decoder-layers", str(a.decoder_layers),
        "--share-all-embeddings", "--dropout", "0.1",
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", str(a.lr), "--clip-norm", "0",
        "--lr-scheduler", "polynomial_decay", "--power", "0.5", "--total-num-update", str(a.updates),
        "--max-update", str(a.updates), "--batch-size", str(a.batch_size),
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0", "--report-accuracy",
        "--seed", str(seed), "--cpu", "--num-workers", "0", "--no-save", "--save-dir", str(save_dir),
        "--log-format", "simple", "--log-interval", "50", "--validate-interval-updates", str(a.updates),
        "--max-epoch", "1000",
    ]  # fmt: skip
    if scheme == "standard":
        argv += ["--warmup-updates", str(a.warmup)]
    else:
        argv += ["--init-scheme", "dt-fixup", "--warmup-updates", "0"]
    return argv


VALID_RE = re.compile(
    r"valid on 'valid' subset \| loss ([0-9.a-z]+) \| nll_loss ([0-9.a-z]+).*?accuracy ([0-9.a-z]+)"
)


def run_one(data: Path, a: argparse.Namespace, scheme: str, depth: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        argv = train_argv(data, Path(tmp), a, scheme, depth, seed)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore")
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    found = VALID_RE.findall(log)
    row = {
        "scheme": scheme,
        "depth": depth,
        "seed": seed,
        "seconds": round(seconds, 1),
        "rc": proc.returncode,
    }
    if found:
        loss, nll, acc = found[-1]
        row.update(valid_loss=float(loss), valid_nll=float(nll), valid_accuracy=float(acc))
    else:
        row.update(valid_loss=float("nan"), valid_nll=float("nan"), valid_accuracy=float("nan"))
        row["error"] = log[-1500:]
    mu = re.search(r"mu_encoder=([0-9.e+-]+)", log)
    if mu:
        row["mu_encoder"] = float(mu.group(1))
    return row


def succeeded(row: dict) -> bool:
    """A run counts only if fairseq-train exited 0 and logged finite validation metrics (a crashed or
    diverged run is recorded in results.jsonl, retried by a rerun, and never averaged)."""
    metrics = (row.get("valid_nll"), row.get("valid_accuracy"))
    return row.get("rc") == 0 and all(isinstance(v, float) and math.isfinite(v) for v in metrics)


def latest_successes(rows: list[dict]) -> list[dict]:
    """One row per (scheme, depth, seed): its last successful run."""
    kept: dict[tuple[str, int, int], dict] = {}
    for row in rows:
        if succeeded(row):
            kept[(row["scheme"], row["depth"], row["seed"])] = row
    return list(kept.values())


def failures(rows: list[dict]) -> dict[tuple[str, int], int]:
    """Failed (scheme, depth, seed) runs that never succeeded, per (scheme, depth)."""
    ok = {(r["scheme"], r["depth"], r["seed"]) for r in rows if succeeded(r)}
    failed = {(r["scheme"], r["depth"], r["seed"]) for r in rows if not succeeded(r)} - ok
    out: dict[tuple[str, int], int] = {}
    for scheme, depth, _ in failed:
        out[(scheme, depth)] = out.get((scheme, depth), 0) + 1
    return out


def summarise(rows: list[dict], metric: str) -> dict[tuple[str, int], tuple[float, float, int]]:
    """Mean, std and count over the successful runs of each (scheme, depth)."""
    rows = latest_successes(rows)
    out = {}
    for scheme in SCHEMES:
        for depth in sorted({r["depth"] for r in rows}):
            values = [r[metric] for r in rows if r["scheme"] == scheme and r["depth"] == depth]
            if values:
                std = statistics.stdev(values) if len(values) > 1 else 0.0
                out[(scheme, depth)] = (statistics.fmean(values), std, len(values))
    return out


def markdown_table(rows: list[dict]) -> str:
    nll, acc = summarise(rows, "valid_nll"), summarise(rows, "valid_accuracy")
    secs, failed = summarise(rows, "seconds"), failures(rows)
    lines = [
        "| encoder depth | standard: valid nll (bits) | DT-Fixup: valid nll (bits) "
        "| standard: valid acc. (%) | DT-Fixup: valid acc. (%) | s/run (std / DT) |",
        "|---|---|---|---|---|---|",
    ]
    for depth in sorted({r["depth"] for r in rows}):
        cells = [str(depth)]  # a depth whose runs all failed shows nan (n=0, k failed)
        for table in (nll, acc):
            for scheme in SCHEMES:
                m, s, n = table.get((scheme, depth), (float("nan"), float("nan"), 0))
                lost = f", {failed[(scheme, depth)]} failed" if failed.get((scheme, depth)) else ""
                cells.append(f"{m:.3f} ± {s:.3f} (n={n}{lost})" if table is nll else f"{m:.1f} ± {s:.1f}")
        cells.append(
            f"{secs.get(('standard', depth), (0,))[0]:.0f} / {secs.get(('dt-fixup', depth), (0,))[0]:.0f}"
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric, label in ((axes[0], "valid_nll", "valid nll (bits/token)"),
                              (axes[1], "valid_accuracy", "valid token accuracy (%)")):  # fmt: skip
        table = summarise(rows, metric)
        for scheme, style in zip(SCHEMES, ("o-", "s-"), strict=True):
            depths = sorted(d for (s, d) in table if s == scheme)
            means = [table[(scheme, d)][0] for d in depths]
            stds = [table[(scheme, d)][1] for d in depths]
            name = "standard (post-LN + warm-up)" if scheme == "standard" else "DT-Fixup (no LN, no warm-up)"
            ax.errorbar(depths, means, yerr=stds, fmt=style, capsize=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("encoder layers")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle("Depth ablation (mean ± std over seeds)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", type=Path, default=REPO / "runs" / "dt_fixup_ablation")
    p.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--updates", type=int, default=600)
    p.add_argument("--warmup", type=int, default=120, help="warm-up updates of the standard scheme")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32, help="sentences per batch (≤ 32)")
    p.add_argument("--train-size", type=int, default=8000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--ffn", type=int, default=128)
    p.add_argument("--decoder-layers", type=int, default=2)
    p.add_argument("--arch", default="fixup_transformer_iwslt_de_en")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--plot", type=Path, default=REPO / "docs" / "dt_fixup_depth_ablation.png")
    a = p.parse_args()
    if a.batch_size > 32:
        raise SystemExit("--batch-size must be ≤ 32 sentences (small-batch regime)")
    task = SymbolTask({"train": a.train_size, "valid": 500}, vocab=50, max_words=10)  # as benchmarked before
    data = task.data_bin(a.out_dir / "data")
    results = a.out_dir / "results.jsonl"
    done = (
        {(r["scheme"], r["depth"], r["seed"]) for r in map(json.loads, results.open()) if succeeded(r)}
        if results.exists()
        else set()
    )  # failed runs are retried
    todo = [(s, d, seed) for d in a.depths for seed in a.seeds for s in SCHEMES if (s, d, seed) not in done]
    todo.sort(key=lambda t: -t[1])  # deepest first: the long runs overlap with the short ones
    print(f"{len(todo)} runs to do ({len(done)} done) → {results}", flush=True)

    def job(t: tuple[str, int, int]) -> dict:
        row = run_one(data, a, *t)
        with results.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row)[:300], flush=True)
        return row

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        list(pool.map(job, todo))
    rows = [r for r in map(json.loads, results.open()) if r["depth"] in a.depths and r["seed"] in a.seeds]
    print(markdown_table(rows))
    plot(rows, a.plot)
    print(f"plot: {a.plot}")


if __name__ == "__main__":
    main()
