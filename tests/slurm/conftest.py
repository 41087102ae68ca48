"""Fixtures of the Slurm tests shared by several modules (session-scoped: built once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_module
from pretrain_job import submit
from slurm_cluster import SlurmCluster

from macaron_synthetic.wiki.dump import write_dump


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("slurm_corpus")
    dump = root / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    write_dump(dump, target_bytes=1_000_000, seed=5)
    run_module(
        "macaron_preprocess.bert_corpus",
        "--dest",
        str(root / "data-bin"),
        "--wikipedia",
        str(dump),
        "--bpe-vocab-size",
        "400",
        "--valid-ratio",
        "0.1",
        "--workers",
        "1",
        timeout=300,
    )
    return root / "data-bin"


@pytest.fixture(scope="session")
def uninterrupted(
    slurm_cluster: SlurmCluster, corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    save = tmp_path_factory.mktemp("slurm_whole") / "run"
    job = submit(slurm_cluster, corpus, save)
    slurm_cluster.wait_for(job, ("COMPLETED",), timeout=600)
    return save
