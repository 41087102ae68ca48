"""``python -m macaron_fairseq.hf import``: HuggingFace BERT directories (built here with transformers,
random weights) → fairseq checkpoints giving transformers' logits; the vocabulary's id order; unsafe or
unusable inputs refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO
from hf_models import (
    HF_CLS,
    HF_PAD,
    TOKENS,
    fairseq_logits_in_hf_order,
    hf_to_fairseq_ids,
    load_fairseq,
    max_diff,
    random_batch,
    save_hf_bert,
)

from macaron_fairseq.hf.importer import import_hf
from macaron_fairseq.hf.vocab import WordPieceVocabulary
from macaron_workflow.errors import UserError

TOLERANCE = 1e-4


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-m", "macaron_fairseq.hf", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(HF directory, the checkpoint the CLI imported from it)."""
    root = tmp_path_factory.mktemp("hf")
    hf_dir = save_hf_bert(root / "bert")
    return hf_dir, import_hf(hf_dir, root / "bert.pt")


@pytest.mark.slow
def test_the_import_command(tmp_path: Path) -> None:
    hf_dir = save_hf_bert(tmp_path / "bert")
    out = tmp_path / "bert.pt"
    proc = cli("import", str(hf_dir), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # (the last line: importing fairseq lets DeepSpeed print its accelerator notice on stdout first)
    assert proc.stdout.splitlines()[-1] == f"wrote {out} (dictionary and tokenizer: {tmp_path / 'bert.data'})"
    assert out.is_file() and (tmp_path / "bert.data" / "dict.txt").is_file()


def test_imported_checkpoint_gives_transformers_mlm_and_nsp_logits(imported: tuple[Path, Path]) -> None:
    from transformers import BertForPreTraining

    hf_dir, checkpoint = imported
    theirs = BertForPreTraining.from_pretrained(str(hf_dir)).eval()
    ours = load_fairseq(checkpoint)  # fairseq's own loader, the plugin imported
    ids, attention, types = random_batch(len(TOKENS), HF_PAD, HF_CLS)
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=attention, token_type_ids=types)
    to_fairseq = hf_to_fairseq_ids(checkpoint.with_suffix(".data"))
    mlm, nsp = fairseq_logits_in_hf_order(ours, to_fairseq, ids, types)
    assert max_diff(mlm, expected.prediction_logits, attention) <= TOLERANCE
    assert max_diff(nsp, expected.seq_relationship_logits) <= TOLERANCE
    # the test can fail: fairseq's LayerNorm ε (1e-5 instead of BERT's 1e-12) alone moves the logits
    for module in ours.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.eps = 1e-5
    mlm, _ = fairseq_logits_in_hf_order(ours, to_fairseq, ids, types)
    assert max_diff(mlm, expected.prediction_logits, attention) > TOLERANCE


def test_imported_dictionary_maps_specials_and_keeps_every_token(imported: tuple[Path, Path]) -> None:
    from fairseq.data import Dictionary

    _, checkpoint = imported
    data = checkpoint.with_suffix(".data")
    dictionary = Dictionary.load(str(data / "dict.txt"))
    mask = dictionary.add_symbol("<mask>")  # as the BERT tasks do
    to_fairseq = hf_to_fairseq_ids(data)
    assert len(dictionary) == len(TOKENS)
    assert to_fairseq[TOKENS.index("[CLS]")] == dictionary.bos()
    assert to_fairseq[TOKENS.index("[SEP]")] == dictionary.eos()
    assert to_fairseq[TOKENS.index("[PAD]")] == dictionary.pad()
    assert to_fairseq[TOKENS.index("[UNK]")] == dictionary.unk()
    assert to_fairseq[TOKENS.index("[MASK]")] == mask
    for i, token in enumerate(TOKENS):
        if not token.startswith("["):
            assert dictionary[int(to_fairseq[i])] == token  # each token under its own string
    assert dictionary.index("[unused0]") == int(to_fairseq[1])
    state = torch.load(checkpoint, weights_only=True)
    assert state["cfg"]["model"].layernorm_eps == 1e-12
    assert state["cfg"]["task"]["data"] == str(data.resolve())


def test_bert_model_directory_and_pickled_bin_weights(tmp_path: Path) -> None:
    """A BertModel directory (no heads; keys without ``bert.``) as a pytorch_model.bin: encoder outputs
    equal, the heads initialised and reported."""
    from safetensors.torch import load_file
    from transformers import BertModel

    hf_dir = save_hf_bert(tmp_path / "base", kind="base")
    weights = load_file(str(hf_dir / "model.safetensors"))
    (hf_dir / "model.safetensors").unlink()
    torch.save(weights, hf_dir / "pytorch_model.bin")
    out = import_hf(hf_dir, tmp_path / "base.pt")
    theirs = BertModel.from_pretrained(str(hf_dir)).eval()
    ours = load_fairseq(out)
    ids, attention, types = random_batch(len(TOKENS), HF_PAD, HF_CLS)
    to_fairseq = hf_to_fairseq_ids(out.with_suffix(".data"))
    with torch.no_grad():
        expected = theirs(input_ids=ids, attention_mask=attention, token_type_ids=types)
        features, _ = ours(to_fairseq[ids], segment_labels=types, features_only=True)
        pooled = ours.pooler(features)
    assert max_diff(features, expected.last_hidden_state, attention) <= TOLERANCE
    assert max_diff(pooled, expected.pooler_output) <= TOLERANCE
    record = json.loads((out.with_suffix(".data") / "hf_vocabulary.json").read_text())
    assert "nsp_classifier.weight" in record["fresh_parameters"]


