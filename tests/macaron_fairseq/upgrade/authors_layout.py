"""Checkpoints in the exact layout of the Macaron authors' fairseq 0.6 fork (zhuohan123/macaron-net,
``translation/fairseq``), with random weights, for the upgrade tests.

What their ``utils.save_state`` writes, read from their code: ``{'args': Namespace, 'model': state_dict,
'optimizer_history': [...], 'last_optimizer_state': ..., 'extra_state': {'best', 'train_iterator',
'val_loss', 'train_meters'}}``, the meters being ``fairseq.meters.AverageMeter``/``TimeMeter``/
``StopwatchMeter`` objects, saved by a torch of 2019 (the legacy, non-zip serialization). Parameter names:
``self_attn.in_proj_weight`` (q, k, v stacked), encoder layers' ``layer_norms.{0,1,2}`` (attention, FFN,
Macaron FFN), ``macaron_fc1/fc2``, the decoder's ``macaron_layer_norm``, ``embed_positions._float_tensor``,
``encoder.version``/``decoder.version`` = 2, ``decoder.embed_out`` when the output is not shared.

Every weight is random (LayerNorm gains and biases too), so that a wrongly mapped or dropped parameter
changes the output.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import types
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import torch


def authors_args(
    *,
    macaron: bool = True,
    pre_ln: bool = True,
    layers: int = 2,
    dim: int = 16,
    heads: int = 2,
    ffn: int = 8,
    shared: bool = True,
    learned_pos: bool = False,
    source_lang: str = "de",
    target_lang: str = "en",
    arch: str | None = None,
) -> argparse.Namespace:
    """Their ``args`` after ``transformer_iwslt_de_en_macaron_v2`` (or its siblings) ran, at test size."""
    if arch is None:
        arch = {
            (True, True): "transformer_iwslt_de_en_macaron_v2",
            (True, False): "transformer_iwslt_de_en_macaron",
            (False, True): "transformer_iwslt_de_en_v2",
            (False, False): "transformer_iwslt_de_en",
        }[(macaron, pre_ln)]
    args = argparse.Namespace(
        # training (train-iwslt14.sh)
        no_progress_bar=True,
        log_interval=50,
        log_format=None,
        seed=1,
        cpu=False,
        fp16=False,
        task="translation",
        skip_invalid_size_inputs_valid_test=False,
        max_tokens=4096,
        max_sentences=None,
        train_subset="train",
        valid_subset="valid",
        max_sentences_valid=None,
        distributed_world_size=1,
        distributed_rank=0,
        distributed_backend="nccl",
        ddp_backend="no_c10d",
        arch=arch,
        criterion="label_smoothed_cross_entropy",
        max_epoch=0,
        max_update=0,
        clip_norm=0.0,
        sentence_avg=False,
        update_freq=[1],
        optimizer="adam",
        lr=[0.0015],
        momentum=0.99,
        weight_decay=0.0001,
        lr_scheduler="inverse_sqrt",
        lr_shrink=0.1,
        min_lr=1e-09,
        min_loss_scale=0.0001,
        save_dir="log/iwslt14_de_en/" + arch,
        restore_file="checkpoint_last.pt",
        reset_optimizer=False,
        save_interval=1,
        save_interval_updates=10000,
        keep_interval_updates=20,
        no_save=False,
        adam_betas="(0.9, 0.98)",
        adam_eps=1e-08,
        warmup_updates=8000,
        warmup_init_lr=1e-07,
        label_smoothing=0.1,
        data="data-bin/iwslt14.tokenized.de-en.joined/",
        source_lang=source_lang,
        target_lang=target_lang,
        raw_text=False,
        left_pad_source="True",
        left_pad_target="False",
        max_source_positions=1024,
        max_target_positions=1024,
        upsample_primary=1,
        # the model, as the arch function left it
        dropout=0.3,
        attention_dropout=0.1,
        relu_dropout=0.1,
        encoder_embed_path=None,
        encoder_embed_dim=dim,
        encoder_ffn_embed_dim=ffn,
        encoder_layers=layers,
        encoder_attention_heads=heads,
        encoder_normalize_before=pre_ln,
        encoder_learned_pos=learned_pos,
        decoder_embed_path=None,
        decoder_embed_dim=dim,
        decoder_ffn_embed_dim=ffn,
        decoder_layers=layers,
        decoder_attention_heads=heads,
        decoder_learned_pos=learned_pos,
        decoder_normalize_before=pre_ln,
        share_decoder_input_output_embed=shared,
        share_all_embeddings=shared,
        no_token_positional_embeddings=False,
        adaptive_softmax_cutoff=None,
        adaptive_softmax_dropout=0,
        decoder_output_dim=dim,
        decoder_input_dim=dim,
    )
    if macaron:
        args.macaron = True if "iwslt" in arch else "new"  # their IWSLT archs set True, WMT ones "new"
    return args


def authors_state_dict(
    args: argparse.Namespace, src_vocab: int, tgt_vocab: int, seed: int = 0
) -> OrderedDict:
    """Their model's state dict, every tensor random (pad rows of the embeddings zero, as they init)."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape: int, scale: float = 0.3) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * scale

    def norm(prefix: str) -> dict[str, torch.Tensor]:
        return {f"{prefix}.weight": 1 + rand(d, scale=0.2), f"{prefix}.bias": rand(d, scale=0.2)}

    def linear(prefix: str, out: int, inp: int) -> dict[str, torch.Tensor]:
        return {f"{prefix}.weight": rand(out, inp, scale=inp**-0.5), f"{prefix}.bias": rand(out, scale=0.1)}

    def attention(prefix: str) -> dict[str, torch.Tensor]:
        return {
            f"{prefix}.in_proj_weight": rand(3 * d, d, scale=d**-0.5),
            f"{prefix}.in_proj_bias": rand(3 * d, scale=0.1),
            **linear(f"{prefix}.out_proj", d, d),
        }

    def positions(side: str) -> dict[str, torch.Tensor]:
        if getattr(args, f"{side}_learned_pos"):
            rows = getattr(args, f"max_{'source' if side == 'encoder' else 'target'}_positions") + 1 + 1
            table = rand(rows, d, scale=d**-0.5)
            table[1] = 0  # padding_idx
            return {f"{side}.embed_positions.weight": table}
        return {f"{side}.embed_positions._float_tensor": torch.FloatTensor(1)}

    d, ffn = args.encoder_embed_dim, args.encoder_ffn_embed_dim
    macaron = bool(getattr(args, "macaron", False))
    sd: OrderedDict[str, torch.Tensor] = OrderedDict()
    src_embed = rand(src_vocab, d, scale=d**-0.5)
    src_embed[1] = 0
    sd["encoder.embed_tokens.weight"] = src_embed
    sd.update(positions("encoder"))
    for i in range(args.encoder_layers):
        p = f"encoder.layers.{i}"
        sd.update(attention(f"{p}.self_attn"))
        sd.update(linear(f"{p}.fc1", ffn, d))
        sd.update(linear(f"{p}.fc2", d, ffn))
        if macaron:
            sd.update(linear(f"{p}.macaron_fc1", ffn, d))
            sd.update(linear(f"{p}.macaron_fc2", d, ffn))
        for n in range(3 if macaron else 2):
            sd.update(norm(f"{p}.layer_norms.{n}"))
    sd["encoder.version"] = torch.Tensor([2])
    if args.encoder_normalize_before:
        sd.update(norm("encoder.layer_norm"))
    if args.share_all_embeddings:
        sd["decoder.embed_tokens.weight"] = src_embed  # one tensor, saved twice as in their state dict
    else:
        tgt_embed = rand(tgt_vocab, d, scale=d**-0.5)
        tgt_embed[1] = 0
        sd["decoder.embed_tokens.weight"] = tgt_embed
    sd.update(positions("decoder"))
    for i in range(args.decoder_layers):
        p = f"decoder.layers.{i}"
        sd.update(attention(f"{p}.self_attn"))
        sd.update(norm(f"{p}.self_attn_layer_norm"))
        sd.update(attention(f"{p}.encoder_attn"))
        sd.update(norm(f"{p}.encoder_attn_layer_norm"))
        sd.update(linear(f"{p}.fc1", args.decoder_ffn_embed_dim, d))
        sd.update(linear(f"{p}.fc2", d, args.decoder_ffn_embed_dim))
        if macaron:  # their decoder's first FFN has the encoder's width
            sd.update(linear(f"{p}.macaron_fc1", args.encoder_ffn_embed_dim, d))
            sd.update(linear(f"{p}.macaron_fc2", d, args.encoder_ffn_embed_dim))
            sd.update(norm(f"{p}.macaron_layer_norm"))
        sd.update(norm(f"{p}.final_layer_norm"))
    if not args.share_decoder_input_output_embed:
        sd["decoder.embed_out"] = rand(tgt_vocab, d, scale=d**-0.5)
    sd["decoder.version"] = torch.Tensor([2])
    if args.decoder_normalize_before:
        sd.update(norm("decoder.layer_norm"))
    return sd


