"""The paper's translation pipelines, one command per set-up, following the Macaron authors' scripts:

    python -m macaron_pipelines.translation {iwslt14,wmt14,wmt14-big} --workdir DIR [options] [-- FLAGS]

preprocess (``python -m macaron_preprocess.iwslt14`` / ``macaron_preprocess.wmt14_en_de``) → ``fairseq-train
--user-dir macaron_fairseq`` with the authors' training script flag for flag (their ``train-iwslt14.sh`` /
``train-wmt14-base.sh`` / ``train-wmt14-big.sh``: their pre-LN ``*_macaron_v2`` / ``*_big_t2t_macaron``
architecture, optimiser, schedule, dropout, batch; :mod:`macaron_pipelines.authors_recipes` holds them and the
differences, each with its reason) → ``fairseq-generate`` of ``checkpoint_best.pt`` with their test
script's beam and length penalty (``--num-avg N``: the average of the last N interval checkpoints instead)
→ BLEU, each printed with its name, plus ``DIR/results.<arch>.json``:

* IWSLT14 De→En: beam 5, lenpen 1.0; fairseq's own BLEU4 line (their ``test-iwslt14.sh``), then
  case-insensitive tokenized BLEU (the data is lowercased);
* WMT14 En→De: beam 4, lenpen 0.6; BLEU as their ``test-wmt14-*.sh`` computes it (Moses detokenizer →
  tokenizer, ``##AT##`` compound split, multi-bleu), then fairseq's WMT recipe's tokenized compound-split
  BLEU and detokenized sacreBLEU against the raw newstest2014 references.

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
import os
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from macaron_pipelines import fairseq_steps
from macaron_pipelines.authors_recipes import AUTHORS, flag_groups, plan_batch, split_training_flags
from macaron_pipelines.commands import (
    INIT_SCHEMES,
    REPO,
    USER_DIR,
    Console,
    PipelineError,
    PipelineUsageError,
    add_from_env,
    parse_with_passthrough,
    report_errors,
    run_command,
)
from macaron_pipelines.fairseq_steps import BleuSettings
from macaron_workflow.cli import ArgumentParser, positive_int
from macaron_workflow.options import FORCE, SKIP_INSTALL, WORKERS, Option, add_options
from macaron_workflow.stages import StageRunner

#: the small-scale mode: same pipeline, a model and schedule that run in seconds on a CPU
SMALL_MODEL = (
    "--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64 "
    "--encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 --encoder-attention-heads 4 "
    "--decoder-attention-heads 4 --warmup-updates 20 --lr 0.005 --dropout 0.1"
).split()


@dataclass(frozen=True)
class Recipe:
    """One of the authors' set-ups (:data:`macaron_pipelines.authors_recipes.AUTHORS`) on this project's data.

    ``training`` holds their training script's flags that no option sets, verbatim (fairseq 0.12 names);
    the flags an option sets (``--arch``, ``--max-tokens``, ``--update-freq``, ``--seed``,
    ``--log-interval``, ``--save-interval-updates``, ``--keep-interval-updates``) are in ``defaults``, the
    option's default. Test: their beam and length penalty; BLEU as their test script computes it, then ours.
    """

    name: str
    preprocess_module: str
    src: str
    tgt: str
    max_update: int
    bleu: BleuSettings
    workdir_name: str
    preprocess_flags: tuple[str, ...] = ()
    defaults: dict[str, str] = field(init=False)
    training: list[str] = field(init=False)
    beam: int = field(init=False)
    lenpen: float = field(init=False)

    def __post_init__(self) -> None:
        """The rest from the authors' scripts ``AUTHORS[name]``, flag for flag."""
        scripts = AUTHORS[self.name]
        defaults, training = split_training_flags(scripts)
        test = flag_groups(scripts.test)
        derived = {"defaults": defaults, "training": training, "beam": int(test["--beam"][0])}
        for name, value in {**derived, "lenpen": float(test["--lenpen"][0])}.items():
            object.__setattr__(self, name, value)  # a frozen dataclass

    @property
    def arch(self) -> str:
        return self.defaults["--arch"]

    def default(self, option: str) -> int:
        return int(self.defaults[option])

    def data_bin(self, workdir: Path) -> Path:
        return workdir / "data-bin"


