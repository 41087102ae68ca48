"""The pre-training tests' shared corpus: a generated Wikipedia-style dump through
``macaron_preprocess.bert_corpus`` (built once per session and worker, ~20 s)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_module

from macaron_synthetic.wiki.dump import write_dump


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pretrain_corpus")
    dump = root / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    write_dump(dump, target_bytes=1_500_000, seed=21)
    dest = root / "data-bin"
    run_module(
        "macaron_preprocess.bert_corpus",
        "--dest",
        str(dest),
        "--wikipedia",
        str(dump),
        "--bpe-vocab-size",
        "500",
        "--valid-ratio",
        "0.1",
        "--workers",
        "1",
        timeout=300,
    )
    return dest
