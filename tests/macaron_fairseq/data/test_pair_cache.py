"""The pair-index cache: built once and loaded after (mmap'd); another key, a damaged, truncated or missing
file, an unreadable record are detected and rebuilt, never loaded; an unwritable place means no cache, not
an error; under ``torch.distributed`` only rank 0 builds; the task's ``--pair-cache`` says where (next to the
data, a directory, or off)."""

from __future__ import annotations

import json
import logging
import socket
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from fairseq.data import data_utils

from macaron_fairseq.data.pair_cache import PairIndexKey, cache_paths, load_or_build, sizes_digest
from macaron_fairseq.data.pair_index import PairIndex, build_pair_index

SIZES = np.array([5, 7, 3, 0, 9, 2, 0, 4, 4, 4, 4, 0, 30, 1, 0], dtype=np.int64)


class Builder:
    """Builds the index of :data:`SIZES` and counts its calls."""

    def __init__(self, seed: int = 1) -> None:
        self.seed, self.calls = seed, 0

    def __call__(self) -> PairIndex:
        self.calls += 1
        with data_utils.numpy_seed(self.seed):
            return build_pair_index(SIZES, 12, 0.1)


def key(seed: int = 1) -> PairIndexKey:
    return PairIndexKey.of(SIZES, 12, 0.1, seed)


def test_built_once_then_loaded_mmapped(tmp_path: Path) -> None:
    prefix = tmp_path / "train"
    build = Builder()
    first = load_or_build(build, prefix, key())
    second = load_or_build(build, prefix, key())
    assert build.calls == 1
    assert isinstance(second.pairs, np.memmap)
    assert np.array_equal(first.pairs, second.pairs) and np.array_equal(second.pairs, Builder()().pairs)
    array_path, record_path = cache_paths(prefix, key())
    assert array_path.name.startswith("train.pairs-block12-seed1-") and record_path.exists()


def test_keys_have_their_own_entries(tmp_path: Path) -> None:
    prefix = tmp_path / "train"
    one, seven = Builder(1), Builder(7)
    load_or_build(one, prefix, key(1))
    load_or_build(seven, prefix, key(7))
    load_or_build(one, prefix, key(1))
    load_or_build(seven, prefix, key(7))
    assert (one.calls, seven.calls) == (1, 1)
    assert len(list(tmp_path.glob("train.pairs-*.npy"))) == 2


def damage_record(array_path: Path, record_path: Path) -> None:
    record = json.loads(record_path.read_text())
    record["key"]["seed"] = 2
    record_path.write_text(json.dumps(record))


def flip_a_byte(array_path: Path, record_path: Path) -> None:
    data = bytearray(array_path.read_bytes())
    data[-3] ^= 0xFF
    array_path.write_bytes(bytes(data))


def truncate(array_path: Path, record_path: Path) -> None:
    array_path.write_bytes(array_path.read_bytes()[:-10])


def garble_record(array_path: Path, record_path: Path) -> None:
    record_path.write_text("{not json")


def remove_array(array_path: Path, record_path: Path) -> None:
    array_path.unlink()


@pytest.mark.parametrize("damage", [damage_record, flip_a_byte, truncate, garble_record, remove_array])
def test_a_damaged_or_foreign_entry_is_rebuilt(tmp_path: Path, damage, caplog) -> None:
    prefix = tmp_path / "train"
    expected = load_or_build(Builder(), prefix, key()).pairs.copy()
    damage(*cache_paths(prefix, key()))
    build = Builder()
    with caplog.at_level(logging.WARNING):
        rebuilt = load_or_build(build, prefix, key())
    assert build.calls == 1 and "rebuilding" in caplog.text
    assert np.array_equal(rebuilt.pairs, expected)
    again = Builder()
    load_or_build(again, prefix, key())
    assert again.calls == 0  # the rebuilt entry is good


def test_other_sizes_are_another_key(tmp_path: Path) -> None:
    changed = SIZES.copy()
    changed[0] += 1
    assert PairIndexKey.of(changed, 12, 0.1, 1) != key()
    assert sizes_digest(SIZES.astype(np.int32)) == sizes_digest(SIZES)


def test_an_unwritable_place_means_no_cache(tmp_path: Path, caplog) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    build = Builder()
    with caplog.at_level(logging.WARNING):
        index = load_or_build(build, blocker / "train", key())
        load_or_build(build, blocker / "train", key())
    assert build.calls == 2 and "not cached" in caplog.text
    assert np.array_equal(index.pairs, Builder()().pairs)


def test_no_prefix_means_no_cache(tmp_path: Path) -> None:
    build = Builder()
    load_or_build(build, None, key())
    load_or_build(build, None, key())
    assert build.calls == 2


class FailingBuilder(Builder):
    def __call__(self) -> PairIndex:
        self.calls += 1
        raise ValueError("the build failed")


