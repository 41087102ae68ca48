"""Tiny translation checkpoints of every architecture family, saved as fairseq-train saves them (the
configuration as fairseq's omegaconf dict, random weights everywhere: biases and LayerNorms too), for the
translation export tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

#: a tiny model's dimensions (different encoder and decoder FFN widths, so that no mix-up hides)
TINY_MT = [
    "--encoder-embed-dim",
    "32",
    "--decoder-embed-dim",
    "32",
    "--encoder-ffn-embed-dim",
    "48",
    "--decoder-ffn-embed-dim",
    "40",
    "--encoder-attention-heads",
    "4",
    "--decoder-attention-heads",
    "4",
    "--encoder-layers",
    "2",
    "--decoder-layers",
    "2",
    "--max-source-positions",
    "64",
    "--max-target-positions",
    "64",
]

#: every family: (name, arch, extra flags); the first one has separate dictionaries, the others a joined one
SEPARATE_DICTIONARIES = "macaron-post-ln-sinusoidal-separate"
FAMILIES: list[tuple[str, str, tuple[str, ...]]] = [
    (SEPARATE_DICTIONARIES, "macaron_small", ()),
    ("macaron-pre-ln-shared", "transformer_iwslt_de_en_macaron_v2", ("--share-all-embeddings",)),
    (
        "macaron-learned-tied-decoder",
        "macaron_base",
        ("--encoder-learned-pos", "--decoder-learned-pos", "--share-decoder-input-output-embed"),
    ),
    ("macaron-dt-fixup-norm-free", "macaron_small", ("--norm-free", "--share-all-embeddings")),
    ("transformer-post-ln", "transformer_iwslt_de_en", ()),
    ("transformer-pre-ln-shared-authors", "transformer_iwslt_de_en_v2", ("--share-all-embeddings",)),
    (
        "fixup-transformer-learned-no-scale",
        "fixup_transformer_iwslt_de_en",
        ("--encoder-learned-pos", "--decoder-learned-pos", "--no-scale-embedding", "--layernorm-embedding"),
    ),
    (
        "macaron-gelu-pre-ln-encoder-only",
        "macaron_small",
        ("--encoder-normalize-before", "--activation-fn", "gelu"),
    ),
]


def write_dictionaries(data: Path, joined: bool = True, src: str = "de", tgt: str = "en") -> Path:
    """fairseq dictionaries: a joined one (the same 60 symbols on both sides, for shared embeddings) or
    separate ones of different sizes (60 / 52)."""
    data.mkdir(parents=True, exist_ok=True)
    for lang, size in ((src, 60), (tgt, 60 if joined else 52)):
        prefix = "w" if joined else lang
        (data / f"dict.{lang}.txt").write_text("".join(f"{prefix}{i} {1000 - i}\n" for i in range(size)))
    return data


def perturb(model: torch.nn.Module, seed: int, scale: float) -> None:
    """Random values added to every parameter (biases and LayerNorms too, so that no mapping error hides
    behind a zero or a one)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(scale * torch.randn(parameter.shape, generator=generator))


def boost_eos(model: torch.nn.Module, fraction: float, seed: int) -> None:
    """Make ``</s>`` a likely next token, so that translations end at different lengths (a random model
    otherwise always runs into the length limit and the search's end-of-sentence handling goes untested):
    its output row moves along the decoder's mean feature vector until its logit closes ``fraction`` of its
    mean gap to the best token's on a random batch."""
    generator = torch.Generator().manual_seed(seed + 1)
    vocab = model.decoder.output_projection.weight.size(0)
    src = torch.randint(4, vocab, (8, 7), generator=generator)
    src[:, -1] = 2
    prev = torch.randint(4, vocab, (8, 6), generator=generator)
    prev[:, 0] = 2
    model.eval()
    with torch.no_grad():
        features, _ = model(src, torch.full((8,), 7), prev, features_only=True)
        logits = model.decoder.output_layer(features)
        gap = (logits.max(dim=-1).values - logits[..., 2]).mean()
        direction = features.reshape(-1, features.size(-1)).mean(dim=0)
        model.decoder.output_projection.weight[2] += fraction * gap * direction / direction.dot(direction)
    model.train()


