"""Build the plugin model an :class:`~macaron_fairseq.upgrade.layout.AuthorsModel` describes, load the
upgraded weights into it, check nothing was lost, and write a fairseq checkpoint of the current layout.

The model is built as ``fairseq-train`` builds it (fairseq's parser, the ``translation`` task, the
architecture function), then every model setting is set from the authors' checkpoint — so the result does
not depend on the architecture's defaults. The dictionaries only give the embedding sizes: a temporary
data directory with dictionaries of the checkpoint's sizes stands in for the data (``--data`` checks a real
one and records it in the checkpoint instead).
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.checkpoint_reader import cfg_of, fairseq_checkpoint
from macaron_fairseq.upgrade.layout import AuthorsModel
from macaron_fairseq.upgrade.weights import plugin_state
from macaron_workflow.atomic import save_torch
from macaron_workflow.errors import UserError

#: fallback architectures for an authors' checkpoint whose arch name is not registered here (settings come
#: from the checkpoint anyway; the name is what the upgraded checkpoint records)
FALLBACK_ARCH = {True: "transformer_wmt_en_de_macaron_v2", False: "transformer_wmt_en_de_v2"}


@dataclass(frozen=True)
class Upgraded:
    """The result: the plugin model, its configuration as fairseq saves it, and the recorded arch."""

    model: Any
    cfg: dict[str, Any]
    arch: str
    model_name: str


def target_arch(model: AuthorsModel) -> tuple[str, str]:
    """``(arch, model name)``: the authors' arch name when it is registered here on the matching model (their
    ``*_v2`` / ``*_big_t2t`` names, their post-LN Macaron names), else a fallback of the right kind."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    wanted = "macaron" if model.macaron else "transformer"
    registered = ARCH_MODEL_REGISTRY.get(model.arch)
    if registered is not None and getattr(registered, "__name__", "") in ("MacaronModel", "TransformerModel"):
        name = "macaron" if registered.__name__ == "MacaronModel" else "transformer"
        if name == wanted:
            return model.arch, name
    return FALLBACK_ARCH[model.macaron], wanted


def model_settings(model: AuthorsModel) -> dict[str, Any]:
    """Every setting of the plugin model, from the authors' checkpoint (fairseq 0.12 names)."""
    settings: dict[str, Any] = {}
    for side, stack in (("encoder", model.encoder), ("decoder", model.decoder)):
        settings |= {
            f"{side}_embed_dim": stack.embed_dim,
            f"{side}_ffn_embed_dim": stack.ffn_embed_dim,
            f"{side}_layers": stack.layers,
            f"{side}_attention_heads": stack.attention_heads,
            f"{side}_normalize_before": stack.normalize_before,
            f"{side}_learned_pos": stack.learned_pos,
            f"{side}_layerdrop": 0.0,
            f"{side}_layers_to_keep": None,
            f"{side}_embed_path": None,
        }
    settings |= {
        "decoder_output_dim": model.decoder_output_dim,
        "decoder_input_dim": model.decoder_input_dim,
        "dropout": model.dropout,
        "attention_dropout": model.attention_dropout,
        "activation_dropout": model.relu_dropout,  # their --relu-dropout
        "relu_dropout": model.relu_dropout,
        "activation_fn": "relu",  # their layers call F.relu
        "share_all_embeddings": model.share_all_embeddings,
        "share_decoder_input_output_embed": model.share_decoder_input_output_embed,
        "no_token_positional_embeddings": model.no_token_positional_embeddings,
        "max_source_positions": model.max_source_positions,
        "max_target_positions": model.max_target_positions,
        "adaptive_softmax_cutoff": None,
        "no_scale_embedding": False,  # they scale embeddings by √d
        "layernorm_embedding": False,
        "cross_self_attention": False,
        "no_cross_attention": False,
        "adaptive_input": False,
        "tie_adaptive_weights": False,
        "quant_noise_pq": 0,
        "quant_noise_scalar": 0,
        "checkpoint_activations": False,
        "offload_activations": False,
    }
    if model.macaron:
        settings["macaron_ffn_step"] = 0.5  # their fc_factor, fixed
    return settings


