"""``macaron-hf export`` / ``import`` of translation checkpoints (issue #45), for every architecture family at
tiny sizes (Macaron and Transformer, pre-/post-LN, shared / tied / separate embeddings, sinusoidal / learned
positions, norm-free, the authors' archs): the exported directory loaded with
``AutoModelForSeq2SeqLM.from_pretrained(DIR, trust_remote_code=True)`` gives the plugin model's logits
within 1e-5, cached decoding equals full decoding, ``generate()`` greedy and beam 5 give fairseq's
``SequenceGenerator``'s translations token for token, and ``macaron-hf import`` gives the checkpoint back
exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from mt_models import (
    FAMILIES,
    SEPARATE_DICTIONARIES,
    compare_with_fairseq,
    save_translation_checkpoint,
    write_dictionaries,
)

from macaron_fairseq.hf.__main__ import main as hf_main
from macaron_workflow.errors import UserError

TOLERANCE = 1e-5
MAX_LEN_B = 12
#: families checked in the quick suite (all of them in the full suite: the others are marked slow)
QUICK = {"macaron-pre-ln-shared"}
NAMES = [name for name, _, _ in FAMILIES]
CASES = [pytest.param(name, marks=() if name in QUICK else pytest.mark.slow) for name in NAMES]


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mt_dicts")
    return {
        "joined": write_dictionaries(root / "joined"),
        "separate": write_dictionaries(root / "sep", False),
    }


def data_for(name: str, data_dirs: dict[str, Path]) -> Path:
    return data_dirs["separate" if name == SEPARATE_DICTIONARIES else "joined"]


@pytest.fixture(scope="module")
def exported(
    tmp_path_factory: pytest.TempPathFactory, data_dirs: dict[str, Path]
) -> dict[str, tuple[Path, Path]]:
    """name -> (checkpoint, exported directory), exported through the console-script entry point; lazily."""
    root = tmp_path_factory.mktemp("mt_export")

    class Lazy(dict):
        def __missing__(self, name: str) -> tuple[Path, Path]:
            arch, extra = next((a, e) for n, a, e in FAMILIES if n == name)
            data = data_for(name, data_dirs)
            checkpoint = save_translation_checkpoint(root / f"{name}.pt", data, arch, extra, eos_boost=1.0)
            dest = root / f"hf_{name}"
            hf_main(
                [
                    "export",
                    str(checkpoint),
                    "--dest",
                    str(dest),
                    "--data",
                    str(data),
                    "--max-len-b",
                    str(MAX_LEN_B),
                ]
            )
            self[name] = (checkpoint, dest)
            return self[name]

    return Lazy()


def fairseq_model(checkpoint: Path, data: Path) -> tuple[object, object]:
    from macaron_fairseq.hf.translation_export import load_translation

    loaded = load_translation(checkpoint, data)
    return loaded.model, loaded.task


def hf_model(directory: Path) -> object:
    from transformers import AutoModelForSeq2SeqLM

    return AutoModelForSeq2SeqLM.from_pretrained(str(directory), trust_remote_code=True).eval()


def test_the_family_matrix_covers_the_issue() -> None:
    """Every family the issue names is in the matrix: Macaron and Transformer, pre- and post-LN, shared and
    separate embeddings, sinusoidal and learned positions, the authors' archs."""
    archs = {arch for _, arch, _ in FAMILIES}
    flags = {flag for _, _, extra in FAMILIES for flag in extra}
    assert {"transformer_iwslt_de_en_macaron_v2", "transformer_iwslt_de_en_v2"} <= archs  # the authors'
    assert {"macaron_small", "transformer_iwslt_de_en", "fixup_transformer_iwslt_de_en"} <= archs
    assert {
        "--share-all-embeddings",
        "--share-decoder-input-output-embed",
        "--encoder-learned-pos",
        "--norm-free",
    } <= flags


