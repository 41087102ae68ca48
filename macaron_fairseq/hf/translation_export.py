"""``macaron-hf export model.pt --dest HF_DIR`` for a translation checkpoint: the plugin's ``macaron`` /
``fixup_transformer`` models, fairseq's ``transformer`` (the authors' baselines), and checkpoints upgraded
from the authors' fork (``macaron-upgrade``) → a directory that
``AutoModelForSeq2SeqLM.from_pretrained(HF_DIR, trust_remote_code=True)`` loads:

* ``config.json`` (:class:`~macaron_fairseq.hf.modeling_macaron_mt.MacaronMTConfig`, read from the built
  fairseq model, not from flags) with ``auto_map``, and ``modeling_macaron_mt.py`` — the only code
  ``trust_remote_code`` runs;
* ``model.safetensors``: fairseq's tensors under fairseq's own names (ties stored once);
* ``generation_config.json``: fairseq-generate's search (beam, lenpen, max length) as transformers'
  settings (:mod:`macaron_fairseq.hf.generation_settings`);
* the tokenizer of the data (:mod:`macaron_fairseq.hf.translation_tokenizer`), a model card ``README.md``
  (:mod:`macaron_fairseq.hf.model_card`) and ``fairseq_export.json`` (the fairseq configuration:
  ``macaron-hf import`` builds the checkpoint back from it).

Before anything is written the exported model runs beside the fairseq one on a padded random batch: the
decoder's logits must agree within 1e-5, otherwise nothing is written. What transformers cannot compute
here is refused with one line (relation-aware attention, adaptive softmax, projections between embedding
and model width, quant-noise, NormFormer's extra norms, mixed layer kinds or partly norm-free stacks).
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.hf.export_common import finish_export, load_model, refuse_gap
from macaron_workflow.atomic import writing
from macaron_workflow.errors import UserError
from macaron_workflow.overlap import refuse_overlap

MODELING_FILE = "modeling_macaron_mt.py"
TOLERANCE = 1e-5
#: fairseq's special symbols (Dictionary defaults): the exported config fixes these ids
SPECIALS = {"bos": 0, "pad": 1, "eos": 2, "unk": 3}
#: fairseq state-dict entries that are not weights (buffers fairseq rebuilds itself)
NOT_WEIGHTS = ("encoder.version", "decoder.version", "embed_positions._float_tensor")


def translation_model_class(arch: str | None) -> type | None:
    """The fairseq model class registered for ``arch`` if it is a Transformer translation model."""
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq.models.transformer import TransformerModel

    import macaron_fairseq  # noqa: F401  (registers the plugin's and the authors' archs)

    model = ARCH_MODEL_REGISTRY.get(str(arch)) if arch else None
    return model if isinstance(model, type) and issubclass(model, TransformerModel) else None


def is_translation_checkpoint(checkpoint: Path) -> bool:
    """Whether ``checkpoint`` records a Transformer translation architecture (reads the metadata only)."""
    from macaron_fairseq.checkpoint_reader import describe

    return translation_model_class(describe(checkpoint).arch) is not None


@dataclass
class Loaded:
    model: Any
    task: Any
    data: Path
    model_cfg: dict[str, Any]
    state: dict[str, Any]


def load_translation(checkpoint: Path, data: Path | None) -> Loaded:
    """The fairseq model (eval mode) of ``checkpoint`` over its dictionaries (``data`` or the recorded
    data directory), through the plugin's allow-listed reader and fairseq's loader."""
    from macaron_fairseq.checkpoint_reader import read_checkpoint

    state, info = read_checkpoint(checkpoint, "CHECKPOINT")
    cfg = state.get("cfg")
    if isinstance(cfg, dict) and not cfg.get("task") and state.get("args") is None:
        raise UserError(
            f"{checkpoint}: a {info.arch} checkpoint whose fairseq configuration has no task section "
            "(fairseq cannot load it either); give a checkpoint saved by fairseq-train or macaron-upgrade"
        )
    task_cfg = info.task_config
    src, tgt = getattr(task_cfg, "source_lang", None), getattr(task_cfg, "target_lang", None)
    data_dir = Path(data) if data else info.data
    names = [f"dict.{lang}.txt" for lang in (src, tgt) if lang]
    if not names:
        raise UserError(
            f"{checkpoint}: no source/target language recorded (a translation checkpoint has them)"
        )
    if data_dir is None or not all((data_dir / name).is_file() for name in names):
        raise UserError(
            f"{checkpoint}: its dictionaries {', '.join(names)} are not in {data_dir}; give "
            "--data DATA_BIN (the data-bin the model was trained on)"
        )
    model, task = load_model(checkpoint, data_dir, f"the dictionaries of {data_dir}", limit=200)
    model_cfg = dict(vars(info.model_config)) if info.model_config is not None else {}
    return Loaded(model, task, data_dir, model_cfg, state)


def _norm_free(layers: list[Any]) -> bool:
    free = [isinstance(layer.self_attn_layer_norm, torch.nn.Identity) for layer in layers]
    if any(free) and not all(free):
        raise UserError("a stack mixing norm-free and normalised layers has no HuggingFace export")
    return all(free)


def _check_layer(layer: Any, where: str) -> None:
    for name in ("attn_ln", "c_attn", "ffn_layernorm", "w_resid"):
        if getattr(layer, name, None) is not None:
            raise UserError(f"{where}: NormFormer's {name} has no HuggingFace export here")
    if getattr(layer.self_attn, "max_relative_positions", 0):
        raise UserError("relation-aware self-attention (--max-relative-positions) has no HuggingFace export")
    if getattr(layer, "cross_self_attention", False):
        raise UserError("--cross-self-attention has no HuggingFace export")
    for module in layer.modules():
        if module._forward_pre_hooks and isinstance(module, torch.nn.Linear):
            raise UserError(f"{where}: quant-noise layers have no HuggingFace export")


def config_settings(model: Any, model_cfg: dict[str, Any], task: Any) -> dict[str, Any]:
    """The :class:`MacaronMTConfig` arguments of the built fairseq model (what it computes, read from it)."""
    from fairseq.modules import LearnedPositionalEmbedding

    from macaron_fairseq.modules.macaron_layer import MacaronFFNMixin

    encoder, decoder = model.encoder, model.decoder
    enc_layers, dec_layers = list(encoder.layers), list(decoder.layers)
    kinds = {isinstance(layer, MacaronFFNMixin) for layer in enc_layers + dec_layers}
    if len(kinds) != 1:
        raise UserError(
            "a model mixing Macaron and vanilla layers (e.g. a pre-trained encoder of another kind) has no "
            "HuggingFace export"
        )
    macaron = kinds.pop()
    for i, layer in enumerate(enc_layers):
        _check_layer(layer, f"encoder layer {i}")
    for i, layer in enumerate(dec_layers):
        _check_layer(layer, f"decoder layer {i}")
        if layer.encoder_attn is None:
            raise UserError("a decoder without encoder-decoder attention has no HuggingFace export")
    if getattr(decoder, "adaptive_softmax", None) is not None:
        raise UserError("an adaptive softmax output (--adaptive-softmax-cutoff) has no HuggingFace export")
    if decoder.project_in_dim is not None or decoder.project_out_dim is not None:
        raise UserError(
            "decoder input/output projections (--decoder-input-dim/--decoder-output-dim ≠ "
            "--decoder-embed-dim) have no HuggingFace export"
        )
    if getattr(encoder, "quant_noise", None) is not None or getattr(decoder, "quant_noise", None) is not None:
        raise UserError("quant-noise embeddings have no HuggingFace export")
    if (
        not isinstance(decoder.output_projection, torch.nn.Linear)
        or decoder.output_projection.bias is not None
    ):
        raise UserError(
            "the decoder's output projection is not a bias-free linear map: no HuggingFace export"
        )
    for side, dictionary in (("source", task.source_dictionary), ("target", task.target_dictionary)):
        ids = {name: getattr(dictionary, name)() for name in SPECIALS}  # bos(), pad(), eos(), unk()
        if ids != SPECIALS:
            raise UserError(
                f"the {side} dictionary's special ids {ids} are not fairseq's defaults {SPECIALS}"
            )
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    eps = {float(m.eps) for m in norms} or {1e-5}
    if len(eps) != 1:
        raise UserError(f"LayerNorms with different ε {sorted(eps)}: not expressible in one config")
    positions = {"encoder": encoder.embed_positions, "decoder": decoder.embed_positions}
    if (positions["encoder"] is None) != (positions["decoder"] is None):
        raise UserError("positional embeddings on one side only have no HuggingFace export")
    learned = {side: isinstance(p, LearnedPositionalEmbedding) for side, p in positions.items()}
    for side, p in positions.items():
        limit = encoder.max_source_positions if side == "encoder" else decoder.max_target_positions
        if learned[side] and p.weight.size(0) != limit + SPECIALS["pad"] + 1:
            raise UserError(
                f"the {side}'s learned positions have {p.weight.size(0)} rows, not "
                f"max positions {limit} + padding_idx + 1"
            )
    scales = {encoder.embed_scale, decoder.embed_scale}
    dims = {"encoder": encoder.embed_tokens.embedding_dim, "decoder": decoder.embed_tokens.embedding_dim}
    scaled = encoder.embed_scale != 1.0
    expected = {math.sqrt(dims["encoder"]), math.sqrt(dims["decoder"])} if scaled else {1.0}
    if scales != expected:
        raise UserError(f"embedding scales {sorted(scales)} are neither √d nor 1 on both sides")
    steps = {float(getattr(layer, "ffn_step", 1.0)) for layer in enc_layers + dec_layers}
    if len(steps) != 1:
        raise UserError(f"Macaron layers with different FFN steps {sorted(steps)}: not expressible")
    activation = model_cfg.get("activation_fn") or "relu"
    from macaron_fairseq.hf.modeling_macaron_mt import ACTIVATIONS

    if activation not in ACTIVATIONS:
        raise UserError(f"--activation-fn {activation!r} has no HuggingFace export here")
    first = enc_layers[0]
    shared_all = encoder.embed_tokens is decoder.embed_tokens
    return {
        "src_vocab_size": len(task.source_dictionary),
        "tgt_vocab_size": len(task.target_dictionary),
        "encoder_embed_dim": dims["encoder"],
        "decoder_embed_dim": dims["decoder"],
        "encoder_layers": len(enc_layers),
        "decoder_layers": len(dec_layers),
        "encoder_attention_heads": first.self_attn.num_heads,
        "decoder_attention_heads": dec_layers[0].self_attn.num_heads,
        "encoder_ffn_embed_dim": first.fc1.out_features,
        "decoder_ffn_embed_dim": dec_layers[0].fc1.out_features,
        "macaron": macaron,
        "macaron_ffn_step": steps.pop() if macaron else 0.5,
        "encoder_normalize_before": bool(first.normalize_before),
        "decoder_normalize_before": bool(dec_layers[0].normalize_before),
        "encoder_norm_free": _norm_free(enc_layers),
        "decoder_norm_free": _norm_free(dec_layers),
        "encoder_final_layer_norm": encoder.layer_norm is not None,
        "decoder_final_layer_norm": decoder.layer_norm is not None,
        "encoder_layernorm_embedding": encoder.layernorm_embedding is not None,
        "decoder_layernorm_embedding": decoder.layernorm_embedding is not None,
        "encoder_learned_pos": learned["encoder"],
        "decoder_learned_pos": learned["decoder"],
        "token_positional_embeddings": positions["encoder"] is not None,
        "max_source_positions": int(encoder.max_source_positions),
        "max_target_positions": int(decoder.max_target_positions),
        "scale_embedding": scaled,
        "share_all_embeddings": shared_all,
        "share_decoder_input_output_embed": decoder.output_projection.weight is decoder.embed_tokens.weight,
        "activation_fn": activation,
        "dropout": float(first.dropout_module.p),
        "attention_dropout": float(first.self_attn.dropout_module.p),
        "activation_dropout": float(first.activation_dropout_module.p),
        "layer_norm_eps": eps.pop(),
    }


def hf_state(model: Any) -> dict[str, torch.Tensor]:
    """fairseq's weights under their own names (buffers fairseq rebuilds itself left out)."""
    return {
        name: tensor.detach().float().contiguous()
        for name, tensor in model.state_dict().items()
        if not any(name.endswith(suffix) for suffix in NOT_WEIGHTS)
    }


