"""Whether a checkpoint a user hands over is a pre-trained BERT of this plugin whose weights fit the model its
configuration describes — checked once, before a command builds anything on it.

GLUE fine-tuning (``bash pipelines/glue.sh``, ``python -m macaron_preprocess.glue``) and the HuggingFace
export take an export of the pre-trainer or an import of a HuggingFace BERT. Given anything else they used to
fail late and unclearly: a translation checkpoint on a missing sentencepiece model, a checkpoint whose tensors
do not match its own configuration in every fine-tuning run of the grid, ``encoder_layers: "abc"`` in a
traceback.

* :func:`require_bert` — the kind: a fairseq checkpoint whose architecture is one of the plugin's BERT models
  (its model class a :class:`~macaron_fairseq.models.bert.BertPretrainingBase`) with the token embeddings a
  BERT has; reads only the pickled metadata (:func:`macaron_fairseq.checkpoint_reader.describe`);
* :func:`check_bert_weights` — the fit: the model is built from the checkpoint's own configuration (over a
  dictionary of its vocabulary's size, as fine-tuning builds it) and every tensor is compared with the
  model's; a configuration that does not build or a tensor of another shape is one line naming it.

Every failure is a :class:`~macaron_workflow.errors.UserError` (exit 2) naming the file and what to give.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from macaron_fairseq.checkpoint_reader import CheckpointInfo, describe, read_checkpoint
from macaron_workflow.errors import ReportedError, UserError

#: what a BERT checkpoint of this plugin is, for the messages
BERT_SOURCES = (
    "give an export of the pre-trainer (python -m macaron_fairseq.pretrain.export) or an import of a "
    "HuggingFace BERT (python -m macaron_fairseq.hf import)"
)


def _label(path: Path, flag: str | None) -> str:
    return f"{flag} {path}" if flag else str(path)


def bert_model_class(arch: str | None) -> type | None:
    """The plugin's BERT model class registered for ``arch``, or None (unknown, or not a BERT)."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    import macaron_fairseq  # noqa: F401  (registers the architectures)
    from macaron_fairseq.models.bert import BertPretrainingBase

    model = ARCH_MODEL_REGISTRY.get(str(arch)) if arch else None
    return model if isinstance(model, type) and issubclass(model, BertPretrainingBase) else None


def require_bert(path: Path, flag: str | None = None) -> CheckpointInfo:
    """``path``'s description if it is a pre-trained BERT of this plugin, else a one-line error saying what
    it is instead (a translation model, a DeepSpeed save file, ...)."""
    info = describe(path, flag)
    if bert_model_class(info.arch) is None:
        if info.kind == "deepspeed":
            what = "a DeepSpeed checkpoint file: export its save directory first"
        elif info.arch is not None:
            task = getattr(info.task_config, "_name", None) or getattr(info.task_config, "task", None)
            what = f"a {info.arch} model" + (f" of task {task}" if task else "")
        else:
            what = "no model architecture recorded"
        raise UserError(
            f"{_label(path, flag)}: not a BERT checkpoint of this plugin ({what}); {BERT_SOURCES}"
        )
    if info.embedding_rows is None:
        raise UserError(
            f"{_label(path, flag)}: a {info.arch} checkpoint without its token embeddings "
            f"(encoder.embed_tokens.weight); {BERT_SOURCES}"
        )
    return info


def tied_names(model: Any) -> set[str]:
    """Names of parameters that share their tensor with an earlier-named parameter (the MLM output projection
    tied to the token embeddings: DeepSpeed's ``zero_to_fp32`` drops it, the tie restores it)."""
    seen: dict[int, str] = {}
    tied = set()
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if id(parameter) in seen:
            tied.add(name)
        else:
            seen[id(parameter)] = name
    return tied


def _first_line(err: BaseException, limit: int = 160) -> str:
    """``Type: the message's first line``, cut at ``limit`` characters (fairseq's can list every task)."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    first = first if len(first) <= limit else first[:limit] + "..."
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


def build_from_config(path: Path, state: dict[str, Any], rows: int, flag: str | None = None) -> Any:
    """The (untrained) model ``state['cfg']`` describes, built as fairseq builds it when it loads the
    checkpoint, over a dictionary of ``rows`` symbols (``<mask>`` included); a configuration that does not
    build is a one-line :class:`UserError`."""
    from fairseq import tasks
    from omegaconf import OmegaConf

    from macaron_fairseq.models.bert_build import bert_dictionary_dir

    label = _label(path, flag)
    if not isinstance(state.get("cfg"), dict):
        raise UserError(f"{label}: no fairseq configuration (cfg) to build its model from; {BERT_SOURCES}")
    task_log = logging.getLogger("macaron_fairseq.tasks.bert_pretraining")
    level = task_log.level
    task_log.setLevel(logging.WARNING)  # its "dictionary: N types" line is about the stand-in dictionary
    try:
        with bert_dictionary_dir(rows) as data:
            cfg = OmegaConf.create(state["cfg"], flags={"allow_objects": True})
            cfg.task.data = str(data)
            return tasks.setup_task(cfg.task).build_model(cfg.model)
    except ReportedError:
        raise
    except Exception as err:  # the user's configuration drives fairseq's builders: any failure is its
        raise UserError(
            f"{label}: its model configuration does not build a model ({_first_line(err)}); the file is "
            f"damaged or was edited: {BERT_SOURCES}"
        ) from None
    finally:
        task_log.setLevel(level)


def check_bert_weights(path: Path, flag: str | None = None) -> CheckpointInfo:
    """:func:`require_bert`, then: every weight of the checkpoint has the shape the model built from its own
    configuration gives it, and none of the model's (untied) weights is missing."""
    info = require_bert(path, flag)
    state, _ = read_checkpoint(path, flag)
    assert info.embedding_rows is not None  # require_bert
    model = build_from_config(path, state, info.embedding_rows, flag)
    own = model.state_dict()
    weights = state["model"]
    label = _label(path, flag)
    for name, value in weights.items():
        shape = tuple(getattr(value, "shape", ()))
        if name in own and tuple(own[name].shape) != shape:
            raise UserError(
                f"{label}: {name} has shape {shape}, but its own configuration ({info.arch}) builds "
                f"{tuple(own[name].shape)}: the weights do not fit the model they claim to be; {BERT_SOURCES}"
            )
    missing = sorted(set(own) - set(weights) - tied_names(model))
    unexpected = sorted(set(weights) - set(own))
    if missing or unexpected:
        raise UserError(
            f"{label}: its weights are not those of the {info.arch} model its configuration describes "
            f"(missing {missing[:4]}, unexpected {unexpected[:4]}); {BERT_SOURCES}"
        )
    return info


__all__ = [
    "BERT_SOURCES",
    "bert_model_class",
    "build_from_config",
    "check_bert_weights",
    "require_bert",
    "tied_names",
]
