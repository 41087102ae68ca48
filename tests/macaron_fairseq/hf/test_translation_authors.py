"""The authors' models through ``macaron-upgrade`` then ``macaron-hf export`` (issue #45): checkpoints in the
exact layout of their fairseq 0.6 fork (tests/macaron_fairseq/upgrade/authors_layout.py: their args, their
parameter names, their meters, torch's legacy serialization), upgraded, exported; the exported model gives the
upgraded model's logits and fairseq's translations (greedy and beam 5), and its card names their arch."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from helpers import REPO, run_cli
from mt_models import compare_with_fairseq

sys.path.insert(0, str(REPO / "tests" / "macaron_fairseq" / "upgrade"))
from authors_layout import authors_args, write_authors_checkpoint

from macaron_fairseq.hf.__main__ import main as hf_main
from macaron_fairseq.upgrade import upgrade_checkpoint

VOCAB = 40
MAX_LEN_B = 10
CASES = {
    "macaron-v2-pre-ln-shared": {"macaron": True, "pre_ln": True},
    "transformer-post-ln-separate-learned": {
        "macaron": False,
        "pre_ln": False,
        "shared": False,
        "learned_pos": True,
    },
}


@pytest.fixture(scope="module")
def authors_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Their data-bin's dictionaries (40 rows with fairseq's 4 specials; joined, as their IWSLT14 data)."""
    data = tmp_path_factory.mktemp("authors_dicts")
    for lang in ("de", "en"):
        (data / f"dict.{lang}.txt").write_text("".join(f"w{i} {100 - i}\n" for i in range(VOCAB - 4)))
    return data


def upgraded_export(name: str, root: Path, data: Path) -> tuple[Path, Path]:
    args = authors_args(**CASES[name], dim=16, heads=2, ffn=8)
    source = root / f"{name}_checkpoint_pretrained.pt"
    write_authors_checkpoint(source, args, VOCAB, seed=3)
    upgraded = root / f"{name}_upgraded.pt"
    upgrade_checkpoint(source, upgraded, data)
    dest = root / f"{name}_hf"
    hf_main(
        ["export", str(upgraded), "--dest", str(dest), "--data", str(data), "--max-len-b", str(MAX_LEN_B)]
    )
    return upgraded, dest


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_upgraded_authors_checkpoint_exports_and_translates_as_fairseq(
    name: str, authors_data: Path, tmp_path: Path
) -> None:
    upgraded, dest = upgraded_export(name, tmp_path, authors_data)
    record = json.loads((dest / "fairseq_export.json").read_text())
    assert record["max_abs_logit_difference"] <= 1e-5  # the export's own check, on a padded batch
    assert record["extra_state"]["macaron_upgrade"]["authors_arch"] == authors_args(**CASES[name]).arch
    assert "Upgraded by `macaron-upgrade`" in (dest / "README.md").read_text()
    for beam in (1, 5):
        same, _ = compare_with_fairseq(upgraded, dest, authors_data, beam, MAX_LEN_B)
        assert same == 16, f"beam {beam}: {16 - same} of 16 translations differ from fairseq's"


#: the German sentence docs/huggingface.md translates
GERMAN = "Wir müssen die Welt verändern."
CORPUS_DE = [
    "wir müssen die welt verändern .",
    "die welt ist groß .",
    "wir sind hier .",
    "das ist eine kleine welt .",
]
CORPUS_EN = ["we must change the world .", "the world is big .", "we are here .", "this is a small world ."]