def _write_dictionary(path: Path, size: int) -> None:
    """A dictionary of ``size`` entries with fairseq's 4 special symbols (only its size is used)."""
    path.write_text("".join(f"madeupword{i:05d} 1\n" for i in range(size - 4)), encoding="utf-8")


def check_data(model: AuthorsModel, data: Path) -> None:
    """``data`` holds the checkpoint's dictionaries: ``dict.SRC.txt``/``dict.TGT.txt`` of its sizes."""
    from fairseq.data import Dictionary

    for lang, rows in ((model.source_lang, model.source_vocab), (model.target_lang, model.target_vocab)):
        path = data / f"dict.{lang}.txt"
        if not path.is_file():
            raise UserError(f"--data {data}: no {path.name} (the data-bin the model was trained on has one)")
        size = len(Dictionary.load(str(path)))
        if size != rows:
            raise UserError(
                f"--data {data}: {path.name} has {size} entries but the checkpoint's embeddings "
                f"{rows} rows: not the dictionary this model was trained with"
            )


def build(model: AuthorsModel, weights: dict[str, torch.Tensor], source: Path, data: Path | None) -> Upgraded:
    """The plugin model with the authors' weights, checked to hold exactly them."""
    from fairseq import options, tasks

    import macaron_fairseq  # noqa: F401  (registers the models and the authors' archs)

    arch, model_name = target_arch(model)
    with tempfile.TemporaryDirectory() as tmp:
        dict_dir = Path(tmp)
        _write_dictionary(dict_dir / f"dict.{model.source_lang}.txt", model.source_vocab)
        _write_dictionary(dict_dir / f"dict.{model.target_lang}.txt", model.target_vocab)
        argv = [
            str(dict_dir),
            "--task",
            "translation",
            "-s",
            model.source_lang,
            "-t",
            model.target_lang,
            "--arch",
            arch,
        ]
        args = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
        for name, value in model_settings(model).items():
            setattr(args, name, value)
        args.left_pad_source, args.left_pad_target = model.left_pad_source, model.left_pad_target
        if model.share_all_embeddings and model.source_vocab != model.target_vocab:
            raise UserError(
                f"{source}: shared embeddings but {model.source_vocab} source and "
                f"{model.target_vocab} target embedding rows"
            )
        task = tasks.setup_task(args)
        plugin = task.build_model(args)
    state = plugin_state(weights, plugin.state_dict(), source)
    plugin.load_state_dict(state, strict=True)
    loaded = plugin.state_dict()
    changed = [k for k, v in state.items() if k not in loaded or not torch.equal(loaded[k], v)]
    if changed:  # fairseq's own upgrade of old layouts must not have touched anything
        raise RuntimeError(f"the upgraded model does not hold the checkpoint's weights: {changed[:6]}")
    if model.decoder.normalize_before != (plugin.decoder.layer_norm is not None):
        raise RuntimeError("the decoder's final LayerNorm was not kept")  # the decoder.version trap
    args.data = str(data.resolve()) if data is not None else model.data
    logging.getLogger("hydra").setLevel(logging.WARNING)  # its DEBUG lines on composing fairseq's config
    return Upgraded(plugin.eval(), cfg_of(args), arch, model_name)


def save(upgraded: Upgraded, model: AuthorsModel, source: Path, out: Path) -> None:
    """A fairseq checkpoint without optimizer state, written atomically (a temporary file renamed at the
    end): ``fairseq-generate``, the hub and ``--finetune-from-model`` load it with the plugin."""
    checkpoint = upgraded_fairseq_checkpoint(
        upgraded.cfg, upgraded.model.state_dict(), "LabelSmoothedCrossEntropyCriterion", model, source
    )
    save_torch(checkpoint, out)


def upgraded_fairseq_checkpoint(
    cfg: Any, weights: dict[str, Any], criterion: str, model: Any, source: Path
) -> dict[str, Any]:
    """:func:`fairseq_checkpoint` of an upgraded authors' ``model`` (its updates; ``source`` and the model
    recorded as ``extra_state['macaron_upgrade']``)."""
    upgrade = {"source": str(source), "authors_arch": model.arch, "description": model.describe()}
    return fairseq_checkpoint(
        cfg, weights, criterion, num_updates=model.num_updates or 0, extra_state={"macaron_upgrade": upgrade}
    )
