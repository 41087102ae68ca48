"""GLUE → fairseq ``sentence_prediction`` data, with the pre-training corpus's text processing.

    python -m macaron_preprocess.glue --glue-dir GLUE --dest DIR --checkpoint model.pt
        [--tasks CoLA,SST-2,...]

Reads the GLUE distribution as its download script unpacks it (:mod:`macaron_preprocess.sources.glue`;
downloaded with ``--download`` when absent), processes every sentence as the pre-training text was (Moses
normalization, tokenization, lowercasing, then the corpus's sentencepiece model and dictionary), and writes
one directory per task (:mod:`macaron_preprocess.text.glue_encode` gives the layout) plus ``meta.json``:
labels, number of classes, regression or not, and per split its GLUE file, example count, dropped malformed
lines and unknown pieces. AX (``diagnostic``) is written into the MNLI directory as split
``test_ax``: it is predicted with the MNLI model.

The sentencepiece model and dictionary are found from the checkpoint (its task's data directory, the
data-bin of ``python -m macaron_preprocess.bert_corpus``) or given (``--data-bin``, or
``--sentencepiece-model`` and
``--dict``); the dictionary must match the checkpoint's embeddings (its symbols + ``<mask>``) — a
mismatch is an error before anything is written. One resumable stage per task.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from macaron_preprocess.sources.glue import (
    BERT_TASKS,
    TASKS,
    GlueExample,
    TaskSpec,
    download_glue,
    read_split,
)
from macaron_preprocess.text.authors_bpe_encode import authors_bpe_codes
from macaron_preprocess.text.authors_bpe_encode import encode_sentences as encode_authors_bpe
from macaron_preprocess.text.glue_encode import STSB_SCALE, binarize_lines, encode_sentences, label_dictionary
from macaron_preprocess.text.wordpiece_encode import encode_sentences as encode_wordpiece
from macaron_preprocess.text.wordpiece_encode import wordpiece_tokenizer
from macaron_workflow.atomic import atomic_output
from macaron_workflow.cli import ArgumentParser, program_name, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.files import ensure_writable_dir
from macaron_workflow.options import add_run_options
from macaron_workflow.overlap import refuse_file_as_directory, refuse_overlap
from macaron_workflow.stages import StageReport, StageRunner

PROG = ("macaron_preprocess.glue", "macaron-preprocess-glue")
SPM_MODEL = "sentencepiece.bpe.model"
MASK_SYMBOLS = 1  # the pre-training task appends <mask> to the data-bin's dictionary


@dataclass(frozen=True)
class Vocabulary:
    sentencepiece_model: Path  # with tokenizer "wordpiece": the imported model's tokenizer.json
    dictionary: Path
    tokenizer: str = "moses+sentencepiece"  # or "wordpiece" (macaron_preprocess.text.wordpiece_encode), or
    # "authors-bpe" (an upgraded authors' BERT, sentencepiece_model its bpe-code: .text.authors_bpe_encode)


def fairseq_split_names(spec: TaskSpec) -> dict[str, str]:
    """GLUE split → fairseq split: ``train``, ``valid`` (the first dev set), ``valid_mismatched``, ``test``
    (the first test set), ``test_mismatched``. Not ``valid1``: fairseq would concatenate it to ``valid``
    when loading with ``combine``."""
    names = {}
    for kind, splits in (("valid", spec.dev_splits), ("test", spec.test_splits)):
        for i, split in enumerate(splits):
            names[split] = kind if i == 0 else f"{kind}_{split.split('_', 1)[-1]}"
    if "train" in spec.splits:
        names["train"] = "train"
    return names


def vocabulary_from(args: argparse.Namespace) -> Vocabulary:
    """The sentencepiece model and dictionary: given, from ``--data-bin``, or from the checkpoint."""
    if args.sentencepiece_model or args.dict:
        if not (args.sentencepiece_model and args.dict):
            raise UserError("give both --sentencepiece-model and --dict (or --data-bin, or --checkpoint)")
        vocab = Vocabulary(Path(args.sentencepiece_model), Path(args.dict))
    else:
        data_bin = Path(args.data_bin) if args.data_bin else checkpoint_data_bin(Path(args.checkpoint))
        wordpiece = wordpiece_tokenizer(data_bin)  # an imported HuggingFace model: its own tokenizer
        authors = authors_bpe_codes(data_bin)  # an upgraded authors' BERT: their text processing and BPE
        vocab = (
            Vocabulary(wordpiece, data_bin / "dict.txt", "wordpiece")
            if wordpiece
            else Vocabulary(authors, data_bin / "dict.txt", "authors-bpe")
            if authors
            else Vocabulary(data_bin / SPM_MODEL, data_bin / "dict.txt")
        )
    for path, flag in ((vocab.sentencepiece_model, "--sentencepiece-model"), (vocab.dictionary, "--dict")):
        if not path.is_file():
            raise UserError(f"{path}: no such file (give it with {flag} or --data-bin)")
    return vocab


def require_bert(path: Path, flag: str) -> Any:
    """The checkpoint is a pre-trained BERT of the plugin
    (:func:`macaron_fairseq.bert_checkpoint.require_bert`: a translation model is refused as such)."""
    from macaron_fairseq.bert_checkpoint import require_bert as require

    return require(path, flag)


def describe_checkpoint(path: Path) -> Any:
    """What the checkpoint says about itself (:func:`macaron_fairseq.checkpoint_reader.describe`: read once,
    memory-mapped, through the plugin's allow-list; a refused or unreadable file is a one-line error)."""
    from macaron_fairseq.checkpoint_reader import describe

    return describe(path, "--checkpoint")


def checkpoint_data_bin(path: Path) -> Path:
    """The data directory the checkpoint's model was trained on (its task's ``data``)."""
    data = describe_checkpoint(path).data
    if data is None:
        raise UserError(f"--checkpoint {path}: no task data directory recorded; give --data-bin")
    return data


def check_dictionary_fits(checkpoint: Path, dictionary: Path) -> int:
    """The checkpoint's vocabulary size; an error unless ``dictionary`` (+ ``<mask>``) has that size."""
    from fairseq.data import Dictionary

    rows = describe_checkpoint(checkpoint).embedding_rows
    if rows is None:
        raise UserError(
            f"--checkpoint {checkpoint}: not a pre-trained BERT encoder of this plugin "
            "(no encoder.embed_tokens.weight)"
        )
    symbols = len(Dictionary.load(str(dictionary))) + MASK_SYMBOLS
    if symbols != rows:
        raise UserError(
            f"{dictionary} gives {symbols} symbols (with <mask>) but {checkpoint} has {rows} "
            "embeddings: the dictionary is not the one the model was pre-trained with"
        )
    return symbols


def check_glue_dir(args: argparse.Namespace, wanted: Sequence[str]) -> None:
    """Without ``--download`` the GLUE directory is only read: a missing directory or task folder is an
    error naming it and how to download it, before anything is written."""
    if args.download:
        return
    how = f"(--glue-dir is only read); download with --download (into {args.glue_dir})"
    if not args.glue_dir.is_dir():
        raise UserError(f"--glue-dir {args.glue_dir}: no such directory {how}")
    missing = [t for t in wanted if not (args.glue_dir / TASKS[t].directory).is_dir()]
    if missing:
        folders = ", ".join(f"{TASKS[t].directory}/ ({t})" for t in missing)
        raise UserError(f"--glue-dir {args.glue_dir}: missing {folders} {how}")


def majority_label(examples: Sequence[GlueExample]) -> str | None:
    counts = Counter(str(e.label) for e in examples if e.label is not None)
    return counts.most_common(1)[0][0] if counts else None


def write_split(
    task_dir: Path,
    split: str,
    examples: Sequence[GlueExample],
    spec: TaskSpec,
    vocab: Vocabulary,
    dictionary: object,
    labels: object | None,
    workers: int,
) -> dict[str, Any]:
    """Binarize one split into ``task_dir`` (input0, input1, label, index); its counts."""
    counts = {}
    sides = [("input0", [e.sentence1 for e in examples])]
    if spec.pair:
        sides.append(("input1", [e.sentence2 or "" for e in examples]))
    for side, sentences in sides:
        encoders = {"wordpiece": encode_wordpiece, "authors-bpe": encode_authors_bpe}
        encode = encoders.get(vocab.tokenizer, encode_sentences)
        pieces = encode(sentences, vocab.sentencepiece_model, workers)
        result = binarize_lines(pieces, dictionary, task_dir / side / split)
        counts[side] = {"tokens": result.tokens, "unknown": result.unknown}
    labeled = all(e.label is not None for e in examples) and bool(examples)
    if labeled:
        if spec.labels is None:  # regression: score / 5, one float per line
            lines = [f"{float(e.label) / STSB_SCALE}\n" for e in examples]  # type: ignore[arg-type]
            (task_dir / "label" / f"{split}.label").write_text("".join(lines), encoding="utf-8")
        else:
            binarize_lines(iter(str(e.label) for e in examples), labels, task_dir / "label" / split)
    (task_dir / f"{split}.index").write_text("".join(f"{e.index}\n" for e in examples), encoding="utf-8")
    if labeled:  # the file's labels as they are (STS-B unscaled), for the dev metrics
        (task_dir / f"{split}.gold").write_text("".join(f"{e.label}\n" for e in examples), encoding="utf-8")
    return {"examples": len(examples), "labeled": labeled, **counts}


def build_task(
    staging: Path, spec: TaskSpec, glue_dir: Path, vocab: Vocabulary, workers: int, with_ax: bool
) -> dict[str, Any]:
    """Every split of one task into ``staging``; its ``meta.json`` record."""
    from fairseq.data import Dictionary

    dictionary = Dictionary.load(str(vocab.dictionary))
    for side in ("input0", "input1", "label") if spec.pair else ("input0", "label"):
        (staging / side).mkdir(parents=True)
    shutil.copyfile(vocab.dictionary, staging / "input0" / "dict.txt")
    if spec.pair:
        shutil.copyfile(vocab.dictionary, staging / "input1" / "dict.txt")
    labels = label_dictionary(spec.labels, staging / "label" / "dict.txt") if spec.labels else None
    meta: dict[str, Any] = {
        "task": spec.name,
        "labels": list(spec.labels) if spec.labels else None,
        "regression": spec.labels is None,
        "num_classes": len(spec.labels) if spec.labels else 1,
        "pair": spec.pair,
        "label_scale": STSB_SCALE if spec.labels is None else None,
        "splits": {},
    }
    plan = [(glue, ours, spec) for glue, ours in fairseq_split_names(spec).items()]
    if with_ax:
        plan.append(("test", "test_ax", TASKS["AX"]))
    for glue_split, fairseq_split, source in plan:
        read = read_split(glue_dir, source.name, glue_split)
        dropped = f", {read.dropped} malformed lines dropped (first at lines {read.dropped_lines[:5]})"
        print(
            f"[{spec.name}] {source.name} {glue_split}: {len(read.examples)} examples"
            + (dropped if read.dropped else ""),
            file=sys.stderr,
            flush=True,
        )
        record = write_split(staging, fairseq_split, read.examples, spec, vocab, dictionary, labels, workers)
        record.update(
            glue_task=source.name, glue_split=glue_split, file=source.splits[glue_split], dropped=read.dropped
        )
        meta["splits"][fairseq_split] = record
        if fairseq_split == "train":
            meta["majority_label"] = majority_label(read.examples)
    return meta


def preprocess_task(runner: StageRunner, spec: TaskSpec, args: argparse.Namespace, vocab: Vocabulary) -> None:
    """One stage: the task's directory is built aside and moved into place; ``meta.json`` comes last."""
    task_dir = args.dest / spec.name
    with_ax = spec.name == "MNLI" and "AX" not in args.skip
    inputs = [vocab.sentencepiece_model, vocab.dictionary]
    inputs += [args.glue_dir / spec.directory / name for name in spec.splits.values()]
    if with_ax:
        inputs += [args.glue_dir / TASKS["AX"].directory / name for name in TASKS["AX"].splits.values()]
    meta_path = task_dir / "meta.json"

    def build(temps: Mapping[Path, Path]) -> StageReport:
        # built aside, then moved into place (a bad input or Ctrl-C leaves nothing half-written; a stale
        # task directory, whose stage marker is already gone, is replaced)
        with atomic_output(task_dir) as staging:
            meta = build_task(staging, spec, args.glue_dir, vocab, args.workers, with_ax)
        temps[meta_path].write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        return {split: record["examples"] for split, record in meta["splits"].items()}

    runner.run(f"glue-{spec.name}", inputs, [meta_path], {"task": spec.name, "with_ax": with_ax}, build)


def parse_tasks(text: str) -> list[str]:
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS or t == "AX"]
    if unknown:
        raise UserError(f"--tasks: unknown task(s) {unknown}; choose from {sorted(set(TASKS) - {'AX'})}")
    return tasks


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=program_name(*PROG), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--glue-dir", required=True, type=Path, help="the unpacked GLUE distribution")
    parser.add_argument("--dest", required=True, type=Path, help="output: one directory per task")
    parser.add_argument("--checkpoint", type=Path, help="the pre-trained model (export of the pre-trainer)")
    parser.add_argument("--data-bin", type=Path, help="the pre-training data-bin (sentencepiece + dict)")
    parser.add_argument("--sentencepiece-model", type=Path, help="instead of --data-bin")
    parser.add_argument("--dict", type=Path, help="instead of --data-bin: the data-bin's dict.txt")
    parser.add_argument(
        "--tasks",
        type=parse_tasks,
        default=list(BERT_TASKS),
        help=f"comma-separated (default: {','.join(BERT_TASKS)}; also WNLI)",
    )
    parser.add_argument("--download", action="store_true", help="download the missing tasks into --glue-dir")
    parser.add_argument("--skip", default="", help="'AX' to leave the diagnostic set out of MNLI")
    add_run_options(parser)
    return parser


