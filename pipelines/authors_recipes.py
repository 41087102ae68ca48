"""The Macaron authors' training and test scripts, as data: what ``pipelines/translation.py`` follows flag
for flag, and what differs (the table of ``docs/reports/authors_recipes.md`` is rendered from them by
:mod:`macaron_pipelines.authors_table`).

Transcribed from their repository (zhuohan123/macaron-net, ``translation/macaron-scripts/``): the flags of
``train/train-iwslt14.sh``, ``train/train-wmt14-base.sh``, ``train/train-wmt14-big.sh`` after the data path,
and the generation flags of ``test/test-iwslt14.sh``, ``test/test-wmt14-base.sh``, ``test/test-wmt14-big.sh``.
Their ``--save-dir`` (their output layout) is left out. Their fork is fairseq 0.6; fairseq 0.12 renamed one
flag they use (:data:`RENAMED`).

How a recipe uses them (:func:`split_training_flags`): the flags a pipeline option sets (:data:`OPTION_FLAGS`:
``--arch``, ``--max-tokens``, ``--update-freq``, ``--seed``, ...) become that option's *default*, so
``ARCH=...`` or ``MAX_TOKENS=...`` still override them; every other flag goes into the training command as
it is. :data:`DEVIATIONS` lists, with the reason, every setting in which the pipeline's effective fairseq
configuration differs from theirs; ``tests/pipelines/test_authors_recipes.py`` parses both command lines
with fairseq's own parser and fails on any other difference.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

#: fairseq 0.6 flag -> the fairseq 0.12 flag with the same meaning
RENAMED = {"--min-lr": "--stop-min-lr"}  # 0.6: stop training when the learning rate falls below it

#: flags a pipeline option sets: flag -> the option (their value becomes its default)
OPTION_FLAGS = {
    "--arch": "--arch",
    "--max-tokens": "--max-tokens",
    "--update-freq": "--update-freq",
    "--seed": "--seed",
    "--log-interval": "--log-interval",
    "--save-interval-updates": "--save-interval-updates",
    "--keep-interval-updates": "--keep-interval-updates",
}

#: flags of theirs that only choose how progress is shown (the pipeline logs JSON, which it parses)
LOGGING_FLAGS = ("--no-progress-bar",)


def words(command: str) -> tuple[str, ...]:
    """A command line's words as the shell splits them (the authors' scripts' flags, as they write them)."""
    return tuple(shlex.split(command))


_COMMON = "--share-all-embeddings --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 0.0"
_SCHEDULE = "--lr-scheduler inverse_sqrt --warmup-init-lr 1e-07 --warmup-updates 8000"
_LOSS = "--criterion label_smoothed_cross_entropy --label-smoothing 0.1"
_TAIL = (
    "--no-progress-bar --log-interval 50 --ddp-backend no_c10d --save-interval-updates 10000 "
    "--keep-interval-updates 20"
)
_TEST = "--batch-size 128 --beam {beam} --lenpen {lenpen} --remove-bpe"


@dataclass(frozen=True)
class AuthorsScripts:
    """One of their set-ups: the training script's flags, the test script's generation flags, how their
    test script computes BLEU, and the GPUs their scripts assume (their ``translation/README.md`` runs
    ``train-iwslt14.sh`` with ``CUDA_VISIBLE_DEVICES=0`` and the WMT14 scripts with ``0,1,2,3``; the
    WMT14 scripts say "Assume training on 4 P40 GPUs")."""

    train_script: str
    train: tuple[str, ...]
    test_script: str
    test: tuple[str, ...]
    bleu: str
    gpus: int

    def value(self, flag: str) -> str | None:
        """The value their training script gives ``flag`` (None: not given; "" for a switch)."""
        groups = flag_groups(self.train)
        return None if flag not in groups else " ".join(groups[flag])

    @property
    def tokens_per_update(self) -> int:
        """Their batch: GPUs × ``--max-tokens`` × ``--update-freq`` (source and target tokens, as fairseq's
        ``--max-tokens`` counts them, at most)."""
        return self.gpus * int(self.value("--max-tokens") or 0) * int(self.value("--update-freq") or 1)


