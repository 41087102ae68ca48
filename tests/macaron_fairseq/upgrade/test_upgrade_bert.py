"""``macaron-upgrade`` on the authors' BERT (their ``bert/`` fork, ``transformer_bert_base_macaron``):
checkpoints in their exact on-disk layout (legacy serialization, CUDA storage tags, their pickled meters,
an Adam state keyed by parameter ids, random weights) become the plugin's ``authors_bert`` model and its
``dict.txt``, loaded by fairseq from that directory; its MLM and next-sentence outputs are within 1e-5 of an
independent implementation of their forward (``authors_bert_reference``) on padded batches of single
sentences and pairs, after the documented remapping of ids and segments. A pickled payload is refused in one
line with exit 2 and never runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from authors_bert_reference import their_forward
from authors_layout import authors_bert_args, authors_bert_dictionary, write_authors_bert_checkpoint
from fairseq import checkpoint_utils
from helpers import REPO, RunsCode, upgrade_here

VOCAB = 40  # their 6 special symbols + 34 words
UNSAFE_ENV = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}

#: the command as typed: the console script (in this process), ``python -m`` (in a process of its own)
PROGS = ("macaron-upgrade: error: ", "python -m macaron_fairseq.upgrade: error: ")


def upgrade(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "macaron_fairseq.upgrade", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore", **(env or {})),
    )


def assert_one_line_refusal(proc: subprocess.CompletedProcess, *words: str) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(PROGS), lines
    for word in words:
        assert word in lines[0], (word, lines[0])


def their_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """``<cls> A </s> B </s>`` pairs and a ``<cls> A </s>`` single, right-padded, in their ids and segments
    (``glue_dataset.py``: <cls> and A 1, B 0, padding 1)."""
    g = torch.Generator().manual_seed(5)
    rows = [(5, 4), (3, 0), (2, 2)]  # (words of A, words of B); 0: a single sentence
    length = max(1 + a + 1 + (b + 1 if b else 0) for a, b in rows)
    tokens = torch.full((len(rows), length), 1, dtype=torch.long)
    segments = torch.ones_like(tokens)
    for r, (a, b) in enumerate(rows):
        sent_a = torch.cat([torch.randint(6, VOCAB, (a,), generator=g), torch.tensor([2])])
        sent_b = torch.cat([torch.randint(6, VOCAB, (b,), generator=g), torch.tensor([2])]) if b else None
        row = torch.cat([torch.tensor([5]), sent_a] + ([sent_b] if b else []))
        tokens[r, : len(row)] = row
        if b:
            segments[r, 1 + len(sent_a) : len(row)] = 0
    tokens[0, 3] = 4  # a <mask> in the input
    return tokens, segments


def to_plugin(tokens: torch.Tensor, segments: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Their ids → the plugin's (written here from the documented convention, not from the upgrade):
    <cls> 5 → <s> 0, pad/</s>/unk keep 1/2/3, words 6.. → 4.., <mask> 4 → the last id; segments 1 − theirs."""
    plugin = tokens - 2
    plugin[tokens == 5] = 0
    for special in (1, 2, 3):
        plugin[tokens == special] = special
    plugin[tokens == 4] = VOCAB - 2  # 4 specials + 34 words, then <mask>
    return plugin, 1 - segments


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bert")
    args = authors_bert_args(layers=2, dim=16, heads=2, ffn=8)
    theirs = tmp / "their-data"
    theirs.mkdir()
    authors_bert_dictionary(theirs / "dict.txt", VOCAB)
    sd = write_authors_bert_checkpoint(tmp / "checkpoint_pretrained.pt", args, VOCAB)
    proc = upgrade(
        str(tmp / "checkpoint_pretrained.pt"),
        "--data",
        str(theirs),
        "--out",
        str(tmp / "up" / "model.pt"),
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return args, sd, tmp / "up", proc


def load(directory: Path):
    import macaron_fairseq  # noqa: F401

    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(directory / "model.pt")])
    return models[0].eval(), task


def test_the_file_is_in_their_layout(upgraded) -> None:
    """The fixture really is what their trainer wrote: legacy format, CUDA tags, their meters."""
    _args, _sd, out, _proc = upgraded
    raw = (out.parent / "checkpoint_pretrained.pt").read_bytes()
    assert raw[:1] == b"\x80" and b"cuda:0" in raw and b"fairseq.meters" in raw and b"AverageMeter" in raw


