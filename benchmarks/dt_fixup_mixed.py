"""DT-Fixup's own setting on real text: K new layers on a pre-trained encoder, trained on a small dataset.

    python -m benchmarks.dt_fixup_mixed --out-dir runs/dt_fixup_mixed --jobs 2 \\
        --results docs/results/dt_fixup_mixed.json

Data: the English→German gettext catalogs of the machine's installed programs
(:mod:`preprocess.sources.gettext_catalogs`), split *by package*: the messages of ``--finetune-packages``
(default: git) are the small task (500 validation, 500 test, the rest training pairs); every other
package's messages pre-train (1000 held out). A source sentence of the small task never occurs in the
pre-training data. Both go through ``python -m preprocess.custom`` (Moses tokenization, joint
sentencepiece BPE learned on the pre-training side, one joined dictionary); the small task is encoded with
the same BPE model and dictionary and binarized with ``fairseq-preprocess --srcdict``.

1. Pre-training: a post-LN ``fixup_transformer_iwslt_de_en`` (standard init, warm-up) on the pre-training
   pairs — the "pre-trained encoder".
2. The small task, per scheme, K new encoder layers on that encoder (``--pretrained-encoder PATH
   --new-encoder-layers K``), a new decoder, the pre-trained part at ``--pretrained-lr-multiplier`` × η
   (``--optimizer adam_lr_groups``): *standard* = post-LN new layers and decoder + warm-up; *DT-Fixup* /
   *T-Fixup* = ``--init-scheme … --warmup-updates 0`` (norm-free new layers and decoder). Every η of the
   scheme's grid, every seed; the report (``dt_fixup_ablation_report``) chooses η per (scheme, K) on the
   validation nll and gives the test nll and accuracy there.

Stages resume: the corpus, the data-bins and the pre-trained checkpoint are reused when complete, and the
fine-tuning rows accumulate in ``OUT_DIR/results.jsonl`` like the depth ablation's.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.dt_fixup_ablation import SCHEMES, RunKey, parse_lrs, run_grid
from benchmarks.dt_fixup_ablation_report import grid_table, render_budget, selected_table
from benchmarks.grid_rows import claim_out_dir, read_rows
from benchmarks.real_text_grid import run_step as run
from benchmarks.real_text_grid import write_pairs
from benchmarks.results_file import REPO, machine_info, provenance, write_results
from macaron_workflow.atomic import atomic_output, write_text_atomically
from preprocess.sources.gettext_catalogs import LOCALE_ROOT, catalog_paths, read_catalogs

DEFAULT_LRS = tuple(f"{scheme}=3e-4,1e-3,3e-3,6e-3,1e-2" for scheme in SCHEMES)


@dataclass(frozen=True)
class MixedProtocol:
    lang: str = "de"
    finetune_packages: tuple[str, ...] = ("git",)
    dim: int = 128
    ffn: int = 256
    heads: int = 4
    pretrained_layers: int = 4
    decoder_layers: int = 2
    bpe_vocab_size: int = 4000
    pretrain_updates: int = 1200
    pretrain_max_tokens: int = 2048
    updates: int = 600
    warmup: int = 120  # of the standard scheme's fine-tuning
    batch_size: int = 32
    eval_every: int = 100
    lr_multiplier: float = 8e-3
    seed: int = 0  # of the corpus split


def build_corpus(out: Path, p: MixedProtocol, root: Path = LOCALE_ROOT) -> dict:
    """Raw pre-training and small-task splits under ``out/raw`` (skipped when ``out/corpus.json`` exists)."""
    summary_path = out / "corpus.json"
    if summary_path.exists():
        return json.loads(summary_path.read_text())
    catalogs, unreadable = read_catalogs(catalog_paths(p.lang, root))
    missing = set(p.finetune_packages) - {c.package for c in catalogs}
    if missing:
        raise SystemExit(f"no readable catalog for {sorted(missing)} in {root / p.lang / 'LC_MESSAGES'}")
    small = {c.package for c in catalogs} & set(p.finetune_packages)
    task_pairs = dict(pair for c in catalogs if c.package in small for pair in c.pairs)  # dedupe by source
    pre_pairs = {}
    for c in catalogs:
        if c.package not in small:
            for source, target in c.pairs:
                if source not in task_pairs:  # no small-task sentence is pre-trained on
                    pre_pairs.setdefault(source, target)
    rng = random.Random(p.seed)
    task, pre = sorted(task_pairs.items()), sorted(pre_pairs.items())
    rng.shuffle(task), rng.shuffle(pre)
    splits = {"pre.valid": pre[:1000], "pre.train": pre[1000:],
              "task.valid": task[:500], "task.test": task[500:1000], "task.train": task[1000:]}  # fmt: skip
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for name, pairs in splits.items():
        write_pairs(raw / name, pairs, "en", p.lang)
    # the small task is encoded by preprocess.custom as its 'test' split: one file, train + valid + test
    write_pairs(
        raw / "task.all", splits["task.train"] + splits["task.valid"] + splits["task.test"], "en", p.lang
    )
    summary = {"pairs": {k: len(v) for k, v in splits.items()}, "catalogs": len(catalogs),
               "small_task_packages": sorted(small), "unreadable_catalogs": unreadable}  # fmt: skip
    write_text_atomically(summary_path, json.dumps(summary, indent=2) + "\n")
    return summary


def build_data_bins(out: Path, p: MixedProtocol, counts: dict[str, int]) -> tuple[Path, Path]:
    """``out/pre/data-bin`` (pre-training) and ``out/task-bin`` (the small task, same BPE and dictionary)."""
    pre = out / "pre"
    raw = out / "raw"
    run([sys.executable, "-m", "preprocess.custom", "--src", "en", "--tgt", p.lang,
         "--trainpref", str(raw / "pre.train"), "--validpref", str(raw / "pre.valid"),
         "--testpref", str(raw / "task.all"), "--dest", str(pre), "--bpe-vocab-size", str(p.bpe_vocab_size),
         "--workers", "2"], "preprocess.custom", out / "preprocess.log")  # fmt: skip
    task_bin = out / "task-bin"
    if (task_bin / f"test.en-{p.lang}.{p.lang}.bin").exists():
        return pre / "data-bin", task_bin
    order = [("train", counts["task.train"]), ("valid", counts["task.valid"]), ("test", counts["task.test"])]
    bpe_dir = out / "task-bpe"
    bpe_dir.mkdir(exist_ok=True)
    for lang in ("en", p.lang):
        lines = (pre / "bpe" / f"test.{lang}").read_text(encoding="utf-8").splitlines(keepends=True)
        if len(lines) != sum(n for _, n in order):
            expected = sum(n for _, n in order)
            raise SystemExit(f"{pre / 'bpe' / f'test.{lang}'}: {len(lines)} lines, expected the small task's "
                             f"{expected} (a pair was dropped: see {out / 'preprocess.log'})")  # fmt: skip
        start = 0
        for split, n in order:
            write_text_atomically(bpe_dir / f"{split}.{lang}", "".join(lines[start : start + n]))
            start += n
    with atomic_output(task_bin) as tmp:
        run(["fairseq-preprocess", "--source-lang", "en", "--target-lang", p.lang,
             "--trainpref", str(bpe_dir / "train"), "--validpref", str(bpe_dir / "valid"),
             "--testpref", str(bpe_dir / "test"), "--srcdict", str(pre / "data-bin" / "dict.en.txt"),
             "--joined-dictionary", "--destdir", str(tmp), "--workers", "2"],
            "fairseq-preprocess", out / "task-preprocess.log")  # fmt: skip
    return pre / "data-bin", task_bin


def model_flags(p: MixedProtocol) -> list[str]:
    return [
        "--user-dir", str(REPO / "macaron_fairseq"), "--task", "translation", "-s", "en", "-t", p.lang,
        "--arch", "fixup_transformer_iwslt_de_en",
        "--encoder-embed-dim", str(p.dim), "--decoder-embed-dim", str(p.dim),
        "--encoder-ffn-embed-dim", str(p.ffn), "--decoder-ffn-embed-dim", str(p.ffn),
        "--encoder-attention-heads", str(p.heads), "--decoder-attention-heads", str(p.heads),
        "--decoder-layers", str(p.decoder_layers), "--share-all-embeddings", "--dropout", "0.1",
        "--cpu", "--num-workers", "0", "--log-format", "simple",
    ]  # fmt: skip


def pretrain(out: Path, data: Path, p: MixedProtocol) -> Path:
    """The pre-trained model (post-LN, fairseq's init, warm-up); reused when its run completed."""
    save = out / "pretrained"
    done = save / "done.json"
    if done.exists():
        return save / "checkpoint_last.pt"
    start = time.perf_counter()
    run(["fairseq-train", str(data), *model_flags(p), "--encoder-layers", str(p.pretrained_layers),
         "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "1e-3", "--clip-norm", "0",
         "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "400", "--warmup-init-lr", "1e-7",
         "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
         "--max-tokens", str(p.pretrain_max_tokens), "--max-update", str(p.pretrain_updates),
         "--save-dir", str(save), "--no-epoch-checkpoints", "--save-interval-updates", "500",
         "--keep-interval-updates", "1", "--seed", "1"], "pre-training", out / "pretrain.log")  # fmt: skip
    valid = [line for line in (out / "pretrain.log").read_text().splitlines() if "valid on 'valid'" in line]
    record = {
        "seconds": round(time.perf_counter() - start, 1),
        "last_validation": valid[-1] if valid else None,
    }
    write_text_atomically(done, json.dumps(record, indent=2) + "\n")
    return save / "checkpoint_last.pt"


def finetune_argv_builder(checkpoint: Path):
    def argv(data: Path, save_dir: Path, p: MixedProtocol, key: RunKey) -> list[str]:
        out = [
            "fairseq-train", str(data), *model_flags(p),
            "--pretrained-encoder", str(checkpoint), "--new-encoder-layers", str(key.depth),
            "--optimizer", "adam_lr_groups", "--pretrained-lr-multiplier", repr(p.lr_multiplier),
            "--adam-betas", "(0.9, 0.98)", "--lr", repr(key.lr), "--clip-norm", "0",
            "--lr-scheduler", "polynomial_decay", "--power", "0.5", "--total-num-update", str(p.updates),
            "--max-update", str(p.updates), "--batch-size", str(p.batch_size),
            "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0", "--report-accuracy",
            "--seed", str(key.seed), "--no-save", "--save-dir", str(save_dir),
            "--log-interval", str(p.eval_every), "--valid-subset", "valid,test",
            "--validate-interval-updates", str(p.eval_every), "--max-epoch", "1000",
        ]  # fmt: skip
        if key.scheme == "standard":
            return [*out, "--warmup-updates", str(p.warmup)]
        return [*out, "--init-scheme", key.scheme, "--warmup-updates", "0"]

    return argv


def protocol_line(r: dict) -> str:
    p, corpus = r["protocol"], r["corpus"]["pairs"]
    return (
        f"Small task: the {', '.join(r['corpus']['small_task_packages'])} messages, {corpus['task.train']} "
        f"training / {corpus['task.valid']} validation / {corpus['task.test']} test pairs; pre-training: "
        f"{corpus['pre.train']} pairs of the other packages ({r['corpus']['pre_train_after_cleaning']} after "
        f"preprocess.custom's cleaning), {p['pretrain_updates']} updates "
        f"({r['pretrain']['last_validation_nll']} bits valid nll at the end). Encoder: "
        f"{p['pretrained_layers']} pre-trained post-LN layers (d = {p['dim']}, FFN {p['ffn']}) at "
        f"{p['lr_multiplier']:g} × η, K new layers; new decoder of {p['decoder_layers']} layers; "
        f"{p['updates']} updates of {p['batch_size']} sentences; standard warm-up {p['warmup']} updates; "
        f"seeds {', '.join(map(str, r['seeds']))}."
    )


def render(payload: dict) -> str:
    """The docs block: both tables (rows = K new layers), the protocol and the provenance."""
    r = payload["results"]
    labelled = {**r, "depth_label": "new encoder layers K", "depth_symbol": "K"}
    return (
        "**Each scheme at its own learning rate** (chosen per K on the validation nll; test set; † = at the "
        "edge of the grid)\n\n" + selected_table(labelled)
        + "\n\n**The whole grid: validation nll (bits), mean ± std over seeds** (bold: the chosen rate)\n\n"
        + grid_table(labelled)
        + "\n\n"
        + protocol_line(r)
        + "\n\nMeasured by " + provenance(payload) + "."
    )  # fmt: skip


def render_curves(payload: dict) -> str:
    """A longer-budget check (one rate per scheme): the validation curves, the test nll at the end, the
    protocol and the provenance."""
    r = payload["results"]
    labelled = {**payload, "results": {**r, "depth_symbol": "K"}}
    return protocol_line(r) + "\n\n" + render_budget(labelled)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=REPO / "runs" / "dt_fixup_mixed")
    ap.add_argument("--schemes", nargs="+", choices=SCHEMES, default=["standard", "dt-fixup"])
    ap.add_argument("--new-layers", type=int, nargs="+", default=[2, 8], help="K values")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--lrs", nargs="*", default=list(DEFAULT_LRS), metavar="SCHEME=η1,η2")
    ap.add_argument("--finetune-packages", nargs="+", default=list(MixedProtocol.finetune_packages))
    ap.add_argument("--pretrain-updates", type=int, default=MixedProtocol.pretrain_updates)
    ap.add_argument("--updates", type=int, default=MixedProtocol.updates)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--results", type=Path, help="write the rows as a results file (docs/results/...)")
    a = ap.parse_args()
    p = MixedProtocol(finetune_packages=tuple(a.finetune_packages), pretrain_updates=a.pretrain_updates,
                      updates=a.updates)  # fmt: skip
    grid = parse_lrs(a.lrs)
    machine = machine_info()
    claim_out_dir(a.out_dir, p)
    corpus = build_corpus(a.out_dir, p)
    print(f"corpus: {corpus['pairs']}", flush=True)
    pre_bin, task_bin = build_data_bins(a.out_dir, p, corpus["pairs"])
    kept = (a.out_dir / "pre" / "bpe" / "train.en").read_text(encoding="utf-8").count("\n")
    corpus = {**corpus, "pre_train_after_cleaning": kept}
    checkpoint = pretrain(a.out_dir, pre_bin, p)
    pre_record = json.loads((a.out_dir / "pretrained" / "done.json").read_text())
    print(f"pre-trained: {pre_record}", flush=True)
    wanted = [
        RunKey(s, k, lr, seed) for s in a.schemes for k in a.new_layers for lr in grid[s] for seed in a.seeds
    ]
    results = a.out_dir / "results.jsonl"
    run_grid(task_bin, p, wanted, results, a.jobs, finetune_argv_builder(checkpoint))
    rows = [r for r in read_rows(results) if RunKey(r["scheme"], r["depth"], r["lr"], r["seed"]) in wanted]
    last = pre_record["last_validation"] or ""
    nll = last.split("nll_loss ")[1].split(" ")[0] if "nll_loss " in last else "?"
    payload = {"protocol": asdict(p), "grid": {s: list(grid[s]) for s in a.schemes}, "seeds": a.seeds,
               "depths": a.new_layers, "rows": rows, "corpus": corpus,
               "pretrain": {"seconds": pre_record["seconds"], "last_validation_nll": nll}}  # fmt: skip
    if a.results:
        write_results(a.results, payload, machine)
        print(render({"results": payload, **json.loads(Path(a.results).read_text())}))


if __name__ == "__main__":
    main()