@dataclass(frozen=True)
class BatchPlan:
    """``--update-freq`` for ``gpus`` GPUs of ``max_tokens`` each, chosen so that the tokens per update equal
    ``target`` (theirs) when an integer update frequency can."""

    gpus: int
    max_tokens: int
    update_freq: int
    target: int
    derived: bool  # False: --update-freq given by the user

    @property
    def tokens_per_update(self) -> int:
        return self.gpus * self.max_tokens * self.update_freq

    @property
    def matches(self) -> bool:
        return self.tokens_per_update == self.target

    def line(self, theirs: AuthorsScripts) -> str:
        """One line saying the batch, and whether it is theirs (and if not, what would make it theirs)."""
        how = "derived from the GPU count" if self.derived else "given"
        ours = (
            f"{self.gpus} GPU(s) × {self.max_tokens} tokens × update-freq {self.update_freq} ({how}) = "
            f"{self.tokens_per_update:,} tokens per update"
        )
        their = (
            f"theirs: {theirs.gpus} GPU(s) × {theirs.value('--max-tokens')} × {theirs.value('--update-freq')}"
            f" = {self.target:,}"
        )
        if self.matches:
            return f"batch: {ours}, as theirs ({their})"
        per_gpu = self.target / self.gpus
        hint = (
            f"--max-tokens {int(per_gpu)} with --update-freq 1 would"
            if per_gpu == int(per_gpu)
            else "no whole --max-tokens per GPU would"
        )
        return f"batch: {ours} — NOT theirs ({their}); {hint} match it"


def plan_batch(theirs: AuthorsScripts, gpus: int, max_tokens: int, update_freq: int | None) -> BatchPlan:
    """The batch of a run on ``gpus`` GPUs: ``update_freq`` as given, or else derived — exactly their tokens
    per update when ``gpus × max_tokens`` divides them, otherwise the nearest whole frequency (at least 1;
    :meth:`BatchPlan.line` then says it is not theirs)."""
    target = theirs.tokens_per_update
    if update_freq is not None:
        return BatchPlan(gpus, max_tokens, update_freq, target, derived=False)
    return BatchPlan(gpus, max_tokens, max(1, round(target / (gpus * max_tokens))), target, derived=True)


AUTHORS: dict[str, AuthorsScripts] = {
    "iwslt14": AuthorsScripts(
        train_script="train/train-iwslt14.sh",
        train=words(
            f"--seed 1 --arch transformer_iwslt_de_en_macaron_v2 {_COMMON} --dropout 0.3 {_SCHEDULE} "
            f"--lr 0.0015 --min-lr 1e-09 {_LOSS} --weight-decay 0.0001 "
            f"--max-tokens 4096 --update-freq 1 {_TAIL}"
        ),
        test_script="test/test-iwslt14.sh",
        test=words(_TEST.format(beam=5, lenpen="1.0")),
        bleu="generate.py's own BLEU4 line (tokenized; the data is lowercased)",
        gpus=1,
    ),
    "wmt14": AuthorsScripts(
        train_script="train/train-wmt14-base.sh",
        train=words(
            f"--seed 1 --arch transformer_wmt_en_de_macaron_v2 {_COMMON} {_SCHEDULE} "
            f"--lr 0.0015 --min-lr 1e-09 {_LOSS} --weight-decay 0.0 "
            f"--max-tokens 8192 --update-freq 1 {_TAIL}"
        ),
        test_script="test/test-wmt14-base.sh",
        test=words(_TEST.format(beam=4, lenpen=0.6)),
        bleu="interactive.py, Moses detokenizer → tokenizer, ##AT## compound split, multi-bleu.perl",
        gpus=4,
    ),
    "wmt14-big": AuthorsScripts(
        train_script="train/train-wmt14-big.sh",
        train=words(
            f"--seed 1 --arch transformer_wmt_en_de_big_t2t_macaron {_COMMON} {_SCHEDULE} "
            f"--lr 0.003 --min-lr 1e-09 {_LOSS} --weight-decay 0.0 "
            f"--max-tokens 4096 --update-freq 16 {_TAIL}"
        ),
        test_script="test/test-wmt14-big.sh",
        test=words(_TEST.format(beam=4, lenpen=0.6)),
        bleu="interactive.py, Moses detokenizer → tokenizer, ##AT## compound split, multi-bleu.perl",
        gpus=4,
    ),
}

#: fairseq setting -> why the pipeline's value differs from the authors' (the only differences allowed)
DEVIATIONS: dict[str, str] = {
    "max_update": "their scripts never stop (they tested checkpoints by hand); the pipeline needs a budget: "
    "--max-update, default 100000 (iwslt14) / 300000 (wmt14, wmt14-big)",
    "no_epoch_checkpoints": "the pipeline keeps no per-epoch checkpoints (disk); the interval checkpoints, "
    "checkpoint_best.pt and checkpoint_last.pt are kept as theirs are",
    "log_format": "progress as JSON lines, which the pipeline parses for its loss curves (theirs: "
    "--no-progress-bar, i.e. plain lines)",
    "no_progress_bar": "the same: a logging choice",
    "user_dir": "the plugin (their fork had the architectures built in)",
    "source_lang": "given explicitly (their fork inferred it from the data-bin's file names)",
    "target_lang": "given explicitly (as source_lang)",
}