#: BLEU of the authors' test-wmt14-*.sh first, then fairseq's WMT recipe's and detokenized sacreBLEU; their
#: data: prepare-wmt14en2de.sh (macaron_preprocess.wmt14_en_de --data authors); wmt14-big has the same data
#: as wmt14 (one data-bin for both)
RECIPES = {
    "iwslt14": Recipe(
        "iwslt14",
        preprocess_module="macaron_preprocess.iwslt14",
        src="de",
        tgt="en",
        max_update=100_000,
        bleu=BleuSettings(metrics=("fairseq", "tokenized"), lowercase=True),
        workdir_name="iwslt14",
    ),
    **{
        name: Recipe(
            name,
            preprocess_module="macaron_preprocess.wmt14_en_de",
            src="en",
            tgt="de",
            max_update=300_000,
            bleu=BleuSettings(metrics=("retokenized", "tokenized", "sacrebleu"), compound_split=True),
            workdir_name="wmt14",
            preprocess_flags=("--data", "authors"),
        )
        for name in ("wmt14", "wmt14-big")
    },
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
    def evaluated(self) -> Path:
        """What is translated: checkpoint_best.pt as the authors' test scripts, or the average."""
        return self.averaged if self.num_avg else self.save_dir / "checkpoint_best.pt"

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
    command += recipe.preprocess_flags
    if args.authors_test_dir:
        command += ["--authors-test-dir", args.authors_test_dir]
    if args.force:
        command += ["--force"]
    run_command(command, console)  # resumable by itself: finished stages are skipped
    return data_bin


def train_command(recipe: Recipe, args: argparse.Namespace, data_bin: Path, save_dir: Path) -> list[str]:
    q = shlex.quote
    command = shlex.split(
        f"fairseq-train {q(str(data_bin))} --user-dir {q(str(USER_DIR))} --arch {q(args.arch)} "
        f"-s {q(recipe.src)} -t {q(recipe.tgt)} {shlex.join(recipe.training)} "
        f"--max-tokens {args.max_tokens} --update-freq {args.update_freq} --max-update {args.max_update} "
        f"--seed {args.seed} --save-dir {q(str(save_dir))} "
        f"--save-interval-updates {args.save_interval_updates} "
        f"--keep-interval-updates {max(args.num_avg, args.keep_interval_updates)} --no-epoch-checkpoints "
        f"--log-format json --log-interval {args.log_interval}"
    )
    if args.small:
        command += SMALL_MODEL
    if args.gpus:
        command += ["--distributed-world-size", str(args.gpus)]
    if args.init_scheme:
        command += ["--init-scheme", args.init_scheme]
    if args.cpu:
        command += ["--cpu"]
    return command + list(args.train_flags)


def require_cuda(args: argparse.Namespace) -> None:
    """A full-size recipe is meant for GPUs: without CUDA it stops in one line, unless ``--cpu`` (or
    ``--small``) asks for the CPU."""
    if args.small or args.cpu:
        return
    import torch

    if not torch.cuda.is_available():
        raise PipelineUsageError(
            f"no CUDA device here (torch {torch.__version__}): the {args.recipe} recipe trains "
            f"{args.max_update} updates, which takes days on a CPU; add --cpu to train on the CPU anyway, or "
            "--small for the CPU smoke run"
        )


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
    Option(
        "--workdir",
        "data-bin/, checkpoints/, results go here (the wrapper's default: work_dirs/RECIPE)",
        env="WORKDIR",
        type=Path,
        required=True,
    ),
    Option("--raw-dir", "the downloaded archives (default: download them)", env="RAW_DIR", type=Path),
    Option(
        "--arch",
        "default: the authors' (transformer_iwslt_de_en_macaron_v2 / "
        "transformer_wmt_en_de_macaron_v2 / transformer_wmt_en_de_big_t2t_macaron); their baselines are "
        "the same names without _macaron (transformer_iwslt_de_en_v2 ...); the post-LN "
        "macaron_small/base/big also work",
        env="ARCH",
    ),
    Option(
        "--init-scheme",
        f"passed to fairseq-train ({', '.join(INIT_SCHEMES)}; not given: fairseq-train's default)",
        env="INIT_SCHEME",
        choices=INIT_SCHEMES,
    ),
    Option("--gpus", "--distributed-world-size (default: fairseq's)", env="GPUS", type=int, default=0),
    Option(
        "--max-tokens",
        "per GPU (default: the authors', 4096 iwslt14 / 8192 wmt14 / 4096 wmt14-big)",
        env="MAX_TOKENS",
        type=positive_int,
    ),
    Option(
        "--update-freq",
        "gradient accumulation (default: derived from the number of GPUs so that the "
        "tokens per update equal the authors' — 4,096 iwslt14 (1 GPU × 4096) / 32,768 wmt14 (4 GPUs × "
        "8192) / 262,144 wmt14-big (4 GPUs × 4096 × 16); the pipeline prints it, and says so when no "
        "whole value matches)",
        env="UPDATE_FREQ",
        type=positive_int,
    ),
    Option(
        "--max-update",
        "default: 100000 iwslt14 / 300000 wmt14 (the authors' scripts never stop); "
        "raising it later continues the finished training",
        env="MAX_UPDATE",
        type=positive_int,
    ),
    Option("--save-interval-updates", "default: the authors', 10000", type=positive_int),
    Option("--keep-interval-updates", "default: the authors', 20", type=positive_int),
    Option(
        "--num-avg",
        "evaluate the average of the last N interval checkpoints instead of "
        "checkpoint_best.pt (the authors' test scripts take one checkpoint; default 0: the best)",
        env="NUM_AVG",
        type=int,
        default=0,
    ),
    Option(
        "--bpe-vocab-size",
        "default: the preprocessor's (iwslt14: 10000 sentencepiece pieces; wmt14: "
        "the authors' 32764 subword-nmt merges)",
        type=positive_int,
    ),
    Option(
        "--authors-test-dir",
        "wmt14: the raw-test directory of the authors' released WMT14 archive "
        "(en-de.de.tok.atat): their test reference for their BLEU",
        type=Path,
    ),
    WORKERS.with_env("WORKERS"),
    Option(
        "--gen-batch-size", "fairseq-generate's --batch-size (default 128)", type=positive_int, default=128
    ),
    Option("--seed", "default: the authors', 1", type=int),
    Option("--log-interval", "default: the authors', 50", type=positive_int),
    Option("--small", "tiny model and schedule (CPU smoke scale)", env="SMALL", kind="switch"),
    Option(
        "--cpu",
        "train the full-size recipe on the CPU (days); without it, a machine without CUDA stops "
        "before anything runs",
        env="TRAIN_ON_CPU",
        kind="switch",
    ),
    Option(
        "--slurm",
        "inside a Slurm job (slurm/translate.sbatch): train with one task per GPU of the "
        "allocation (srun), saving and requeueing on --preemption-signal; the other stages run in this "
        "process",
        kind="switch",
    ),
    Option("--preemption-signal", "with --slurm (default HUP)", env="PREEMPT_SIGNAL", default="HUP"),
    replace(
        FORCE,
        help="redo every stage, preprocessing included (downloads are kept; the old checkpoints "
        "of this --arch are moved aside)",
    ),
    SKIP_INSTALL,
)
"""Every option of the pipeline (after the recipe); ``bash pipelines/translation.sh`` maps the [env NAME]
variables to them."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m macaron_pipelines.translation",
        usage="%(prog)s {iwslt14,wmt14,wmt14-big} --workdir DIR [options] [-- fairseq-train flags]",
        description=__doc__,
    )
    parser.add_argument("recipe", choices=sorted(RECIPES))
    add_options(parser, OPTIONS)
    add_from_env(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    recipe_name = next((word for word in argv if word in RECIPES), "translation")
    workdir_name = RECIPES[recipe_name].workdir_name if recipe_name in RECIPES else recipe_name
    wrapper_default = {"WORKDIR": str(REPO / "work_dirs" / workdir_name)}
    args = parse_with_passthrough(parser, argv, OPTIONS, wrapper_default)  # flags after -- go to the trainer
    recipe = RECIPES[args.recipe]
    args.arch = args.arch or recipe.arch
    args.max_tokens = args.max_tokens or (2000 if args.small else recipe.default("--max-tokens"))
    args.max_update = args.max_update or (60 if args.small else recipe.max_update)
    if args.small and args.update_freq is None:
        args.update_freq = 1  # the big recipe's 16 would make 60 updates 960 batches
    for option in ("seed", "log_interval", "save_interval_updates", "keep_interval_updates"):
        if getattr(args, option) is None:
            setattr(args, option, recipe.default("--" + option.replace("_", "-")))
    args.batch = plan_batch(AUTHORS[args.recipe], training_gpus(args), args.max_tokens, args.update_freq)
    args.update_freq = args.batch.update_freq
    if args.num_avg < 0:
        parser.error(f"--num-avg {args.num_avg}: must be >= 0 (0: evaluate checkpoint_best.pt)")
    if args.small:
        args.bpe_vocab_size = args.bpe_vocab_size or 300
        args.log_interval = min(args.log_interval, 10)
        args.save_interval_updates = max(1, args.max_update // (args.num_avg + 1))
    if args.max_update < args.save_interval_updates * args.num_avg and not args.small:
        parser.error(
            f"--max-update {args.max_update} leaves fewer than --num-avg {args.num_avg} checkpoints "
            f"every --save-interval-updates {args.save_interval_updates}"
        )
    if args.authors_test_dir and recipe.tgt != "de":
        parser.error("--authors-test-dir is the authors' WMT14 reference: wmt14 and wmt14-big only")
    if args.slurm and args.gpus:
        parser.error("--slurm takes the GPU count from the Slurm allocation (one task per GPU): drop --gpus")
    args.workdir = args.workdir.resolve()
    return args


def training_gpus(args: argparse.Namespace) -> int:
    """The GPUs training will use: ``--gpus``; under ``--slurm`` the allocation's tasks (one per GPU);
    else every visible GPU, as fairseq's default ``--distributed-world-size`` (1 without a GPU)."""
    if args.gpus:
        return args.gpus
    if args.slurm and os.environ.get("SLURM_NTASKS", "").isdigit():
        return int(os.environ["SLURM_NTASKS"])
    import torch

    return max(1, torch.cuda.device_count() if torch.cuda.is_available() else 0)


