"""bash pipelines/iwslt14.sh and pipelines/wmt14.sh in small-scale mode, end to end on tiny archives in
the exact upstream layouts (built by the preprocessing tests' helpers), offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

sys.path.insert(0, str(REPO / "tests" / "preprocess"))
from test_preprocess_iwslt14 import make_talks, make_tests
from upstream_layouts import iwslt_members, wmt_archives, write_tgz

from preprocess.sources.toy_bitext import sentence_pairs


def run_pipeline(script: str, raw: Path, workdir: Path, **env: str) -> subprocess.CompletedProcess:
    environment = dict(
        os.environ, SMALL="1", SKIP_INSTALL="1", RAW_DIR=str(raw), WORKDIR=str(workdir), WORKERS="1",
        OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", **env,
    )  # fmt: skip
    proc = subprocess.run(
        ["bash", str(REPO / "pipelines" / script)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"{script} failed\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def iwslt_raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = tmp_path_factory.mktemp("iwslt_raw")
    write_tgz(raw / "de-en.tgz", iwslt_members(make_talks(30, seed=1), make_tests(10)))
    return raw


@pytest.fixture(scope="module")
def iwslt_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iwslt_work")


def test_iwslt14_pipeline_small_end_to_end_and_resumes(iwslt_raw: Path, iwslt_workdir: Path) -> None:
    tmp_path = iwslt_workdir
    first = run_pipeline("iwslt14.sh", iwslt_raw, tmp_path)
    assert "tokenized BLEU (Moses-tokenized, case-insensitive) = " in first.stdout
    results = json.loads((tmp_path / "results.macaron_small.json").read_text())
    assert results["recipe"] == "iwslt14" and results["beam"] == 5 and results["lenpen"] == 1.0
    assert results["checkpoint"].endswith("checkpoint_avg_last5.pt")
    generated = (tmp_path / "generate-test.macaron_small.txt").read_text().splitlines()
    assert sum(line.startswith("H-") for line in generated) == 5 * 10  # the five test sets, none dropped
    second = run_pipeline("iwslt14.sh", iwslt_raw, tmp_path)
    for stage in (
        "training: finished earlier",
        "averaging: checkpoint_avg_last5.pt is newer",
        "generation: ",
    ):
        assert stage in second.stdout, second.stdout[-3000:]
    assert "fairseq-train" not in second.stdout.replace("finished earlier", "")


def test_iwslt14_pipeline_runs_the_transformer_baseline(iwslt_raw: Path, iwslt_workdir: Path) -> None:
    """Same workdir: the data-bin is reused, the baseline gets its own checkpoints and results."""
    run_pipeline("iwslt14.sh", iwslt_raw, iwslt_workdir, ARCH="transformer_iwslt_de_en")
    results = json.loads((iwslt_workdir / "results.transformer_iwslt_de_en.json").read_text())
    assert results["arch"] == "transformer_iwslt_de_en"


def test_wmt14_pipeline_small_reports_both_bleus(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    corpora = {
        "europarl": sentence_pairs(300, seed=1),
        "commoncrawl": sentence_pairs(200, seed=2),
        "news-commentary": sentence_pairs(200, seed=3),
    }
    wmt_archives(raw, corpora, sentence_pairs(30, seed=24), sentence_pairs(40, seed=25))
    proc = run_pipeline("wmt14.sh", raw, tmp_path / "work")
    assert "sacreBLEU" in proc.stdout and "compound" in proc.stdout.lower(), proc.stdout[-2000:]
    results = json.loads((tmp_path / "work" / "results.macaron_base.json").read_text())
    assert results["recipe"] == "wmt14" and results["beam"] == 4 and results["lenpen"] == 0.6
