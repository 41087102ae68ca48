"""Stage "binarize": BPE text -> fairseq data-bin with one joined dictionary.

Two interchangeable binarizers write the same files (byte for byte, see the tests):

* ``pool`` (default): :mod:`macaron_preprocess.text.pool_binarizer`, fairseq's own ``Dictionary`` and mmap
  dataset builder driven from a pool that keeps every worker busy in both phases (count, encode);
* ``fairseq-preprocess``: the real ``fairseq-preprocess --joined-dictionary`` CLI in a subprocess, which
  in fairseq 0.12.x hardly speeds up with ``--workers`` (its main process waits for its pool before it
  encodes its own share) and runs its counting/encoding loops one word at a time in Python.

Either writes into a temporary directory; the files are checked (identical source and target
dictionaries, as ``--share-all-embeddings`` requires; one binarized sentence per BPE line on both sides)
before being moved into the destination.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles, check_bitext_counts
from macaron_workflow import processes
from macaron_workflow.atomic import temporary_path
from macaron_workflow.errors import UserError
from macaron_workflow.files import count_lines
from macaron_workflow.stages import StageReport, StageRunner

_MMAP_INDEX_MAGIC = b"MMIDIDX\x00\x00"
BINARIZERS = ("pool", "fairseq-preprocess")


def binarized_files(splits: Sequence[str], src: str, tgt: str) -> list[str]:
    """File names fairseq-preprocess writes for these splits (mmap dataset implementation)."""
    names = [f"dict.{src}.txt", f"dict.{tgt}.txt", "preprocess.log"]
    for split in splits:
        for lang in (src, tgt):
            names += [f"{split}.{src}-{tgt}.{lang}.bin", f"{split}.{src}-{tgt}.{lang}.idx"]
    return names


def indexed_dataset_length(index_file: Path) -> int:
    """Number of sentences in a fairseq mmap ``.idx`` file (read from its header, no fairseq import)."""
    with open(index_file, "rb") as handle:
        header = handle.read(len(_MMAP_INDEX_MAGIC) + 8 + 1 + 8)
    if not header.startswith(_MMAP_INDEX_MAGIC) or len(header) < 26:
        raise UserError(f"{index_file} is not a fairseq mmap index")
    (length,) = struct.unpack("<Q", header[-8:])
    return length


def fairseq_preprocess_command(
    prefixes: Mapping[str, Path], src: str, tgt: str, destdir: Path, workers: int
) -> list[str]:
    command = [sys.executable, "-m", "fairseq_cli.preprocess", "--source-lang", src, "--target-lang", tgt]
    for split, option in (("train", "--trainpref"), ("valid", "--validpref"), ("test", "--testpref")):
        if split in prefixes:
            command += [option, str(prefixes[split])]
    return [*command, "--destdir", str(destdir), "--joined-dictionary", "--workers", str(max(1, workers))]


def run_fairseq_cli(prefixes: Mapping[str, Path], src: str, tgt: str, workdir: Path, workers: int) -> None:
    """``fairseq-preprocess --joined-dictionary`` into ``workdir``; its output is shown only on failure."""
    command = fairseq_preprocess_command(prefixes, src, tgt, workdir, workers)
    print("running: " + " ".join(command), file=sys.stderr, flush=True)
    completed = processes.run(command, capture=True)
    if completed.status != 0:
        raise UserError(
            f"fairseq-preprocess failed with exit code {completed.status}:\n" + completed.output[-4000:]
        )


def run_pool_binarizer(prefixes: Mapping[str, Path], src: str, tgt: str, workdir: Path, workers: int) -> None:
    """The same files as :func:`run_fairseq_cli`, from :mod:`macaron_preprocess.text.pool_binarizer`."""
    from macaron_preprocess.text.pool_binarizer import binarize_joined

    if "train" not in prefixes:
        raise UserError("the joined dictionary is built from the training split, which is missing")
    workdir.mkdir(parents=True)
    train = prefixes["train"]
    print(
        f"binarizing with {workers} worker(s): joined dictionary of {train}.{src} + {train}.{tgt}, then "
        f"{', '.join(prefixes)} (--binarizer fairseq-preprocess runs the fairseq CLI instead)",
        file=sys.stderr,
        flush=True,
    )
    jobs = [
        (Path(f"{prefix}.{lang}"), workdir / f"{split}.{src}-{tgt}.{lang}")
        for lang in (src, tgt)
        for split, prefix in prefixes.items()
    ]
    dictionary, summaries = binarize_joined(
        [Path(f"{train}.{src}"), Path(f"{train}.{tgt}")], jobs, workdir, workers
    )
    for lang in (src, tgt):
        dictionary.save(str(workdir / f"dict.{lang}.txt"))
    log = [f"joined dictionary of {train}.{src} + {train}.{tgt}: {len(dictionary)} types"]
    log += [
        f"{text}: {summary} (by {dictionary.unk_word})"
        for (text, _), summary in zip(jobs, summaries, strict=True)
    ]
    (workdir / "preprocess.log").write_text("\n".join(log) + "\n", encoding="utf-8")


def check_and_collect(
    prefixes: Mapping[str, Path], src: str, tgt: str, workdir: Path, temps: Mapping[Path, Path]
) -> StageReport:
    """Check the binarizer's files in ``workdir``, then move them to their temporary final names."""
    src_dict, tgt_dict = workdir / f"dict.{src}.txt", workdir / f"dict.{tgt}.txt"
    if src_dict.read_bytes() != tgt_dict.read_bytes():
        raise UserError(f"{src_dict} and {tgt_dict} differ although the dictionary is joined")
    sentences = {}
    for split, prefix in prefixes.items():
        expected = count_lines(Path(f"{prefix}.{src}"))
        for lang in (src, tgt):
            index = workdir / f"{split}.{src}-{tgt}.{lang}.idx"
            found = indexed_dataset_length(index)
            if found != expected:
                raise UserError(
                    f"binarized {split}.{lang} has {found} sentences but {prefix}.{src} has {expected} lines"
                )
        sentences[split] = expected
    dictionary_size = count_lines(src_dict)
    for final, temp in temps.items():
        os.replace(workdir / final.name, temp)
    return {"sentences": sentences, "dictionary_size": dictionary_size}


