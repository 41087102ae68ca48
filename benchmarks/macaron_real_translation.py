"""Macaron vs Transformer on real text: English→German gettext messages, equal parameters and updates.

    nohup nice -n 10 env OMP_NUM_THREADS=1 python -m benchmarks.macaron_real_translation \\
        --out-dir runs/macaron_real_translation --jobs 2 \\
        --results docs/results/macaron_real_translation.json --plot docs/macaron_real_translation.png \\
        > runs/macaron_real_translation.log 2>&1 &

Data: the English→German catalogs of the machine's installed programs
(:mod:`macaron_preprocess.sources.gettext_catalogs`), split *by package* (:func:`split_by_package`): the
messages of ``--test-packages`` are the test set, those of ``--valid-packages`` the validation set, every
other package's messages train; a source sentence is in one split only (test first, then validation), so the
test messages come from programs the models never saw. ``python -m macaron_preprocess.custom`` tokenizes,
learns a joint sentencepiece BPE on the training side and binarizes with one joined dictionary.

Models (:func:`arm_flags`): a small fairseq Transformer (``fixup_transformer_iwslt_de_en`` with standard
init: fairseq's post-LN layers) and its Macaron version (``macaron_small``: FFN½ → self-attention → FFN½ in
every encoder and decoder layer, each FFN half as wide), the same width, heads and depth. Their parameter
counts are checked to be within ``MAX_PARITY`` (0.1 %) before anything trains (:func:`parameter_counts`,
the models built as ``fairseq-train`` builds them, :mod:`macaron_fairseq.param_parity`).

Training (:func:`train_argv`): the same command for both arms but ``--arch`` and the FFN width: Adam
(0.9, 0.98), inverse-sqrt schedule with linear warm-up, dropout, label smoothing 0.1, ``--max-tokens``
batches, ``--updates`` updates; per seed the same batches in the same order for both arms (fairseq's
batching depends on the data, ``--max-tokens`` and the seed only). The validation loss is logged at every
epoch end. Test: ``fairseq-generate`` with beam 5 from the last checkpoint (both arms alike), sentencepiece
removed, Moses-detokenized and scored with sacreBLEU against the raw references
(:mod:`macaron_tools.score_bleu`); each row records the output's length too — sacreBLEU's system and
reference lengths, their ratio and the brevity penalty (:func:`length_fields`). The final checkpoint of
every run stays in its save dir (``checkpoint_last.pt``), so that decoding settings can be chosen on the
validation set afterwards without training again.

Initialisation: each arch builds as it is registered (:mod:`macaron_fairseq.models.authors_init`): the
``authors`` configuration's archs with the authors' initialisation, the ``post-ln`` ones with fairseq
0.12's; the results record which (``initialisation``). The ``authors`` grid of commit 0f932dd, which ran
before the authors' archs had their initialisation, is kept as
``docs/results/macaron_real_translation_authors_fairseq_init.json``.

Resumable: a run's checkpoints and log live in ``OUT_DIR/runs/ARM-sSEED``; a finished run is one row of
``OUT_DIR/results.jsonl``. A rerun of the same command skips the finished runs and resumes an interrupted
one from its last checkpoint (``--save-interval-updates``; a run killed before its first checkpoint starts
over). ``--results`` rewrites the results file after every finished run.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import real_text_grid as grid
from benchmarks.real_text_grid import data_is_frozen, freeze_data, run_step, write_pairs
from benchmarks.results_file import REPO, machine_info
from macaron_preprocess.sources.gettext_catalogs import LOCALE_ROOT, Catalog, catalog_paths, read_catalogs
from macaron_preprocess.text.layout import data_bin_of
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.cli import quiet_loggers
from macaron_workflow.grid import RowFile, Slot

ARMS = {"transformer": "fixup_transformer_iwslt_de_en", "macaron": "macaron_small"}
#: the architectures of each configuration (``--config``): this plugin's post-LN ones (fairseq's default
#: placement, attention and ReLU dropout 0) or the Macaron authors' own (pre-LN, attention and ReLU dropout
#: 0.1; :mod:`macaron_fairseq.models.authors`)
CONFIGS: dict[str, dict[str, str]] = {
    "post-ln": ARMS,
    "authors": {"transformer": "transformer_iwslt_de_en_v2", "macaron": "transformer_iwslt_de_en_macaron_v2"},
}
MAX_PARITY = 1e-3  # |Macaron − Transformer| / Transformer parameters


@dataclass(frozen=True)
class TranslationProtocol:
    """Everything a run depends on except (arm, seed)."""

    lang: str = "de"
    valid_packages: tuple[str, ...] = ("wget", "make")
    test_packages: tuple[str, ...] = ("coreutils", "diffutils", "findutils", "grep", "sed")
    bpe_vocab_size: int = 8000
    dim: int = 128
    heads: int = 4
    layers: int = 3  # encoder and decoder
    ffn: int = 512  # the Transformer's; Macaron: two FFNs of ffn / 2
    dropout: float = 0.1
    lr: float = 1e-3
    warmup: int = 200
    max_tokens: int = 2048
    updates: int = 1000
    eval_every: int = 200  # updates between validations (and at every epoch end)
    beam: int = 5
    config: str = "post-ln"  # the architectures: CONFIGS[config]


PROTOCOL_OPTIONS = (
    "config",
    "updates",
    "warmup",
    "dim",
    "ffn",
    "layers",
    "heads",
    "max_tokens",
    "bpe_vocab_size",
)
"""The protocol's fields a command line may set."""
PROTOCOL_HELPS = {
    "config": "the architectures: post-ln (macaron_small vs fixup_transformer_iwslt_de_en, fairseq's "
    "post-LN defaults) or authors (transformer_iwslt_de_en_macaron_v2 vs transformer_iwslt_de_en_v2: pre-LN, "
    "attention and ReLU dropout 0.1, the Macaron authors' training configuration)",
    "ffn": "the Transformer's FFN width (Macaron: 2 × half)",
}


