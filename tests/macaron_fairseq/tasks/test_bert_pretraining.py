"""``--task macaron_bert_pretraining`` on data-bins in the layout of ``python -m
macaron_preprocess.bert_corpus``:
pairs inside documents, example layout and segment labels, masking statistics and determinism per
(seed, epoch, index), clear errors on bad data-bins — and a real ``fairseq-train`` run on a corpus built
by the real ``macaron_preprocess.bert_corpus`` CLI.

The unit tests write their data-bins with fairseq's own mmap builder; every token of them is a distinct
symbol, so each symbol tells which document it comes from and where it stands in it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from bert_data_bin import write_data_bin
from fairseq import options, tasks
from fairseq.data import data_utils
from helpers import REPO, run_cli, run_module

from macaron_fairseq.data import bert_pairs
from macaron_fairseq.data.bert_pairs import BertDataError, SentencesWithoutEos
from macaron_fairseq.data.pair_index import build_pair_index
from macaron_fairseq.tasks.bert_pretraining import BertPretrainingTask
from macaron_synthetic.wiki.dump import write_dump
from macaron_workflow.errors import UserError

BLOCK = 32


def make_task(data: Path, *extra: str) -> BertPretrainingTask:
    parser = options.get_training_parser()
    argv = [str(data), "--task", "macaron_bert_pretraining", "--arch", "macaron_bert_tiny"]
    if "--save-dir" not in extra:  # the pair cache goes there (fairseq's default: ./checkpoints)
        argv += ["--save-dir", str(data.parent / f"{data.name}-run")]
    args = options.parse_args_and_arch(parser, [*argv, "--tokens-per-sample", str(BLOCK), *extra])
    return tasks.setup_task(args)


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, tuple[int, int]]]:
    dest = tmp_path_factory.mktemp("bert_bin")
    return dest, write_data_bin(dest)


@pytest.fixture(scope="module")
def dataset(data_bin):
    task = make_task(data_bin[0])
    task.load_dataset("train")
    return task, task.dataset("train")


def original(item: dict, pad: int) -> torch.Tensor:
    """The example before masking."""
    return torch.where(item["target"].ne(pad), item["target"], item["source"])


def test_examples_are_cls_a_sep_b_sep_with_segments(dataset) -> None:
    task, ds = dataset
    d = task.source_dictionary
    assert len(ds) > 50
    for i in range(len(ds)):
        item = ds[i]
        tokens = original(item, d.pad())
        seps = torch.nonzero(tokens.eq(d.eos())).flatten().tolist()
        assert tokens[0] == d.bos() and len(seps) == 2 and seps[1] == len(tokens) - 1, tokens
        assert len(tokens) == ds.size(i) <= BLOCK
        expected = [0] * (seps[0] + 1) + [1] * (len(tokens) - seps[0] - 1)
        assert item["segment_labels"].tolist() == expected
        assert item["nsp_target"] in (0, 1)


def test_pairs_never_cross_documents(dataset, data_bin) -> None:
    task, ds = dataset
    where, pad = data_bin[1], task.source_dictionary.pad()
    counts = [0, 0]
    for i in range(len(ds)):
        item = ds[i]
        tokens = original(item, pad)
        sep = int(tokens.eq(task.source_dictionary.eos()).nonzero()[0])
        a, b = tokens[1:sep].tolist(), tokens[sep + 1 : -1].tolist()
        assert a and b
        for segment in (a, b):
            docs = {where[t][0] for t in segment}
            positions = [where[t][1] for t in segment]
            assert len(docs) == 1, segment  # one document
            assert positions == list(range(positions[0], positions[0] + len(positions)))  # contiguous
        doc_a, doc_b = where[a[0]][0], where[b[0]][0]
        if item["nsp_target"] == 0:  # IsNext: B comes after A in A's document
            assert doc_a == doc_b and where[b[0]][1] > where[a[-1]][1]
        else:
            assert doc_a != doc_b
        counts[item["nsp_target"]] += 1
    assert 0.3 < counts[0] / sum(counts) < 0.7, counts


def test_masking_statistics(dataset) -> None:
    task, ds = dataset
    d = task.source_dictionary
    mask, pad = task.mask_idx, d.pad()
    tokens = predicted = masked = kept = 0
    for epoch in range(1, 16):
        ds.set_epoch(epoch)
        for i in range(len(ds)):
            item = ds[i]
            src, tgt = item["source"], item["target"]
            special = src.eq(d.bos()) | (src.eq(d.eos()) & tgt.eq(pad))
            assert tgt[special].eq(pad).all()  # CLS and SEP are never predicted
            chosen = tgt.ne(pad)
            tokens += int((~special).sum())
            predicted += int(chosen.sum())
            masked += int(src[chosen].eq(mask).sum())
            kept += int(src[chosen].eq(tgt[chosen]).sum())
            replaced = src[chosen & src.ne(mask) & src.ne(tgt)]
            assert replaced.ge(d.nspecial).all() and replaced.ne(mask).all()  # real symbols only
            assert src[~chosen].eq(original(item, pad)[~chosen]).all()
    ds.set_epoch(1)
    assert tokens > 30_000
    assert abs(predicted / tokens - 0.15) < 0.01, predicted / tokens
    assert abs(masked / predicted - 0.8) < 0.02
    assert abs(kept / predicted - 0.1) < 0.015
    assert abs((predicted - masked - kept) / predicted - 0.1) < 0.015


def items(ds, epoch: int, indices) -> list[tuple]:
    ds.set_epoch(epoch)
    return [
        (
            ds[i]["source"].tolist(),
            ds[i]["target"].tolist(),
            ds[i]["segment_labels"].tolist(),
            ds[i]["nsp_target"],
        )
        for i in indices
    ]


def test_masks_are_a_function_of_seed_epoch_index(data_bin) -> None:
    first, second = make_task(data_bin[0]), make_task(data_bin[0])
    first.load_dataset("train")
    second.load_dataset("train")
    a, b = first.dataset("train"), second.dataset("train")
    indices = range(0, len(a), 3)
    # a run that went through epochs 1 and 2 (and read items in between) vs a fresh one resuming at epoch 2
    epoch1 = items(a, 1, indices)
    epoch2 = items(a, 2, indices)
    assert items(b, 2, reversed(indices))[::-1] == epoch2
    assert items(b, 1, indices) == epoch1
    # new masks every epoch, the same pairs
    assert sum(x[0] != y[0] for x, y in zip(epoch1, epoch2, strict=True)) > 0.8 * len(epoch1)
    assert [x[2:] for x in epoch1] == [x[2:] for x in epoch2]
    # another seed: other pairs or masks
    other = make_task(data_bin[0], "--seed", "7")
    other.load_dataset("train")
    assert items(other.dataset("train"), 1, range(len(other.dataset("train")))[::3]) != epoch1


def test_batches_are_the_same_for_a_resumed_epoch(data_bin) -> None:
    def batches(epoch: int) -> list[dict]:
        task = make_task(data_bin[0])
        task.load_dataset("train")
        itr = task.get_batch_iterator(task.dataset("train"), max_sentences=8, seed=1, epoch=epoch)
        return list(itr.next_epoch_itr(shuffle=True))

    one, two = batches(2), batches(2)
    assert len(one) == len(two) > 5
    for x, y in zip(one, two, strict=True):
        assert torch.equal(x["id"], y["id"]) and torch.equal(
            x["net_input"]["src_tokens"], y["net_input"]["src_tokens"]
        )
        assert torch.equal(x["target"], y["target"])
    other = batches(3)
    assert [b["id"].tolist() for b in other] != [b["id"].tolist() for b in one]


def test_batch_layout(dataset) -> None:
    task, ds = dataset
    pad = task.source_dictionary.pad()
    samples = [ds[i] for i in range(5)]
    batch = ds.collater(samples)
    longest = max(len(s["source"]) for s in samples)
    assert (
        batch["net_input"]["src_tokens"].shape == batch["net_input"]["segment_labels"].shape == (5, longest)
    )
    assert batch["target"].shape == (5, longest) and batch["nsp_target"].shape == (5,)
    for row, s in enumerate(samples):
        n = len(s["source"])
        assert batch["net_input"]["src_tokens"][row, n:].eq(pad).all()  # right-padded
        assert batch["net_input"]["segment_labels"][row, n:].eq(0).all()
        assert batch["target"][row, n:].eq(pad).all()
    assert batch["ntokens"] == sum(len(s["source"]) for s in samples) and batch["nsentences"] == 5


def test_a_data_bin_without_document_boundaries_is_refused(tmp_path) -> None:
    write_data_bin(tmp_path, boundaries=False)
    task = make_task(tmp_path)
    with pytest.raises(BertDataError, match=r"train\.bin has no document boundary"):
        task.load_dataset("train")


def test_a_single_document_is_refused(tmp_path) -> None:
    write_data_bin(tmp_path, documents=1)
    with pytest.raises(BertDataError, match="1 document"):
        make_task(tmp_path).load_dataset("train")


def test_a_dictionary_of_other_data_is_refused(tmp_path) -> None:
    where = write_data_bin(tmp_path, dict_symbols=50)
    with pytest.raises(BertDataError, match=rf"symbol id {max(where)}, but .*dict\.txt has only 54 symbols"):
        make_task(tmp_path).load_dataset("train")


def test_missing_files_are_named(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"dict\.txt not found"):
        make_task(tmp_path)
    write_data_bin(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"test\.bin/\.idx not found"):
        make_task(tmp_path).load_dataset("test")


# --- one sentence pairing per epoch mod --nsp-pairings ---------------------------------------------------


def pairs_of(task: BertPretrainingTask, epoch: int) -> np.ndarray:
    task.load_dataset("train", epoch=epoch)
    return np.asarray(task.dataset("train").index.pairs).copy()


def test_each_epoch_mod_k_reads_its_own_pairing_and_the_cache_is_reused(tmp_path, monkeypatch) -> None:
    write_data_bin(tmp_path / "bin", documents=30)
    cache = tmp_path / "cache"
    cache.mkdir()
    builds = []
    real_build = bert_pairs.build_pair_index

    def counting_build(*args, **kwargs):
        builds.append(kwargs)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(bert_pairs, "build_pair_index", counting_build)
    task = make_task(tmp_path / "bin", "--nsp-pairings", "3", "--pair-cache", str(cache))
    assert task.has_sharded_data("train")  # fairseq-train then loads the dataset of every epoch
    epochs = {epoch: pairs_of(task, epoch) for epoch in range(1, 7)}
    assert len(builds) == 3  # pairings 0, 1, 2; epochs 4-6 load them from the cache
    assert len(list(cache.glob("train.pairs-*.npy"))) == 3
    for epoch in (1, 2, 3):  # epoch e and e + K: the same pairs; the K epochs of a cycle: other pairs
        assert np.array_equal(epochs[epoch], epochs[epoch + 3])
        for other in (1, 2, 3):
            if other != epoch:
                common = min(len(epochs[epoch]), len(epochs[other]))  # not just another number of pairs
                assert not np.array_equal(epochs[epoch][:common], epochs[other][:common])
    dataset = task.dataset("train")
    assert (dataset.pairing, dataset.pair_seed) == (2, bert_pairs.pairing_seed(1, 2))
    # a new run (another process: nothing in memory) loads every pairing from the cache
    fresh = make_task(tmp_path / "bin", "--nsp-pairings", "3", "--pair-cache", str(cache))
    assert np.array_equal(pairs_of(fresh, 5), epochs[2])
    assert len(builds) == 3
    # the same pairing again: the loaded dataset is kept (not rebuilt, not reloaded)
    kept = fresh.dataset("train")
    fresh.load_dataset("train", epoch=2)
    assert fresh.dataset("train") is kept


def test_one_pairing_keeps_the_pairs_of_the_seed_for_every_epoch(tmp_path) -> None:
    write_data_bin(tmp_path / "bin", documents=30)
    task = make_task(tmp_path / "bin", "--nsp-pairings", "1", "--pair-cache", "off")
    assert not task.has_sharded_data("train")
    first = pairs_of(task, 1)
    kept = task.dataset("train")
    for epoch in (2, 3, 11):
        task.load_dataset("train", epoch=epoch)
        assert task.dataset("train") is kept
    # the index of the seed itself (fairseq's BlockPairDataset draws under numpy_seed(seed)), as before
    sizes = SentencesWithoutEos(kept.pairs.sentences.dataset, task.dictionary.eos(), "train").sizes
    with data_utils.numpy_seed(1):
        expected = build_pair_index(sizes, BLOCK, 0.1, doc_break_size=0)
    assert np.array_equal(first, expected.pairs)
    # pairing 0 of any K is that index too: runs that cached it before pairings existed keep their cache
    assert np.array_equal(pairs_of(make_task(tmp_path / "bin", "--pair-cache", "off"), 11), first)


def test_a_pairing_count_below_one_is_refused(tmp_path) -> None:
    write_data_bin(tmp_path)
    with pytest.raises(UserError, match="--nsp-pairings 0"):
        make_task(tmp_path, "--nsp-pairings", "0")


# --- end to end: macaron_preprocess.bert_corpus → fairseq-train ----------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bert_e2e")
    dump = root / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    write_dump(dump, target_bytes=600_000, seed=5)
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


def train_losses(log: str) -> list[float]:
    """The ``loss`` of every ``train_inner`` line (fairseq's simple log format), in bits."""
    return [float(x) for x in re.findall(r"\| train_inner \| epoch \d+:\s+\d+ / \d+ loss=([\d.]+)", log)]


@pytest.mark.slow
def test_fairseq_train_macaron_bert_tiny_learns(corpus: Path, tmp_path: Path) -> None:
    proc = run_cli(
        [
            "fairseq-train",
            str(corpus),
            "--user-dir",
            "macaron_fairseq",
            "--task",
            "macaron_bert_pretraining",
            "--criterion",
            "macaron_bert_loss",
            "--arch",
            "macaron_bert_tiny",
            "--tokens-per-sample",
            "64",
            "--optimizer",
            "adam",
            "--adam-betas",
            "(0.9, 0.999)",
            "--adam-eps",
            "1e-6",
            "--weight-decay",
            "0.01",
            "--lr",
            "5e-3",
            "--lr-scheduler",
            "polynomial_decay",
            "--warmup-updates",
            "5",
            "--total-num-update",
            "60",
            "--max-update",
            "60",
            "--batch-size",
            "32",
            "--num-workers",
            "0",
            "--seed",
            "1",
            "--save-dir",
            str(tmp_path / "ckpt"),
            "--no-epoch-checkpoints",
            "--no-progress-bar",
            "--log-interval",
            "5",
            "--log-format",
            "simple",
        ],
        cwd=REPO,
    )
    log = proc.stdout + proc.stderr
    assert "MacaronBertModel" in log and "MacaronEncoderLayer" in log
    # fairseq's trainer loads the dataset of every epoch (--nsp-pairings 10): epoch 2 reads pairing 1
    assert "end of epoch 1 " in log, log[-3000:]
    assert re.search(r"sentence pairs of pairing 1/10 \(epoch 2;", log), log[-3000:]
    losses = train_losses(log)
    assert len(losses) >= 10, log[-3000:]
    # measured (seed 1): 9.93 over updates 1-5 (uniform MLM guess log2(505) = 8.98 + NSP 1.0), 8.90 at 60
    assert losses[-1] < losses[0] - 0.75, losses
    valid = re.findall(r"\| valid \| .*?\| mlm_loss ([\d.]+) .*?\| nsp_accuracy ([\d.]+)", log)
    assert valid, log[-3000:]
    vocab = len((corpus / "dict.txt").read_text().splitlines()) + 5  # + 4 specials + <mask>
    assert float(valid[-1][0]) < math.log2(vocab) - 0.5, valid  # below a uniform guess: 8.01 measured
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", weights_only=True)
    assert state["cfg"]["model"].arch == "macaron_bert_tiny"
    assert torch.equal(state["model"]["encoder.embed_tokens.weight"], state["model"]["lm_head.weight"])