class AverageMeter:
    def __init__(self) -> None:
        self.val, self.avg, self.sum, self.count = 2.5, 3.1, 310.0, 100


class TimeMeter:
    def __init__(self) -> None:
        self.init, self.start, self.n = 0, time.time(), 1234


class StopwatchMeter:
    def __init__(self) -> None:
        self.sum, self.n, self.start_time = 52.0, 10, None


@contextlib.contextmanager
def fairseq_06_meters() -> Iterator[types.ModuleType]:
    """``fairseq.meters`` as fairseq 0.6 had it, while pickling (no current fairseq has that module).

    fairseq is imported first: its ``__init__`` registers ``fairseq.meters`` (an alias of its logging meters),
    and pickling imports the package of a class it saves, so a first import of fairseq inside ``torch.save``
    would put that alias back over this module."""
    import fairseq  # noqa: F401

    module = types.ModuleType("fairseq.meters")
    for cls in (AverageMeter, TimeMeter, StopwatchMeter):
        cls.__module__ = "fairseq.meters"
        setattr(module, cls.__name__, cls)
    saved = sys.modules.get("fairseq.meters")
    sys.modules["fairseq.meters"] = module
    try:
        yield module
    finally:
        if saved is None:
            del sys.modules["fairseq.meters"]
        else:
            sys.modules["fairseq.meters"] = saved