@pytest.mark.parametrize("name", CASES)
def test_exported_logits_match_the_plugin_model(name: str, exported, data_dirs) -> None:
    checkpoint, directory = exported[name]
    config = json.loads((directory / "config.json").read_text())
    assert (
        config["auto_map"]["AutoModelForSeq2SeqLM"] == "modeling_macaron_mt.MacaronMTForConditionalGeneration"
    )
    assert config["decoder_start_token_id"] == 2 and config["pad_token_id"] == 1
    assert (directory / "model.safetensors").is_file() and (directory / "modeling_macaron_mt.py").is_file()
    model, task = fairseq_model(checkpoint, data_for(name, data_dirs))
    hf = hf_model(directory)
    generator = torch.Generator().manual_seed(3)
    vocab = min(len(task.source_dictionary), len(task.target_dictionary))
    # fairseq's batch: left-padded sources ending in </s>; HF's: the same sentences right-padded
    sentences = [[*torch.randint(4, vocab, (n,), generator=generator).tolist(), 2] for n in (7, 4, 2, 9)]
    width = max(map(len, sentences))
    left = torch.tensor([[1] * (width - len(s)) + s for s in sentences])
    right = torch.tensor([s + [1] * (width - len(s)) for s in sentences])
    prev = torch.randint(4, vocab, (4, 6), generator=generator)
    prev[:, 0] = 2
    with torch.no_grad():
        ours, _ = model(left, torch.tensor([len(s) for s in sentences]), prev)
        theirs = hf(
            input_ids=right, attention_mask=right.ne(1).long(), decoder_input_ids=prev, use_cache=False
        )
    assert (ours - theirs.logits).abs().max().item() <= TOLERANCE


@pytest.mark.parametrize("name", CASES)
def test_cached_decoding_equals_full_decoding(name: str, exported) -> None:
    from transformers.cache_utils import EncoderDecoderCache

    _, directory = exported[name]
    hf = hf_model(directory)
    generator = torch.Generator().manual_seed(4)
    src = torch.randint(4, 50, (3, 8), generator=generator)
    src[:, -1] = 2
    src[1, 5:] = 1  # right padding
    src[1, 4] = 2
    prev = torch.randint(4, 50, (3, 7), generator=generator)
    prev[:, 0] = 2
    with torch.no_grad():
        full = hf(input_ids=src, decoder_input_ids=prev, use_cache=False).logits
        encoder = hf.get_encoder()(src)
        cache, steps = None, []
        for t in range(prev.size(1)):
            out = hf(
                input_ids=src,
                encoder_outputs=encoder,
                decoder_input_ids=prev[:, t : t + 1],
                cache=cache,
                use_cache=True,
            )
            cache = out.cache
            steps.append(out.logits)
    assert isinstance(cache, EncoderDecoderCache) and cache.get_seq_length() == prev.size(1)
    assert (torch.cat(steps, dim=1) - full).abs().max().item() <= TOLERANCE


def test_labels_give_fairseq_prev_output_tokens_and_loss(exported, data_dirs) -> None:
    """``labels`` (a target ending in ``</s>``) → decoder input ``</s>`` + target[:-1] (fairseq's
    ``prev_output_tokens``) and the token-mean cross-entropy over non-pad positions, with gradients."""
    name = "macaron-pre-ln-shared"
    checkpoint, directory = exported[name]
    model, _ = fairseq_model(checkpoint, data_for(name, data_dirs))
    hf = hf_model(directory)
    src = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 1]])
    target = torch.tensor([[10, 11, 2], [12, 2, 1]])
    prev = torch.tensor([[2, 10, 11], [2, 12, 2]])  # fairseq's shift (the pad after </s> is not predicted)
    with torch.no_grad():
        logits, _ = model(torch.tensor([[5, 6, 7, 2], [1, 8, 9, 2]]), torch.tensor([4, 3]), prev)
    expected = torch.nn.functional.cross_entropy(
        logits.view(-1, logits.size(-1)), target.view(-1), ignore_index=1
    )
    out = hf(input_ids=src, attention_mask=src.ne(1).long(), labels=target)
    assert out.cache is None and abs(out.loss.item() - expected.item()) <= TOLERANCE
    out.loss.backward()
    assert hf.encoder.embed_tokens.weight.grad is not None