def save_translation_checkpoint(
    path: Path,
    data: Path,
    arch: str,
    extra: Sequence[str] = (),
    seed: int = 0,
    src: str = "de",
    tgt: str = "en",
    eos_boost: float = 0.0,
) -> Path:
    """Build ``--arch arch`` as fairseq-train does, perturb its weights and save it with its full
    configuration (model and task), as fairseq-train's checkpoints hold it."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    import macaron_fairseq  # noqa: F401

    argv = [str(data), "--task", "translation", "-s", src, "-t", tgt, "--arch", arch, *TINY_MT, *extra]
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
    torch.manual_seed(seed)
    model = tasks.setup_task(args).build_model(args)
    # a stack without LayerNorms grows its activations layer after layer: smaller perturbations keep its
    # logits O(10), as for the other families (float32 rounding grows with them)
    perturb(model, seed, 0.02 if "--norm-free" in extra else 0.2)
    if eos_boost:
        boost_eos(model, eos_boost, seed)
    state = {
        "args": None,
        "cfg": OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True, enum_to_str=True),
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "CrossEntropyCriterion",
                "optimizer_name": "FairseqAdam",
                "lr_scheduler_state": {"best": None},
                "num_updates": 7,
            }
        ],
        "extra_state": {"train_iterator": {"epoch": 1}, "val_loss": None},
        "last_optimizer_state": None,
    }
    torch.save(state, path)
    return Path(path)


def compare_with_fairseq(
    checkpoint: Path, directory: Path, data: Path, beam: int, max_len_b: int
) -> tuple[int, list[int]]:
    """(translations of ``generate()`` identical to fairseq's ``SequenceGenerator``'s, the lengths fairseq
    gave) on 16 random source sentences: fairseq's batch left-padded as fairseq pads it, transformers' the
    same sentences right-padded; both with lenpen 1 and ``max_len_b``, the exported generation_config's."""
    import json

    from fairseq.sequence_generator import SequenceGenerator
    from transformers import AutoModelForSeq2SeqLM

    from macaron_fairseq.hf.translation_export import load_translation

    loaded = load_translation(checkpoint, data)
    model, task = loaded.model, loaded.task
    hf = AutoModelForSeq2SeqLM.from_pretrained(str(directory), trust_remote_code=True).eval()
    generation = json.loads((directory / "generation_config.json").read_text())
    assert generation["early_stopping"] is True and generation["max_length"] == max_len_b + 2
    vocab = min(len(task.source_dictionary), len(task.target_dictionary))
    generator = torch.Generator().manual_seed(1)
    lengths = torch.randint(2, 10, (16,), generator=generator)
    sentences = [[*torch.randint(4, vocab, (int(n),), generator=generator).tolist(), 2] for n in lengths]
    width = max(map(len, sentences))
    left = torch.tensor([[1] * (width - len(s)) + s for s in sentences])
    right = torch.tensor([s + [1] * (width - len(s)) for s in sentences])
    search = SequenceGenerator(
        [model], task.target_dictionary, beam_size=beam, max_len_a=0, max_len_b=max_len_b, len_penalty=1.0
    )
    src_lengths = torch.tensor([len(s) for s in sentences])
    with torch.no_grad():
        hypos = search.generate([model], {"net_input": {"src_tokens": left, "src_lengths": src_lengths}})
        out = hf.generate(input_ids=right, attention_mask=right.ne(1).long(), num_beams=beam)
    theirs = [h[0]["tokens"].tolist() for h in hypos]
    ours = []
    for row in out.tolist():
        assert row[0] == 2  # the decoder started from </s>
        row = row[1:]
        ours.append(row[: row.index(2) + 1] if 2 in row else row)
    return sum(a == b for a, b in zip(ours, theirs, strict=True)), [len(t) for t in theirs]
