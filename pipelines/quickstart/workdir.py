"""Where the quickstart writes: the layout of its work directory."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from macaron_preprocess.text.layout import data_bin_of

SPLITS = ("train", "valid", "test")


class Workdir:
    """Where the quickstart writes: ``corpus/`` (the generated corpus), ``data/`` (preprocessing: the
    data-bin, with its ``raw/``, ``tok/`` and ``bpe/`` text), ``checkpoints/``, ``train.log``,
    ``generate-test.txt``, ``results/`` (with the run record ``results/quickstart.json``) and the stage
    markers in ``.stages/``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state_dir = root / ".stages"
        self.corpus = root / "corpus"
        self.data = root / "data"
        self.checkpoints = root / "checkpoints"
        self.train_log = root / "train.log"
        self.generated = root / "generate-test.txt"
        self.results = root / "results"
        self.run_record = self.results / "quickstart.json"

    @cached_property
    def data_bin(self) -> Path:
        """``data/`` (``macaron_preprocess.custom --dest``), or ``data/data-bin`` in a work directory made
        before that was the data-bin (one line says so); looked up once, after preprocessing."""
        return data_bin_of(self.data)