def archs_of(protocol: dict[str, Any] | TranslationProtocol) -> dict[str, str]:
    """arm -> arch of a protocol (a results file's protocol dict, which older files lack ``config`` in)."""
    config = protocol["config"] if isinstance(protocol, dict) and "config" in protocol else "post-ln"
    if isinstance(protocol, TranslationProtocol):
        config = protocol.config
    return CONFIGS[config]


def initialisations(p: dict[str, Any] | TranslationProtocol) -> dict[str, str]:
    """arm -> the initialisation its arch builds with (:mod:`macaron_fairseq.models.authors_init`)."""
    from macaron_fairseq.models.authors_init import initialisation_of

    return {arm: initialisation_of(arch) for arm, arch in archs_of(p).items()}


# ----------------------------------------------------------------------------------------------- data


def split_by_package(
    catalogs: list[Catalog], valid_packages: tuple[str, ...], test_packages: tuple[str, ...]
) -> dict[str, list[tuple[str, str]]]:
    """``{"train", "valid", "test"}`` pairs, split by the package a message comes from. A source sentence
    occurs in one split only: test claims it first, then validation, then training (so a message shared by a
    test program and a training program — gnulib's, say — is a test message). Within a split the first
    translation of a source wins; the pairs are sorted by source."""
    names = {c.package for c in catalogs}
    missing = sorted((set(valid_packages) | set(test_packages)) - names)
    if missing:
        raise ValueError(f"no readable catalog for {missing}")
    both = sorted(set(valid_packages) & set(test_packages))
    if both:
        raise ValueError(f"packages in both the validation and the test set: {both}")
    splits: dict[str, dict[str, str]] = {"test": {}, "valid": {}, "train": {}}

    def split_of(package: str) -> str:
        return "test" if package in test_packages else "valid" if package in valid_packages else "train"

    claimed: set[str] = set()
    for split in ("test", "valid", "train"):
        for c in sorted(catalogs, key=lambda c: c.package):
            if split_of(c.package) != split:
                continue
            for source, target in c.pairs:
                if source not in claimed or source in splits[split]:
                    splits[split].setdefault(source, target)
        claimed |= set(splits[split])
    return {split: sorted(pairs.items()) for split, pairs in splits.items()}