def _rank(rank: int, world: int, port: int, prefix: str, fail: bool) -> None:
    dist.init_process_group(
        "gloo", f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=timedelta(seconds=60)
    )
    build = FailingBuilder() if fail else Builder()
    try:
        index = load_or_build(build, Path(prefix), key())
        Path(f"{prefix}.rank{rank}").write_text(json.dumps({"calls": build.calls, "pairs": len(index)}))
    except ValueError as error:
        Path(f"{prefix}.rank{rank}").write_text(json.dumps({"calls": build.calls, "error": str(error)}))
    finally:
        dist.destroy_process_group()


def two_ranks(prefix: Path, fail: bool = False) -> list[dict]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_rank, args=(2, port, str(prefix), fail), nprocs=2)
    return [json.loads(Path(f"{prefix}.rank{rank}").read_text()) for rank in range(2)]


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_only_rank_0_builds(tmp_path: Path) -> None:
    expected = len(Builder()())
    reports = two_ranks(tmp_path / "train")
    assert reports == [{"calls": 1, "pairs": expected}, {"calls": 0, "pairs": expected}]


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_a_failed_build_stops_every_rank(tmp_path: Path) -> None:
    """Not a wait at the barrier until the timeout: the other ranks build and fail the same way.

    A rank left waiting would end in the process group's timeout error, not the build's error, and
    ``mp.spawn`` would raise it: the reports show which happened, without a wall-clock limit that a
    loaded machine can exceed (this test took 63 s under a full CI run, 10 s alone).
    """
    reports = two_ranks(tmp_path / "train", fail=True)
    assert reports == [{"calls": 1, "error": "the build failed"}] * 2


def write_sentence_bin(dest: Path) -> None:
    """A small data-bin as macaron_preprocess.bert_corpus writes it (sentences + </s>, </s> after each
    document)."""
    from fairseq.data import Dictionary, indexed_dataset

    dictionary = Dictionary()
    for i in range(50):
        dictionary.add_symbol(f"w{i}", n=100 - i)
    dest.mkdir(parents=True, exist_ok=True)
    dictionary.save(str(dest / "dict.txt"))
    rng = np.random.default_rng(0)
    eos = torch.tensor([dictionary.eos()])
    builder = indexed_dataset.make_builder(str(dest / "train.bin"), impl="mmap", vocab_size=len(dictionary))
    for _ in range(12):
        for _ in range(int(rng.integers(1, 8))):
            pieces = rng.integers(dictionary.nspecial, len(dictionary), int(rng.integers(1, 9)))
            builder.add_item(torch.cat([torch.from_numpy(pieces), eos]))
        builder.add_item(eos)
    builder.finalize(str(dest / "train.idx"))


@pytest.mark.parametrize("where", ["", "elsewhere", "off"])
def test_the_tasks_pair_cache_option(tmp_path: Path, where: str) -> None:
    from fairseq import options, tasks

    data = tmp_path / "data-bin"
    write_sentence_bin(data)
    argv = [str(data), "--task", "macaron_bert_pretraining", "--arch", "macaron_bert_tiny"]
    argv += ["--tokens-per-sample", "16", "--save-dir", str(tmp_path / "run")]
    if where:
        argv += ["--pair-cache", where if where == "off" else str(tmp_path / where)]
    before = sorted(path.name for path in data.iterdir())
    task = tasks.setup_task(options.parse_args_and_arch(options.get_training_parser(), argv))
    task.load_dataset("train")
    in_run = sorted(path.suffix for path in tmp_path.glob("run/train.pairs-block16-seed1-*"))
    elsewhere = sorted(path.suffix for path in tmp_path.glob("elsewhere/train.pairs-block16-seed1-*"))
    expected = {"": ([".json", ".npy"], []), "elsewhere": ([], [".json", ".npy"]), "off": ([], [])}[where]
    assert (in_run, elsewhere) == expected
    assert sorted(path.name for path in data.iterdir()) == before  # the data-bin, an input, is never written
    assert len(task.dataset("train")) > 0


def test_an_entry_an_older_version_cached_in_the_data_bin_is_read_not_rewritten(tmp_path: Path) -> None:
    from fairseq import options, tasks

    data = tmp_path / "data-bin"
    write_sentence_bin(data)
    argv = [str(data), "--task", "macaron_bert_pretraining", "--arch", "macaron_bert_tiny"]
    argv += ["--tokens-per-sample", "16"]
    parse = options.get_training_parser
    old = tasks.setup_task(options.parse_args_and_arch(parse(), [*argv, "--pair-cache", str(data)]))
    old.load_dataset("train")  # what older versions wrote next to the split
    written = {path.name: path.stat().st_mtime_ns for path in data.iterdir()}
    run = ["--save-dir", str(tmp_path / "run")]
    task = tasks.setup_task(options.parse_args_and_arch(parse(), [*argv, *run]))
    task.load_dataset("train")
    assert {path.name: path.stat().st_mtime_ns for path in data.iterdir()} == written
    assert not (tmp_path / "run").exists()  # loaded from the old entry, not built again
    assert np.array_equal(task.dataset("train").index.pairs, old.dataset("train").index.pairs)
