"""The paper's translation pipelines, one command per dataset:

    python -m pipelines.translation {iwslt14,wmt14} --workdir DIR [options] [-- FLAGS]

preprocess (``python -m preprocess.iwslt14`` / ``preprocess.wmt14_en_de``) → ``fairseq-train --user-dir
macaron_fairseq`` with the Macaron authors' hyper-parameters → average the last interval checkpoints →
``fairseq-generate`` on the test set → BLEU, each printed with its name, plus ``DIR/results.json``:

* IWSLT14 De→En: beam 5, lenpen 1.0; case-insensitive tokenized BLEU (the data is lowercased);
* WMT14 En→De: beam 4, lenpen 0.6; tokenized case-sensitive BLEU with compound splitting
  (``##AT##-##AT##``) and detokenized sacreBLEU against the raw newstest2014 references.

Every stage is skipped when its output exists (the preprocessors resume by themselves; training resumes
from ``checkpoint_last.pt`` and is skipped once it finished with the same command; averaging, generation
and scoring write to a temporary file and rename). ``--small`` runs the identical pipeline with a tiny
model, a tiny BPE vocabulary and a few updates, on CPU, for tiny corpora (the tests use it). Flags after
``--`` go to ``fairseq-train`` unchanged and override the recipe's (fairseq keeps the last occurrence).

Training stops at ``--max-update``: the authors' scripts have no stop criterion (they trained until
stopped and tested checkpoints by hand), so the defaults below are ours, chosen as the usual lengths for
these set-ups; set ``--max-update`` to match your budget.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "macaron_fairseq"

#: optimiser, schedule and loss of the Macaron authors' train-iwslt14.sh / train-wmt14-base.sh
AUTHORS_TRAINING = [
    "--share-all-embeddings",
    "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--clip-norm", "0.0",
    "--lr-scheduler", "inverse_sqrt", "--warmup-init-lr", "1e-07", "--warmup-updates", "8000",
    "--lr", "0.0015", "--stop-min-lr", "1e-09",
    "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
]  # fmt: skip

#: the small-scale mode: same pipeline, a model and schedule that run in seconds on a CPU
SMALL_MODEL = [
    "--encoder-layers", "2", "--decoder-layers", "2",
    "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
    "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--warmup-updates", "20", "--lr", "0.005", "--dropout", "0.1",
]  # fmt: skip


@dataclass(frozen=True)
class Recipe:
    name: str
    preprocess_module: str
    src: str
    tgt: str
    arch: str
    training: list[str]
    max_tokens: int
    max_update: int
    beam: int
    lenpen: float
    bleu: list[str] = field(default_factory=list)  # score_bleu options

    def data_bin(self, workdir: Path) -> Path:
        return workdir / "data-bin"


RECIPES = {
    "iwslt14": Recipe(
        name="iwslt14",
        preprocess_module="preprocess.iwslt14",
        src="de",
        tgt="en",
        arch="macaron_small",
        training=[*AUTHORS_TRAINING, "--dropout", "0.3", "--weight-decay", "0.0001"],
        max_tokens=4096,
        max_update=100_000,
        beam=5,
        lenpen=1.0,
        bleu=["--metrics", "tokenized", "--lowercase"],
    ),
    "wmt14": Recipe(
        name="wmt14",
        preprocess_module="preprocess.wmt14_en_de",
        src="en",
        tgt="de",
        arch="macaron_base",
        training=[*AUTHORS_TRAINING, "--weight-decay", "0.0"],
        max_tokens=8192,
        max_update=300_000,
        beam=4,
        lenpen=0.6,
        bleu=["--metrics", "tokenized,sacrebleu", "--compound-split"],
    ),
}


class PipelineError(RuntimeError):
    """A pipeline stage failed; the message names the command."""


def log(message: str) -> None:
    print(f"[pipeline {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(command: Sequence[str], stdout_path: Path | None = None) -> None:
    """Run a stage's command. With ``stdout_path``, stdout goes to a temp file renamed on success and
    stderr to ``<stdout_path>.log`` (its tail is shown on failure)."""
    log("$ " + shlex.join(str(c) for c in command))
    argv = [str(c) for c in command]
    if stdout_path is None:
        proc = subprocess.run(argv, cwd=REPO)
    else:
        tmp = stdout_path.with_name(stdout_path.name + ".tmp")
        err_log = stdout_path.with_name(stdout_path.name + ".log")
        with tmp.open("w") as out, err_log.open("w") as err:
            proc = subprocess.run(argv, cwd=REPO, stdout=out, stderr=err)
        if proc.returncode == 0:
            tmp.replace(stdout_path)
        else:
            tmp.unlink(missing_ok=True)
            print("".join(err_log.read_text().splitlines(keepends=True)[-30:]), file=sys.stderr)
    if proc.returncode != 0:
        raise PipelineError(f"stage failed with exit code {proc.returncode}: {shlex.join(argv)}")


def preprocess(recipe: Recipe, args: argparse.Namespace) -> Path:
    data_bin = recipe.data_bin(args.workdir)
    command = [sys.executable, "-m", recipe.preprocess_module, "--dest", data_bin, "--workers", args.workers]
    if args.raw_dir:
        command += ["--raw-dir", args.raw_dir]
    if args.bpe_vocab_size:
        command += ["--bpe-vocab-size", args.bpe_vocab_size]
    run(command)  # resumable by itself: finished stages are skipped
    return data_bin


def train_command(recipe: Recipe, args: argparse.Namespace, data_bin: Path, save_dir: Path) -> list[str]:
    command = [
        "fairseq-train", str(data_bin), "--user-dir", str(USER_DIR), "--arch", args.arch,
        "-s", recipe.src, "-t", recipe.tgt, *recipe.training,
        "--max-tokens", str(args.max_tokens), "--update-freq", str(args.update_freq),
        "--max-update", str(args.max_update), "--seed", str(args.seed),
        "--save-dir", str(save_dir), "--save-interval-updates", str(args.save_interval_updates),
        "--keep-interval-updates", str(max(args.num_avg, 20)), "--no-epoch-checkpoints",
        "--ddp-backend", "legacy_ddp", "--log-format", "json", "--log-interval", str(args.log_interval),
    ]  # fmt: skip
    if args.small:
        command += SMALL_MODEL
    if args.gpus:
        command += ["--distributed-world-size", str(args.gpus)]
    if args.init_scheme:
        command += ["--init-scheme", args.init_scheme]
    return command + list(args.train_flags)


def train(recipe: Recipe, args: argparse.Namespace, data_bin: Path) -> Path:
    save_dir = args.workdir / "checkpoints" / args.arch
    save_dir.mkdir(parents=True, exist_ok=True)
    command = train_command(recipe, args, data_bin, save_dir)
    done = save_dir / "training.done"
    if (
        done.exists()
        and done.read_text() == shlex.join(command)
        and (save_dir / "checkpoint_last.pt").exists()
    ):
        log(f"training: finished earlier with the same command ({save_dir}); skipped")
        return save_dir
    progress = [
        sys.executable,
        "-m",
        "tools.train_progress",
        "--log",
        args.workdir / "train.log",
    ]
    run([*progress, *([] if sys.stdout.isatty() else ["--no-bar"]), "--", *command])
    tmp = done.with_name(done.name + ".tmp")
    tmp.write_text(shlex.join(command))
    tmp.replace(done)
    return save_dir


def average(args: argparse.Namespace, save_dir: Path) -> Path:
    averaged = save_dir / f"checkpoint_avg_last{args.num_avg}.pt"
    last = save_dir / "checkpoint_last.pt"
    if averaged.exists() and averaged.stat().st_mtime >= last.stat().st_mtime:
        log(f"averaging: {averaged.name} is newer than checkpoint_last.pt; skipped")
        return averaged
    run([
        sys.executable, "-m", "tools.average_checkpoints", "--inputs", save_dir,
        "--num-update-checkpoints", args.num_avg, "--output", averaged,
    ])  # fmt: skip
    return averaged


def generate(recipe: Recipe, args: argparse.Namespace, data_bin: Path, checkpoint: Path) -> Path:
    output = args.workdir / f"generate-test.{args.arch}.txt"
    if output.exists() and output.stat().st_mtime >= checkpoint.stat().st_mtime:
        log(f"generation: {output.name} is newer than {checkpoint.name}; skipped")
        return output
    run(
        [
            "fairseq-generate", data_bin, "--user-dir", USER_DIR, "--path", checkpoint,
            "-s", recipe.src, "-t", recipe.tgt, "--gen-subset", "test",
            "--beam", recipe.beam, "--lenpen", recipe.lenpen, "--batch-size", args.gen_batch_size,
            "--remove-bpe", "sentencepiece",
        ],
        stdout_path=output,
    )  # fmt: skip
    return output


def score(
    recipe: Recipe, args: argparse.Namespace, data_bin: Path, generated: Path, checkpoint: Path
) -> dict:
    bleu_json = args.workdir / f"bleu.{args.arch}.json"
    command = [
        sys.executable, "-m", "tools.score_bleu", "--gen", generated,
        "--tok-ref", data_bin / "tok" / f"test.{recipe.tgt}",
        "--ref", data_bin / "raw" / f"test.{recipe.tgt}", "--lang", recipe.tgt, *recipe.bleu,
        "--name", f"{recipe.name} test ({args.arch})", "--json", bleu_json,
    ]  # fmt: skip
    run(command)
    results = {
        "recipe": recipe.name,
        "arch": args.arch,
        "checkpoint": str(checkpoint),
        "averaged_checkpoints": args.num_avg,
        "beam": recipe.beam,
        "lenpen": recipe.lenpen,
        "bleu": json.loads(bleu_json.read_text()),
    }
    out = args.workdir / f"results.{args.arch}.json"
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(out)
    log(f"results: {out}")
    return results


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.translation",
        usage="%(prog)s {iwslt14,wmt14} --workdir DIR [options] [-- fairseq-train flags]",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("recipe", choices=sorted(RECIPES))
    parser.add_argument(
        "--workdir", type=Path, required=True, help="data-bin/, checkpoints/, results go here"
    )
    parser.add_argument("--raw-dir", type=Path, help="the downloaded archives (default: download them)")
    parser.add_argument("--arch", help="default: macaron_small (iwslt14) / macaron_base (wmt14)")
    parser.add_argument("--init-scheme", help="passed to fairseq-train (default, dt-fixup, t-fixup)")
    parser.add_argument("--gpus", type=int, default=0, help="--distributed-world-size (default: fairseq's)")
    parser.add_argument("--max-tokens", type=int, help="per GPU (default: 4096 iwslt14 / 8192 wmt14)")
    parser.add_argument("--update-freq", type=int, default=1, help="gradient accumulation (default 1)")
    parser.add_argument("--max-update", type=int, help="default: 100000 iwslt14 / 300000 wmt14")
    parser.add_argument("--save-interval-updates", type=int, default=2000, help="default 2000")
    parser.add_argument("--num-avg", type=int, default=5, help="average the last N interval checkpoints (5)")
    parser.add_argument("--bpe-vocab-size", type=int, help="default: the preprocessor's (10000 / 37000)")
    parser.add_argument("--workers", type=int, default=2, help="preprocessing processes (default 2)")
    parser.add_argument("--gen-batch-size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=100)
    parser.add_argument("--small", action="store_true", help="tiny model and schedule (CPU smoke scale)")
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.train_flags = argv[split + 1 :]  # after --: extra fairseq-train flags
    recipe = RECIPES[args.recipe]
    args.arch = args.arch or recipe.arch
    args.max_tokens = args.max_tokens or (2000 if args.small else recipe.max_tokens)
    args.max_update = args.max_update or (60 if args.small else recipe.max_update)
    if args.small:
        args.bpe_vocab_size = args.bpe_vocab_size or 300
        args.log_interval = min(args.log_interval, 10)
    if args.max_update < args.save_interval_updates * args.num_avg and not args.small:
        parser.error(
            f"--max-update {args.max_update} leaves fewer than --num-avg {args.num_avg} checkpoints "
            f"every --save-interval-updates {args.save_interval_updates}"
        )
    args.workdir = args.workdir.resolve()
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    recipe = RECIPES[args.recipe]
    if args.small:
        args.save_interval_updates = max(1, args.max_update // (args.num_avg + 1))
    args.workdir.mkdir(parents=True, exist_ok=True)
    start = time.time()
    try:
        data_bin = preprocess(recipe, args)
        save_dir = train(recipe, args, data_bin)
        checkpoint = average(args, save_dir)
        generated = generate(recipe, args, data_bin, checkpoint)
        results = score(recipe, args, data_bin, generated, checkpoint)
    except PipelineError as err:
        sys.exit(f"pipeline: error: {err}")
    log(f"done in {time.time() - start:.0f} s; BLEU of {results['checkpoint']} is printed above")


if __name__ == "__main__":
    main()