def write_authors_checkpoint(
    path: Path, args: argparse.Namespace, src_vocab: int, tgt_vocab: int | None = None, seed: int = 0
) -> OrderedDict:
    """Their checkpoint file at ``path`` (legacy serialization, meters included); returns the state dict."""
    tgt_vocab = src_vocab if tgt_vocab is None else tgt_vocab
    sd = authors_state_dict(args, src_vocab, tgt_vocab, seed)
    with fairseq_06_meters() as meters:
        train_meters = OrderedDict(
            (name, meters.AverageMeter()) for name in ("train_loss", "train_nll_loss", "valid_loss", "wpb")
        )
        train_meters["wps"] = meters.TimeMeter()
        train_meters["train_wall"] = meters.StopwatchMeter()
        state = {
            "args": args,
            "model": sd,
            "optimizer_history": [
                {
                    "criterion_name": "LabelSmoothedCrossEntropyCriterion",
                    "optimizer_name": "FairseqAdam",
                    "lr_scheduler_state": {"best": 3.94},
                    "num_updates": 51234,
                },
            ],
            "last_optimizer_state": {
                "state": {0: {"step": 51234, "exp_avg": torch.zeros(3), "exp_avg_sq": torch.zeros(3)}},
                "param_groups": [
                    {
                        "lr": 0.0003,
                        "betas": (0.9, 0.98),
                        "eps": 1e-08,
                        "weight_decay": 0.0001,
                        "amsgrad": False,
                        "params": [0],
                    }
                ],
            },
            "extra_state": {
                "best": 3.94,
                "train_iterator": {"epoch": 31, "iterations_in_epoch": 0},
                "val_loss": 3.94,
                "train_meters": train_meters,
            },
        }
        torch.save(state, path, _use_new_zipfile_serialization=False)
    return sd