def build_corpus(out: Path, p: TranslationProtocol, root: Path = LOCALE_ROOT) -> dict:
    """The raw splits under ``out/raw`` (reused when ``out/corpus.json`` exists) and their summary."""
    summary_path = out / "corpus.json"
    if summary_path.exists():
        return json.loads(summary_path.read_text())
    catalogs, unreadable = read_catalogs(catalog_paths(p.lang, root))
    try:
        splits = split_by_package(catalogs, p.valid_packages, p.test_packages)
    except ValueError as err:
        raise SystemExit(f"{root / p.lang / 'LC_MESSAGES'}: {err}") from None
    train = splits["train"]
    random.Random(0).shuffle(train)  # the packages' messages interleaved (fairseq batches by length)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for name, pairs in splits.items():
        write_pairs(raw / name, pairs, "en", p.lang)
    summary = {
        "pairs": {k: len(v) for k, v in splits.items()},
        "catalogs": len(catalogs),
        "valid_packages": list(p.valid_packages),
        "test_packages": list(p.test_packages),
        "unreadable_catalogs": unreadable,
    }
    write_text_atomically(summary_path, json.dumps(summary, indent=2) + "\n")
    return summary


@functools.cache
def data_bin_in(out: Path) -> Path:
    """The data-bin of ``OUT/pre`` (``macaron_preprocess.custom --dest``): ``OUT/pre`` itself, or
    ``OUT/pre/data-bin`` in an out-dir preprocessed before ``--dest`` was the data-bin (one line says so)."""
    return data_bin_of(out / "pre")


def build_data_bin(out: Path, p: TranslationProtocol) -> Path:
    """``python -m macaron_preprocess.custom`` on the raw splits (its stages resume by themselves), once.
    (A rerun continues an out-dir of the old layout in that layout: the data-bin stays where it was.)"""
    data_bin = data_bin_in(out)
    if data_is_frozen(out, data_bin):
        return data_bin
    raw = out / "raw"
    q = shlex.quote
    run_step(
        shlex.split(
            f"{q(sys.executable)} -m macaron_preprocess.custom --src en --tgt {q(p.lang)} "
            f"--trainpref {q(str(raw / 'train'))} --validpref {q(str(raw / 'valid'))} "
            f"--testpref {q(str(raw / 'test'))} --dest {q(str(out / 'pre'))} "
            f"--bpe-vocab-size {p.bpe_vocab_size} --workers 1"
        ),
        "macaron_preprocess.custom",
        out / "preprocess.log",
    )
    freeze_data(out, data_bin)
    return data_bin


# ---------------------------------------------------------------------------------------------- models


def arm_flags(p: TranslationProtocol, arm: str) -> list[str]:
    """The model flags of one arm: the same but ``--arch`` and the FFN width (Macaron: each FFN half)."""
    ffn = p.ffn if arm == "transformer" else p.ffn // 2
    return shlex.split(
        f"--arch {shlex.quote(archs_of(p)[arm])} --encoder-embed-dim {p.dim} --decoder-embed-dim {p.dim} "
        f"--encoder-ffn-embed-dim {ffn} --decoder-ffn-embed-dim {ffn} "
        f"--encoder-attention-heads {p.heads} --decoder-attention-heads {p.heads} "
        f"--encoder-layers {p.layers} --decoder-layers {p.layers} --share-all-embeddings "
        f"--dropout {p.dropout}"
    )


