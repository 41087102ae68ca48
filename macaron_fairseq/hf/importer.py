"""``python -m macaron_fairseq.hf import HF_DIR --out model.pt``: a HuggingFace ``BertForPreTraining`` (or
``BertModel``) directory → a ``vanilla_bert_*`` fairseq checkpoint.

Written next to ``model.pt``: ``model.data/`` (the checkpoint's task data directory, as the pre-trainer's
exports point at their data-bin) holding ``dict.txt`` (the WordPiece vocabulary, :mod:`.vocab`),
``tokenizer/`` (the model's own tokenizer files, with a ``tokenizer.json`` the ``tokenizers`` library reads,
lowercasing and accent stripping as the model's tokenizer config says) and ``hf_vocabulary.json`` (the id
order, which the export undoes). ``checkpoint_utils.load_model_ensemble_and_task(["model.pt"])`` loads it
with the plugin imported; GLUE fine-tunes it with its own tokenizer (``CHECKPOINT=model.pt bash
pipelines/glue.sh``).

The model config carries every setting the HF config has (sizes, dropout, GELU form, LayerNorm ε, learned
positions, segments); settings the plugin's BERT cannot reproduce are refused, never approximated.
A ``BertModel`` directory has no MLM/NSP heads: they are initialised as for pre-training (N(0, 0.02)) and
the import says so.
"""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.checkpoint_reader import cfg_of, fairseq_checkpoint
from macaron_fairseq.hf.mapping import (
    EMBED_TOKENS,
    FAIRSEQ_ONLY,
    HF_TIED,
    OUTPUT_BIAS,
    name_pairs,
    strip_base_prefix,
)
from macaron_fairseq.hf.vocab import WordPieceVocabulary
from macaron_fairseq.hf.weights import read_weights
from macaron_workflow import atomic
from macaron_workflow.atomic import save_torch
from macaron_workflow.errors import UserError, storage_failure
from macaron_workflow.overlap import refuse_overlap

logger = logging.getLogger(__name__)