def compare_generate(name: str, exported, data_dirs, beam: int) -> tuple[int, list[int]]:
    checkpoint, directory = exported[name]
    return compare_with_fairseq(checkpoint, directory, data_for(name, data_dirs), beam, MAX_LEN_B)


GENERATE_CASES = [
    pytest.param(name, beam, marks=() if (name, beam) == ("macaron-pre-ln-shared", 5) else pytest.mark.slow)
    for name in NAMES
    for beam in (1, 5)
]


@pytest.mark.parametrize(("name", "beam"), GENERATE_CASES)
def test_generate_equals_fairseq_sequence_generator(name: str, beam: int, exported, data_dirs) -> None:
    same, lengths = compare_generate(name, exported, data_dirs, beam)
    assert same == 16, f"{16 - same} of 16 translations differ from fairseq's (beam {beam})"
    if beam == 5:  # the end-of-sentence handling was exercised, not only the length limit
        assert min(lengths) < MAX_LEN_B + 1


@pytest.mark.parametrize(
    "name", ["macaron-pre-ln-shared", pytest.param(SEPARATE_DICTIONARIES, marks=pytest.mark.slow)]
)
def test_import_gives_the_checkpoint_back_exactly(name: str, exported, data_dirs, tmp_path: Path) -> None:
    from fairseq import checkpoint_utils

    checkpoint, directory = exported[name]
    out = tmp_path / "back.pt"
    hf_main(["import", str(directory), "--out", str(out)])
    original = torch.load(checkpoint, weights_only=False)["model"]
    back = torch.load(out, weights_only=False)
    assert set(original) == set(back["model"])
    assert all(torch.equal(original[k], back["model"][k]) for k in original)
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(out)])
    model, _ = fairseq_model(checkpoint, data_for(name, data_dirs))
    src = torch.tensor([[5, 6, 7, 2], [1, 8, 9, 2]])
    prev = torch.tensor([[2, 11, 12], [2, 13, 14]])
    with torch.no_grad():
        assert torch.equal(
            models[0].eval()(src, torch.tensor([4, 3]), prev)[0], model(src, torch.tensor([4, 3]), prev)[0]
        )
    assert (out.with_suffix(".data") / "dict.de.txt").is_file()


def test_model_card_and_generation_config_come_from_the_results_file(tmp_path: Path, data_dirs) -> None:
    """A results file beside the checkpoint (the translation pipeline's layout) gives the search settings and
    the BLEU the card reports; without one the card says no BLEU is reported."""
    workdir = tmp_path / "work"
    (workdir / "checkpoints" / "macaron_small").mkdir(parents=True)
    checkpoint = save_translation_checkpoint(
        workdir / "checkpoints" / "macaron_small" / "checkpoint_best.pt",
        data_dirs["joined"],
        "transformer_iwslt_de_en_macaron_v2",
    )
    results = {
        "recipe": "iwslt14",
        "arch": "transformer_iwslt_de_en_macaron_v2",
        "checkpoint": str(checkpoint),
        "beam": 4,
        "lenpen": 0.6,
        "bleu": {"scores": {"fairseq": {"label": "fairseq BLEU4", "score": 12.345, "signature": "x"}}},
    }
    (workdir / "results.transformer_iwslt_de_en_macaron_v2.json").write_text(json.dumps(results))
    dest = tmp_path / "hf"
    hf_main(["export", str(checkpoint), "--dest", str(dest), "--data", str(data_dirs["joined"])])
    generation = json.loads((dest / "generation_config.json").read_text())
    assert generation["num_beams"] == 4 and generation["length_penalty"] == 0.6
    assert generation["max_length"] == min(200, 64 - 1) + 2  # fairseq's max_len: max positions − 1
    card = (dest / "README.md").read_text()
    assert "| fairseq BLEU4 | 12.35 | beam 4, lenpen 0.6 |" in card
    assert "Lu, Yiping" in card and "transformer_iwslt_de_en_macaron_v2" in card and "pre-LN" in card
    model, _ = fairseq_model(checkpoint, data_dirs["joined"])
    parameters = sum(p.numel() for p in model.parameters())  # each shared tensor once
    assert f"**{parameters:,} parameters**" in card
    other = tmp_path / "hf2"
    hf_main(
        ["export", str(checkpoint), "--dest", str(other), "--data", str(data_dirs["joined"]), "--beam", "2"]
    )
    assert json.loads((other / "generation_config.json").read_text())["num_beams"] == 2