def their_archive(root: Path) -> tuple[Path, Path, Path]:
    """A stand-in for their IWSLT14 download, in its layout: ``checkpoint_pretrained.pt`` (their fork's
    format, their ``transformer_iwslt_de_en_macaron_v2`` at a tiny size, random weights), the joined data-bin
    ``data-bin/iwslt14.tokenized.de-en.joined`` and the subword-nmt codes that fairseq's
    ``prepare-iwslt14.sh`` leaves in ``iwslt14.tokenized.de-en/code`` (learned here on a few lowercased,
    Moses-tokenized sentences)."""
    from subword_nmt.apply_bpe import BPE
    from subword_nmt.learn_bpe import learn_bpe

    prepared = root / "iwslt14.tokenized.de-en"
    prepared.mkdir(parents=True)
    text = root / "train.txt"
    text.write_text("\n".join(CORPUS_DE * 5 + CORPUS_EN * 5) + "\n", encoding="utf-8")
    with text.open(encoding="utf-8") as infile, (prepared / "code").open("w", encoding="utf-8") as outfile:
        learn_bpe(infile, outfile, 30)
    with (prepared / "code").open(encoding="utf-8") as codes:
        bpe = BPE(codes)
    pieces = sorted({p for line in CORPUS_DE + CORPUS_EN for p in bpe.process_line(line).split()})
    data = root / "data-bin" / "iwslt14.tokenized.de-en.joined"
    data.mkdir(parents=True)
    for lang in ("de", "en"):
        (data / f"dict.{lang}.txt").write_text("".join(f"{p} 1\n" for p in pieces), encoding="utf-8")
    checkpoint = root / "checkpoint_pretrained.pt"
    write_authors_checkpoint(checkpoint, authors_args(dim=16, heads=2, ffn=8), len(pieces) + 4, seed=5)
    return checkpoint, data, prepared / "code"


@pytest.mark.slow
def test_the_documented_chain_download_upgrade_export_three_lines_of_transformers(tmp_path: Path) -> None:
    """docs/huggingface.md's commands, run as written from a directory outside the checkout on the stand-in
    archive: macaron-upgrade, macaron-hf export (--bpe-codes), then the three lines of transformers."""
    checkpoint, data, codes = their_archive(tmp_path)
    bin_dir = Path(sys.executable).parent
    data_bin = "data-bin/iwslt14.tokenized.de-en.joined"
    run_cli(
        [
            str(bin_dir / "macaron-upgrade"),
            checkpoint.name,
            "--out",
            "iwslt14_macaron_small.pt",
            "--data",
            data_bin,
        ],
        cwd=tmp_path,
    )
    run_cli(
        [
            str(bin_dir / "macaron-hf"),
            "export",
            "iwslt14_macaron_small.pt",
            "--dest",
            "iwslt14-macaron-hf",
            "--data",
            data_bin,
            "--bpe-codes",
            "iwslt14.tokenized.de-en/code",
        ],
        cwd=tmp_path,
    )
    lines = (
        "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer\n"
        "tok = AutoTokenizer.from_pretrained('iwslt14-macaron-hf', trust_remote_code=True)\n"
        "model = AutoModelForSeq2SeqLM.from_pretrained('iwslt14-macaron-hf', trust_remote_code=True)\n"
        f"batch = tok([{GERMAN!r}], return_tensors='pt')\n"
        "print(tok.batch_decode(model.generate(**batch), skip_special_tokens=True))\n"
        "print(batch['input_ids'][0].tolist())\n"
    )
    proc = run_cli([sys.executable, "-c", lines], cwd=tmp_path)
    printed_text, printed_ids = proc.stdout.strip().splitlines()[-2:]
    # the source ids are fairseq's: lowercased, Moses-tokenized, BPE-coded, </s> appended
    from fairseq.data import Dictionary
    from subword_nmt.apply_bpe import BPE

    with codes.open(encoding="utf-8") as f:
        pieces = BPE(f).process_line("wir müssen die welt verändern .")
    expected = Dictionary.load(str(data / "dict.de.txt")).encode_line(pieces, add_if_not_exist=False).tolist()
    assert json.loads(printed_ids) == expected and expected[-1] == 2 and 3 not in expected
    # the translation is the upgraded model's beam-5 output (a random model: words of its dictionary)
    from macaron_fairseq.hf.translation_export import load_translation

    loaded = load_translation(tmp_path / "iwslt14_macaron_small.pt", data)
    import torch
    from fairseq.sequence_generator import SequenceGenerator

    search = SequenceGenerator([loaded.model], loaded.task.target_dictionary, beam_size=5, max_len_b=200)
    src = torch.tensor([expected])
    with torch.no_grad():
        best = search.generate(
            [loaded.model], {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([len(expected)])}}
        )[0][0]
    words = loaded.task.target_dictionary.string(best["tokens"], "subword_nmt")
    from sacremoses import MosesDetokenizer

    assert ast.literal_eval(printed_text) == [MosesDetokenizer(lang="en").detokenize(words.split())]