#: HuggingFace ``hidden_act`` → fairseq ``--activation-fn`` (the same function)
ACTIVATIONS = {
    "gelu": "gelu",  # erf form, both
    "gelu_new": "gelu_accurate",  # tanh approximation, both
    "gelu_pytorch_tanh": "gelu_accurate",
    "gelu_fast": "gelu_accurate",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
#: fairseq architectures whose sizes a config may match exactly (layers, hidden, heads, ffn)
SIZES = {
    "vanilla_bert_tiny": (2, 64, 4, 256),
    "vanilla_bert_base": (12, 768, 12, 3072),
    "vanilla_bert_large": (24, 1024, 16, 4096),
}
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
VOCABULARY_RECORD = "hf_vocabulary.json"
TOKENIZER_DIR = "tokenizer"


def data_dir_for(out: Path) -> Path:
    """Where the checkpoint's dictionary and tokenizer go: ``model.pt`` → ``model.data/``."""
    return out.with_suffix(".data")


#: the sizes every BERT config holds: positive integers
REQUIRED_SIZES = (
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "intermediate_size",
    "vocab_size",
)
#: optional sizes (HF's defaults when absent) and the smallest value each may take
OPTIONAL_SIZES = {"max_position_embeddings": 1, "type_vocab_size": 0}
#: optional probabilities in [0, 1] (``classifier_dropout`` may also be null)
PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")
WRITTEN_BY = "; give the config.json that save_pretrained wrote for a BERT model"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_settings(path: Path, config: dict[str, Any]) -> None:
    """Every setting the import reads has the right type and range (before fairseq's parser sees it: a
    ``hidden_size`` of ``"sixteen"`` printed fairseq's whole usage)."""
    for key in REQUIRED_SIZES:
        if key not in config:
            raise UserError(f"{path}: no {key}{WRITTEN_BY}")
    for key, low in [*((k, 1) for k in REQUIRED_SIZES), *OPTIONAL_SIZES.items()]:
        value = config.get(key, low)
        if not _is_int(value) or value < low:
            raise UserError(f"{path}: {key} is {value!r}; expected an integer >= {low}{WRITTEN_BY}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise UserError(
            f"{path}: hidden_size {config['hidden_size']} is not a multiple of "
            f"num_attention_heads {config['num_attention_heads']}{WRITTEN_BY}"
        )
    for key in PROBABILITIES:
        value = config.get(key, 0.0)
        if value is not None and (not _is_number(value) or not 0 <= value <= 1):
            raise UserError(f"{path}: {key} is {value!r}; expected a probability in [0, 1]{WRITTEN_BY}")
    eps = config.get("layer_norm_eps", 1e-12)
    if not _is_number(eps) or not eps > 0:
        raise UserError(f"{path}: layer_norm_eps is {eps!r}; expected a positive number{WRITTEN_BY}")


def read_config(hf_dir: Path) -> dict[str, Any]:
    path = hf_dir / "config.json"
    if not path.is_file():
        raise UserError(f"{hf_dir}: no config.json (not a directory written by save_pretrained)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not valid JSON ({err}){WRITTEN_BY}") from None
    if not isinstance(config, dict):
        raise UserError(f"{path}: a JSON {type(config).__name__}, not an object of settings{WRITTEN_BY}")
    if config.get("model_type") != "bert":
        raise UserError(
            f"{path}: model_type {config.get('model_type')!r}; only BERT (model_type 'bert') is imported"
        )
    refused = {
        "position_embedding_type": ("absolute", "learned absolute positions"),
        "is_decoder": (False, "an encoder"),
        "add_cross_attention": (False, "no cross-attention"),
    }
    for key, (wanted, meaning) in refused.items():
        if config.get(key, wanted) != wanted:
            raise UserError(
                f"{path}: {key} = {config[key]!r}; the plugin's BERT has {meaning} ({key} = {wanted!r})"
            )
    if (
        not isinstance(config.get("hidden_act", "gelu"), str)
        or config.get("hidden_act", "gelu") not in ACTIVATIONS
    ):
        raise UserError(
            f"{path}: hidden_act {config['hidden_act']!r} has no fairseq equivalent "
            f"(known: {', '.join(ACTIVATIONS)})"
        )
    check_settings(path, config)
    return config


def model_flags(config: dict[str, Any]) -> tuple[str, list[str]]:
    """The fairseq ``--arch`` and flags that build the model the HF config describes."""
    sizes = (
        config["num_hidden_layers"],
        config["hidden_size"],
        config["num_attention_heads"],
        config["intermediate_size"],
    )
    arch = next((name for name, dims in SIZES.items() if dims == sizes), "vanilla_bert_base")
    q = shlex.quote
    flags = shlex.split(
        f"--encoder-layers {q(str(sizes[0]))} --encoder-embed-dim {q(str(sizes[1]))} "
        f"--encoder-attention-heads {q(str(sizes[2]))} --encoder-ffn-embed-dim {q(str(sizes[3]))} "
        f"--activation-fn {q(ACTIVATIONS[config.get('hidden_act', 'gelu')])} "
        f"--dropout {q(str(config.get('hidden_dropout_prob', 0.1)))} "
        f"--attention-dropout {q(str(config.get('attention_probs_dropout_prob', 0.1)))} "
        f"--activation-dropout 0 --max-positions {q(str(config.get('max_position_embeddings', 512)))} "
        f"--num-segments {q(str(config.get('type_vocab_size', 2)))} "
        f"--layernorm-eps {q(repr(float(config.get('layer_norm_eps', 1e-12))))}"
    )
    if config.get("classifier_dropout") is not None:
        flags += ["--pooler-dropout", str(config["classifier_dropout"])]
    return arch, flags


def build_fairseq_model(data_dir: Path, arch: str, flags: list[str]) -> tuple[Any, Any, dict[str, Any]]:
    """(model, task, cfg as fairseq saves it) for ``--arch arch flags`` over ``data_dir/dict.txt``."""
    from fairseq import options, tasks

    import macaron_fairseq  # noqa: F401  (registers the task and the architectures)

    parser = options.get_training_parser()
    argv = [str(data_dir), "--task", "macaron_bert_pretraining", "--arch", arch, *flags]
    args = options.parse_args_and_arch(parser, input_args=argv)
    task = tasks.setup_task(args)
    model = task.build_model(args)
    logging.getLogger("hydra").setLevel(logging.WARNING)  # its DEBUG lines on composing fairseq's config
    return model, task, cfg_of(args)


def fairseq_state(
    hf: dict[str, torch.Tensor], model: Any, vocab: WordPieceVocabulary, source: Path
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """The fairseq state dict from HF tensors; the fairseq keys left at their fresh initialisation."""
    hf = strip_base_prefix(hf)
    own = model.state_dict()
    layers = len(model.encoder.layers)
    state: dict[str, torch.Tensor] = {}
    used = set()
    for ours, theirs in name_pairs(layers, macaron=False):
        if ours in own and theirs in hf:
            state[ours] = hf[theirs]
            used.add(theirs)
    for ours, theirs in (EMBED_TOKENS, OUTPUT_BIAS):
        if theirs in hf:
            state[ours] = vocab.to_fairseq_rows(hf[theirs])
            used.add(theirs)
    decoder = hf.get("cls.predictions.decoder.weight")
    if decoder is not None and not torch.equal(decoder, hf[EMBED_TOKENS[1]]):
        raise UserError(
            f"{source}: the MLM output (cls.predictions.decoder.weight) is not tied to the token "
            "embeddings; the plugin's BERT ties them"
        )
    unused = sorted(k for k in hf if k not in used and k not in HF_TIED)
    if unused:
        raise UserError(
            f"{source}: weights the plugin's BERT has no place for: {unused[:8]}"
            + (f" (+{len(unused) - 8} more)" if len(unused) > 8 else "")
        )
    for key, value in state.items():
        if tuple(value.shape) != tuple(own[key].shape):
            raise UserError(
                f"{source}: {key} has shape {tuple(value.shape)}, the model {tuple(own[key].shape)}"
            )
    fresh = sorted(k for k in own if k not in state and k not in FAIRSEQ_ONLY)
    required = [k for k in fresh if k.startswith("encoder.")]
    if required:
        raise UserError(f"{source}: the encoder weights {required[:8]} are missing")
    for key in fresh:
        state[key] = own[key]
    for key in FAIRSEQ_ONLY:
        if key in own:
            state[key] = state[EMBED_TOKENS[0]] if key == "lm_head.weight" else own[key]
    return {k: v.float().contiguous() for k, v in state.items()}, fresh


def save_tokenizer(hf_dir: Path, dest: Path, vocab: WordPieceVocabulary) -> dict[str, Any]:
    """The model's tokenizer files, plus a ``tokenizer.json`` (fast tokenizer) when the directory has only
    the slow files; returns what the tokenizer config says about lowercasing."""
    dest.mkdir(parents=True)
    for name in TOKENIZER_FILES:
        if (hf_dir / name).is_file():
            shutil.copyfile(hf_dir / name, dest / name)
    if not (dest / "vocab.txt").is_file():  # transformers 5 saves tokenizer.json only; BertTokenizer needs it
        (dest / "vocab.txt").write_text(vocab.vocab_txt(), encoding="utf-8")
    if not (dest / "tokenizer.json").is_file():
        from transformers import BertTokenizerFast

        BertTokenizerFast.from_pretrained(str(dest)).backend_tokenizer.save(str(dest / "tokenizer.json"))
    config_path = dest / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    return {"do_lower_case": config.get("do_lower_case")}


def save_checkpoint(
    path: Path, cfg: dict[str, Any], model_state: dict[str, torch.Tensor], shown: Path | None = None
) -> Path:
    """A fairseq checkpoint of a pre-training BERT without optimizer state (what the pre-trainer's export
    writes); a storage failure is one line (:func:`macaron_workflow.atomic.save_torch`)."""
    checkpoint = fairseq_checkpoint(cfg, model_state, "BertPretrainingLoss")
    # not fairseq's torch_persistent_save: it logs a traceback for each of its three attempts
    return save_torch(checkpoint, path, shown)


def check_out(hf_dir: Path, out: Path) -> None:
    """``--out`` is a file to write, and neither it nor its data directory overlaps the HF directory."""
    data_dir = data_dir_for(out)
    if out.is_dir():
        raise UserError(
            f"--out {out}: is a directory; give the checkpoint file to write (e.g. {out / 'model.pt'})"
        )
    refuse_overlap({"--out": out, "--out's data directory": data_dir}, {"HF_DIR": hf_dir}, change="--out")
    if data_dir.exists() and not (data_dir / VOCABULARY_RECORD).is_file():
        raise UserError(f"{data_dir} exists and was not written by this importer: choose another --out")


def import_hf(hf_dir: Path, out: Path) -> Path:
    """Convert ``hf_dir``; write ``out`` and its data directory (together: both appear at the end, a
    failure in between puts back what was there, :func:`macaron_workflow.atomic.replace_together`)."""
    if not hf_dir.is_dir():
        what = "no such directory" if not hf_dir.exists() else "not a directory"
        raise UserError(f"HF_DIR {hf_dir}: {what}; give a directory written by save_pretrained")
    check_out(hf_dir, out)
    config = read_config(hf_dir)
    vocab = WordPieceVocabulary.from_dir(hf_dir)
    hf = read_weights(hf_dir)
    rows = strip_base_prefix(hf).get(EMBED_TOKENS[1])
    if rows is None:
        raise UserError(f"{hf_dir}: no token embeddings ({EMBED_TOKENS[1]})")
    if rows.shape[0] != len(vocab):
        raise UserError(f"{hf_dir}: {rows.shape[0]} token embeddings but vocab.txt holds {len(vocab)} tokens")
    data_dir = data_dir_for(out)
    created = atomic.make_parents(out.parent)
    try:
        return _write(hf_dir, out, data_dir, config, vocab, hf)
    except (OSError, RuntimeError) as exc:  # a full disk while writing the data directory: name --out
        atomic.remove_created(created)
        if (error := storage_failure(out, exc)) is None:
            raise
        raise error from None
    except BaseException:
        atomic.remove_created(created)  # nothing of a failed import is left, not even its directory
        raise


def _write(
    hf_dir: Path,
    out: Path,
    data_dir: Path,
    config: dict[str, Any],
    vocab: WordPieceVocabulary,
    hf: dict[str, torch.Tensor],
) -> Path:
    """The data directory and the checkpoint, built in a temporary directory beside ``out``, moved
    together."""
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        staging = Path(tmp) / "data"
        staging.mkdir()
        (staging / "dict.txt").write_text(vocab.dictionary_lines(), encoding="utf-8")
        tokenizer = save_tokenizer(hf_dir, staging / TOKENIZER_DIR, vocab)
        arch, flags = model_flags(config)
        model, _, cfg = build_fairseq_model(staging, arch, flags)
        state, fresh = fairseq_state(hf, model, vocab, hf_dir)
        model.load_state_dict(state, strict=True)
        if fresh:
            logger.warning("%s has no %s: initialised as for pre-training", hf_dir, ", ".join(fresh))
        record = {
            **vocab.record(),
            "tokenizer_dir": TOKENIZER_DIR,
            **tokenizer,
            "source": str(hf_dir),
            "hf_config": config,
            "fresh_parameters": fresh,
        }
        (staging / VOCABULARY_RECORD).write_text(json.dumps(record) + "\n", encoding="utf-8")
        cfg["task"]["data"] = str(data_dir.resolve())
        temp_checkpoint = save_checkpoint(Path(tmp) / "model.pt", cfg, model.state_dict(), shown=out)
        # both or neither: a data dir without its checkpoint (or the reverse) is never left behind
        atomic.replace_together([(staging, data_dir), (temp_checkpoint, out)])
    return out