def build_hf(settings: dict[str, Any], state: dict[str, torch.Tensor]) -> Any:
    """The HF model of ``settings`` holding ``state`` (every weight used, nothing left at its init)."""
    from macaron_fairseq.hf.modeling_macaron_mt import MacaronMTConfig, MacaronMTForConditionalGeneration

    stem = MODELING_FILE.removesuffix(".py")
    config = MacaronMTConfig(**settings)
    config.architectures = ["MacaronMTForConditionalGeneration"]
    config.auto_map = {
        "AutoConfig": f"{stem}.MacaronMTConfig",
        "AutoModelForSeq2SeqLM": f"{stem}.MacaronMTForConditionalGeneration",
    }
    exported = MacaronMTForConditionalGeneration(config)
    missing, unexpected = exported.load_state_dict(state, strict=False)
    tied = set(exported.all_tied_weights_keys)
    if set(missing) - tied or unexpected:
        raise UserError(
            "internal: the HF model does not match the checkpoint: missing "
            f"{sorted(set(missing) - tied)[:6]}, unexpected {sorted(unexpected)[:6]}"
        )
    return exported.eval()


def random_batch(
    vocab: int, generator: torch.Generator, pad: int = 1, eos: int = 2
) -> tuple[torch.Tensor, ...]:
    """Source (left-padded, as fairseq batches them, ending with ``</s>``) and decoder input (``</s>``
    first) of three sentences of different lengths."""
    lengths = (9, 6, 3)
    src = torch.full((3, max(lengths)), pad, dtype=torch.long)
    for row, n in enumerate(lengths):
        src[row, -n:-1] = torch.randint(4, vocab, (n - 1,), generator=generator)
        src[row, -1] = eos
    prev = torch.randint(4, vocab, (3, 7), generator=generator)
    prev[:, 0] = eos
    return src, torch.tensor(lengths), prev