def check_apart(args: argparse.Namespace, vocab: Vocabulary | None = None) -> None:
    """``--dest`` apart from the inputs, before anything is written: not the GLUE directory or the data-bin,
    not inside them, not containing them (``--glue-dir X --dest X`` replaced ``X/RTE/``, the raw files, by
    the output's ``RTE/``); and no input file inside a task directory this run replaces."""
    refuse_file_as_directory("--dest", args.dest)
    refuse_overlap({"--dest": args.dest}, {"--glue-dir": args.glue_dir, "--data-bin": args.data_bin})
    replaced = {f"--dest's {task}/": args.dest / TASKS[task].name for task in args.tasks}
    files = {
        "--checkpoint": args.checkpoint,
        "--sentencepiece-model": args.sentencepiece_model,
        "--dict": args.dict,
    }
    if vocab is not None:
        files.update(
            {"its sentencepiece model": vocab.sentencepiece_model, "its dictionary": vocab.dictionary}
        )
    refuse_overlap(replaced, files, change="--dest")


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if not (args.checkpoint or args.data_bin or args.sentencepiece_model):
        raise UserError("give --checkpoint (or --data-bin, or --sentencepiece-model and --dict)")
    check_apart(args)
    if args.checkpoint:  # not "missing sentencepiece model" for a translation one
        require_bert(args.checkpoint, "--checkpoint")
    vocab = vocabulary_from(args)
    check_apart(args, vocab)
    if args.checkpoint:
        check_dictionary_fits(args.checkpoint, vocab.dictionary)
    wanted = [*args.tasks, *(["AX"] if "MNLI" in args.tasks and "AX" not in args.skip else [])]
    check_glue_dir(args, wanted)
    if args.download:
        download_glue(args.glue_dir, [t for t in wanted if not (args.glue_dir / TASKS[t].directory).is_dir()])
    ensure_writable_dir(args.dest)
    runner = StageRunner(args.dest / ".stages", force=args.force)
    for task in args.tasks:
        preprocess_task(runner, TASKS[task], args, vocab)
    print(f"GLUE data: {args.dest} ({', '.join(args.tasks)})")


def cli() -> None:
    """The ``macaron-preprocess-glue`` console script: what ``python -m macaron_preprocess.glue`` runs."""
    run_cli(main, program_name(*PROG))


if __name__ == "__main__":
    cli()
