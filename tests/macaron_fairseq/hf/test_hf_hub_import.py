"""``macaron-hf import NAME_OR_DIR`` with a Hub id (``bert-base-uncased``, as every HF user types it, used to
fail with "no such directory"): resolved through ``huggingface_hub`` (:mod:`macaron_fairseq.hf.hub`),
tested offline (``HF_HUB_OFFLINE=1``) against a cache filled here in huggingface_hub's own layout
(``models--ORG--NAME/blobs/SHA``, ``snapshots/REV/FILE`` links to the blobs, ``refs/main``)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hf_models import save_hf_bert

REVISION = "0123456789abcdef0123456789abcdef01234567"


def fill_cache(cache: Path, repo_id: str, hf_dir: Path) -> Path:
    """Put ``hf_dir``'s files into the huggingface_hub cache as ``repo_id`` at revision main."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / REVISION
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for path in sorted(hf_dir.iterdir()):
        data = path.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / path.name).symlink_to(os.path.relpath(blob, snapshot))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    return snapshot


def hf_cli(cache: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1"
    )
    return subprocess.run(
        [sys.executable, "-m", "macaron_fairseq.hf", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_a_hub_id_imports_from_the_huggingface_cache_offline(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    fill_cache(cache, "google/tiny-bert", save_hf_bert(tmp_path / "saved"))
    out = tmp_path / "bert.pt"
    proc = hf_cli(cache, "import", "google/tiny-bert", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out.is_file() and (tmp_path / "bert.data" / "dict.txt").is_file()


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_a_hub_id_not_in_the_cache_offline_is_one_line(tmp_path: Path) -> None:
    proc = hf_cli(
        tmp_path / "empty-cache", "import", "bert-base-uncased", "--out", str(tmp_path / "b.pt"), cwd=tmp_path
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert "bert-base-uncased: not in the Hugging Face cache and HF_HUB_OFFLINE is set" in proc.stderr


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_a_path_that_does_not_exist_is_still_a_missing_directory(tmp_path: Path) -> None:
    proc = hf_cli(
        tmp_path / "empty-cache", "import", "./no-such-dir", "--out", str(tmp_path / "b.pt"), cwd=tmp_path
    )
    assert proc.returncode == 2 and "no-such-dir: no such directory" in proc.stderr, proc.stderr[-3000:]
