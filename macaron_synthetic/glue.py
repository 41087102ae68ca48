"""A small, learnable GLUE distribution in the real layout (offline; the ``SMALL=1`` GLUE pipeline).

Every file has the columns, header (or none: CoLA train/dev), byte-order mark (MRPC train/dev) and label
vocabulary of :data:`macaron_preprocess.sources.glue.FORMATS`, and QQP's train holds malformed lines as the
real one does, so the readers meet the real quirks. The labels follow simple rules a small model can pick up:

* CoLA, SST-2: 1 when the sentence holds one of :data:`CUE_WORDS`;
* MRPC, QQP, WNLI: 1 when the two sentences share their subject;
* MNLI: entailment when the hypothesis repeats a part of the premise, contradiction when it negates it,
  neutral otherwise; QNLI, RTE: entailment or not_entailment by the same rule;
* STS-B: 5 × the share of the hypothesis's words found in the premise.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from macaron_preprocess.sources.glue import FORMATS, TASKS
from macaron_synthetic.lexicon.tables import phrases, words
from macaron_workflow.atomic import atomic_output

SUBJECTS = phrases("the cat|a dog|the old man|my sister|the teacher|a small bird|the farmer|our neighbour")
VERBS = words("saw liked found carried painted visited followed described")
OBJECTS = phrases("the river|a red house|the garden|an old book|the market|a tall tree|the bridge|a blue car")
CUE_WORDS = ("happily", "wonderfully", "gladly")
FILLERS = ("yesterday", "quickly", "again", "slowly", "at night", "in spring")
BOM = "\ufeff"
SIZES = {"train": 160, "dev": 40, "test": 40}


def _sentence(rng: random.Random, subject: str | None = None, cue: bool = False, filler: bool = True) -> str:
    words = [subject or rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
    if filler:
        words.append(rng.choice(FILLERS))
    if cue:
        words.insert(1, rng.choice(CUE_WORDS))
    return " ".join(words).capitalize() + "."


def _example(task: str, rng: random.Random) -> tuple[str, str | None, str | float]:
    """(sentence1, sentence2, label) of one example under the task's rule."""
    spec = TASKS[task]
    if not spec.pair:
        cue = rng.random() < 0.5
        return _sentence(rng, cue=cue), None, "1" if cue else "0"
    premise_subject = rng.choice(SUBJECTS)
    state = rng.getstate()
    premise = _sentence(rng, premise_subject)
    after = rng.getstate()
    rng.setstate(state)
    premise_core = _sentence(rng, premise_subject, filler=False)  # the premise without its last words
    rng.setstate(after)
    if task == "STS-B":
        hypothesis = _sentence(rng, premise_subject if rng.random() < 0.5 else None)
        words = hypothesis.lower().rstrip(".").split()
        shared = sum(w in premise.lower() for w in words) / len(words)
        return premise, hypothesis, round(5.0 * shared, 3)
    if spec.labels == ("0", "1"):
        same = rng.random() < 0.5
        return premise, _sentence(rng, premise_subject if same else None), "1" if same else "0"
    kind = rng.choice(("entailment", "contradiction", "neutral"))
    if kind == "entailment":
        hypothesis = premise_core
    elif kind == "contradiction":
        hypothesis = f"{premise_subject.capitalize()} did not {rng.choice(VERBS)} {rng.choice(OBJECTS)}."
    else:
        hypothesis = _sentence(rng)
    if spec.labels is not None and "neutral" not in spec.labels:
        kind = "entailment" if kind == "entailment" else "not_entailment"
    return premise, hypothesis, kind


def _row(task: str, split: str, number: int, example: tuple[str, str | None, str | float]) -> list[str]:
    """The fields of one line in the file's column order (placeholders where GLUE has metadata)."""
    layout = FORMATS[(task, split)]
    fields = ["-"] * layout.width
    if layout.header is None:  # CoLA train/dev: source, label, mark, sentence
        label = str(example[2])
        return ["syn01", label, "" if label == "1" else "*", example[0]]
    position = {name: i for i, name in enumerate(layout.header)}
    values: dict[object, str] = {layout.sentence1: example[0]}
    if layout.sentence2 is not None:
        values[layout.sentence2] = example[1] or ""
    if layout.label is not None:
        values[layout.label] = f"{example[2]:.3f}" if isinstance(example[2], float) else str(example[2])
    if layout.index is not None:
        values[layout.index] = str(number)
    for name, value in values.items():
        fields[position[name]] = value  # type: ignore[index]
    if task == "MNLI" and layout.label is not None:  # label1 (… label5) = the gold label
        for name in position:
            if name.startswith("label"):
                fields[position[name]] = str(example[2])
    return fields


def _write(path: Path, header: Sequence[str] | None, rows: Iterable[Sequence[str]], bom: bool) -> None:
    lines = ([] if header is None else ["\t".join(header)]) + ["\t".join(row) for row in rows]
    text = (BOM if bom else "") + "".join(f"{line}\n" for line in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_synthetic_glue(root: Path, tasks: Iterable[str], seed: int = 0, scale: float = 1.0) -> Path:
    """The GLUE directories of ``tasks`` (plus ``diagnostic`` with MNLI) under ``root``."""
    wanted = list(tasks) + (["AX"] if "MNLI" in tasks and "AX" not in tasks else [])
    for task in wanted:
        spec = TASKS[task]
        rng = random.Random(f"{seed}-{task}")
        source = "MNLI" if task == "AX" else task
        for split, file_name in spec.splits.items():
            kind = split.split("_")[0]
            count = max(8, round(SIZES[kind] * scale))
            examples = [_example(source, rng) for _ in range(count)]
            layout = FORMATS[(task, split)]
            labeled = layout.label is not None
            rows = [_row(task, split, i, e if labeled else (e[0], e[1], "")) for i, e in enumerate(examples)]
            if (task, split) == ("QQP", "train"):  # a question broken over two lines, as in the real file
                rows[3:3] = [["901", "1801", "1802", "How do I"], ["learn to paint?", "0"]]
            bom = task == "MRPC" and kind != "test"
            _write(root / spec.directory / file_name, layout.header, rows, bom=bom)
    return root
