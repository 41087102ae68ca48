"""The upgraded checkpoint is numerically the authors' model: decoder logits within 1e-5 of an independent
implementation of their forward pass (``authors_reference``) on random weights in their exact layout
(``authors_layout``), and the same beam-1 and beam-5 translations under fairseq's own beam search — for
pre-LN and post-LN, Macaron and their Transformer baseline, shared and separate embeddings, sinusoidal and
learned positions. The model is loaded as ``fairseq-generate`` loads it (``load_model_ensemble_and_task``,
which runs fairseq's own state-dict upgrade: the ``decoder.version`` trap)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from authors_layout import authors_args, write_authors_checkpoint
from authors_reference import AuthorsReference, ReferenceModel
from fairseq import checkpoint_utils
from fairseq.sequence_generator import SequenceGenerator

from macaron_fairseq.upgrade import upgrade_checkpoint
from macaron_fairseq.upgrade.weights import plugin_state

VOCAB = 40  # fairseq's 4 special symbols + 36

CASES = {
    "macaron pre-LN (their *_macaron_v2)": dict(macaron=True, pre_ln=True),
    "macaron post-LN": dict(macaron=True, pre_ln=False),
    "transformer pre-LN (their *_v2 baseline), separate output": dict(
        macaron=False, pre_ln=True, shared=False
    ),
    "macaron pre-LN, learned positions, separate embeddings": dict(
        macaron=True, pre_ln=True, shared=False, learned_pos=True, layers=3
    ),
}


def write_dictionaries(data: Path, size: int, langs: tuple[str, str] = ("de", "en")) -> Path:
    data.mkdir(parents=True, exist_ok=True)
    for lang in langs:
        (data / f"dict.{lang}.txt").write_text("".join(f"w{i} 1\n" for i in range(size - 4)))
    return data


def load_upgraded(out: Path, data: Path):
    import macaron_fairseq  # noqa: F401  (the plugin, as --user-dir loads it)

    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(out)], arg_overrides={"data": str(data)}
    )
    return models[0].eval(), task


def batch(seed: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Left-padded sources of different lengths, full-length target prefixes starting with </s>."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 4, 6])
    src = torch.full((3, 7), 1, dtype=torch.long)
    for row, n in enumerate(lengths.tolist()):
        src[row, 7 - n :] = torch.randint(4, VOCAB, (n,), generator=g)
        src[row, -1] = 2  # </s>
    prev = torch.randint(4, VOCAB, (3, 5), generator=g)
    prev[:, 0] = 2
    return src, lengths, prev


@pytest.fixture(scope="module", params=list(CASES))
def upgraded(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upgrade")
    args = authors_args(**CASES[request.param])
    weights = write_authors_checkpoint(tmp / "authors.pt", args, VOCAB)
    upgrade_checkpoint(tmp / "authors.pt", tmp / "model.pt")
    model, task = load_upgraded(tmp / "model.pt", write_dictionaries(tmp / "data", VOCAB))
    return args, weights, model, task


def test_decoder_logits_equal_the_authors_forward_within_1e_5(upgraded) -> None:
    args, weights, model, _ = upgraded
    src, lengths, prev = batch()
    with torch.no_grad():
        ours = model(src, lengths, prev)[0]
        theirs = AuthorsReference(args, weights).logits(src, prev)
    assert ours.shape == theirs.shape == (3, 5, VOCAB)
    assert theirs.abs().max() > 1  # random weights: logits far from zero, so the tolerance means something
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("beam", [1, 5])
def test_beam_search_gives_the_authors_translations(upgraded, beam: int) -> None:
    args, weights, model, task = upgraded
    reference = ReferenceModel(
        AuthorsReference(args, weights), task.source_dictionary, task.target_dictionary
    )
    src, lengths, _ = batch(seed=5)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths}}
    outputs = []
    for m in (model, reference.eval()):
        generator = SequenceGenerator([m], task.target_dictionary, beam_size=beam, max_len_a=0, max_len_b=9)
        with torch.no_grad():
            outputs.append(generator.generate([m], sample))
    ours, theirs = outputs
    for mine, ref in zip(ours, theirs, strict=True):
        assert [h["tokens"].tolist() for h in mine] == [h["tokens"].tolist() for h in ref]
        torch.testing.assert_close(
            torch.stack([h["score"] for h in mine]), torch.stack([h["score"] for h in ref]), atol=1e-5, rtol=0
        )


def test_the_version_trap_would_drop_the_pre_ln_decoder_norm(tmp_path: Path) -> None:
    """Kept at their ``decoder.version`` 2, fairseq's own upgrade deletes the pre-LN decoder's final norm and
    the logits move far away: the upgrade sets the version, and the tests above would catch its absence."""
    args = authors_args(macaron=True, pre_ln=True)
    weights = write_authors_checkpoint(tmp_path / "authors.pt", args, VOCAB)
    upgrade_checkpoint(tmp_path / "authors.pt", tmp_path / "model.pt")
    model, _ = load_upgraded(tmp_path / "model.pt", write_dictionaries(tmp_path / "data", VOCAB))
    src, lengths, prev = batch()
    with torch.no_grad():
        good = model(src, lengths, prev)[0]
        naive = plugin_state(weights, model.state_dict(), tmp_path / "authors.pt")
        naive["decoder.version"] = torch.Tensor([2])
        model.load_state_dict(naive, strict=False)
        assert model.decoder.layer_norm is None  # what fairseq did with version 2
        dropped = model(src, lengths, prev)[0]
    assert (good - dropped).abs().max() > 0.1