def check_logits(model: Any, exported: Any) -> float:
    """Max |Δ| of the decoder logits of the two models on a padded random batch; above the tolerance the
    export stops."""
    generator = torch.Generator().manual_seed(0)
    src, lengths, prev = random_batch(
        min(exported.config.src_vocab_size, exported.config.tgt_vocab_size), generator
    )
    with torch.no_grad():
        ours, _ = model(src, lengths, prev)
        theirs = exported(input_ids=src, decoder_input_ids=prev, use_cache=False).logits
    return refuse_gap((ours - theirs).abs().max().item(), TOLERANCE)


def export_translation(
    checkpoint: Path,
    out: Path,
    data: Path | None = None,
    search: dict[str, Any] | None = None,
    results: list[Path] | None = None,
    bpe_codes: Path | None = None,
) -> Path:
    """Write the HuggingFace directory ``out`` of translation ``checkpoint``; built aside, renamed into
    place. ``search``: beam/lenpen/max_len_a/max_len_b overrides; ``results``: results files to read the
    recipe's search and measured BLEU from (default: the ones beside the checkpoint that name it)."""
    from macaron_fairseq.hf.generation_settings import generation_config, search_settings
    from macaron_fairseq.hf.model_card import model_card, results_for
    from macaron_fairseq.hf.translation_tokenizer import tokenizer_files

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--dest {out}: exists and is not an empty directory; give a new directory")
    refuse_overlap({"--dest": out}, {"CHECKPOINT": checkpoint, "--data": data})
    loaded = load_translation(checkpoint, data)
    refuse_overlap({"--dest": out}, {"the checkpoint's data directory": loaded.data}, change="--dest")
    settings = config_settings(loaded.model, loaded.model_cfg, loaded.task)
    exported = build_hf(settings, hf_state(loaded.model))
    diff = check_logits(loaded.model, exported)
    found = results_for(checkpoint, results)
    chosen = search_settings(found, search or {})
    exported.generation_config = generation_config(exported.config, chosen)
    task_cfg = fairseq_cfg(loaded.state).get("task")
    src = loaded.task.cfg.source_lang if hasattr(loaded.task, "cfg") else None
    tgt = loaded.task.cfg.target_lang if hasattr(loaded.task, "cfg") else None
    # parents made (and removed again on a failure), a full disk one line (macaron_workflow.atomic.writing)
    with writing(out), tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        staging = Path(tmp) / "hf"
        exported.save_pretrained(str(staging))
        shutil.copyfile(Path(__file__).with_name(MODELING_FILE), staging / MODELING_FILE)
        tokenizer = tokenizer_files(loaded.data, src, tgt, staging, bpe_codes)
        record = {
            "checkpoint": str(checkpoint),
            "arch": loaded.model_cfg.get("arch") or loaded.model_cfg.get("_name"),
            "max_abs_logit_difference": diff,
            "tokenizer": tokenizer,
            "source_lang": src,
            "target_lang": tgt,
            "search": chosen,
            "fairseq_model_cfg": _jsonable(loaded.model_cfg),
            "fairseq_task_cfg": _jsonable(task_cfg or {}),
            "fairseq_cfg": _jsonable(fairseq_cfg(loaded.state)),
            "extra_state": _jsonable(
                {k: v for k, v in (loaded.state.get("extra_state") or {}).items() if k == "macaron_upgrade"}
            ),
        }
        card = model_card(record, settings, exported, found)
        (staging / "README.md").write_text(card, encoding="utf-8")
        finish_export(staging, out, record)
    return out


def fairseq_cfg(state: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's fairseq configuration (a legacy ``args`` Namespace converted as fairseq does)."""
    if isinstance(state.get("cfg"), dict):
        return state["cfg"]
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    return OmegaConf.to_container(
        convert_namespace_to_omegaconf(state["args"]), resolve=True, enum_to_str=True
    )


def _jsonable(value: Any) -> Any:
    """A configuration as JSON: a Namespace (fairseq keeps legacy model configs as one) as
    ``{"__namespace__": {...}}`` (:func:`macaron_fairseq.hf.translation_import.restore` reads it back), what
    json cannot hold as its string."""
    if isinstance(value, argparse.Namespace):
        return {"__namespace__": _jsonable(vars(value))}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