#: per recipe: their test flags -> the pipeline's fairseq-generate equivalent, with why it is that
TEST_EQUIVALENTS: dict[str, dict[str, tuple[str, str]]] = {
    "iwslt14": {
        "--remove-bpe": (
            "--post-process sentencepiece",
            "the pipeline's IWSLT14 data uses sentencepiece BPE, not subword-nmt's '@@ ' "
            "(their --remove-bpe)",
        ),
    },
    **{
        name: {
            "--remove-bpe": (
                "--post-process subword_nmt",
                "= their --remove-bpe ('@@ '): their data recipe's subword-nmt BPE",
            )
        }
        for name in ("wmt14", "wmt14-big")
    },
}

#: per recipe: the data it trains on, and how it differs from theirs and from fairseq's scripts
DATA: dict[str, str] = {
    "iwslt14": "`macaron-preprocess-iwslt14`: their `prepare-iwslt14.sh` (fairseq's: Moses, "
    "`clean-corpus-n -ratio 1.5 1 175`, lowercased, valid = every 23rd training pair) with fairseq's "
    "alignment bug removed and joint **sentencepiece** BPE of 10000 pieces where theirs learns 10000 "
    "subword-nmt merges",
    "wmt14": "`macaron-preprocess-wmt14 --data authors`: their `prepare-wmt14en2de.sh` — europarl-v7, "
    "commoncrawl, news-commentary **v12**; `clean-corpus-n 1 80` without `-ratio` (its default 9); valid "
    "newstest2013 normalised like the training text; joint subword-nmt BPE, 32764 merges. fairseq's "
    "`prepare-wmt14en2de.sh --icml17` (`--data icml17` is close to it) differs: news-commentary v9, "
    "`-ratio 1.5 1 250`, valid = every 100th training pair, 40000 merges. Their test reference "
    "(`raw-test/en-de.de.tok.atat` of their released archive) is used when given (`--authors-test-dir`), "
    "else a stand-in built from newstest2014 as their test script treats the hypotheses, and labelled so",
}
DATA["wmt14-big"] = DATA["wmt14"]


def flag_groups(argv: Sequence[str]) -> dict[str, list[str]]:
    """``--flag value...`` groups of a command line (a switch has no values)."""
    groups: dict[str, list[str]] = {}
    current = None
    for word in argv:
        if word.startswith("--"):
            current = word
            groups[current] = []
        elif current is None:
            raise ValueError(f"value {word!r} before any flag")
        else:
            groups[current].append(word)
    return groups


def fairseq_012(argv: Sequence[str]) -> list[str]:
    """Their flags under fairseq 0.12's names (:data:`RENAMED`)."""
    return [RENAMED.get(word, word) for word in argv]


def split_training_flags(scripts: AuthorsScripts) -> tuple[dict[str, str], list[str]]:
    """``(option defaults, fixed training flags)`` of their training script: the values of
    :data:`OPTION_FLAGS` keyed by option, and every other flag (renamed for fairseq 0.12) in order, logging
    flags dropped."""
    defaults: dict[str, str] = {}
    fixed: list[str] = []
    for flag, values in flag_groups(scripts.train).items():
        if flag in OPTION_FLAGS:
            defaults[OPTION_FLAGS[flag]] = " ".join(values)
        elif flag not in LOGGING_FLAGS:
            fixed += [RENAMED.get(flag, flag), *values]
    return defaults, fixed


def parse_training(argv: Sequence[str]) -> argparse.Namespace:
    """A ``fairseq-train`` command line (without the program name) as fairseq 0.12 parses it, with the
    plugin's architectures registered."""
    from fairseq import options

    import macaron_fairseq  # noqa: F401  (the authors' archs)

    return options.parse_args_and_arch(options.get_training_parser(), input_args=list(argv))


def differences(theirs: argparse.Namespace, ours: argparse.Namespace) -> dict[str, tuple[object, object]]:
    """Every setting whose value differs between two parsed configurations."""
    keys = set(vars(theirs)) | set(vars(ours))
    return {
        key: (getattr(theirs, key, None), getattr(ours, key, None))
        for key in sorted(keys)
        if getattr(theirs, key, None) != getattr(ours, key, None)
    }