def test_sentencepiece_tokenizer_text_in_text_out(tmp_path: Path) -> None:
    """A data-bin of this project's layout (spm.model beside the dictionaries): the exported tokenizer gives
    fairseq-preprocess's ids (</s> appended) and decodes the target ids back to the text."""
    import sentencepiece as spm
    from transformers import AutoTokenizer

    data = tmp_path / "data-bin"
    data.mkdir()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("das ist ein kleiner test .\nein haus ist klein .\nthis is a small test .\n" * 30)
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(data / "spm"),
        vocab_size=40,
        model_type="bpe",
        character_coverage=1.0,
    )
    processor = spm.SentencePieceProcessor(model_file=str(data / "spm.model"))
    pieces = sorted(
        {p for line in corpus.read_text().splitlines() for p in processor.encode(line, out_type=str)}
    )
    for lang in ("de", "en"):
        (data / f"dict.{lang}.txt").write_text("".join(f"{p} 1\n" for p in pieces))
    checkpoint = save_translation_checkpoint(
        tmp_path / "m.pt", data, "macaron_small", ("--share-all-embeddings",)
    )
    dest = tmp_path / "hf"
    hf_main(["export", str(checkpoint), "--dest", str(dest)])  # the dictionaries: the checkpoint's own data
    tokenizer = AutoTokenizer.from_pretrained(str(dest), trust_remote_code=True)
    ids = tokenizer(["Das ist ein kleiner Test."])["input_ids"][0]
    from fairseq.data import Dictionary

    dictionary = Dictionary.load(str(data / "dict.de.txt"))
    moses = "das ist ein kleiner test ."  # lowercased (the dictionary has no capital), Moses-tokenized
    expected = dictionary.encode_line(" ".join(processor.encode(moses, out_type=str)), add_if_not_exist=False)
    assert ids == expected.tolist() and ids[-1] == 2
    assert tokenizer.decode(ids, skip_special_tokens=True) == "das ist ein kleiner test."


def test_refusals_are_one_line_errors(tmp_path: Path, data_dirs) -> None:
    checkpoint = save_translation_checkpoint(
        tmp_path / "rel.pt", data_dirs["joined"], "macaron_small", ("--max-relative-positions", "4")
    )
    with pytest.raises(UserError, match="relation-aware"):
        hf_main(
            ["export", str(checkpoint), "--dest", str(tmp_path / "a"), "--data", str(data_dirs["joined"])]
        )
    plain = save_translation_checkpoint(tmp_path / "m.pt", data_dirs["joined"], "macaron_small")
    with pytest.raises(UserError, match="--max-len-a"):
        hf_main(
            [
                "export",
                str(plain),
                "--dest",
                str(tmp_path / "b"),
                "--data",
                str(data_dirs["joined"]),
                "--max-len-a",
                "1.2",
            ]
        )
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="--data DATA_BIN"):
        hf_main(["export", str(plain), "--dest", str(tmp_path / "c"), "--data", str(tmp_path / "empty")])
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()
