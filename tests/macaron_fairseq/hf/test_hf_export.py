"""``python -m macaron_fairseq.hf export``: a vanilla BERT as a native ``BertForPreTraining`` directory
(round trip HF → fairseq → HF identical), a Macaron BERT as a directory with its own modeling file
(``trust_remote_code``), the tokenizer with it (WordPiece's own files; ours: sentencepiece + dict.txt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hf_models import HF_CLS, HF_PAD, TOKENS, max_diff, perturb, random_batch, save_hf_bert

from macaron_fairseq.hf.exporter import export_hf
from macaron_fairseq.hf.importer import build_fairseq_model, import_hf, save_checkpoint
from macaron_workflow.errors import UserError

TOLERANCE = 1e-4
CORPUS = [
    "the cat sat on the mat .",
    "a dog runs after the cat , and the cat runs away .",
    "hello world , this is a small corpus for a sentencepiece model .",
    "dogs and cats are running on mats .",
] * 20


def test_round_trip_hf_fairseq_hf_is_identical(tmp_path: Path) -> None:
    from safetensors.torch import load_file
    from transformers import AutoModelForPreTraining, AutoTokenizer, BertForPreTraining

    hf_dir = save_hf_bert(tmp_path / "bert")
    checkpoint = import_hf(hf_dir, tmp_path / "bert.pt")
    out = export_hf(checkpoint, tmp_path / "back")
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "bert" and "auto_map" not in config  # native: no remote code
    assert config["layer_norm_eps"] == 1e-12 and config["pad_token_id"] == HF_PAD
    original, back = load_file(str(hf_dir / "model.safetensors")), load_file(str(out / "model.safetensors"))
    assert original.keys() == back.keys()
    assert all(torch.equal(original[k], back[k]) for k in original)
    first = BertForPreTraining.from_pretrained(str(hf_dir)).eval()
    second = AutoModelForPreTraining.from_pretrained(str(out)).eval()
    assert type(second) is BertForPreTraining
    ids, attention, types = random_batch(len(TOKENS), HF_PAD, HF_CLS)
    with torch.no_grad():
        a = first(input_ids=ids, attention_mask=attention, token_type_ids=types)
        b = second(input_ids=ids, attention_mask=attention, token_type_ids=types)
    assert torch.equal(a.prediction_logits, b.prediction_logits)
    assert torch.equal(a.seq_relationship_logits, b.seq_relationship_logits)
    # the tokenizer travelled: the same ids (lowercasing included) as the original's
    text = ("The Cat sat on the MAT.", "Hello world, café!")
    assert (
        AutoTokenizer.from_pretrained(str(out))(*text)["input_ids"]
        == AutoTokenizer.from_pretrained(str(hf_dir))(*text)["input_ids"]
    )


def write_sentencepiece_data_bin(directory: Path) -> Path:
    """A data dir like macaron_preprocess.bert_corpus's: sentencepiece.bpe.model and its pieces' dict.txt."""
    import sentencepiece as spm

    directory.mkdir(parents=True)
    text = directory / "corpus.txt"
    text.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(directory / "sentencepiece.bpe"),
        vocab_size=60,
        model_type="bpe",
        character_coverage=1.0,
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        num_threads=1,
        minloglevel=2,
    )
    processor = spm.SentencePieceProcessor(model_file=str(directory / "sentencepiece.bpe.model"))
    counts: dict[str, int] = {}
    for line in CORPUS:
        for piece in processor.encode(line, out_type=str):
            counts[piece] = counts.get(piece, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    (directory / "dict.txt").write_text("".join(f"{p} {c}\n" for p, c in ranked), encoding="utf-8")
    return directory


def save_plugin_checkpoint(path: Path, data_dir: Path, arch: str, flags: list[str]) -> Path:
    model, _, cfg = build_fairseq_model(data_dir, arch, flags)
    perturb(model, seed=3)
    return save_checkpoint(path, cfg, model.state_dict())


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sentencepiece_data_bin(tmp_path_factory.mktemp("corpus") / "data-bin")


@pytest.mark.parametrize(
    ("arch", "flags"),
    [
        ("macaron_bert_tiny", ["--macaron-ffn-step", "0.4", "--activation-fn", "gelu_accurate"]),
        ("vanilla_bert_tiny", ["--encoder-normalize-before"]),  # pre-LN: not BertForPreTraining's
        ("macaron_bert_tiny", ["--init-scheme", "t-fixup"]),  # norm-free layers (T-Fixup)
    ],
)
def test_macaron_export_loads_with_trust_remote_code(
    tmp_path: Path, data_bin: Path, arch: str, flags: list[str]
) -> None:
    from transformers import AutoModel, AutoModelForPreTraining, AutoModelForSequenceClassification

    from macaron_fairseq.hf.exporter import load_fairseq

    checkpoint = save_plugin_checkpoint(tmp_path / "model.pt", data_bin, arch, flags)
    out = export_hf(checkpoint, tmp_path / "hf")
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "macaron_bert" and "AutoModelForPreTraining" in config["auto_map"]
    assert (out / "modeling_macaron_bert.py").is_file()
    assert config["norm_free_layers"] == ([0, 1] if "t-fixup" in flags else [])
    theirs = AutoModelForPreTraining.from_pretrained(str(out), trust_remote_code=True).eval()
    ours, task, _, _ = load_fairseq(checkpoint, None)
    dictionary = task.source_dictionary
    ids = torch.randint(4, len(dictionary), (2, 10), generator=torch.Generator().manual_seed(5))
    ids[:, 0] = dictionary.bos()
    ids[1, 7:] = dictionary.pad()
    types = torch.zeros_like(ids)
    types[:, 5:7] = 1
    attention = ids.ne(dictionary.pad()).long()
    with torch.no_grad():
        mlm, nsp = ours(ids, segment_labels=types)
        out_hf = theirs(input_ids=ids, attention_mask=attention, token_type_ids=types)
    assert max_diff(mlm, out_hf.prediction_logits, attention) <= TOLERANCE
    assert max_diff(nsp, out_hf.seq_relationship_logits) <= TOLERANCE
    encoder = AutoModel.from_pretrained(str(out), trust_remote_code=True).eval()
    with torch.no_grad():
        features, _ = ours(ids, segment_labels=types, features_only=True)
        hidden = encoder(input_ids=ids, attention_mask=attention, token_type_ids=types).last_hidden_state
    assert max_diff(features, hidden, attention) <= TOLERANCE
    classifier = AutoModelForSequenceClassification.from_pretrained(
        str(out), trust_remote_code=True, num_labels=3
    )
    assert classifier(input_ids=ids, attention_mask=attention).logits.shape == (2, 3)


def test_our_tokenizer_gives_our_ids_on_our_tokenized_text(tmp_path: Path, data_bin: Path) -> None:
    from fairseq.data import Dictionary
    from sentencepiece import SentencePieceProcessor
    from transformers import AutoTokenizer

    checkpoint = save_plugin_checkpoint(tmp_path / "model.pt", data_bin, "macaron_bert_tiny", [])
    out = export_hf(checkpoint, tmp_path / "hf")
    tokenizer = AutoTokenizer.from_pretrained(str(out), trust_remote_code=True)
    dictionary = Dictionary.load(str(data_bin / "dict.txt"))
    dictionary.add_symbol("<mask>")
    processor = SentencePieceProcessor(model_file=str(data_bin / "sentencepiece.bpe.model"))
    first, second = "the cat runs on a mat .", "zebras quack , the dog sat ."  # unseen pieces → <unk>

    def ours(sentence: str) -> list[int]:
        pieces = " ".join(processor.encode(sentence, out_type=str))
        return dictionary.encode_line(pieces, add_if_not_exist=False, append_eos=False).tolist()

    encoded = tokenizer(first, second)
    expected = [dictionary.bos(), *ours(first), dictionary.eos(), *ours(second), dictionary.eos()]
    assert encoded["input_ids"] == expected
    assert dictionary.unk() in expected
    assert encoded["token_type_ids"] == [0] * (len(ours(first)) + 2) + [1] * (len(ours(second)) + 1)


def test_export_refuses_a_used_directory_and_a_missing_dictionary(tmp_path: Path, data_bin: Path) -> None:
    checkpoint = save_plugin_checkpoint(tmp_path / "model.pt", data_bin, "vanilla_bert_tiny", [])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UserError, match="not an empty directory"):
        export_hf(checkpoint, tmp_path / "full")
    with pytest.raises(UserError, match=r"dict\.txt"):
        export_hf(checkpoint, tmp_path / "out", data=tmp_path / "nowhere")


@pytest.mark.slow
def test_export_refuses_a_malicious_checkpoint_without_running_it(tmp_path: Path, data_bin: Path) -> None:
    import os
    import subprocess
    import sys

    from helpers import REPO

    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    checkpoint = tmp_path / "evil.pt"
    torch.save(
        {
            "model": {"encoder.embed_tokens.weight": torch.zeros(4, 2)},
            "cfg": {"model": Payload(), "task": {"data": str(data_bin)}},
        },
        checkpoint,
    )
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    command = [
        sys.executable,
        "-m",
        "macaron_fairseq.hf",
        "export",
        str(checkpoint),
        "--dest",
        str(tmp_path / "hf"),
    ]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "refusing to load" in proc.stderr and "evil.pt" in proc.stderr and "Traceback" not in proc.stderr
    assert not marker.exists() and not (tmp_path / "hf").exists()


def test_export_writes_to_dest_and_still_accepts_the_old_out(capsys: pytest.CaptureFixture[str]) -> None:
    from macaron_fairseq.hf.__main__ import build_parser

    assert build_parser().parse_args(["export", "m.pt", "--dest", "hf"]).dest == Path("hf")
    assert build_parser().parse_args(["export", "m.pt", "--out", "hf"]).dest == Path("hf")
    assert "--out is deprecated, use --dest" in capsys.readouterr().err
    assert build_parser().parse_args(["import", "hf", "--out", "m.pt"]).out == Path("m.pt")  # a file: --out


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """A real full file system (a small tmpfs): safetensors' writer fails with its own SafetensorError (not an
    OSError), which was a traceback and left the --dest parent behind; now one line, exit 2, nothing left."""
    import os
    import subprocess
    import sys

    from full_disk import TRAINING_LOG, fill, leftovers, other_stderr_lines, small_filesystem
    from helpers import REPO

    prog = "python -m macaron_fairseq.hf"
    checkpoint = import_hf(save_hf_bert(tmp_path / "bert"), tmp_path / "bert.pt")
    with small_filesystem(tmp_path / "disk", "1m") as disk:
        fill(disk, 64 * 1024)
        before = set(leftovers(disk))
        dest = disk / "new" / "hf"
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
        command = [sys.executable, "-m", "macaron_fairseq.hf", "export", str(checkpoint), "--dest", str(dest)]
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        (line,) = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        assert line.startswith(f"{prog}: error: cannot write {dest}: No space left on device"), line
        # besides the error: the model's log line and transformers' 'Writing model shards' bar
        assert other_stderr_lines(proc.stderr, prog, TRAINING_LOG) == [], proc.stderr
        assert leftovers(disk, before) == []
