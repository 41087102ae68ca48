"""The generated GLUE of the SMALL pipeline: every file reads with the real readers (real headers, CoLA
without one, MRPC's byte-order mark, QQP's malformed lines dropped), labels in each task's vocabulary and
following the stated rules."""

from __future__ import annotations

from pathlib import Path

from macaron_preprocess.sources.glue import TASKS, read_split
from macaron_synthetic.glue import CUE_WORDS, write_synthetic_glue

ALL = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE", "WNLI")


def test_every_split_reads_with_the_real_readers_and_follows_the_rules(tmp_path: Path) -> None:
    root = write_synthetic_glue(tmp_path, ALL, scale=0.5)
    assert (root / "MRPC" / "train.tsv").read_bytes().startswith(b"\xef\xbb\xbf")
    assert not (root / "CoLA" / "train.tsv").read_text().startswith("index")
    for task in (*ALL, "AX"):
        spec = TASKS[task]
        for split in spec.splits:
            read = read_split(root, task, split)
            assert read.examples, (task, split)
            assert read.dropped == (2 if (task, split) == ("QQP", "train") else 0)
            labeled = not split.startswith("test") and task != "AX"
            for example in read.examples:
                assert (example.label is not None) == labeled
                assert (example.sentence2 is not None) == spec.pair
                if labeled and spec.labels is not None:
                    assert example.label in spec.labels
                if labeled and task in ("CoLA", "SST-2"):
                    assert (example.label == "1") == any(w in example.sentence1 for w in CUE_WORDS)
                if labeled and task == "STS-B":
                    assert 0.0 <= example.label <= 5.0  # type: ignore[operator]
    mnli = read_split(root, "MNLI", "train").examples
    entailed = [e for e in mnli if e.label == "entailment"]
    assert entailed and all(e.sentence2.rstrip(".") in e.sentence1 for e in entailed)  # type: ignore[union-attr]
    again = write_synthetic_glue(tmp_path / "again", ALL, scale=0.5)
    assert (again / "RTE" / "dev.tsv").read_bytes() == (root / "RTE" / "dev.tsv").read_bytes()  # same seed
