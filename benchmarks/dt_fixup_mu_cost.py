"""Cost of DT-Fixup's μ estimation relative to one training epoch on the same data.

In one process, with fairseq's own ``Trainer`` and batch iterator (as ``fairseq-train`` builds them):
time the init hook (the μ passes over the training split: one for the encoder stack — embeddings only — and
one for the decoder stack — target embeddings plus the encoder output its cross-attention reads), then
time one full training epoch (``trainer.train_step`` on every batch). The issue's budget is
μ time ≤ 0.35 × epoch time.

    python -m benchmarks.dt_fixup_mu_cost --arch fixup_transformer_iwslt_de_en --encoder-layers 8 32
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported anywhere: one thread per process
from benchmarks.results_file import RESULTS_DIR, machine_info, provenance, read_results, write_results
from macaron_synthetic.toy_bitext import SymbolTask

REPO = Path(__file__).resolve().parents[1]


def measure(data: Path, arch: str, layers: int, a: argparse.Namespace) -> tuple[float, float, str]:
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    argv = [
        str(data), "--user-dir", str(REPO / "macaron_fairseq"),
        "--task", "translation", "-s", "src", "-t", "tgt",
        "--arch", arch, "--encoder-embed-dim", str(a.dim), "--decoder-embed-dim", str(a.dim),
        "--encoder-ffn-embed-dim", str(a.ffn), "--decoder-ffn-embed-dim", str(a.ffn),
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
        "--encoder-layers", str(layers), "--decoder-layers", str(a.decoder_layers), "--share-all-embeddings",
        "--init-scheme", "dt-fixup",  # DT-Fixup's factors: a μ pass per stack, model from scratch
        "--optimizer", "adam", "--lr", "1e-3",
        "--lr-scheduler", "polynomial_decay",
        "--power", "0.5", "--total-num-update", "100000", "--batch-size", str(a.batch_size),
        "--criterion", "label_smoothed_cross_entropy", "--cpu", "--num-workers", "0", "--seed", "1",
        "--log-format", "none",
    ]  # fmt: skip
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
    cfg = convert_namespace_to_omegaconf(args)
    utils.set_torch_seed(1)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    epoch_itr = trainer.get_train_iterator(epoch=1, load_dataset=True)
    # torch imports sympy/torch.fx lazily (≈ 3 s) on the first key-padding-mask check of an attention
    # forward; import it up front so that neither timing includes this one-off process start-up cost
    import torch.fx.experimental.symbolic_shapes  # noqa: F401

    from macaron_fairseq.init.fairseq_hook import run_init_scheme

    start = time.perf_counter()
    run_init_scheme(model, task)
    mu_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for sample in epoch_itr.next_epoch_itr(shuffle=True):
        trainer.train_step([sample])
    epoch_seconds = time.perf_counter() - start
    return mu_seconds, epoch_seconds, model.init_record.describe()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", type=Path, default=REPO / "runs" / "dt_fixup_ablation")
    p.add_argument("--archs", nargs="+", default=["fixup_transformer_iwslt_de_en", "macaron_small"])
    p.add_argument("--encoder-layers", type=int, nargs="+", default=[8, 32])
    p.add_argument("--decoder-layers", type=int, default=2)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--ffn", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--train-size", type=int, default=8000)
    p.add_argument(
        "--json",
        type=Path,
        default=RESULTS_DIR / "dt_fixup_mu_cost.json",
        help="results file (default: %(default)s, which docs/dt_fixup.md quotes)",
    )
    a = p.parse_args()
    machine = machine_info()
    task = SymbolTask({"train": a.train_size, "valid": 500}, vocab=50, max_words=10)  # as benchmarked before
    data = task.data_bin(a.out_dir / "data")
    print(f"data: {data} ({a.train_size} training pairs), batch {a.batch_size} sentences, d={a.dim}")
    rows = []
    for arch in a.archs:
        for layers in a.encoder_layers:
            mu_s, epoch_s, record = measure(data, arch, layers, a)
            rows.append({"arch": arch, "encoder_layers": layers, "mu_seconds": mu_s, "epoch_seconds": epoch_s,
                         "init_record": record})  # fmt: skip
            print(f"{arch}, {layers} encoder layers: μ {mu_s:.2f} s, epoch {epoch_s:.1f} s", flush=True)
    setup = {"train_pairs": a.train_size, "batch_sentences": a.batch_size, "dim": a.dim, "ffn": a.ffn,
             "decoder_layers": a.decoder_layers, "updates_per_epoch": rows_updates(data, a)}  # fmt: skip
    write_results(a.json, {"setup": setup, "rows": rows}, machine)
    print(render(read_results(a.json)))


def rows_updates(data: Path, a: argparse.Namespace) -> int:
    """Batches of one epoch (the training split in batches of --batch-size sentences)."""
    from fairseq.data import data_utils

    n = len(data_utils.load_indexed_dataset(str(data / "train.src-tgt.src"), None))
    return -(-n // a.batch_size)


def render(payload: dict) -> str:
    """The §4.3 table of docs/dt_fixup.md from a results file."""
    setup = payload["results"]["setup"]
    lines = ["| arch | encoder layers | μ passes (s) | one epoch (s) | ratio |", "|---|---|---|---|---|"]
    for r in payload["results"]["rows"]:
        mu_s, epoch_s = r["mu_seconds"], r["epoch_seconds"]
        cells = [r["arch"], r["encoder_layers"], f"{mu_s:.2f}", f"{epoch_s:.1f}", f"{mu_s / epoch_s:.3f}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        f"{setup['train_pairs']} training pairs, {setup['updates_per_epoch']} updates of "
        f"{setup['batch_sentences']} sentences per epoch, d = {setup['dim']}, FFN {setup['ffn']}, "
        f"{setup['decoder_layers']} decoder layers. Measured by {provenance(payload)}.",
    ]
    return "\n".join(lines)

if __name__ == "__main__":
    main()
