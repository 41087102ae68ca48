"""``SMALL=1 bash pipelines/glue.sh`` end to end, as a user runs it: a tiny model pre-trained first (in a
workdir where ``SMALL=1 bash pipelines/pretrain.sh`` has run, the suite's ``small_pretrain``: every
pre-training stage is found done; that run itself is tests/pipelines/test_pretrain_pipeline.py's), a
generated GLUE in the real layout, every BERT task fine-tuned (reduced grid), selection, the results table
and the GLUE server submission; a rerun trains nothing. (DT-Fixup's extra layers: the grid's command in
test_grid_and_scheduler.py, the run it makes in test_predict.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from helpers import REPO, SMALL_PRETRAIN_GROUP

from macaron_pipelines.glue.submission import SUBMISSION_FILES
from macaron_preprocess.sources.glue import BERT_TASKS, read_split

pytestmark = pytest.mark.slow
WORKER_GROUP = SMALL_PRETRAIN_GROUP


def glue_sh(workdir: Path, **env: str) -> subprocess.CompletedProcess:
    environment = dict(
        os.environ,
        SMALL="1",
        SKIP_INSTALL="1",
        WORKDIR=str(workdir),
        SEEDS="1",
        PYTHONWARNINGS="ignore",
        **env,
    )
    proc = subprocess.run(
        ["bash", "pipelines/glue.sh"], cwd=REPO, env=environment, capture_output=True, text=True, timeout=1200
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_small_glue_pipeline_end_to_end(small_pretrain: tuple[Path, subprocess.CompletedProcess]) -> None:
    work = small_pretrain[0].parent
    first = glue_sh(work)
    assert "pre-training a tiny model first" in first.stdout
    assert "[pretrain-macaron_bert_tiny] up to date, skipped" in first.stdout  # pretrain.sh's run of it
    assert f"grid: {len(BERT_TASKS)} runs" in first.stdout
    assert "| Task | Dev metrics (mean ± std) |" in first.stdout and "**GLUE average**" in first.stdout
    results = json.loads((work / "glue" / "results.json").read_text())
    assert list(results["tasks"]) == list(BERT_TASKS) and results["failed_runs"] == []
    assert results["tasks"]["MNLI"]["metrics"].keys() == {"accuracy_m", "accuracy_mm"}
    assert results["tasks"]["STS-B"]["metrics"].keys() == {"pearson", "spearman"}
    glue_dir = work / "glue" / "synthetic-glue"
    with zipfile.ZipFile(work / "glue" / "submission.zip") as archive:
        assert sorted(archive.namelist()) == sorted(f"{f.name}.tsv" for f in SUBMISSION_FILES)
        for entry in SUBMISSION_FILES:
            lines = archive.read(f"{entry.name}.tsv").decode().splitlines()
            test = read_split(glue_dir, entry.task, entry.split).examples
            assert lines[0] == "index\tprediction" and len(lines) == len(test) + 1
            assert [line.split("\t")[0] for line in lines[1:]] == [e.index for e in test]

    (run_dir,) = (work / "glue" / "runs").glob("*/RTE/*-seed100")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "ok"
    # the trainer and the predictions import the plugin before fairseq, which then leaves DeepSpeed alone
    assert "Setting accelerator to CPU" not in (run_dir / "run.log").read_text()

    again = glue_sh(work)  # everything finished: nothing is trained again
    assert "[1/" not in again.stdout and "pre-training a tiny model first" in again.stdout
