"""The one checkpoint reader (``macaron_fairseq.checkpoint_reader``): allow-listed, memory-mapped, one-line
errors; a malicious pickle is refused without running anything."""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

import pytest
import torch
from helpers import TINY, RunsCode, save_model_checkpoint, write_malicious_checkpoint

from macaron_fairseq import checkpoint_reader
from macaron_fairseq.checkpoint_reader import (
    CheckpointError,
    UnsafeCheckpointError,
    describe,
    load_checkpoint,
    read_checkpoint,
    restricted_loads,
)
from macaron_workflow.errors import UserError


def test_a_malicious_checkpoint_is_refused_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    for read in (load_checkpoint, describe, read_checkpoint):
        with pytest.raises(UnsafeCheckpointError) as error:
            read(evil, "--checkpoint")
        message = str(error.value)
        assert "\n" not in message
        assert message.startswith(f"refusing to load checkpoint --checkpoint {evil}: it pickles posix.system")
        assert f"torch.load('{evil}', weights_only=False)" in message  # how to convert a trusted file
        assert isinstance(error.value, UserError) and isinstance(error.value, pickle.UnpicklingError)
    assert not marker.exists()


def test_a_plain_pickle_with_code_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil.pkl"
    with evil.open("wb") as f:
        pickle.dump({"model": RunsCode(marker)}, f, protocol=2)
    with pytest.raises(UnsafeCheckpointError, match=r"posix\.system"):
        load_checkpoint(evil)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        (b"", "not a PyTorch checkpoint (an empty file, 0 bytes)"),
        (b"hello world\n", "not a PyTorch checkpoint (neither zip nor pickle)"),
        (b"PK\x03\x04garbage", "not a PyTorch checkpoint (RuntimeError: PytorchStreamReader failed"),
    ],
)
def test_bad_files_are_one_line_user_errors(tmp_path: Path, content: bytes | None, expected: str) -> None:
    path = tmp_path / "model.pt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path, "--checkpoint")
    assert str(error.value).startswith(f"--checkpoint {path}: {expected}") and "\n" not in str(error.value)
    if content is not None:  # the fix is named too
        assert str(error.value).endswith("give the complete file"), error.value
    with pytest.raises(CheckpointError, match="is a directory"):
        load_checkpoint(tmp_path)
    path.write_bytes(b"\x80\x02garbage")  # starts like a pickle
    with pytest.raises(UnsafeCheckpointError, match="pickle opcode 103, which torch's restricted unpickler"):
        load_checkpoint(path)
    torch.save([1, 2], path)
    with pytest.raises(CheckpointError, match="holds a list, not a dict"):
        load_checkpoint(path)


def test_a_fairseq_checkpoint_is_described_and_memory_mapped(
    dict_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = save_model_checkpoint(tmp_path / "model.pt", dict_dir, "transformer_iwslt_de_en", TINY)
    info = describe(checkpoint)
    assert info.kind == "fairseq" and info.arch == "transformer_iwslt_de_en"
    assert info.data == dict_dir and info.dictionary == dict_dir / "dict.txt"
    assert isinstance(info.model_config, argparse.Namespace) and info.model_config.encoder_layers == 2
    weights = torch.load(checkpoint, weights_only=True)["model"]
    assert info.embedding_rows == len(weights["encoder.embed_tokens.weight"])
    calls = []
    original = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or original(*a, **k))
    state, again = read_checkpoint(checkpoint)
    assert again.arch == info.arch and again.parameter_names == info.parameter_names
    assert calls == [{"map_location": "cpu", "mmap": True, "weights_only": True}]  # one read, memory-mapped
    assert torch.equal(state["model"]["encoder.embed_tokens.weight"], weights["encoder.embed_tokens.weight"])


def test_describe_reads_a_file_once_per_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.pt"
    torch.save({"model": {}, "cfg": {"model": {"_name": "a"}, "task": {"data": "/d1:/d2"}}}, path)
    calls = []
    original = checkpoint_reader.load_checkpoint
    monkeypatch.setattr(checkpoint_reader, "load_checkpoint", lambda *a: calls.append(a) or original(*a))
    assert describe(path).arch == "a" and describe(path).data == Path("/d1") and len(calls) == 1
    torch.save({"model": {}, "args": argparse.Namespace(arch="b", data="/x")}, path)  # a new version
    assert describe(path).arch == "b" and describe(path).data == Path("/x") and len(calls) == 2


def test_restricted_loads_overrides_weights_only_false(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    with restricted_loads(), pytest.raises(UnsafeCheckpointError, match=f"{evil}: it pickles posix"):
        torch.load(evil, weights_only=False)  # what DeepSpeed's zero_to_fp32 asks for
    assert not marker.exists()
    assert torch.load.__name__ == "load" and not hasattr(torch.load, "__wrapped__")  # restored