# --- their BERT fork (``bert/fairseq``): pre-training checkpoints of transformer_bert_base_macaron ---------


def authors_bert_args(
    *, layers: int = 2, dim: int = 16, heads: int = 2, ffn: int = 8, data: str = "data-bin/bert_corpus/"
) -> argparse.Namespace:
    """Their ``args`` after ``transformer_bert_base_macaron`` ran (``macaron-scripts/train/train.sh``), at
    test size."""
    return argparse.Namespace(
        # training (train.sh)
        no_progress_bar=True,
        log_interval=50,
        log_format=None,
        seed=3,
        cpu=False,
        fp16=False,
        task="bert",
        max_tokens=6400,
        max_sentences=None,
        train_subset="train",
        valid_subset="valid",
        distributed_world_size=4,
        ddp_backend="no_c10d",
        arch="transformer_bert_base_macaron",
        criterion="cross_entropy_bert",
        max_epoch=0,
        max_update=800000,
        clip_norm=0.0,
        update_freq=[5],
        optimizer="adam",
        lr=[0.0003],
        weight_decay=0.01,
        lr_scheduler="linear",
        warmup_updates=1,
        min_lr=1e-09,
        adam_betas="(0.9, 0.999)",
        adam_eps=1e-06,
        save_dir="log/bert/ARCH",
        save_interval_updates=10000,
        keep_interval_updates=20,
        data=[data],
        raw_text=False,
        left_pad="False",
        max_positions=384,
        masked_lm_prob=0.15,
        mlm_mask_prob=0.8,
        mlm_random_prob=0.1,
        max_source_positions=384,
        # the model, as transformer_bert_base_macaron left it
        macaron=True,
        encoder_embed_path=None,
        encoder_embed_dim=dim,
        encoder_ffn_embed_dim=ffn,
        encoder_layers=layers,
        encoder_attention_heads=heads,
        encoder_normalize_before=True,
        encoder_learned_pos=False,
        attention_dropout=0.1,
        relu_dropout=0.0,
        dropout=0.1,
        share_all_embeddings=True,
        no_token_positional_embeddings=False,
        act_fn="gelu",
        no_normalize_affine=True,
    )


def authors_bert_state_dict(args: argparse.Namespace, vocab: int, seed: int = 0) -> OrderedDict:
    """Their BERT's state dict (``FairseqBertModel``), every tensor random: no LayerNorm in the encoder
    (non-affine), ``embed_out`` the token embedding itself, their segment row 1 (the padding row) random
    too, so that a swapped segment convention changes the output."""
    g = torch.Generator().manual_seed(seed)
    d, ffn = args.encoder_embed_dim, args.encoder_ffn_embed_dim

    def rand(*shape: int, scale: float = 0.3) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * scale

    def linear(prefix: str, out: int, inp: int) -> dict[str, torch.Tensor]:
        return {f"{prefix}.weight": rand(out, inp, scale=inp**-0.5), f"{prefix}.bias": rand(out, scale=0.1)}

    sd: OrderedDict[str, torch.Tensor] = OrderedDict()
    embed = rand(vocab, d, scale=d**-0.5)
    embed[1] = 0
    sd["encoder.embed_tokens.weight"] = embed
    sd["encoder.embed_positions._float_tensor"] = torch.FloatTensor(1)
    sd["encoder.embed_segment.weight"] = rand(2, d, scale=d**-0.5)
    for i in range(args.encoder_layers):
        p = f"encoder.layers.{i}"
        sd[f"{p}.self_attn.in_proj_weight"] = rand(3 * d, d, scale=d**-0.5)
        sd[f"{p}.self_attn.in_proj_bias"] = rand(3 * d, scale=0.1)
        sd.update(linear(f"{p}.self_attn.out_proj", d, d))
        sd.update(linear(f"{p}.fc1", ffn, d))
        sd.update(linear(f"{p}.fc2", d, ffn))
        sd.update(linear(f"{p}.macaron_fc1", ffn, d))
        sd.update(linear(f"{p}.macaron_fc2", d, ffn))
    sd["encoder.version"] = torch.Tensor([2])
    sd.update(linear("mid_layer.0", d, d))
    sd["mid_layer.2.weight"] = 1 + rand(d, scale=0.2)
    sd["mid_layer.2.bias"] = rand(d, scale=0.2)
    sd["embed_out"] = embed  # the same tensor (--share-all-embeddings), saved under both names
    sd.update(linear("classifier", 1, d))
    return sd


