"""``python -m macaron_fairseq.hf export`` of the Macaron authors' BERT (their checkpoint in its exact layout,
upgraded by ``macaron-upgrade``): a directory with its own modeling file that transformers loads with
``trust_remote_code``, whose MLM and next-sentence logits equal an independent implementation of their
forward (``authors_bert_reference``) within 1e-5, and whose sequence classifier starts at zero as theirs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from helpers import REPO

from macaron_fairseq.hf.exporter import export_hf
from macaron_fairseq.upgrade import upgrade_checkpoint

sys.path.insert(0, str(REPO / "tests" / "macaron_fairseq" / "upgrade"))
from authors_bert_reference import their_forward
from authors_layout import (
    authors_bert_args,
    authors_bert_dictionary,
    write_authors_bert_checkpoint,
)

VOCAB = 30


def test_the_export_computes_their_forward(tmp_path: Path) -> None:
    from transformers import AutoModelForPreTraining, AutoModelForSequenceClassification

    args = authors_bert_args(layers=2, dim=16, heads=2, ffn=8)
    theirs = tmp_path / "bert_corpus"
    theirs.mkdir()
    authors_bert_dictionary(theirs / "dict.txt", VOCAB)
    (theirs / "bpe-code").write_text("t h 9\nth e</w> 7\n")
    sd = write_authors_bert_checkpoint(tmp_path / "checkpoint_pretrained.pt", args, VOCAB)
    upgrade_checkpoint(tmp_path / "checkpoint_pretrained.pt", tmp_path / "up" / "model.pt", theirs)
    out = export_hf(tmp_path / "up" / "model.pt", tmp_path / "hf")
    assert {"modeling_authors_bert.py", "vocab.json", "dict.txt", "bpe-code"} <= {
        p.name for p in out.iterdir()
    }
    assert json.loads((out / "fairseq_export.json").read_text())["max_abs_logit_difference"] <= 1e-5
    vocab = json.loads((out / "vocab.json").read_text())
    assert vocab["<s>"] == 0 and vocab["w0"] == 4 and vocab["<mask>"] == VOCAB - 2
    model = AutoModelForPreTraining.from_pretrained(str(out), trust_remote_code=True).eval()
    # their ids and segments (<cls> 5, words from 6, <mask> 4; segment 1 for <cls>/A/padding, 0 for B)
    tokens = torch.tensor([[5, 7, 8, 4, 2, 9, 10, 2], [5, 11, 2, 12, 2, 1, 1, 1]])
    segments = torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 1, 1, 1]])
    their_mlm, their_nsp, _ = their_forward(sd, args, tokens, segments)
    order = torch.tensor([5, 1, 2, 3, *range(6, VOCAB), 4])  # the plugin's id p is their order[p]
    to_plugin = torch.zeros(VOCAB, dtype=torch.long)
    to_plugin[order] = torch.arange(VOCAB - 1)  # their id -> the plugin's
    ids = to_plugin[tokens]
    with torch.no_grad():
        out_hf = model(input_ids=ids, token_type_ids=1 - segments)
    real = tokens.ne(1)
    torch.testing.assert_close(
        out_hf.prediction_logits[real], their_mlm[:, :, order][real], atol=1e-5, rtol=0
    )
    torch.testing.assert_close(out_hf.seq_relationship_logits.view(-1), their_nsp, atol=1e-5, rtol=0)
    classifier = AutoModelForSequenceClassification.from_pretrained(
        str(out), trust_remote_code=True, num_labels=3
    )
    assert float(classifier.classifier.weight.abs().sum()) == 0.0
    assert torch.equal(
        classifier.authors_bert.embeddings.word_embeddings.weight,
        model.authors_bert.embeddings.word_embeddings.weight,
    )