def run_binarizer(
    binarizer: str,
    prefixes: Mapping[str, Path],
    src: str,
    tgt: str,
    temps: Mapping[Path, Path],
    dest: Path,
    workers: int,
) -> StageReport:
    workdir = temporary_path(dest / "binarize")
    shutil.rmtree(workdir, ignore_errors=True)
    run = {"pool": run_pool_binarizer, "fairseq-preprocess": run_fairseq_cli}[binarizer]
    try:
        run(prefixes, src, tgt, workdir, workers)
        return {**check_and_collect(prefixes, src, tgt, workdir, temps), "binarizer": binarizer}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def binarize(
    runner: StageRunner,
    bpe_prefixes: Mapping[str, Path],
    src: str,
    tgt: str,
    dest: Path,
    workers: int,
    binarizer: str = "pool",
) -> StageReport:
    """Stage "binarize": the BPE files of every split into the data-bin ``dest`` (joined dictionary)."""
    if binarizer not in BINARIZERS:
        raise UserError(f"unknown binarizer {binarizer!r}, choose from {', '.join(BINARIZERS)}")
    inputs = [Path(f"{prefix}.{lang}") for prefix in bpe_prefixes.values() for lang in (src, tgt)]
    for split, prefix in bpe_prefixes.items():
        check_bitext_counts(BitextFiles.from_prefix(prefix, src, tgt), f"before binarizing {split}")
    outputs = [dest / name for name in binarized_files(list(bpe_prefixes), src, tgt)]
    return runner.run(
        "binarize",
        inputs,
        outputs,
        {"splits": sorted(bpe_prefixes), "src": src, "tgt": tgt, "version": 1},
        lambda temps: run_binarizer(binarizer, bpe_prefixes, src, tgt, temps, dest, workers),
    )
