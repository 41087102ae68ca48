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
sets are scored every ``--eval-every`` updates (the learning curve is kept) and after the last update. The
report (``dt_fixup_ablation_report``) picks each scheme's η per depth on the *validation* nll and reports
the *test* nll and accuracy at that η.

Each finished run is one line of ``OUT_DIR/results.jsonl`` (written as it finishes; a rerun skips the
finished runs and retries the failed ones, so an interrupted grid resumes). ``--results`` writes the
rows with the protocol, command and machine as one results file; the docs' tables are rendered from it.
One run alone: ``--schemes dt-fixup --depths 2 --seeds 1 --lrs dt-fixup=6e-3``; every row also keeps its
``fairseq-train`` command line (data directory as ``DATA``). ``--extra-lrs standard@16,32=3e-5,1e-4`` adds
rates to a scheme's grid at some depths only (there its best rate was at the grid's edge).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.grid_rows import append_row, claim_out_dir, read_rows
from benchmarks.results_file import REPO, machine_info, write_results
from macaron_synthetic.toy_bitext import SymbolTask

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
    argv = [
        "fairseq-train", str(data), "--user-dir", str(REPO / "macaron_fairseq"),
        "--task", "translation", "-s", "src", "-t", "tgt", "--arch", p.arch,
        "--encoder-embed-dim", str(p.dim), "--decoder-embed-dim", str(p.dim),
        "--encoder-ffn-embed-dim", str(p.ffn), "--decoder-ffn-embed-dim", str(p.ffn),
        "--encoder-attention-heads", str(p.heads), "--decoder-attention-heads", str(p.heads),
        "--encoder-layers", str(key.depth), "--decoder-layers", str(p.decoder_layers),
        "--share-all-embeddings", "--dropout", str(p.dropout),
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", repr(key.lr),
        "--clip-norm", str(CLIP_NORM) if key.scheme == "standard-clip" else "0",
        "--lr-scheduler", "polynomial_decay", "--power", "0.5", "--total-num-update", str(p.updates),
        "--max-update", str(p.updates), "--batch-size", str(p.batch_size),
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0", "--report-accuracy",
        "--seed", str(key.seed), "--cpu", "--num-workers", "0", "--no-save", "--save-dir", str(save_dir),
        "--log-format", "simple", "--log-interval", str(p.eval_every),
        "--valid-subset", "valid,test", "--validate-interval-updates", str(p.eval_every),
        "--max-epoch", "1000",
    ]  # fmt: skip
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


ArgvBuilder = Callable[[Path, Path, Any, RunKey], list[str]]


def run_one(data: Path, p: Any, key: RunKey, argv_builder: ArgvBuilder = train_argv) -> dict:
    """One ``fairseq-train`` run (one thread), its metrics, its exit code and its command line."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = argv_builder(data, Path(tmp), p, key)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore")
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
    claim_out_dir(out_dir, protocol)
    task = SymbolTask(protocol.splits, vocab=protocol.vocab, max_words=protocol.max_words)
    return task.data_bin(out_dir / "data")


def run_grid(
    data: Path,
    protocol: Any,
    wanted: list[RunKey],
    results: Path,
    jobs: int,
    argv_builder: ArgvBuilder = train_argv,
) -> None:
    """Run every wanted (scheme, depth, lr, seed) that has no finished or diverged row in ``results`` yet
    (deepest first, ``jobs`` at a time), appending each row as it finishes. A crashed run is retried; a
    diverged one (fairseq's "gradients are Nan/Inf") is not: the same seed diverges again."""
    from benchmarks.dt_fixup_ablation_report import finished, is_diverged

    rows = read_rows(results)
    done = {
        RunKey(r["scheme"], r["depth"], r["lr"], r["seed"]) for r in rows if finished(r) or is_diverged(r)
    }
    todo = sorted((k for k in wanted if k not in done), key=lambda k: (-k.depth, k))
    print(f"{len(todo)} runs to do ({len(wanted) - len(todo)} of {len(wanted)} done) → {results}", flush=True)

    def job(key: RunKey) -> None:
        row = run_one(data, protocol, key, argv_builder)
        append_row(results, row)
        status = "ok" if finished(row) else f"FAILED rc={row['rc']}"
        print(f"{key.scheme} N={key.depth} lr={key.lr:g} seed={key.seed}: valid {row['valid_nll']} bits, "
              f"test {row['test_nll']} bits, {row['seconds']} s [{status}]", flush=True)  # fmt: skip

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(job, todo))


def main() -> None:
    from benchmarks.dt_fixup_ablation_report import plot, render_rows

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=REPO / "runs" / "dt_fixup_ablation")
    ap.add_argument("--schemes", nargs="+", choices=SCHEMES, default=list(SCHEMES))
    ap.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--lrs", nargs="*", default=[], metavar="SCHEME=η1,η2",
                    help="a scheme's learning-rate grid (defaults: " + "; ".join(
                        f"{s}={','.join(map(repr, v))}" for s, v in DEFAULT_LRS.items()) + ")")  # fmt: skip
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
    ap.add_argument("--no-run", action="store_true",
                    help="run nothing: report (and --results) the rows OUT_DIR holds for the grid; cells "
                    "with seeds not run are shown as such and never chosen")  # fmt: skip
    ap.add_argument("--plot", type=Path, help="draw the depth plot here")
    a = ap.parse_args()
    if a.batch_size > 32:
        raise SystemExit("--batch-size must be ≤ 32 sentences (small-batch regime)")
    protocol = Protocol(arch=a.arch, dim=a.dim, ffn=a.ffn, decoder_layers=a.decoder_layers, updates=a.updates,
                        warmup=a.warmup, batch_size=a.batch_size, eval_every=a.eval_every)  # fmt: skip
    grid, extra = parse_lrs(a.lrs), parse_extra_lrs(a.extra_lrs)
    machine = machine_info()
    data = prepare_out_dir(a.out_dir, protocol)
    results = a.out_dir / "results.jsonl"
    wanted = [
        RunKey(s, d, lr, seed)
        for s in a.schemes for d in a.depths for lr in (*grid[s], *extra.get((s, d), ())) for seed in a.seeds
    ]  # fmt: skip
    start = time.perf_counter()
    if not a.no_run:
        run_grid(data, protocol, wanted, results, a.jobs)
    rows = [r for r in read_rows(results) if RunKey(r["scheme"], r["depth"], r["lr"], r["seed"]) in wanted]
    payload = {"protocol": asdict(protocol),
               "grid": {s: sorted({k.lr for k in wanted if k.scheme == s}) for s in a.schemes},
               "extra_lrs": {f"{s}@{d}": list(v) for (s, d), v in extra.items() if s in a.schemes},
               "seeds": a.seeds, "depths": a.depths, "rows": rows,
               "wall_seconds_this_call": round(time.perf_counter() - start, 1)}  # fmt: skip
    print(render_rows(payload))
    if a.results:
        write_results(a.results, payload, machine)
    if a.plot:
        plot(payload, a.plot)
        print(f"plot: {a.plot}")


if __name__ == "__main__":
    main()
