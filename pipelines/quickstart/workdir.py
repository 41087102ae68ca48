"""Where the quickstart writes: the layout of its work directory."""

from __future__ import annotations

from pathlib import Path

SPLITS = ("train", "valid", "test")


class Workdir:
    """Where the quickstart writes: ``corpus/`` (the generated corpus), ``data/`` (preprocessing, with
    ``data/data-bin``), ``checkpoints/``, ``train.log``, ``generate-test.txt``, ``results/`` (with the run
    record ``results/quickstart.json``) and the stage markers in ``.stages/``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state_dir = root / ".stages"
        self.corpus = root / "corpus"
        self.data = root / "data"
        self.data_bin = self.data / "data-bin"
        self.checkpoints = root / "checkpoints"
        self.train_log = root / "train.log"
        self.generated = root / "generate-test.txt"
        self.results = root / "results"
        self.run_record = self.results / "quickstart.json"
