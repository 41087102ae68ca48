"""The paper's translation pipelines, one command per dataset:

    python -m pipelines.translation {iwslt14,wmt14} --workdir DIR [options] [-- FLAGS]

preprocess (``python -m preprocess.iwslt14`` / ``preprocess.wmt14_en_de``) → ``fairseq-train --user-dir
macaron_fairseq`` with the Macaron authors' hyper-parameters → average the last interval checkpoints →
``fairseq-generate`` on the test set → BLEU, each printed with its name, plus ``DIR/results.<arch>.json``:

* IWSLT14 De→En: beam 5, lenpen 1.0; case-insensitive tokenized BLEU (the data is lowercased);
* WMT14 En→De: beam 4, lenpen 0.6; tokenized case-sensitive BLEU with compound splitting
  (``##AT##-##AT##``) and detokenized sacreBLEU against the raw newstest2014 references.

Every stage is resumable (completion markers in ``DIR/.stages/``, the preprocessors' in
``DIR/data-bin/.stages/``): a rerun skips the finished stages. Training resumes from
``checkpoint_last.pt``: a rerun with a larger ``--max-update`` continues the finished training, while a
rerun with other training settings or data moves ``DIR/checkpoints/<arch>`` aside
(``<arch>.before-TIME``) and trains afresh. Averaging, generation and scoring write temporary files and
rename them; a new checkpoint redoes them. ``--force`` redoes every stage. Each ``--arch`` has its own
checkpoints and results in the same DIR (the data-bin is shared). ``--small`` runs the identical pipeline
with a tiny model, a tiny BPE vocabulary and a few updates, on CPU, for tiny corpora (the tests use it).
Flags after ``--`` go to ``fairseq-train`` unchanged and override the recipe's (fairseq keeps the last
occurrence).

Training stops at ``--max-update``: the authors' scripts have no stop criterion (they trained until
stopped and tested checkpoints by hand), so the defaults below are ours, chosen as the usual lengths for
these set-ups; set ``--max-update`` to match your budget.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from macaron_workflow.cli import ArgumentParser, positive_int
from macaron_workflow.options import FORCE, SKIP_INSTALL, WORKERS, Option, add_options
from macaron_workflow.stages import StageRunner
from pipelines import fairseq_steps
from pipelines.commands import (
    REPO,
    USER_DIR,
    Console,
    add_from_env,
    parse_with_passthrough,
    report_errors,
    run_command,
)
from pipelines.fairseq_steps import BleuSettings

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
    bleu: BleuSettings

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
        bleu=BleuSettings(metrics=("tokenized",), lowercase=True),
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
        bleu=BleuSettings(metrics=("tokenized", "sacrebleu"), compound_split=True),
    ),
}


@dataclass(frozen=True)
class ArchPaths:
    """Where the stages of one ``--arch`` write inside the workdir."""

    workdir: Path
    arch: str
    num_avg: int

    @property
    def save_dir(self) -> Path:
        return self.workdir / "checkpoints" / self.arch

    @property
    def averaged(self) -> Path:
        return self.save_dir / f"checkpoint_avg_last{self.num_avg}.pt"

    @property
    def generated(self) -> Path:
        return self.workdir / f"generate-test.{self.arch}.txt"

    @property
    def bleu(self) -> Path:
        return self.workdir / f"bleu.{self.arch}.json"

    @property
    def results(self) -> Path:
        return self.workdir / f"results.{self.arch}.json"

    @property
    def train_log(self) -> Path:
        """Shared by the archs: every training in the workdir appends to it."""
        return self.workdir / "train.log"


def preprocess(recipe: Recipe, args: argparse.Namespace, console: Console) -> Path:
    data_bin = recipe.data_bin(args.workdir)
    command = [sys.executable, "-m", recipe.preprocess_module, "--dest", data_bin, "--workers", args.workers]
    if args.raw_dir:
        command += ["--raw-dir", args.raw_dir]
    if args.bpe_vocab_size:
        command += ["--bpe-vocab-size", args.bpe_vocab_size]
    if args.force:
        command += ["--force"]
    run_command(command, console)  # resumable by itself: finished stages are skipped
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


def write_results(
    runner: StageRunner, recipe: Recipe, args: argparse.Namespace, paths: ArchPaths, checkpoint: Path
) -> dict:
    """``results.<arch>.json``: the BLEU results with the recipe settings that produced them."""
    settings = {
        "recipe": recipe.name,
        "arch": args.arch,
        "checkpoint": str(checkpoint),
        "averaged_checkpoints": args.num_avg,
        "beam": recipe.beam,
        "lenpen": recipe.lenpen,
    }

    def build(temps: Mapping[Path, Path]) -> dict:
        results = {**settings, "bleu": json.loads(paths.bleu.read_text(encoding="utf-8"))}
        temps[paths.results].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        return {}

    runner.run(f"results-{args.arch}", [paths.bleu], [paths.results], settings, build)
    return json.loads(paths.results.read_text(encoding="utf-8"))


OPTIONS = (
    Option("--workdir", "data-bin/, checkpoints/, results go here (the wrapper's default: work_dirs/RECIPE)",
           env="WORKDIR", type=Path, required=True),
    Option("--raw-dir", "the downloaded archives (default: download them)", env="RAW_DIR", type=Path),
    Option("--arch", "default: macaron_small (iwslt14) / macaron_base (wmt14); e.g. transformer_iwslt_de_en "
           "for the baseline", env="ARCH"),
    Option("--init-scheme", "passed to fairseq-train (default, dt-fixup, t-fixup)", env="INIT_SCHEME"),
    Option("--gpus", "--distributed-world-size (default: fairseq's)", env="GPUS", type=int, default=0),
    Option("--max-tokens", "per GPU (default: 4096 iwslt14 / 8192 wmt14)", env="MAX_TOKENS",
           type=positive_int),
    Option("--update-freq", "gradient accumulation (default 1)", env="UPDATE_FREQ", type=positive_int,
           default=1),
    Option("--max-update", "default: 100000 iwslt14 / 300000 wmt14; raising it later continues the finished "
           "training", env="MAX_UPDATE", type=positive_int),
    Option("--save-interval-updates", "default 2000", type=positive_int, default=2000),
    Option("--num-avg", "average the last N interval checkpoints (5)", env="NUM_AVG", type=positive_int,
           default=5),
    Option("--bpe-vocab-size", "default: the preprocessor's (10000 / 37000)", type=positive_int),
    WORKERS.with_env("WORKERS"),
    Option("--gen-batch-size", "fairseq-generate's --batch-size (default 128)", type=positive_int,
           default=128),
    Option("--seed", "default 1", type=int, default=1),
    Option("--log-interval", "default 100", type=positive_int, default=100),
    Option("--small", "tiny model and schedule (CPU smoke scale)", env="SMALL", kind="switch"),
    Option("--slurm", "inside a Slurm job (slurm/translate.sbatch): train with one task per GPU of the "
           "allocation (srun), saving and requeueing on --preemption-signal; the other stages run in this "
           "process", kind="switch"),
    Option("--preemption-signal", "with --slurm (default HUP)", env="PREEMPT_SIGNAL", default="HUP"),
    replace(FORCE, help="redo every stage, preprocessing included (downloads are kept; the old checkpoints "
            "of this --arch are moved aside)"),
    SKIP_INSTALL,
)  # fmt: skip
"""Every option of the pipeline (after the recipe); ``bash pipelines/translation.sh`` maps the [env NAME]
variables to them."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m pipelines.translation",
        usage="%(prog)s {iwslt14,wmt14} --workdir DIR [options] [-- fairseq-train flags]",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("recipe", choices=sorted(RECIPES))
    add_options(parser, OPTIONS)
    add_from_env(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    recipe_name = next((word for word in argv if word in RECIPES), "translation")
    wrapper_default = {"WORKDIR": str(REPO / "work_dirs" / recipe_name)}
    args = parse_with_passthrough(parser, argv, OPTIONS, wrapper_default)  # flags after -- go to the trainer
    recipe = RECIPES[args.recipe]
    args.arch = args.arch or recipe.arch
    args.max_tokens = args.max_tokens or (2000 if args.small else recipe.max_tokens)
    args.max_update = args.max_update or (60 if args.small else recipe.max_update)
    if args.small:
        args.bpe_vocab_size = args.bpe_vocab_size or 300
        args.log_interval = min(args.log_interval, 10)
        args.save_interval_updates = max(1, args.max_update // (args.num_avg + 1))
    if args.max_update < args.save_interval_updates * args.num_avg and not args.small:
        parser.error(
            f"--max-update {args.max_update} leaves fewer than --num-avg {args.num_avg} checkpoints "
            f"every --save-interval-updates {args.save_interval_updates}"
        )
    if args.slurm and args.gpus:
        parser.error("--slurm takes the GPU count from the Slurm allocation (one task per GPU): drop --gpus")
    args.workdir = args.workdir.resolve()
    return args


def run_pipeline(args: argparse.Namespace) -> None:
    recipe = RECIPES[args.recipe]
    console = Console("pipeline")
    args.workdir.mkdir(parents=True, exist_ok=True)
    runner = StageRunner(args.workdir / ".stages", force=args.force, log=console.say)
    paths = ArchPaths(args.workdir, args.arch, args.num_avg)
    start = time.time()
    data_bin = preprocess(recipe, args, console)
    command = train_command(recipe, args, data_bin, paths.save_dir)
    fairseq_steps.train(
        runner, console, stage=f"train-{args.arch}", command=command,
        data_bin=data_bin, save_dir=paths.save_dir, log=paths.train_log,
        launch=fairseq_steps.slurm_launch(command, args.preemption_signal) if args.slurm else None,
    )  # fmt: skip
    fairseq_steps.average(
        runner, console, stage=f"average-{args.arch}", save_dir=paths.save_dir, count=args.num_avg,
        output=paths.averaged,
    )  # fmt: skip
    fairseq_steps.generate(
        runner, console, stage=f"generate-{args.arch}", data_bin=data_bin, checkpoint=paths.averaged,
        src=recipe.src, tgt=recipe.tgt, beam=recipe.beam, lenpen=recipe.lenpen, output=paths.generated,
        batch_size=args.gen_batch_size,
    )  # fmt: skip
    fairseq_steps.score(
        runner, stage=f"score-{args.arch}", generated=paths.generated,
        ref=data_bin / "raw" / f"test.{recipe.tgt}", tok_ref=data_bin / "tok" / f"test.{recipe.tgt}",
        lang=recipe.tgt, bleu=recipe.bleu, name=f"{recipe.name} test ({args.arch})", json_out=paths.bleu,
    )  # fmt: skip
    results = write_results(runner, recipe, args, paths, paths.averaged)
    console.say(f"results: {paths.results}")
    console.say(f"done in {time.time() - start:.0f} s; BLEU of {results['checkpoint']} is printed above")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    report_errors("pipeline", lambda: run_pipeline(args))


if __name__ == "__main__":
    main()
