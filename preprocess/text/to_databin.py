"""The stages every corpus shares once its raw text exists: tokenize/clean -> joint BPE -> binarize.

:func:`tokenize_jobs` only describes the default per-split work (train cleaned, valid/test only checked);
corpus modules with other needs (IWSLT14 splits valid off the cleaned training data) build their own
:class:`~macaron_preprocess.text.tokenize_stage.TokenizeJob` list and then call :func:`bpe_and_binarize`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from macaron_preprocess.text import subword_bpe
from macaron_preprocess.text.binarize import binarize
from macaron_preprocess.text.bitext import BitextFiles
from macaron_preprocess.text.bpe import BpeConfig, apply_bpe, learn_bpe
from macaron_preprocess.text.cleaning import CleanConfig
from macaron_preprocess.text.layout import OutputLayout
from macaron_preprocess.text.moses import MosesConfig
from macaron_preprocess.text.tokenize_stage import TokenizeJob
from macaron_workflow.stages import StageRunner


def tokenize_jobs(
    layout: OutputLayout,
    inputs: Mapping[str, Sequence[BitextFiles]],
    src_config: MosesConfig,
    tgt_config: MosesConfig,
    train_clean: CleanConfig,
) -> list[TokenizeJob]:
    """One job per split; only ``train`` is length/ratio-filtered."""
    return [
        TokenizeJob(
            split=split,
            inputs=tuple(files),
            raw_out=layout.raw(split),
            tok_out=layout.tok(split),
            src_config=src_config,
            tgt_config=tgt_config,
            clean=train_clean if split == "train" else None,
        )
        for split, files in inputs.items()
    ]


def _binarize_bpe(
    runner: StageRunner, layout: OutputLayout, splits: Sequence[str], workers: int, binarizer: str
) -> None:
    """Binarize ``bpe/<split>`` of every split into the data-bin."""
    prefixes = {split: layout.bpe_prefix(split) for split in splits}
    binarize(runner, prefixes, layout.src, layout.tgt, layout.data_bin, workers, binarizer)


def bpe_and_binarize(
    runner: StageRunner,
    layout: OutputLayout,
    splits: Sequence[str],
    bpe: BpeConfig,
    workers: int,
    binarizer: str = "pool",
) -> None:
    """Learn joint BPE on ``tok/train``, encode every split into ``bpe/``, binarize into the data-bin."""
    learn_bpe(runner, layout.tok("train"), layout.spm_model, layout.spm_vocab, bpe)
    for split in splits:
        apply_bpe(runner, split, layout.tok(split), layout.bpe(split), layout.spm_model, workers)
    _binarize_bpe(runner, layout, splits, workers, binarizer)


def subword_nmt_and_binarize(
    runner: StageRunner,
    layout: OutputLayout,
    splits: Sequence[str],
    merges: int,
    workers: int,
    binarizer: str = "pool",
) -> None:
    """:func:`bpe_and_binarize` with joint subword-nmt BPE (``merges`` operations), not sentencepiece."""
    codes = layout.subword_nmt_codes
    subword_bpe.learn(runner, layout.tok("train"), codes, merges)
    for split in splits:
        subword_bpe.apply(runner, split, layout.tok(split), layout.bpe(split), codes, workers)
    _binarize_bpe(runner, layout, splits, workers, binarizer)