def test_fairseq_loads_it_from_its_directory_with_the_plugin_dictionary(upgraded) -> None:
    _args, _sd, out, proc = upgraded
    assert "transformer_bert_base_macaron" in proc.stdout and "vocabulary 40 (the plugin's 39)" in proc.stdout
    assert (out / "dict.txt").read_text() == (out.parent / "their-data" / "dict.txt").read_text()
    model, task = load(out)
    assert type(model).__name__ == "AuthorsBertModel"
    dictionary = task.source_dictionary
    assert len(dictionary) == VOCAB - 1 and dictionary[4] == "w0" and dictionary[VOCAB - 2] == "<mask>"
    assert model.lm_head.weight is model.encoder.embed_tokens.weight  # tied, as their embed_out


def test_mlm_and_next_sentence_equal_their_forward_within_1e_5(upgraded) -> None:
    args, sd, out, _proc = upgraded
    model, _task = load(out)
    tokens, segments = their_batch()
    their_mlm, their_nsp, _ = their_forward(sd, args, tokens, segments)
    plugin_tokens, plugin_segments = to_plugin(tokens, segments)
    with torch.no_grad():
        mlm, nsp = model(plugin_tokens, segment_labels=plugin_segments)
    # the plugin's symbol p is their symbol order[p]: <cls>, pad, </s>, unk, words, <mask>
    order = torch.tensor([5, 1, 2, 3, *range(6, VOCAB), 4])
    real = tokens.ne(1)
    assert mlm.shape == (3, tokens.size(1), VOCAB - 1) and nsp.shape == (3, 1)
    torch.testing.assert_close(mlm[real], their_mlm[:, :, order][real], atol=1e-5, rtol=0)
    torch.testing.assert_close(nsp.view(-1), their_nsp, atol=1e-5, rtol=0)
    with torch.no_grad():  # the MLM head on the masked positions only, as the pre-training criterion calls it
        masked = plugin_tokens.eq(VOCAB - 2)
        only, _ = model(plugin_tokens, segment_labels=plugin_segments, masked_tokens=masked)
    torch.testing.assert_close(only, their_mlm[:, :, order][masked], atol=1e-5, rtol=0)


def test_the_segment_convention_matters(upgraded) -> None:
    """Their segment rows are different vectors: feeding the plugin their convention unchanged gives other
    outputs (so the equality above is not a coincidence of equal rows)."""
    args, sd, out, _proc = upgraded
    model, _task = load(out)
    tokens, segments = their_batch()
    _mlm, their_nsp, _ = their_forward(sd, args, tokens, segments)
    plugin_tokens, _ = to_plugin(tokens, segments)
    with torch.no_grad():
        _, nsp = model(plugin_tokens, segment_labels=segments)
    assert (nsp.view(-1) - their_nsp).abs().max() > 1e-3


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_a_pickled_payload_in_their_bert_checkpoint_is_refused_and_never_runs(tmp_path: Path) -> None:
    args = authors_bert_args()
    theirs = tmp_path / "their-data"  # apart from --out: an output inside an input is refused first
    theirs.mkdir()
    authors_bert_dictionary(theirs / "dict.txt", VOCAB)
    source = tmp_path / "checkpoint_pretrained.pt"
    write_authors_bert_checkpoint(source, args, VOCAB, hook=RunsCode(tmp_path / "PWNED"))
    proc = upgrade(
        str(source),
        "--data",
        str(theirs),
        "--out",
        str(tmp_path / "up" / "model.pt"),
        cwd=tmp_path,
        env=UNSAFE_ENV,
    )
    assert_one_line_refusal(proc, str(source), "posix.system", "allow-list")
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "up").exists()


def test_without_their_dictionary_it_says_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "checkpoint_pretrained.pt"
    write_authors_bert_checkpoint(source, authors_bert_args(data=str(tmp_path / "gone")), VOCAB)
    proc = upgrade_here(str(source), "--out", str(tmp_path / "up" / "model.pt"), capsys=capsys)
    assert_one_line_refusal(proc, "no dict.txt", "--data THEIR_DATA_BIN")
    theirs = tmp_path / "their-data"  # apart from --out: an output inside an input is refused first
    theirs.mkdir()
    authors_bert_dictionary(theirs / "dict.txt", VOCAB + 1)
    proc = upgrade_here(
        str(source), "--data", str(theirs), "--out", str(tmp_path / "up" / "model.pt"), capsys=capsys
    )
    assert_one_line_refusal(proc, "35 entries", "40 rows")
    assert not (tmp_path / "up").exists()