def parameter_counts(data_bin: Path, p: TranslationProtocol) -> dict[str, int]:
    """Each arm's parameter count, the model built as ``fairseq-train`` builds it on this dictionary."""
    from macaron_fairseq.param_parity import count_parameters

    quiet_loggers("fairseq")
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("src", "tgt"):  # count_parameters builds an src→tgt task
            shutil.copy(data_bin / f"dict.{p.lang}.txt", Path(tmp) / f"dict.{side}.txt")
        counts = {}
        for arm in ARMS:
            flags = arm_flags(p, arm)
            arch = flags[flags.index("--arch") + 1]
            rest = flags[: flags.index("--arch")] + flags[flags.index("--arch") + 2 :]
            counts[arm] = count_parameters(Path(tmp), arch, rest)
    return counts


def check_parity(counts: dict[str, int]) -> float:
    """The relative difference Macaron − Transformer; refuses more than ``MAX_PARITY``."""
    return grid.check_parity(counts, "macaron", "transformer", MAX_PARITY)


# ------------------------------------------------------------------------------------------------ runs


@dataclass(frozen=True, order=True)
class RunKey:
    arm: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.arm}-s{self.seed}"


def task_args(data_bin: Path, p: TranslationProtocol) -> list[str]:
    """The data, the plugin and the task, as both fairseq-train and fairseq-generate take them."""
    q = shlex.quote
    return shlex.split(
        f"{q(str(data_bin))} --user-dir {q(str(REPO / 'macaron_fairseq'))} --task translation "
        f"-s en -t {q(p.lang)}"
    )


def train_argv(data_bin: Path, save_dir: Path, p: TranslationProtocol, key: RunKey) -> list[str]:
    """The ``fairseq-train`` command of one run (checkpoint every 200 updates and at every epoch end, the
    last one kept; fairseq resumes from ``checkpoint_last.pt`` in ``save_dir``)."""
    q = shlex.quote
    return [
        "fairseq-train",
        *task_args(data_bin, p),
        *arm_flags(p, key.arm),
        *shlex.split(
            f"--optimizer adam --adam-betas '(0.9, 0.98)' --lr {q(repr(p.lr))} --clip-norm 0 "
            f"--lr-scheduler inverse_sqrt --warmup-updates {p.warmup} --warmup-init-lr 1e-7 "
            "--criterion label_smoothed_cross_entropy --label-smoothing 0.1 "
            f"--max-tokens {p.max_tokens} --max-update {p.updates} --seed {key.seed} "
            f"--save-dir {q(str(save_dir))} --no-epoch-checkpoints --save-interval-updates 200 "
            "--keep-interval-updates 1 --cpu --num-workers 0 --log-format simple --log-interval 50 "
            f"--validate-interval-updates {p.eval_every}"
        ),
    ]


def generate_argv(
    data_bin: Path,
    checkpoint: Path,
    p: TranslationProtocol,
    subset: str = "test",
    lenpen: float | None = None,
) -> list[str]:
    """``fairseq-generate`` of ``subset`` with the protocol's beam (and ``--lenpen``, when given)."""
    q = shlex.quote
    return [
        "fairseq-generate",
        *task_args(data_bin, p),
        *shlex.split(f"--path {q(str(checkpoint))} --gen-subset {q(subset)}"),
        *(["--lenpen", str(lenpen)] if lenpen is not None else []),
        *shlex.split(f"--beam {p.beam} --post-process sentencepiece --batch-size 64 --cpu --num-workers 0"),
    ]


VALID_RE = re.compile(
    r"epoch (\d+) \| valid on 'valid' subset \| loss (\S+) \| nll_loss (\S+) \| ppl \S+ .*?"
    r"\| num_updates (\d+)"
)
PARAMS_RE = re.compile(r"num\. shared model params: ([\d,]+)")
WPS_RE = re.compile(r"\| train \| .*?\| wps (\S+) .*?\| num_updates (\d+)")


