"""``macaron-hf import HF_DIR --out model.pt`` of a directory ``macaron-hf export`` wrote from a translation
checkpoint: the fairseq checkpoint back, exactly (every tensor equal to the exported checkpoint's, the same
configuration), with its dictionaries in ``model.data/`` (``dict.SRC.txt``/``dict.TGT.txt``, and the subword
model when the directory has one) — ``fairseq-generate model.data --path model.pt --user-dir
macaron_fairseq`` runs on it.

The weights are read without running code from the directory (safetensors, or the allow-listed reader for a
``.bin``); the model is built from the fairseq configuration the export recorded (``fairseq_export.json``)
and must take every tensor; the tied ones (shared embeddings, the output projection) are ties again. Before
the files appear, the rebuilt fairseq model runs beside the directory's weights through the exported
modeling code's arithmetic: the logits must agree within 1e-5.
"""

from __future__ import annotations

import argparse
import inspect
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.bert_checkpoint import tied_names
from macaron_fairseq.checkpoint_reader import fairseq_checkpoint
from macaron_workflow import atomic
from macaron_workflow.atomic import writing
from macaron_workflow.errors import UserError
from macaron_workflow.overlap import refuse_overlap

EXPORT_RECORD = "fairseq_export.json"
#: how the export stores an argparse.Namespace inside the fairseq configuration (legacy model configs)
NAMESPACE_KEY = "__namespace__"
SUBWORD_FILES = ("spm.model", "bpecodes")


def is_translation_export(hf_dir: Path) -> bool:
    """``hf_dir`` is a directory ``macaron-hf export`` wrote from a translation checkpoint."""
    config = hf_dir / "config.json"
    if not (config.is_file() and (hf_dir / EXPORT_RECORD).is_file()):
        return False
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type") == "macaron_mt"
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False


def restore(value: Any) -> Any:
    """The fairseq configuration as the checkpoint held it (Namespaces back)."""
    if isinstance(value, dict):
        if set(value) == {NAMESPACE_KEY}:
            return argparse.Namespace(**{k: restore(v) for k, v in value[NAMESPACE_KEY].items()})
        return {k: restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore(v) for v in value]
    return value


def _record(hf_dir: Path) -> dict[str, Any]:
    path = hf_dir / EXPORT_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{path}: not readable ({err}); export the checkpoint again") from None
    for key in ("fairseq_cfg", "source_lang", "target_lang"):
        if not record.get(key):
            raise UserError(
                f"{path}: no {key}; a directory exported by an older macaron-hf cannot be "
                "imported back: export the checkpoint again"
            )
    return record


def with_data(cfg: dict[str, Any], data: Path) -> dict[str, Any]:
    """``cfg`` whose data directory is ``data`` (the task's, and a legacy model Namespace's)."""
    cfg = dict(cfg)
    cfg["task"] = dict(cfg["task"], data=str(data.resolve()))
    if isinstance(cfg.get("model"), argparse.Namespace):
        cfg["model"] = argparse.Namespace(**{**vars(cfg["model"]), "data": str(data.resolve())})
    return cfg


def build_model(cfg: dict[str, Any], data: Path) -> Any:
    """The fairseq model of ``cfg`` over the dictionaries in ``data``."""
    from fairseq import tasks
    from omegaconf import OmegaConf

    import macaron_fairseq  # noqa: F401  (registers the plugin's archs)

    omega = OmegaConf.create(with_data(cfg, data), flags={"allow_objects": True})
    task = tasks.setup_task(omega.task)
    return task.build_model(omega.model).eval()


def import_translation(hf_dir: Path, out: Path) -> Path:
    """Write ``out`` and ``out.data/`` from the exported directory ``hf_dir`` (both appear together)."""
    from macaron_fairseq.hf.importer import data_dir_for
    from macaron_fairseq.hf.translation_export import NOT_WEIGHTS, build_hf, check_logits
    from macaron_fairseq.hf.weights import read_weights

    record = _record(hf_dir)
    data_dir = data_dir_for(out)
    if out.is_dir():
        raise UserError(f"--out {out}: is a directory; give the checkpoint file to write")
    refuse_overlap({"--out": out, "--out's data directory": data_dir}, {"HF_DIR": hf_dir}, change="--out")
    if data_dir.exists() and not (data_dir / EXPORT_RECORD).is_file():
        raise UserError(f"{data_dir} exists and was not written by this importer: choose another --out")
    weights = read_weights(hf_dir)
    src, tgt = record["source_lang"], record["target_lang"]
    # parents made (and removed again on a failure), a full disk one line (macaron_workflow.atomic.writing)
    with writing(out), tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        staging = Path(tmp) / "data"
        staging.mkdir()
        for name, lang in (("dict.source.txt", src), ("dict.target.txt", tgt)):
            if not (hf_dir / name).is_file():
                raise UserError(f"{hf_dir}: no {name} (the exported dictionaries)")
            shutil.copyfile(hf_dir / name, staging / f"dict.{lang}.txt")
        for name in SUBWORD_FILES:
            if (hf_dir / name).is_file():
                shutil.copyfile(hf_dir / name, staging / name)
        shutil.copyfile(hf_dir / EXPORT_RECORD, staging / EXPORT_RECORD)
        cfg = restore(record["fairseq_cfg"])
        model = build_model(cfg, staging)
        own = model.state_dict()
        tied = tied_names(model)
        unexpected = sorted(set(weights) - set(own))
        missing = sorted(k for k in set(own) - set(weights) - tied if not k.endswith(NOT_WEIGHTS))
        if missing or unexpected:
            raise UserError(
                f"{hf_dir}: its weights do not fit the model its fairseq configuration builds "
                f"(missing {missing[:4]}, unexpected {unexpected[:4]})"
            )
        for name, tensor in weights.items():
            if tuple(tensor.shape) != tuple(own[name].shape):
                raise UserError(
                    f"{hf_dir}: {name} has shape {tuple(tensor.shape)}, the model {tuple(own[name].shape)}"
                )
        with torch.no_grad():
            for name, tensor in weights.items():
                own[name].copy_(tensor.to(own[name].dtype))
        from macaron_fairseq.hf.modeling_macaron_mt import MacaronMTConfig

        config = MacaronMTConfig.from_pretrained(str(hf_dir))
        check_logits(model, build_hf(model_settings(config), weights))
        checkpoint = fairseq_checkpoint(
            with_data(cfg, data_dir),
            model.state_dict(),
            "CrossEntropyCriterion",
            extra_state={"macaron_hf_import": {"source": str(hf_dir)}},
        )
        temp_checkpoint = Path(tmp) / "model.pt"
        torch.save(checkpoint, temp_checkpoint)
        atomic.replace_together([(staging, data_dir), (temp_checkpoint, out)])
    return out


#: the MacaronMTConfig arguments that are not settings of the fairseq model; every other one is a field the
#: export sets (translation_export.config_settings)
_NOT_SETTINGS = frozenset(
    {
        "self",
        "kwargs",
        "bos_token_id",
        "pad_token_id",
        "eos_token_id",
        "unk_token_id",
        "decoder_start_token_id",
        "is_encoder_decoder",
        "use_cache",
    }
)


def model_settings(config: Any) -> dict[str, Any]:
    """The fields of ``config`` (a ``MacaronMTConfig``) that the export sets: the arguments of its constructor
    that describe the fairseq model, in their order."""
    parameters = inspect.signature(type(config).__init__).parameters
    return {name: getattr(config, name) for name in parameters if name not in _NOT_SETTINGS}
