"""Stage "binarize": the real ``fairseq-preprocess --joined-dictionary`` CLI, run as a subprocess.

fairseq-preprocess writes into a temporary directory; its files are checked (identical source and
target dictionaries, as ``--share-all-embeddings`` requires; one binarized sentence per BPE line on both
sides) before being moved into the destination.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from preprocess.corpus_files import ParallelFiles, check_parallel_counts, count_lines
from preprocess.errors import PreprocessError
from preprocess.stages import StageReport, StageRunner, temporary_path

_MMAP_INDEX_MAGIC = b"MMIDIDX\x00\x00"


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
        raise PreprocessError(f"{index_file} is not a fairseq mmap index")
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


def run_fairseq_preprocess(
    prefixes: Mapping[str, Path], src: str, tgt: str, temps: Mapping[Path, Path], dest: Path, workers: int
) -> StageReport:
    workdir = temporary_path(dest / "fairseq-preprocess")
    shutil.rmtree(workdir, ignore_errors=True)
    command = fairseq_preprocess_command(prefixes, src, tgt, workdir, workers)
    print("running: " + " ".join(command), file=sys.stderr, flush=True)
    try:
        completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if completed.returncode != 0:
            raise PreprocessError(
                f"fairseq-preprocess failed with exit code {completed.returncode}:\n"
                + completed.stdout[-4000:]
            )
        src_dict, tgt_dict = workdir / f"dict.{src}.txt", workdir / f"dict.{tgt}.txt"
        if src_dict.read_bytes() != tgt_dict.read_bytes():
            raise PreprocessError(f"{src_dict} and {tgt_dict} differ although --joined-dictionary was given")
        sentences = {}
        for split, prefix in prefixes.items():
            expected = count_lines(Path(f"{prefix}.{src}"))
            for lang in (src, tgt):
                index = workdir / f"{split}.{src}-{tgt}.{lang}.idx"
                found = indexed_dataset_length(index)
                if found != expected:
                    raise PreprocessError(
                        f"binarized {split}.{lang} has {found} sentences "
                        f"but {prefix}.{src} has {expected} lines"
                    )
            sentences[split] = expected
        dictionary_size = count_lines(src_dict)
        for final, temp in temps.items():
            os.replace(workdir / final.name, temp)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"sentences": sentences, "dictionary_size": dictionary_size}


def binarize(
    runner: StageRunner,
    bpe_prefixes: Mapping[str, Path],
    src: str,
    tgt: str,
    dest: Path,
    workers: int,
) -> StageReport:
    """Stage "binarize": ``fairseq-preprocess --joined-dictionary`` of the BPE files into ``dest``."""
    inputs = [Path(f"{prefix}.{lang}") for prefix in bpe_prefixes.values() for lang in (src, tgt)]
    for split, prefix in bpe_prefixes.items():
        check_parallel_counts(ParallelFiles.from_prefix(prefix, src, tgt), f"before binarizing {split}")
    outputs = [dest / name for name in binarized_files(list(bpe_prefixes), src, tgt)]
    return runner.run(
        "binarize",
        inputs,
        outputs,
        {"splits": sorted(bpe_prefixes), "src": src, "tgt": tgt, "version": 1},
        lambda temps: run_fairseq_preprocess(bpe_prefixes, src, tgt, temps, dest, workers),
    )