@pytest.mark.slow
def test_malicious_pickle_is_refused_without_running_it(tmp_path: Path) -> None:
    hf_dir = save_hf_bert(tmp_path / "evil")
    (hf_dir / "model.safetensors").unlink()
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    torch.save(
        {"bert.embeddings.word_embeddings.weight": torch.zeros(2), "x": Payload()},
        hf_dir / "pytorch_model.bin",
    )
    proc = cli("import", str(hf_dir), "--out", str(tmp_path / "evil.pt"))
    assert proc.returncode == 2, proc.stderr
    assert "refusing to load" in proc.stderr and "pytorch_model.bin" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists()
    assert not (tmp_path / "evil.pt").exists() and not (tmp_path / "evil.data").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"hidden_act": "silu"}, "hidden_act"),
        ({"model_type": "roberta"}, "model_type"),
    ],
)
def test_configs_the_plugin_cannot_reproduce_are_refused(tmp_path: Path, change: dict, message: str) -> None:
    hf_dir = save_hf_bert(tmp_path / "bert")
    config = json.loads((hf_dir / "config.json").read_text())
    config.update(change)
    (hf_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match=message):
        import_hf(hf_dir, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


def test_vocabulary_order_and_refusals(tmp_path: Path) -> None:
    tokens = ["[PAD]", "x", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "y"]
    specials = {
        "cls_token": "[CLS]",
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
    }
    vocab = WordPieceVocabulary.build(tokens, specials, tmp_path / "vocab.txt")
    assert vocab.order.tolist() == [3, 0, 4, 2, 1, 6, 5]  # <s> <pad> </s> <unk> x y <mask>
    assert vocab.dictionary_lines() == "x 1\ny 1\n"
    rows = torch.arange(7.0)[:, None]
    assert torch.equal(vocab.to_hf_rows(vocab.to_fairseq_rows(rows)), rows)
    with pytest.raises(UserError, match="repeats line 2"):
        WordPieceVocabulary.build([*tokens, "x"], specials, tmp_path / "vocab.txt")
    with pytest.raises(UserError, match="fairseq's special symbols"):
        WordPieceVocabulary.build([*tokens, "<s>"], specials, tmp_path / "vocab.txt")
    with pytest.raises(UserError, match="not in the vocabulary"):
        WordPieceVocabulary.build(tokens[:-2], specials, tmp_path / "vocab.txt")


def test_a_reimport_whose_last_rename_fails_keeps_the_previous_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing again over the same ``--out`` swaps the data dir by renames: when putting the new one in
    fails, the previous import (checkpoint and data dir) is left exactly as it was, nothing temporary is
    left behind, and a rerun replaces both."""
    from macaron_workflow import atomic

    hf_dir = save_hf_bert(tmp_path / "bert")
    out = import_hf(hf_dir, tmp_path / "bert.pt")
    data = tmp_path / "bert.data"
    before = {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()}
    checkpoint = out.read_bytes()
    real_replace = os.replace

    def fail_the_new_dir(src: object, dst: object) -> None:
        if Path(dst) == data and Path(src).name == "data":  # the staged new data dir
            raise OSError("disk full")
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(atomic.os, "replace", fail_the_new_dir)
    with pytest.raises(OSError, match="disk full"):
        import_hf(hf_dir, out)
    assert {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()} == before
    assert out.read_bytes() == checkpoint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bert", "bert.data", "bert.pt"]
    monkeypatch.undo()
    assert import_hf(hf_dir, out) == out and (data / "dict.txt").is_file()


@pytest.mark.slow
def test_a_full_disk_is_one_line_without_fairseqs_tracebacks_and_leaves_nothing(tmp_path: Path) -> None:
    """A real full file system (a small tmpfs): fairseq's torch_persistent_save logged a traceback for each
    of its attempts before the one error line; nothing of the import stays, not its directory."""
    from full_disk import TRAINING_LOG, fill, leftovers, other_stderr_lines, small_filesystem

    prog = "python -m macaron_fairseq.hf"
    hf_dir = save_hf_bert(tmp_path / "bert")
    with small_filesystem(tmp_path / "disk", "1m") as disk:
        fill(disk, 64 * 1024)
        before = set(leftovers(disk))
        out = disk / "new" / "bert.pt"
        proc = cli("import", str(hf_dir), "--out", str(out))
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        (line,) = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        assert line.startswith(f"{prog}: error: cannot write {out}: No space left on device"), line
        assert other_stderr_lines(proc.stderr, prog, TRAINING_LOG) == [], proc.stderr
        assert leftovers(disk, before) == []
