"""Depth ablation in the spirit of DT-Fixup's Table 5, with a learning-rate grid per scheme.

    python -m benchmarks.dt_fixup_ablation --out-dir runs/dt_fixup_ablation --jobs 2 \\
        --results docs/results/dt_fixup_ablation.json --plot docs/dt_fixup_depth_ablation.png

Three schemes, each a real ``fairseq-train`` run on a generated translation task
(:class:`macaron_synthetic.toy_bitext.SymbolTask`: 8 000 training / 500 validation / 500 test pairs):

* *standard*: fairseq's post-LN layers and default init, ``--warmup-updates W`` (linear warm-up);
* *standard + clip*: the same with gradient clipping, ``--clip-norm 1.0`` (every other scheme runs with
  ``--clip-norm 0``, no clipping);
* *DT-Fixup*: ``--init-scheme dt-fixup --warmup-updates 0`` (no LayerNorm, no warm-up; data-dependent
  factors, μ measured on the embeddings: the paper's N^-½/(2μ) on vanilla encoder layers, this project's
  own derivation on Macaron layers (``--arch macaron_small``) and on the decoder, which the paper does not
  cover, docs/dt_fixup.md §3.2; rows measured while ``--init-scheme dt-fixup`` on a
  from-scratch model applied T-Fixup unless ``--dt-fixup-from-scratch dt-fixup`` carry that flag in their
  command: the same initialisation);
* *T-Fixup*: ``--init-scheme t-fixup --warmup-updates 0`` (the from-scratch norm-free reference).

All use Adam (β = 0.9, 0.98), peak learning rate η and the paper's η·(1 − t/T)^½ decay, at encoder depths
N ∈ {2, 4, 8, 16, 32}, every η of the scheme's own grid (``--lrs``) and every seed. The validation and test
sets are scored every ``--eval-every`` updates (the learning curve is kept) and after the last update.
:func:`best_lr` picks each scheme's η per depth on the *validation* nll (among the rates whose every seed
finished); the plot and the docs' tables (:mod:`benchmarks.reports.dt_fixup_ablation`) give the *test* nll
and accuracy at that η.

Each finished run is one line of ``OUT_DIR/results.jsonl`` (written as it finishes; a rerun skips the
finished and diverged runs and retries the crashed ones, so an interrupted grid resumes:
:mod:`macaron_workflow.grid`). ``--results`` writes the rows with the protocol, command and machine as one
results file; ``python -m benchmarks.doc_tables`` renders the docs' tables from it.
One run alone: ``--schemes dt-fixup --depths 2 --seeds 1 --lrs dt-fixup=6e-3``; every row also keeps its
``fairseq-train`` command line (data directory as ``DATA``). ``--extra-lrs standard@16,32=3e-5,1e-4`` adds
rates to a scheme's grid at some depths only (there its best rate was at the grid's edge).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import statistics
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.real_text_grid import protocol_from_args
from benchmarks.results_file import REPO, machine_info, write_results
from macaron_synthetic.toy_bitext import SymbolTask
from macaron_workflow import grid
from macaron_workflow.grid import RowFile, Slot

SCHEMES = ("standard", "standard-clip", "dt-fixup", "t-fixup")
DEFAULT_LRS = {
    "standard": (1e-3, 3e-3, 6e-3),
    "standard-clip": (3e-4, 1e-3, 3e-3),
    "dt-fixup": (3e-3, 6e-3, 1e-2),
    "t-fixup": (3e-3, 6e-3, 1e-2),
}
SPLITS = {"train": 8000, "valid": 500, "test": 500}
CLIP_NORM = 1.0  # of the standard-clip scheme (BERT's and bing_bert's value)


@dataclass(frozen=True)
class Protocol:
    """Everything a run depends on except (scheme, depth, lr, seed)."""

    arch: str = "fixup_transformer_iwslt_de_en"
    dim: int = 64
    ffn: int = 128
    heads: int = 4
    decoder_layers: int = 2
    updates: int = 600
    warmup: int = 120  # of the standard scheme only
    batch_size: int = 32
    eval_every: int = 100
    dropout: float = 0.1
    splits: dict[str, int] = field(default_factory=lambda: dict(SPLITS))
    vocab: int = 50
    max_words: int = 10


@dataclass(frozen=True, order=True)
class RunKey:
    scheme: str
    depth: int
    lr: float
    seed: int


def train_argv(data: Path, save_dir: Path, p: Protocol, key: RunKey) -> list[str]:
    """The ``fairseq-train`` command of one run."""
    q = shlex.quote
    clip_norm = str(CLIP_NORM) if key.scheme == "standard-clip" else "0"
    argv = shlex.split(
        f"fairseq-train {q(str(data))} --user-dir {q(str(REPO / 'macaron_fairseq'))} --task translation "
        f"-s src -t tgt --arch {q(p.arch)} --encoder-embed-dim {p.dim} --decoder-embed-dim {p.dim} "
        f"--encoder-ffn-embed-dim {p.ffn} --decoder-ffn-embed-dim {p.ffn} "
        f"--encoder-attention-heads {p.heads} --decoder-attention-heads {p.heads} "
        f"--encoder-layers {key.depth} --decoder-layers {p.decoder_layers} --share-all-embeddings "
        f"--dropout {p.dropout} --optimizer adam --adam-betas '(0.9, 0.98)' --lr {q(repr(key.lr))} "
        f"--clip-norm {q(clip_norm)} --lr-scheduler polynomial_decay --power 0.5 "
        f"--total-num-update {p.updates} --max-update {p.updates} --batch-size {p.batch_size} "
        "--criterion label_smoothed_cross_entropy --label-smoothing 0 --report-accuracy "
        f"--seed {key.seed} --cpu --num-workers 0 --no-save --save-dir {q(str(save_dir))} "
        f"--log-format simple --log-interval {p.eval_every} --valid-subset valid,test "
        f"--validate-interval-updates {p.eval_every} --max-epoch 1000"
    )
    if key.scheme in ("standard", "standard-clip"):
        return [*argv, "--warmup-updates", str(p.warmup)]
    return [*argv, "--init-scheme", key.scheme, "--warmup-updates", "0"]


EVAL_RE = re.compile(
    r"valid on '(valid|test)' subset \| loss (\S+) \| nll_loss (\S+) .*?\| accuracy (\S+) .*?"
    r"\| num_updates (\d+)"
)
MU_RE = re.compile(r"mu_encoder=([0-9.e+-]+)")


def parse_log(log: str) -> dict:
    """Curves ``{split: [[update, nll_bits, accuracy], ...]}`` and the final metrics of a fairseq log
    (nll in bits per token, as fairseq logs it; accuracy in %). Non-numbers (``nan``, ``inf``) become
    float('nan')."""

    def number(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return float("nan")

    curves: dict[str, list[list[float]]] = {"valid": [], "test": []}
    for split, _loss, nll, acc, update in EVAL_RE.findall(log):
        point = [int(update), number(nll), number(acc)]
        if curves[split] and curves[split][-1][0] == point[0]:
            curves[split][-1] = point  # the end-of-training validation repeats the last interval's
        else:
            curves[split].append(point)
    out: dict = {"curves": curves}
    for split in ("valid", "test"):
        last = curves[split][-1] if curves[split] else [0, float("nan"), float("nan")]
        out[f"{split}_updates"], out[f"{split}_nll"], out[f"{split}_accuracy"] = last
    mu = MU_RE.search(log)
    if mu:
        out["mu_encoder"] = float(mu.group(1))
    return out


ONE_THREAD = Slot()  # a CPU process of one thread


def run_one(data: Path, p: Protocol, key: RunKey, slot: Slot = ONE_THREAD) -> dict:
    """One ``fairseq-train`` run (one thread), its metrics, its exit code and its command line."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = train_argv(data, Path(tmp), p, key)
        env = slot.env(dict(os.environ, MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore"))
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        command = shlex.join(argv).replace(str(data), "DATA").replace(tmp, "SAVE_DIR")
    log = proc.stdout + proc.stderr
    row = {**asdict(key), "seconds": round(seconds, 1), "rc": proc.returncode, **parse_log(log)}
    row["command"] = command.replace(str(REPO) + "/", "")
    if proc.returncode != 0 or row["valid_updates"] != p.updates:
        row["error"] = log[-1500:]
        row["diverged"] = "gradients are Nan/Inf" in log  # deterministic for the seed: not retried
    return row


def parse_lrs(items: list[str]) -> dict[str, tuple[float, ...]]:
    """``SCHEME=η1,η2,...`` items over the defaults."""
    grid = dict(DEFAULT_LRS)
    for item in items:
        scheme, sep, values = item.partition("=")
        if not sep or scheme not in SCHEMES:
            raise SystemExit(f"--lrs: expected SCHEME=η1,η2,... with SCHEME in {SCHEMES}, got {item!r}")
        try:  # an empty list (``SCHEME=``): rates only where --extra-lrs adds them
            grid[scheme] = tuple(float(v) for v in values.split(",") if v)
        except ValueError:
            raise SystemExit(f"--lrs: not a list of numbers in {item!r}") from None
    return grid


def parse_extra_lrs(items: list[str]) -> dict[tuple[str, int], tuple[float, ...]]:
    """``SCHEME@D1,D2=η1,η2`` items: rates tried at those depths only, on top of the scheme's grid."""
    extra: dict[tuple[str, int], tuple[float, ...]] = {}
    for item in items:
        head, sep, values = item.partition("=")
        scheme, at, depths = head.partition("@")
        if not sep or not at or scheme not in SCHEMES:
            raise SystemExit(
                f"--extra-lrs: expected SCHEME@D1,D2=η1,η2 with SCHEME in {SCHEMES}, got {item!r}"
            )
        try:
            rates = tuple(float(v) for v in values.split(","))
            for depth in (int(d) for d in depths.split(",")):
                extra[(scheme, depth)] = extra.get((scheme, depth), ()) + rates
        except ValueError:
            raise SystemExit(f"--extra-lrs: not a list of numbers in {item!r}") from None
    return extra


def prepare_out_dir(out_dir: Path, protocol: Protocol) -> Path:
    """Claim ``out_dir`` for the protocol and build its generated task there; the data-bin directory."""
    RowFile(out_dir).claim(protocol)
    task = SymbolTask(protocol.splits, vocab=protocol.vocab, max_words=protocol.max_words)
    return task.data_bin(out_dir / "data")


def key_of(row: dict) -> RunKey:
    return RunKey(row["scheme"], row["depth"], row["lr"], row["seed"])


def run_grid(data: Path, protocol: Protocol, wanted: list[RunKey], rows: RowFile, jobs: int) -> None:
    """Run every wanted (scheme, depth, lr, seed) that has no finished or diverged row yet (deepest first,
    ``jobs`` at a time: :func:`macaron_workflow.grid.run_grid`), appending each row as it finishes. A crashed
    run is retried by a rerun; a diverged one (fairseq's "gradients are Nan/Inf") is not: the same seed
    diverges again."""
    done = rows.done(key_of, counts=lambda row: finished(row) or is_diverged(row))
    todo = sorted((k for k in wanted if k not in done), key=lambda k: (-k.depth, k))
    print(
        f"{len(todo)} runs to do ({len(wanted) - len(todo)} of {len(wanted)} done) → {rows.path}", flush=True
    )

    def on_row(key: RunKey, row: dict, _attempt: int) -> None:
        rows.append(row)
        status = "ok" if finished(row) else f"FAILED rc={row['rc']}"
        print(
            f"{key.scheme} N={key.depth} lr={key.lr:g} seed={key.seed}: valid {row['valid_nll']} bits, "
            f"test {row['test_nll']} bits, {row['seconds']} s [{status}]",
            flush=True,
        )

    slots = [ONE_THREAD] * jobs
    grid.run_grid(todo, lambda key, slot: run_one(data, protocol, key, slot), slots, on_row=on_row)


# -------------------------------------------------------------------------- what the rows say
LONG_NAMES = {
    "standard": "standard (post-LN + warm-up)",
    "standard-clip": "standard + gradient clipping 1.0",
    "dt-fixup": "DT-Fixup (no LN, no warm-up)",
    "t-fixup": "T-Fixup (no LN, no warm-up)",
}

COLORS = {"standard": "C0", "standard-clip": "C2", "dt-fixup": "C1", "t-fixup": "C3"}
Cell = tuple[str, int, float]  # scheme, depth, lr


def finished(row: dict) -> bool:
    """A run counts only if ``fairseq-train`` exited 0 and logged finite validation and test metrics at
    the last update (a crashed or diverged run is kept in the rows, retried by a rerun, never averaged)."""
    metrics = [row.get(k) for k in ("valid_nll", "valid_accuracy", "test_nll", "test_accuracy")]
    return (
        row.get("rc") == 0
        and row.get("valid_updates") == row.get("test_updates")
        and all(isinstance(v, float | int) and math.isfinite(v) for v in metrics)
    )


def latest(rows: list[dict]) -> dict[tuple[str, int, float, int], dict]:
    """The last finished row of every (scheme, depth, lr, seed)."""
    return {(row["scheme"], row["depth"], row["lr"], row["seed"]): row for row in rows if finished(row)}


def is_diverged(row: dict) -> bool:
    """fairseq stopped on NaN/Inf gradients (rows written before the runner recorded it say so in the log)."""
    return bool(row.get("diverged")) or "gradients are Nan/Inf" in row.get("error", "")


def cell_values(rows: list[dict], metric: str) -> dict[Cell, list[float]]:
    values: dict[Cell, list[float]] = {}
    for (scheme, depth, lr, _seed), row in sorted(latest(rows).items()):
        values.setdefault((scheme, depth, lr), []).append(float(row[metric]))
    return values


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def best_lr(rows: list[dict], seeds: int) -> dict[tuple[str, int], float]:
    """Per (scheme, depth): the rate of lowest mean validation nll among those with ``seeds`` finished
    runs (ties: the smaller rate)."""
    candidates: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for (scheme, depth, lr), values in cell_values(rows, "valid_nll").items():
        if len(values) == seeds:
            candidates.setdefault((scheme, depth), []).append((statistics.fmean(values), lr))
    return {key: min(options)[1] for key, options in candidates.items()}


def plot(payload: dict, path: Path) -> None:
    """Test nll and accuracy against depth, each scheme at its chosen rate (error bars: std over seeds);
    dashed: DT-Fixup / T-Fixup at the rate chosen for standard."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, seeds = payload["rows"], len(payload["seeds"])
    chosen = best_lr(rows, seeds)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, metric, label in (
        (axes[0], "test_nll", "test nll (bits/token)"),
        (axes[1], "test_accuracy", "test token accuracy (%)"),
    ):
        values = cell_values(rows, metric)
        for scheme, marker in zip(payload["grid"], "o^sd", strict=False):
            for at_standard in (False, True):
                if at_standard and scheme == "standard":
                    continue
                depths, means, stds = [], [], []
                for depth in sorted({r["depth"] for r in rows}):
                    lr = chosen.get(("standard" if at_standard else scheme, depth))
                    cell = values.get((scheme, depth, lr), [])
                    if lr is not None and len(cell) == seeds:
                        m, s = mean_std(cell)
                        depths.append(depth), means.append(m), stds.append(s)
                if not depths:
                    continue
                name = LONG_NAMES[scheme] + (" at standard's η" if at_standard else ", own η")
                ax.errorbar(
                    depths,
                    means,
                    yerr=stds,
                    fmt=marker + ("--" if at_standard else "-"),
                    color=COLORS[scheme],
                    capsize=3,
                    label=name,
                    alpha=0.5 if at_standard else 1.0,
                )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("encoder layers")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    p = payload["protocol"]
    fig.suptitle(
        f"Depth ablation: {p['updates']} updates, η chosen per scheme and depth on validation "
        f"(mean ± std over {seeds} seeds)",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=REPO / "runs" / "dt_fixup_ablation")
    ap.add_argument("--schemes", nargs="+", choices=SCHEMES, default=list(SCHEMES))
    ap.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument(
        "--lrs",
        nargs="*",
        default=[],
        metavar="SCHEME=η1,η2",
        help="a scheme's learning-rate grid (defaults: "
        + "; ".join(f"{s}={','.join(map(repr, v))}" for s, v in DEFAULT_LRS.items())
        + ")",
    )
    ap.add_argument(
        "--extra-lrs",
        nargs="*",
        default=[],
        metavar="SCHEME@D1,D2=η1,η2",
        help="rates added to a scheme's grid at these depths only",
    )
    ap.add_argument("--updates", type=int, default=Protocol.updates)
    ap.add_argument("--warmup", type=int, default=Protocol.warmup, help="warm-up updates of 'standard'")
    ap.add_argument("--eval-every", type=int, default=Protocol.eval_every)
    ap.add_argument("--batch-size", type=int, default=Protocol.batch_size, help="sentences (≤ 32)")
    ap.add_argument("--dim", type=int, default=Protocol.dim)
    ap.add_argument("--ffn", type=int, default=Protocol.ffn)
    ap.add_argument("--decoder-layers", type=int, default=Protocol.decoder_layers)
    ap.add_argument("--arch", default=Protocol.arch)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--results", type=Path, help="write the rows as a results file (docs/results/...)")
    ap.add_argument(
        "--no-run",
        action="store_true",
        help="run nothing: write --results (and --plot) from the rows OUT_DIR holds for the "
        "grid; cells with seeds not run are shown as such and never chosen",
    )
    ap.add_argument("--plot", type=Path, help="draw the depth plot here")
    a = ap.parse_args()
    if a.batch_size > 32:
        raise SystemExit("--batch-size must be ≤ 32 sentences (small-batch regime)")
    names = ("arch", "dim", "ffn", "decoder_layers", "updates", "warmup", "batch_size", "eval_every")
    protocol = protocol_from_args(Protocol, a, names)
    lrs, extra = parse_lrs(a.lrs), parse_extra_lrs(a.extra_lrs)
    machine = machine_info()
    data = prepare_out_dir(a.out_dir, protocol)
    rows = RowFile(a.out_dir)
    wanted = [
        RunKey(s, d, lr, seed)
        for s in a.schemes
        for d in a.depths
        for lr in (*lrs[s], *extra.get((s, d), ()))
        for seed in a.seeds
    ]
    start = time.perf_counter()
    if not a.no_run:
        run_grid(data, protocol, wanted, rows, a.jobs)
    kept = set(wanted)
    measured = [row for row in rows.read() if key_of(row) in kept]
    payload = {
        "protocol": asdict(protocol),
        "grid": {s: sorted({k.lr for k in wanted if k.scheme == s}) for s in a.schemes},
        "extra_lrs": {f"{s}@{d}": list(v) for (s, d), v in extra.items() if s in a.schemes},
        "seeds": a.seeds,
        "depths": a.depths,
        "rows": measured,
        "wall_seconds_this_call": round(time.perf_counter() - start, 1),
    }
    if a.results:
        write_results(a.results, payload, machine)
    if a.plot:
        plot(payload, a.plot)
        print(f"plot: {a.plot}")


if __name__ == "__main__":
    from macaron_workflow.cli import run_cli

    run_cli(main, "python -m benchmarks.dt_fixup_ablation")