def parse_train_log(log: str) -> dict[str, Any]:
    """The validation points ``[[epoch, update, loss, nll], ...]`` (bits; a point repeated by a resumed
    run counted once), the parameter count fairseq logged and the last epoch's training words/s."""
    points: dict[int, list[float]] = {}
    for epoch, loss, nll, update in VALID_RE.findall(log):
        points[int(update)] = [int(epoch), int(update), float(loss), float(nll)]
    params = PARAMS_RE.findall(log)
    wps = WPS_RE.findall(log)
    return {
        "valid_curve": [points[u] for u in sorted(points)],
        "params_logged": int(params[-1].replace(",", "")) if params else None,
        "train_wps_last_epoch": float(wps[-1][0]) if wps else None,
    }


def has_last_checkpoint(save_dir: Path) -> bool:
    return (save_dir / "checkpoint_last.pt").exists()


def prepare_run_dir(run_dir: Path) -> Path:
    """The run's save dir. A run with a ``checkpoint_last.pt`` resumes from it (its log goes on); one
    without (never started, or killed before its first checkpoint) starts cleanly: its partial log,
    checkpoints and attempt record are removed."""
    return grid.prepare_run_dir(run_dir, "checkpoints", "train.log", has_last_checkpoint)


def run_one(out: Path, data_bin: Path, p: TranslationProtocol, key: RunKey, slot: Slot) -> dict[str, Any]:
    """Train (or resume) one run, translate the test set, score it; the results row."""
    from macaron_tools.score_bleu import score_file

    run_dir = out / "runs" / key.name
    save_dir = prepare_run_dir(run_dir)
    env = slot.env(dict(os.environ, MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore"))
    argv = train_argv(data_bin, save_dir, p, key)
    rc, seconds, attempts = grid.run_attempt(argv, env, run_dir, "train.log")
    log_text = (run_dir / "train.log").read_text(encoding="utf-8", errors="replace")
    parsed = parse_train_log(log_text)
    command = grid.shown_command(argv, {data_bin: "DATA", save_dir: "SAVE_DIR"})
    row: dict[str, Any] = {**asdict(key), "rc": rc, **parsed, "command": command}
    row["train_seconds"], row["train_attempts"] = seconds, attempts
    last_update = parsed["valid_curve"][-1][1] if parsed["valid_curve"] else 0
    if rc != 0 or last_update != p.updates:
        row["error"] = log_text[-1500:]
        return row
    gen = run_dir / "generate-test.txt"
    gen_argv = generate_argv(data_bin, save_dir / "checkpoint_last.pt", p)
    proc = subprocess.run(gen_argv, env=env, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        row["rc"], row["error"] = proc.returncode, proc.stderr[-1500:]
        return row
    write_text_atomically(gen, proc.stdout)
    pre = out / "pre"  # raw/, tok/ (the data-bin is OUT/pre, or OUT/pre/data-bin in the old layout)
    raw_ref, tok_ref = pre / "raw" / f"test.{p.lang}", pre / "tok" / f"test.{p.lang}"
    scores, _ = score_file(str(gen), raw_ref, tok_ref, p.lang, ("sacrebleu", "tokenized"))
    row["test_bleu"] = scores["scores"]["sacrebleu"]["score"]
    row["test_bleu_signature"] = scores["scores"]["sacrebleu"]["signature"]
    row |= length_fields(scores["scores"]["sacrebleu"], "test")
    row["test_bleu_tokenized"] = scores["scores"]["tokenized"]["score"]
    row["test_sentences"] = scores["n_sentences"]
    return row


def length_fields(record: dict[str, Any], split: str) -> dict[str, Any]:
    """The output length of a sacreBLEU record: system and reference length (tokens of sacreBLEU's
    tokenizer), their ratio and the brevity penalty BP = min(1, exp(1 − ref/sys)) BLEU multiplies by."""
    sys_len, ref_len = record["sys_len"], record["ref_len"]
    return {
        f"{split}_sys_len": sys_len,
        f"{split}_ref_len": ref_len,
        f"{split}_length_ratio": round(sys_len / ref_len, 4) if ref_len else None,
        f"{split}_bp": record["brevity_penalty"],
    }


def finished(row: dict) -> bool:
    return row.get("rc") == 0 and "error" not in row and "test_bleu" in row


# ---------------------------------------------------------------------------------------------- report


def plot(r: dict, path: Path) -> None:
    """Validation loss over updates, one line per run (colour = arm)."""
    plt = grid.pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    colours = {"transformer": "tab:blue", "macaron": "tab:orange"}
    for row in sorted(r["rows"], key=lambda x: (x["arm"], x["seed"])):
        if not finished(row):
            continue
        xs = [pt[1] for pt in row["valid_curve"]]
        ys = [pt[2] for pt in row["valid_curve"]]
        label = (
            row["arm"] if row["seed"] == min(x["seed"] for x in r["rows"] if x["arm"] == row["arm"]) else None
        )
        ax.plot(xs, ys, marker="o", markersize=3, color=colours[row["arm"]], alpha=0.8, label=label)
    ax.set_xlabel("updates")
    ax.set_ylabel("validation loss (bits, label-smoothed)")
    config = r["protocol"].get("config", "post-ln")
    ax.set_title(f"gettext en→de, unseen programs, {config} archs: one line per seed")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    grid.save_figure(fig, path)


# ------------------------------------------------------------------------------------------------ main


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (the protocol's from its dataclass)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    grid.add_grid_arguments(ap, list(ARMS), REPO / "runs" / "macaron_real_translation")
    grid.add_protocol_arguments(
        ap, TranslationProtocol, PROTOCOL_OPTIONS, PROTOCOL_HELPS, choices={"config": list(CONFIGS)}
    )
    return ap


def main() -> None:
    a = parser().parse_args()
    p = grid.protocol_from_args(TranslationProtocol, a, PROTOCOL_OPTIONS)
    machine = machine_info()
    rows = RowFile(a.out_dir)
    rows.claim(p)
    corpus = build_corpus(a.out_dir, p)
    print(f"corpus: {corpus['pairs']}", flush=True)
    data_bin = build_data_bin(a.out_dir, p)
    kept = {
        s: (a.out_dir / "pre" / "raw" / f"{s}.en").read_text(encoding="utf-8").count("\n")
        for s in ("train", "valid", "test")
    }
    counts = parameter_counts(data_bin, p)
    parity = check_parity(counts)
    print(f"parameters: {counts} (Macaron − Transformer: {100 * parity:+.4f} %)", flush=True)

    def results(rows: list[dict]) -> dict[str, Any]:
        return {
            "protocol": asdict(p),
            "corpus": corpus,
            "kept": kept,
            "parameters": counts,
            "parity": parity,
            "initialisation": initialisations(p),
            "seeds": a.seeds,
            "arms": a.arms,
            "rows": rows,
        }

    def describe(_key: RunKey, row: dict) -> str:
        loss = row["valid_curve"][-1][2] if row["valid_curve"] else None
        return f"BLEU {row.get('test_bleu')}, valid loss {loss}, {row['train_seconds']} s"

    wanted = [RunKey(arm, seed) for seed in a.seeds for arm in a.arms]
    publication = grid.Publication(rows, wanted, finished, results, plot, machine, a.results, a.plot)
    if a.publish_only:
        publication.write()
        return
    grid.run(publication, lambda key, slot: run_one(a.out_dir, data_bin, p, key, slot), describe, a.jobs)


if __name__ == "__main__":
    from macaron_workflow.cli import run_cli

    run_cli(main, "python -m benchmarks.macaron_real_translation")
