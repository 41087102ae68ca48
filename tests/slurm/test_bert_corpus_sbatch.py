"""``slurm/bert_corpus.sbatch`` on the real single-host Slurm cluster: a job array over two dump part files
and a books directory (3 tasks, at most 2 at a time, writing into one DEST), then the merge submitted with
``--dependency=afterok`` — it skips the three extract stages and writes a data-bin byte-identical to one
direct run of ``python -m macaron_preprocess.bert_corpus``. And the script's errors, without a cluster (a fake
job environment): an array index past the sources, a missing part file, not inside a Slurm job."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, run_module
from slurm_cluster import JobStateError, SlurmCluster

from macaron_synthetic.wiki.books import write_books
from macaron_synthetic.wiki.dump import write_dump

pytestmark = pytest.mark.slurm
SCRIPT = REPO / "slurm" / "bert_corpus.sbatch"
#: flags of macaron_preprocess.bert_corpus, the same for the array, the merge and the direct run
FLAGS = ["--bpe-vocab-size", "400", "--valid-ratio", "0.1"]
KINDS = {"article": 12, "stub": 1, "redirect": 2, "other_namespace": 1, "disambiguation": 1}
#: the data-bin's files (and the text before BPE) that the merge and a direct run must write identically
DATA_BIN = (
    "dict.txt",
    "train.bin",
    "train.idx",
    "valid.bin",
    "valid.idx",
    "text/train.txt",
    "text/valid.txt",
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("corpus_inputs")
    parts = [
        root / "enwiki-20261101-pages-articles1.xml-p1p100.bz2",
        root / "enwiki-20261101-pages-articles2.xml-p101p200.bz2",
    ]
    write_dump(parts[0], kinds=KINDS, seed=5, start_id=1)
    write_dump(parts[1], kinds=KINDS, seed=6, start_id=101)
    books = root / "books"
    write_books(books, 3, seed=1, paragraphs=(5, 10))
    return {"parts": parts, "books": books}


def job_env(dest: Path, books: Path) -> dict[str, str]:
    return {
        "DEST": str(dest),
        "BOOKS": str(books),
        "REPO": str(REPO),
        "PYTHON": sys.executable,
        "PYTHONWARNINGS": "ignore",
    }


def read_logs(logs: Path) -> dict[int, str]:
    """The job logs by the job id in their name (the script's default --output=%x-%j.out)."""
    found = {}
    for path in sorted(logs.iterdir()):
        m = re.fullmatch(r"macaron-corpus-(\d+)\.out", path.name)
        assert m, f"{path.name}: not named by the default --output=%x-%j.out"
        found[int(m.group(1))] = path.read_text()
    return found


@pytest.fixture(scope="module")
def sharded(slurm_cluster: SlurmCluster, inputs: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("corpus_sharded")
    logs, dest = root / "logs", root / "data-bin"
    logs.mkdir()
    # through the submit helper (array sized from the sources, the merge after it), from the logs directory
    env = [f"--env={name}={value}" for name, value in job_env(dest, inputs["books"]).items()]
    helper = [
        sys.executable,
        "-m",
        "macaron_slurm.submit",
        "bert_corpus",
        "--cpus-per-task=1",
        "--time=10",
        "--max-parallel=2",
        *env,
        "--",
        *map(str, inputs["parts"]),
        "--",
        *FLAGS,
    ]
    proc = subprocess.run(
        helper,
        cwd=logs,
        env=slurm_cluster.env({"PYTHONPATH": str(REPO)}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--array=0-2%2" in proc.stdout and "--dependency=afterok:" in proc.stdout
    submitted = [line for line in proc.stdout.splitlines() if line.startswith("submitted")]
    array, merge = (int(line.split()[-1]) for line in submitted)
    try:
        slurm_cluster.wait_for(merge, ("COMPLETED",), timeout=240)
    except JobStateError as e:
        texts = "\n".join(f"--- job {j}\n{t}" for j, t in read_logs(logs).items())
        raise AssertionError(f"{e}\n{texts}") from e
    return {"dest": dest, "logs": read_logs(logs), "array": array, "merge": merge}


def test_each_array_task_extracts_its_source_into_the_shared_dest(inputs: dict, sharded: dict) -> None:
    dest, logs = sharded["dest"], dict(sharded["logs"])
    merge_log = logs.pop(sharded["merge"])
    assert len(logs) == 3, sorted(logs)  # one per array task; none named by %a (4294967294 outside arrays)
    sources = [*inputs["parts"], inputs["books"]]
    stages = [f"extract-wikipedia-{part.name}" for part in inputs["parts"]] + ["extract-bookcorpus"]
    labels = [f"wikipedia-{part.name}" for part in inputs["parts"]] + ["bookcorpus"]
    for i, (source, stage, label) in enumerate(zip(sources, stages, labels, strict=True)):
        task_logs = [text for text in logs.values() if f"array task {i} of 3: {source}\n" in text]
        assert len(task_logs) == 1, f"array task {i}: {len(task_logs)} logs name it"
        task_log = task_logs[0]
        assert f"job {sharded['array']}_{i} (" in task_log
        assert f"[{stage}] running" in task_log and f"[{stage}] done in" in task_log, task_log
        assert task_log.count("] running") == 1, task_log  # --extract-only: its own stage, nothing else
        assert f"done: extracted {source}" in task_log
        assert (dest / ".stages" / f"{stage}.json").is_file()
        for split in ("train", "valid"):
            assert (dest / "work" / "extract" / label / f"{split}.txt").stat().st_size > 0, (label, split)
    assert "merge of 3 source(s) (2 dump part(s) + the books directory)" in merge_log


def test_the_merge_skips_the_extracts_and_equals_one_direct_run(
    inputs: dict, sharded: dict, tmp_path: Path
) -> None:
    merge_log = sharded["logs"][sharded["merge"]]
    extracts = [f"extract-wikipedia-{part.name}" for part in inputs["parts"]] + ["extract-bookcorpus"]
    for stage in extracts:
        assert f"[{stage}] up to date, skipped" in merge_log, merge_log
    assert merge_log.count("up to date, skipped") == 3, merge_log
    assert "[collect] running" in merge_log and "[binarize] done in" in merge_log, merge_log
    assert f"done: {sharded['dest']}" in merge_log
    direct = tmp_path / "direct"
    run_module(
        "macaron_preprocess.bert_corpus",
        "--dest",
        str(direct),
        "--workers",
        "1",
        *FLAGS,
        "--wikipedia",
        *map(str, inputs["parts"]),
        "--bookcorpus",
        str(inputs["books"]),
        timeout=120,
    )
    for name in DATA_BIN:
        merged = (sharded["dest"] / name).read_bytes()
        assert merged and merged == (direct / name).read_bytes(), name


def fake_job(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The script under bash in a fake job environment; a PYTHON that cannot run shows if it got that far."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    base.update(SLURM_JOB_ID="41", DEST=str(tmp_path / "data-bin"), PYTHON="/nonexistent/python", **env)
    return subprocess.run(
        ["bash", str(SCRIPT), *args], cwd=tmp_path, env=base, capture_output=True, text=True, timeout=60
    )


def test_an_array_index_past_the_sources_fails_naming_it_and_the_count(tmp_path: Path) -> None:
    for name in ("p1.xml.bz2", "p2.xml.bz2"):
        (tmp_path / name).touch()
    (tmp_path / "books").mkdir()
    proc = fake_job(tmp_path, "p1.xml.bz2", "p2.xml.bz2", SLURM_ARRAY_TASK_ID="3", BOOKS="books")
    assert proc.returncode == 2, proc.stderr
    assert "array task 3 has no source: there are 3 source(s) (2 dump part(s) + the books directory)" in (
        proc.stderr
    )
    assert "--array=0-2" in proc.stderr and "nonexistent" not in proc.stderr
    without_books = fake_job(tmp_path, "p1.xml.bz2", "p2.xml.bz2", SLURM_ARRAY_TASK_ID="2")
    assert without_books.returncode == 2 and "there are 2 source(s)" in without_books.stderr


@pytest.mark.parametrize("array_task", ["0", None], ids=["array-task", "merge"])
def test_a_missing_part_file_is_named_before_python_runs(tmp_path: Path, array_task: str | None) -> None:
    (tmp_path / "p1.xml.bz2").touch()
    env = {"SLURM_ARRAY_TASK_ID": array_task} if array_task else {}
    proc = fake_job(tmp_path, "p1.xml.bz2", "p2.xml.bz2", "--", *FLAGS, **env)
    assert proc.returncode == 2
    assert f"dump part file {tmp_path / 'p2.xml.bz2'} does not exist" in proc.stderr
    assert "nonexistent" not in proc.stderr and not proc.stdout  # neither Python nor the start line


def test_outside_slurm_the_script_says_so(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "not inside a Slurm job" in proc.stderr