def authors_bert_dictionary(path: Path, vocab: int) -> Path:
    """Their ``dict.txt``: ``vocab - 6`` entries (their 6 special symbols are not in the file)."""
    path.write_text("".join(f"w{i} {1000 - i}\n" for i in range(vocab - 6)), encoding="utf-8")
    return path


@contextlib.contextmanager
def cuda_storage_tags() -> Iterator[None]:
    """Every storage saved in this context is tagged ``cuda:0``, as their trainer's GPU tensors were (their
    checkpoints need ``map_location`` to load on a CPU)."""
    entry = (0, lambda obj: "cuda:0", lambda obj, location: None)
    registry = torch.serialization._package_registry
    registry.append(entry)
    registry.sort(key=lambda e: e[0])
    try:
        yield
    finally:
        registry.remove(entry)


def write_authors_bert_checkpoint(
    path: Path, args: argparse.Namespace, vocab: int, seed: int = 0, **payload: object
) -> OrderedDict:
    """Their BERT checkpoint at ``path`` as their trainer wrote it: legacy serialization with CUDA storage
    tags, their meters in ``extra_state['train_meters']``, an Adam state keyed by parameter ids; ``payload``
    entries are added to ``extra_state``. Returns the state dict."""
    sd = authors_bert_state_dict(args, vocab, seed)
    with fairseq_06_meters() as meters, cuda_storage_tags():
        train_meters = OrderedDict(
            (name, meters.AverageMeter()) for name in ("train_loss", "mlm_loss", "nsp_loss", "wpb", "clip")
        )
        train_meters["wps"] = meters.TimeMeter()
        train_meters["train_wall"] = meters.StopwatchMeter()
        ids = list(range(len([k for k in sd if k not in ("encoder.version", "embed_out")])))
        state = {
            "args": args,
            "model": sd,
            "optimizer_history": [
                {
                    "criterion_name": "CrossEntropyBertCriterion",
                    "optimizer_name": "FairseqAdam",
                    "lr_scheduler_state": {"best": 1.87},
                    "num_updates": 800000,
                },
            ],
            "last_optimizer_state": {
                "state": {
                    i: {"step": 800000, "exp_avg": torch.zeros(2), "exp_avg_sq": torch.zeros(2)}
                    for i in ids[:3]
                },
                "param_groups": [
                    {
                        "lr": 3.75e-10,
                        "betas": (0.9, 0.999),
                        "eps": 1e-06,
                        "weight_decay": 0.01,
                        "amsgrad": False,
                        "params": ids,
                    }
                ],
            },
            "extra_state": {
                "best": 1.87,
                "train_iterator": {"epoch": 5, "iterations_in_epoch": 1200},
                "val_loss": 1.87,
                "train_meters": train_meters,
                **payload,
            },
        }
        torch.save(state, path, _use_new_zipfile_serialization=False)
    return sd