def run_pipeline(args: argparse.Namespace) -> None:
    require_cuda(args)
    recipe = RECIPES[args.recipe]
    console = Console("pipeline")
    args.workdir.mkdir(parents=True, exist_ok=True)
    runner = StageRunner(args.workdir / ".stages", force=args.force, log=console.say)
    paths = ArchPaths(args.workdir, args.arch, args.num_avg)
    start = time.time()
    data_bin = preprocess(recipe, args, console)
    console.say(args.batch.line(AUTHORS[recipe.name]))
    command = train_command(recipe, args, data_bin, paths.save_dir)
    fairseq_steps.train(
        runner,
        console,
        stage=f"train-{args.arch}",
        command=command,
        data_bin=data_bin,
        save_dir=paths.save_dir,
        log=paths.train_log,
        launch=fairseq_steps.slurm_launch(command, args.preemption_signal) if args.slurm else None,
    )
    if args.num_avg:
        fairseq_steps.average(
            runner,
            console,
            stage=f"average-{args.arch}",
            save_dir=paths.save_dir,
            count=args.num_avg,
            output=paths.averaged,
        )
    elif not paths.evaluated.is_file():
        raise PipelineError(f"training wrote no {paths.evaluated} (fairseq saves it after a validation)")
    fairseq_steps.generate(
        runner,
        console,
        stage=f"generate-{args.arch}",
        data_bin=data_bin,
        checkpoint=paths.evaluated,
        src=recipe.src,
        tgt=recipe.tgt,
        beam=recipe.beam,
        lenpen=recipe.lenpen,
        output=paths.generated,
        batch_size=args.gen_batch_size,
    )
    fairseq_steps.score(
        runner,
        stage=f"score-{args.arch}",
        generated=paths.generated,
        ref=data_bin / "raw" / f"test.{recipe.tgt}",
        tok_ref=data_bin / "tok" / f"test.{recipe.tgt}",
        lang=recipe.tgt,
        bleu=recipe.bleu,
        name=f"{recipe.name} test ({args.arch})",
        json_out=paths.bleu,
        atat_ref=fairseq_steps.authors_reference(data_bin),
    )
    results = write_results(runner, recipe, args, paths, paths.evaluated)
    console.say(f"results: {paths.results}")
    console.say(f"done in {time.time() - start:.0f} s; BLEU of {results['checkpoint']} is printed above")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    report_errors("pipeline", lambda: run_pipeline(args))


if __name__ == "__main__":
    main()
