"""What evaluating the Macaron authors' IWSLT14 De→En model with their test command costs on this machine.

Lu et al. released a trained IWSLT14 De→En ``small`` Macaron model (fairseq 0.6; arch
``transformer_iwslt_de_en_macaron_v2``: d 512, 4 heads, 6+6 layers, two FFNs of 512 per layer, pre-LN,
embeddings shared over a joined BPE dictionary) and test it with ``generate.py DATA --path CKPT --batch-size
128 --beam 5 --lenpen 1.0 --remove-bpe`` (``translation/macaron-scripts/test/test-iwslt14.sh``; their README
prints ``BLEU4 = 35.43 ... syslen=127659, reflen=131156``). Their model cannot be downloaded here, so this
benchmark measures the same command on a model of exactly their size with random weights:

1. a joined dictionary of ``--bpe-types`` BPE types (an assumption: their dictionary is not known here),
   padded with fairseq's ``madeupwordNNNN`` entries to a multiple of 8 as fairseq's preprocessing pads it;
2. a synthetic test set of ``--sentences`` pairs (see :class:`LengthModel`: the word count of each pair is
   drawn from a gamma distribution with the mean of their test set, 131,156 / 6,750 words; each word is one
   BPE token, or two with the probability that gives the BPE tokens per sentence of fairseq's own
   ``prepare-iwslt14.sh`` 10k-BPE test set), binarized by the real ``fairseq-preprocess`` in the format of
   their released data (``--dataset-impl lazy``: fairseq 0.6's indexed dataset) with that dictionary as
   ``--srcdict``/``--tgtdict``;
3. the model built as ``fairseq-train`` builds it (fairseq's training parser and translation task,
   ``--arch transformer_iwslt_de_en_macaron_v2 --share-all-embeddings``), random weights (``--seed``), saved
   as a checkpoint of weights + config that ``fairseq-generate --user-dir macaron_fairseq`` loads (the layout
   ``python -m macaron_fairseq.upgrade`` writes);
4. ``fairseq-generate DATA --user-dir macaron_fairseq --path CKPT --batch-size 128 --beam 5 --lenpen 1.0
   --remove-bpe --gen-subset test -s de -t en --cpu --max-len-a 1 --max-len-b 0``, once per thread setting
   (``--threads``: ``default``, torch's own choice, and/or numbers for ``OMP_NUM_THREADS``) and repeat
   (``--repeats``), each in a fresh process: wall-clock and CPU
   seconds (user + system, ``os.wait4`` of that process and the children it reaped: its data-loader worker),
   peak RSS (``ru_maxrss``: the largest single process), the 1-min load before and after, and fairseq's own
   ``Translated N sentences (T tokens) in S s`` line (time inside the beam search only).

The length cap: a random model never ranks end-of-sentence first, so under fairseq's default ``--max-len-b
200`` every hypothesis would run 200 steps, far beyond a trained model's. ``--max-len-a 1 --max-len-b 0``
stops decoding at the source length, about what a trained model emits. fairseq applies the cap per batch
(``src_tokens.size(1)``: the longest source of the batch with its ``</s>``), so every hypothesis of a batch
has that many tokens + 1; the results compare the generated tokens with a cap per sentence and with an
estimate of a trained model's (their syslen in words × the BPE tokens per word + one ``</s>`` per sentence).

    python -m benchmarks.authors_eval_cost [--repeats 1] [--threads default [1]] [--sentences 6750]
        [--bpe-types 10000] [--workdir runs/authors_eval_cost] [--json docs/results/authors_eval_cost.json]

A scaled-down run for tests: ``--sentences 20 --bpe-types 100 --dim 32 --ffn 32 --layers 2``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.results_file import (
    RESULTS_DIR,
    machine_info,
    source_commit,
    write_results,
)
from macaron_workflow.atomic import atomic_output, write_text_atomically
from macaron_workflow.errors import ReportedError

REPO = Path(__file__).resolve().parents[1]
PROG = "python -m benchmarks.authors_eval_cost"

ARCH = "transformer_iwslt_de_en_macaron_v2"
SOURCE_LANG, TARGET_LANG = "de", "en"

#: the authors' IWSLT14 test set, from the BLEU line of their README (``translation/README.md``)
AUTHORS_SENTENCES = 6_750
AUTHORS_REFLEN_WORDS = 131_156
AUTHORS_SYSLEN_WORDS = 127_659
AUTHORS_BLEU = 35.43

#: fairseq's ``examples/translation/prepare-iwslt14.sh`` (10k BPE merges, the script theirs adapts) as
#: ``fairseq-preprocess`` reports its test set in a public log: test.de 161,838 and test.en 156,928 tokens
#: for 6,750 sentences, both counting one ``</s>`` per sentence; 131,161 English words (its BLEU reflen)
REFERENCE_DE_TOKENS = 161_838 - 6_750
REFERENCE_EN_TOKENS = 156_928 - 6_750
REFERENCE_EN_WORDS = 131_161

#: their test flags (test-iwslt14.sh), then what this benchmark adds
THEIR_FLAGS = ("--batch-size", "128", "--beam", "5", "--lenpen", "1.0", "--remove-bpe")

TRANSLATED = re.compile(
    r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s "
    r"\(([\d.]+) sentences/s, ([\d.]+) tokens/s\)"
)
BLEU = re.compile(
    r"Generate (\S+) with beam=(\d+): BLEU4 = ([\d.]+), \S+ \(BP=([\d.]+), ratio=([\d.]+), "
    r"syslen=(\d+), reflen=(\d+)\)"
)


# ----------------------------------------------------------------------------------------- the test set
@dataclass(frozen=True)
class LengthModel:
    """The sentence lengths of the synthetic test set.

    Each pair has ``n`` words on both sides, ``n = clip(round(Gamma(shape, mean / shape)), 1, max_words)``;
    each word is one BPE token, or two (``a@@ b``, joined again by ``--remove-bpe``) with probability
    ``de_split`` / ``en_split``. The defaults: the mean word count of their test set (reflen / sentences),
    and the split probabilities that give the BPE tokens per word of fairseq's 10k-BPE IWSLT14 test set —
    German BPE tokens per English word for the source, as the word count is shared."""

    sentences: int = AUTHORS_SENTENCES
    mean_words: float = AUTHORS_REFLEN_WORDS / AUTHORS_SENTENCES
    shape: float = 2.0
    max_words: int = 250
    de_split: float = REFERENCE_DE_TOKENS / REFERENCE_EN_WORDS - 1
    en_split: float = REFERENCE_EN_TOKENS / REFERENCE_EN_WORDS - 1

    def describe(self) -> str:
        return (
            f"{self.sentences:,} pairs; words per pair (both sides) ~ round(Gamma(shape {self.shape:g}, mean "
            f"{self.mean_words:.2f})) clipped to 1..{self.max_words}; each word 1 BPE token, or 2 with "
            f"probability {self.de_split:.3f} (de) / {self.en_split:.3f} (en), i.e. "
            f"{1 + self.de_split:.3f} / {1 + self.en_split:.3f} BPE tokens per word"
        )


@dataclass(frozen=True)
class Sizes:
    """Words and BPE tokens (without ``</s>``) per sentence of a generated test set."""

    words: np.ndarray
    de_tokens: np.ndarray
    en_tokens: np.ndarray

    def summary(self) -> dict[str, Any]:
        n = len(self.words)
        return {
            "sentences": n,
            "words": int(self.words.sum()),
            "words_per_sentence": float(self.words.mean()),
            "words_per_sentence_max": int(self.words.max()),
            "de_bpe_tokens": int(self.de_tokens.sum()),
            "en_bpe_tokens": int(self.en_tokens.sum()),
            "de_bpe_tokens_per_sentence": float(self.de_tokens.mean()),
            "en_bpe_tokens_per_sentence": float(self.en_tokens.mean()),
            "de_bpe_tokens_per_sentence_max": int(self.de_tokens.max()),
        }


def draw_sizes(
    model: LengthModel, rng: np.random.Generator
) -> tuple[Sizes, list[np.ndarray], list[np.ndarray]]:
    """The word counts and, per sentence, the number of BPE tokens of each word (source, target)."""
    raw = rng.gamma(model.shape, model.mean_words / model.shape, model.sentences)
    words = np.clip(np.rint(raw), 1, model.max_words).astype(np.int64)
    de_pieces = [1 + (rng.random(n) < model.de_split).astype(np.int64) for n in words]
    en_pieces = [1 + (rng.random(n) < model.en_split).astype(np.int64) for n in words]
    sizes = Sizes(words, np.array([p.sum() for p in de_pieces]), np.array([p.sum() for p in en_pieces]))
    return sizes, de_pieces, en_pieces


@dataclass(frozen=True)
class Vocabulary:
    """``bpe_types`` BPE types: every 4th a non-final piece (``c123@@``), the others word-final (``w123``);
    the dictionary file adds fairseq's ``madeupwordNNNN`` fillers so that, with its 4 special symbols, it
    has a multiple of ``padding_factor`` entries (fairseq's ``Dictionary.finalize``)."""

    bpe_types: int
    padding_factor: int = 8

    @property
    def size(self) -> int:
        """Entries of the loaded dictionary (= embedding rows): specials + types + fillers."""
        return math.ceil((4 + self.bpe_types) / self.padding_factor) * self.padding_factor

    def types(self) -> list[str]:
        return [f"c{i}@@" if i % 4 == 3 else f"w{i}" for i in range(self.bpe_types)]

    def dictionary_text(self) -> str:
        fillers = [f"madeupword{i:04d} 0" for i in range(self.size - 4 - self.bpe_types)]
        return "".join(f"{t} {self.bpe_types - i}\n" for i, t in enumerate(self.types())) + "".join(
            f"{f}\n" for f in fillers
        )


def sentence_text(
    pieces: np.ndarray, finals: np.ndarray, continued: np.ndarray, rng: np.random.Generator
) -> str:
    """One BPE-encoded sentence: a word of k pieces is k-1 non-final pieces then a final one."""
    out: list[str] = []
    for k in pieces:
        out.extend(continued[rng.integers(len(continued), size=k - 1)])
        out.append(finals[rng.integers(len(finals))])
    return " ".join(out)


def write_test_set(text_dir: Path, vocab: Vocabulary, model: LengthModel, seed: int) -> Sizes:
    """``test.de``/``test.en`` (BPE-encoded text) and ``dict.txt`` (the joined dictionary) in ``text_dir``."""
    rng = np.random.default_rng(seed)
    sizes, de_pieces, en_pieces = draw_sizes(model, rng)
    types = np.array(vocab.types())
    continued = types[np.char.endswith(types, "@@")]
    finals = types[~np.char.endswith(types, "@@")]
    text_dir.mkdir(parents=True, exist_ok=True)
    for lang, pieces in ((SOURCE_LANG, de_pieces), (TARGET_LANG, en_pieces)):
        lines = [sentence_text(p, finals, continued, rng) for p in pieces]
        write_text_atomically(text_dir / f"test.{lang}", "".join(line + "\n" for line in lines))
    write_text_atomically(text_dir / "dict.txt", vocab.dictionary_text())
    return sizes


def binarize(text_dir: Path, dest: Path) -> None:
    """The real ``fairseq-preprocess`` in the format of their released data-bin (fairseq 0.6's indexed
    dataset), with the joined dictionary as both dictionaries."""
    q = shlex.quote
    dictionary = text_dir / "dict.txt"
    argv = shlex.split(
        f"fairseq-preprocess --source-lang {SOURCE_LANG} --target-lang {TARGET_LANG} "
        f"--testpref {q(str(text_dir / 'test'))} --destdir {q(str(dest))} "
        f"--srcdict {q(str(dictionary))} --tgtdict {q(str(dictionary))} --dataset-impl lazy --workers 1"
    )
    proc = subprocess.run([executable(argv[0]), *argv[1:]], capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise ReportedError(f"fairseq-preprocess failed ({proc.returncode}): {proc.stderr[-2000:]}")
    magic = (dest / f"test.{SOURCE_LANG}-{TARGET_LANG}.{SOURCE_LANG}.idx").read_bytes()[:8]
    if magic != b"TNTIDX\x00\x00":
        raise ReportedError(
            f"fairseq-preprocess did not write fairseq 0.6's indexed format (magic {magic!r})"
        )


# ------------------------------------------------------------------------------------------------ model
def model_overrides(a: argparse.Namespace) -> list[str]:
    """Command-line flags that shrink the model (tests); empty for the authors' size."""
    flags: list[str] = []
    for value, names in (
        (a.dim, ("--encoder-embed-dim", "--decoder-embed-dim")),
        (a.ffn, ("--encoder-ffn-embed-dim", "--decoder-ffn-embed-dim")),
        (a.heads, ("--encoder-attention-heads", "--decoder-attention-heads")),
        (a.layers, ("--encoder-layers", "--decoder-layers")),
    ):
        if value is not None:
            for name in names:
                flags += [name, str(value)]
    return flags


def save_random_checkpoint(data_bin: Path, path: Path, overrides: list[str], seed: int) -> dict[str, Any]:
    """Build the model as ``fairseq-train`` does (its parser, the translation task over ``data_bin``'s
    dictionaries), random weights from ``seed``; save weights + config as a checkpoint fairseq-generate
    loads. Returns its parameter count and settings."""
    import fairseq
    import torch
    from fairseq import options, tasks

    import macaron_fairseq  # noqa: F401  (registers the authors' archs)
    from macaron_fairseq.checkpoint_reader import cfg_of, fairseq_checkpoint

    argv = shlex.split(
        f"{shlex.quote(str(data_bin))} --task translation -s {SOURCE_LANG} -t {TARGET_LANG} --arch {ARCH} "
        f"--share-all-embeddings --seed {seed}"
    )
    argv += overrides
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
    torch.manual_seed(seed)
    task = tasks.setup_task(args)
    model = task.build_model(args)
    checkpoint = fairseq_checkpoint(cfg_of(args), model.state_dict(), "LabelSmoothedCrossEntropyCriterion")
    with atomic_output(path) as tmp:
        torch.save(checkpoint, tmp)
    m = vars(args)  # the settings the architecture filled in
    info = {
        "arch": ARCH,
        "overrides": overrides,
        "parameters": sum(p.numel() for p in model.parameters()),
        "embedding_rows": model.encoder.embed_tokens.weight.shape[0],
        "embed_dim": m["encoder_embed_dim"],
        "ffn_embed_dim": m["encoder_ffn_embed_dim"],
        "attention_heads": m["encoder_attention_heads"],
        "encoder_layers": m["encoder_layers"],
        "decoder_layers": m["decoder_layers"],
        "pre_ln": bool(m["encoder_normalize_before"] and m["decoder_normalize_before"]),
        "share_all_embeddings": bool(m["share_all_embeddings"]),
        "checkpoint_bytes": path.stat().st_size,
        "seed": seed,
    }
    torch_version, default_threads = torch.__version__, torch.get_num_threads()
    del model, checkpoint
    info["torch"], info["fairseq"] = torch_version, fairseq.__version__
    info["builder_threads"] = default_threads
    return info


# ------------------------------------------------------------------------------------------- generation
def generate_argv(data_bin: Path, checkpoint: Path, max_len_a: float, max_len_b: int) -> list[str]:
    """Their test command on fairseq 0.12 with the plugin, on the CPU, with the length cap."""
    q = shlex.quote
    return shlex.split(
        f"fairseq-generate {q(str(data_bin))} --user-dir {q(str(REPO / 'macaron_fairseq'))} "
        f"--path {q(str(checkpoint))} {shlex.join(THEIR_FLAGS)} --gen-subset test "
        f"-s {SOURCE_LANG} -t {TARGET_LANG} --cpu --max-len-a {max_len_a:g} --max-len-b {max_len_b}"
    )


def thread_env(threads: str) -> dict[str, str]:
    """The environment of one setting: ``default`` leaves torch its own choice (no OMP/MKL variables),
    a number sets ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if threads != "default":
        env |= {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    return env


def torch_threads(env: dict[str, str]) -> int:
    """``torch.get_num_threads()`` of a fresh interpreter in ``env`` (what fairseq-generate gets)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(probe.stdout.split()[-1])


def executable(name: str) -> str:
    """``name`` next to this interpreter (a pyenv shim would add its own start-up to the measured
    process), else on the PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else name


def run_measured(argv: list[str], env: dict[str, str], stdout: Path, stderr: Path) -> dict[str, Any]:
    """Run ``argv`` to its end; its wall and CPU seconds and peak RSS (``os.wait4``: the process and the
    children it reaped), and the 1-min load before and after."""
    load_before = os.getloadavg()[0]
    argv = [executable(argv[0]), *argv[1:]]
    start = time.perf_counter()
    with stdout.open("w") as out, stderr.open("w") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=REPO)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    if proc.returncode != 0:
        tail = stderr.read_text(errors="replace").strip().splitlines()[-15:]
        raise ReportedError(f"{argv[0]} exited {proc.returncode} (log {stderr}): " + " | ".join(tail))
    return {
        "wall_seconds": wall,
        "user_seconds": usage.ru_utime,
        "system_seconds": usage.ru_stime,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # Linux: kB
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
    }


def parse_generate_output(text: str) -> dict[str, Any]:
    """What fairseq-generate printed: hypotheses, its ``Translated`` line (sentences, generated tokens
    — hypothesis lengths with their ``</s>`` — and the time inside the beam search), its BLEU line."""
    translated = TRANSLATED.search(text)
    bleu = BLEU.search(text)
    if translated is None or bleu is None:
        missing = "Translated line" if translated is None else "BLEU line"
        raise ReportedError(f"fairseq-generate printed no {missing}")
    hypotheses = sum(1 for line in text.splitlines() if line.startswith("H-"))
    return {
        "hypotheses": hypotheses,
        "sentences": int(translated.group(1).replace(",", "")),
        "generated_tokens": int(translated.group(2).replace(",", "")),
        "generation_seconds": float(translated.group(3)),
        "bleu": float(bleu.group(3)),
        "syslen": int(bleu.group(6)),
        "reflen": int(bleu.group(7)),
    }


def measure_run(argv: list[str], threads: str, work: Path, index: int) -> dict[str, Any]:
    env = thread_env(threads)
    row: dict[str, Any] = {"threads_setting": threads, "torch_threads": torch_threads(env), "repeat": index}
    stdout, stderr = work / f"generate-{threads}-{index}.txt", work / f"generate-{threads}-{index}.log"
    row |= run_measured(argv, env, stdout, stderr)
    # fairseq logs its Translated line to stderr here (logging is configured before generate's basicConfig)
    printed = (path.read_text(encoding="utf-8", errors="replace") for path in (stdout, stderr))
    row |= parse_generate_output("\n".join(printed))
    if row["hypotheses"] != row["sentences"]:
        raise ReportedError(f"{stdout}: {row['hypotheses']} hypotheses for {row['sentences']} sentences")
    wall = row["wall_seconds"]
    row |= {
        "sentences_per_second": row["sentences"] / wall,
        "tokens_per_second": row["generated_tokens"] / wall,
        "generation_tokens_per_second": row["generated_tokens"] / row["generation_seconds"],
        "startup_seconds": wall - row["generation_seconds"],
    }
    return row


def trained_model_tokens(lengths: LengthModel, sentences: int) -> float:
    """An estimate of what a trained model generates on ``sentences`` sentences: their syslen scaled to
    the sentence count, in BPE tokens (the target side's tokens per word), plus one ``</s>`` each."""
    words = AUTHORS_SYSLEN_WORDS * sentences / AUTHORS_SENTENCES
    return words * (1 + lengths.en_split) + sentences


# ------------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    from macaron_workflow.cli import ArgumentParser, add_deprecated_alias, positive_int

    p = ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=positive_int, default=AUTHORS_SENTENCES)
    p.add_argument(
        "--bpe-types",
        type=positive_int,
        default=10_000,
        help="BPE types of the joined dictionary (assumed; default %(default)s)",
    )
    p.add_argument(
        "--threads",
        nargs="+",
        default=["default"],
        help="'default' (torch's choice) and/or numbers (OMP_NUM_THREADS)",
    )
    p.add_argument("--repeats", type=positive_int, default=1)
    p.add_argument("--max-len-a", type=float, default=1.0)
    p.add_argument("--max-len-b", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dim", type=positive_int, help="shrink the model (tests): embedding dim")
    p.add_argument("--ffn", type=positive_int, help="shrink the model (tests): each FFN's width")
    p.add_argument("--heads", type=positive_int, help="shrink the model (tests): attention heads")
    p.add_argument("--layers", type=positive_int, help="shrink the model (tests): encoder and decoder layers")
    p.add_argument("--workdir", type=Path, default=REPO / "runs" / "authors_eval_cost")
    add_deprecated_alias(p, "--work-dir", "--workdir")
    p.add_argument("--json", type=Path, default=RESULTS_DIR / "authors_eval_cost.json")
    a = p.parse_args(argv)
    for threads in a.threads:
        if threads != "default" and not threads.isdigit():
            p.error(f"--threads {threads}: 'default' or a number")
    machine = machine_info()
    started_at = (
        source_commit()
    )  # the results file records the commit at the end, when others may have moved it
    lengths = LengthModel(sentences=a.sentences)
    vocab = Vocabulary(a.bpe_types)
    work = a.workdir
    sizes = write_test_set(work / "text", vocab, lengths, a.seed)
    data_bin = work / "data-bin"
    binarize(work / "text", data_bin)
    print(f"test set: {lengths.describe()}; drawn: {sizes.summary()}", flush=True)
    model = save_random_checkpoint(data_bin, work / "checkpoint_random.pt", model_overrides(a), a.seed)
    print(
        f"model: {ARCH}, {model['parameters']:,} parameters, {model['embedding_rows']:,} embedding rows",
        flush=True,
    )
    command = generate_argv(data_bin, work / "checkpoint_random.pt", a.max_len_a, a.max_len_b)
    runs = []
    for index in range(a.repeats):
        for threads in a.threads:
            print(f"fairseq-generate, threads {threads}, run {index + 1} (output in {work})", flush=True)
            row = measure_run(command, threads, work, index)
            runs.append(row)
            print(
                f"threads {threads} ({row['torch_threads']}), run {index + 1}: "
                f"wall {row['wall_seconds']:.1f} s, CPU {row['cpu_seconds']:.1f} s, "
                f"{row['sentences_per_second']:.2f} sentences/s, "
                f"{row['tokens_per_second']:.1f} tokens/s, peak RSS {row['peak_rss_mb']:.0f} MB, load "
                f"{row['load_1min_before']} -> {row['load_1min_after']}",
                flush=True,
            )
    machine |= {"torch": model["torch"], "torch_threads": runs[0]["torch_threads"]}
    shown = [str(part) for part in command]
    shown[1], shown[3], shown[5] = "DATA", "macaron_fairseq", "CKPT"
    results = {
        "model": model,
        "dictionary": {
            "bpe_types": vocab.bpe_types,
            "padding_factor": vocab.padding_factor,
            "size": vocab.size,
        },
        "test_set": {"length_model": asdict(lengths), "description": lengths.describe(), **sizes.summary()},
        "generate_command": " ".join(shown),
        "their_command": "generate.py DATA --path CKPT "
        + " ".join(THEIR_FLAGS)
        + f" --source-lang {SOURCE_LANG} --target-lang {TARGET_LANG}",
        "length_cap": {
            "max_len_a": a.max_len_a,
            "max_len_b": a.max_len_b,
            "trained_model_tokens_estimate": trained_model_tokens(lengths, a.sentences),
            "per_sentence_cap_tokens": int(sizes.de_tokens.sum()) + 2 * a.sentences,
        },
        "authors": {
            "sentences": AUTHORS_SENTENCES,
            "reflen": AUTHORS_REFLEN_WORDS,
            "syslen": AUTHORS_SYSLEN_WORDS,
            "bleu": AUTHORS_BLEU,
        },
        "assumptions": assumptions(vocab, lengths, a),
        "commit_at_start": started_at,
        "runs": runs,
    }
    write_results(a.json, results, machine)


def assumptions(vocab: Vocabulary, lengths: LengthModel, a: argparse.Namespace) -> list[str]:
    return [
        f"joined dictionary of {vocab.bpe_types:,} BPE types (assumed: their prepare-iwslt14.sh learns 10k "
        f"joint BPE merges; their dictionary is not known here), 4 specials, padded with fairseq's fillers "
        f"to a multiple of {vocab.padding_factor}: {vocab.size:,} embedding rows",
        f"test set: {lengths.describe()} (mean words = their reflen {AUTHORS_REFLEN_WORDS:,} / "
        f"{AUTHORS_SENTENCES:,}; BPE tokens per word from fairseq's prepare-iwslt14.sh 10k-BPE test set: "
        f"{REFERENCE_DE_TOKENS:,} de / {REFERENCE_EN_TOKENS:,} en BPE tokens, {REFERENCE_EN_WORDS:,} en "
        "words); token identities uniform within word-final and non-final pieces",
        f"random weights (seed {a.seed}): decoding is capped at --max-len-a {a.max_len_a:g} --max-len-b "
        f"{a.max_len_b} (a random model never ends a hypothesis early; fairseq's default cap is 200 tokens)",
        "fairseq 0.12's fairseq-generate with the plugin instead of their fairseq 0.6 generate.py; fairseq's "
        "other defaults (e.g. --num-workers 1)",
    ]


if __name__ == "__main__":
    from macaron_workflow.cli import run_cli

    run_cli(main, PROG)
