"""The stages after extraction, for a corpus of documents: "collect" (all sources into
``text/{train,valid}.txt``), "learn-bpe", "bpe-{train,valid}" and "binarize".

The data-bin keeps sentence and document boundaries: one item per sentence and, for each blank line, an
item holding only ``</s>``, which is what fairseq's ``BlockPairDataset(break_mode="doc",
doc_break_size=1)`` takes as the end of a document. Every document, the last one included, is followed
by such an item (``BlockPairDataset`` only closes a document when it meets one). The dictionary is
fairseq's plain ``Dictionary`` (``<s> <pad> </s> <unk>`` first), loaded with ``Dictionary.load`` as by
fairseq's ``masked_lm`` and ``sentence_prediction`` tasks, which append ``<mask>`` themselves. (fairseq's
``BertDictionary`` puts ``<mask> <cls> <sep>`` before the words, so it would give other ids, and
``BertDictionary.load`` fails in the fairseq 0.12 forks this project uses.)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from macaron_preprocess.text.bpe import BpeConfig, encode_file, train_sentencepiece_on
from macaron_preprocess.text.corpus_layout import SPLITS, CorpusLayout
from macaron_preprocess.text.extract import ExtractOutputs
from macaron_preprocess.text.pool_binarizer import binarize_joined
from macaron_workflow.errors import UserError
from macaron_workflow.files import OutputFile, count_lines
from macaron_workflow.stages import StageReport, StageRunner


def collect(runner: StageRunner, layout: CorpusLayout, sources: Sequence[ExtractOutputs]) -> StageReport:
    """Stage "collect": the sources' text, concatenated in the order given, into ``text/``."""

    def build(temps: Mapping[Path, Path]) -> StageReport:
        report = {}
        for split in SPLITS:
            with OutputFile(temps[layout.text(split)]) as out:
                for source in sources:
                    with open(getattr(source, split), "rb") as part:
                        shutil.copyfileobj(part, out, 1 << 22)  # type: ignore[misc]
            report[f"{split}_lines"] = count_lines(temps[layout.text(split)])
        return report

    inputs = [path for source in sources for path in source.both()]
    outputs = [layout.text(split) for split in SPLITS]
    return runner.run("collect", inputs, outputs, {"version": 1}, build)


def learn_bpe(runner: StageRunner, layout: CorpusLayout, config: BpeConfig) -> StageReport:
    """Stage "learn-bpe": sentencepiece BPE on a bounded random sample of the training sentences."""
    train = layout.text("train")
    return runner.run(
        "learn-bpe",
        [train],
        [layout.spm_model, layout.spm_vocab],
        config.as_params(),
        lambda temps: train_sentencepiece_on(
            [train], temps[layout.spm_model], temps[layout.spm_vocab], config
        ),
    )


def apply_bpe(runner: StageRunner, layout: CorpusLayout, split: str, workers: int) -> StageReport:
    """Stage "bpe-<split>": blank lines (document ends) stay blank."""
    source, target = layout.text(split), layout.bpe(split)

    def build(temps: Mapping[Path, Path]) -> StageReport:
        lines = encode_file(source, temps[target], layout.spm_model, workers, split, chunk_lines=2000)
        written = count_lines(temps[target])
        if written != lines:
            raise UserError(f"bpe {split}: {source} has {lines} lines, the output {written}")
        return {"lines": lines}

    return runner.run(f"bpe-{split}", [source, layout.spm_model], [target], {"version": 1}, build)


def binarize(runner: StageRunner, layout: CorpusLayout, workers: int) -> StageReport:
    """Stage "binarize": ``dict.txt`` from the training pieces, then ``{train,valid}.{bin,idx}``."""
    outputs = [layout.dictionary, *(path for split in SPLITS for path in layout.binarized(split))]

    def build(temps: Mapping[Path, Path]) -> StageReport:
        with tempfile.TemporaryDirectory(prefix=".binarize-", dir=layout.dest) as workdir:
            prefixes = {split: Path(workdir) / split for split in SPLITS}
            jobs = [(layout.bpe(split), prefixes[split]) for split in SPLITS]
            dictionary, summaries = binarize_joined([layout.bpe("train")], jobs, Path(workdir), workers)
            dictionary.save(str(temps[layout.dictionary]))
            report: StageReport = {"dictionary_size": len(dictionary)}
            for split, summary in zip(SPLITS, summaries, strict=True):
                bin_file, idx_file = layout.binarized(split)
                shutil.move(f"{prefixes[split]}.bin", temps[bin_file])
                shutil.move(f"{prefixes[split]}.idx", temps[idx_file])
                lines = count_lines(layout.bpe(split))
                if summary.sentences != lines:
                    raise UserError(f"binarize {split}: {lines} lines but {summary.sentences} items")
                report[split] = {
                    "items": summary.sentences,
                    "tokens": summary.tokens,
                    "unk_replaced": sum(summary.replaced.values()),
                }
        return report

    inputs = [layout.bpe(split) for split in SPLITS]
    return runner.run("binarize", inputs, outputs, {"version": 1}, build)
