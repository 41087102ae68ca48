"""``fairseq-hydra-train``'s model config as the argparse namespace ``fairseq-train`` hands a model.

The plugin's models are fairseq "legacy" models (``add_args`` + architecture functions), like fairseq's own
``transformer``. Through ``fairseq-train`` their ``build_model`` gets one flat ``argparse.Namespace`` holding
every option of the run (the model's, the task's, the dataset's...). Through ``fairseq-hydra-train`` it gets
the Hydra config's ``model`` node instead, and fairseq's ``TransformerConfig.from_namespace`` — which every
Transformer build goes through — keeps only ``TransformerConfig``'s own fields of such a node: the plugin's
options (``init_scheme``, ``macaron_ffn_step``, ...) silently came back as defaults and the layers kept their
LayerNorms while the init hook logged "applied".

:func:`as_namespace` rebuilds ``fairseq-train``'s namespace from the Hydra config: every group of the root
config flattened (a group's ``_name`` becomes the option it is on the command line: ``task``,
``optimizer``...), then the model node, its ``_name`` as ``arch``. What the build adds or changes in it
(architecture defaults, a pre-trained encoder's dimensions) is written back into the model node, which is
what the checkpoint stores. :func:`check_model_keys` refuses a key of the model node that no option of the
architecture reads (a typo would otherwise be a silent default), and :func:`require_plugin_fields` refuses a
layer config that lost the plugin's fields on some other path.
"""

from __future__ import annotations

import argparse
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

#: groups of fairseq's config whose ``_name`` is a command-line option of that name
NAMED_GROUPS = ("task", "criterion", "optimizer", "lr_scheduler", "scoring", "bpe", "tokenizer")
MISSING_VALUE = "???"


class PluginConfigError(ValueError):
    """A model config that would lose (or never use) an option of the plugin."""


def is_hydra_config(cfg: Any) -> bool:
    return OmegaConf.is_config(cfg)


def _plain(node: DictConfig) -> dict[str, Any]:
    values = OmegaConf.to_container(node, resolve=True)
    assert isinstance(values, dict)
    return {k: (None if v == MISSING_VALUE else v) for k, v in values.items()}


def as_namespace(cfg: DictConfig) -> argparse.Namespace:
    """The flat namespace ``fairseq-train`` would build for the run whose model node is ``cfg``."""
    from fairseq.dataclass.configs import FairseqConfig

    flat: dict[str, Any] = {}
    root = cfg._get_root()
    if root is not cfg:
        for group in FairseqConfig.__dataclass_fields__:  # not what Hydra adds (job_logging_cfg)
            node = root._get_node(group) if group in root else None
            if group == "model" or not isinstance(node, DictConfig):
                continue
            values = _plain(node)
            name = values.pop("_name", None)
            flat.update({k: v for k, v in values.items() if not str(k).startswith("_")})
            if group in NAMED_GROUPS and name is not None:
                flat[group] = name
    model = _plain(cfg)
    flat.update(model)
    flat["arch"] = model.get("_name", flat.get("arch"))
    return argparse.Namespace(**flat)


def _storable(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_storable(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def write_back(cfg: DictConfig, before: argparse.Namespace, after: argparse.Namespace) -> None:
    """Store in the model node what the build set or changed among its own keys or added as new ones
    (``fairseq-train``'s namespace is the model config itself, so there it is stored anyway)."""
    known = set(vars(before))
    with open_dict(cfg):
        for key, value in vars(after).items():
            if key.startswith("_") or not _storable(value):
                continue
            if (key in cfg and cfg.get(key) != value) or key not in known:
                cfg[key] = list(value) if isinstance(value, tuple) else value


def model_options(model_cls: type, arch: str | None) -> set[str]:
    """Every option name the model of ``arch`` reads: its ``add_args`` flags and what its architecture
    function sets."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    parser = argparse.ArgumentParser(add_help=False)
    model_cls.add_args(parser)
    names = {action.dest for action in parser._actions}
    if arch in ARCH_CONFIG_REGISTRY:
        defaults = argparse.Namespace()
        ARCH_CONFIG_REGISTRY[arch](defaults)
        names |= set(vars(defaults))
    return names


def check_model_keys(cfg: DictConfig, model_cls: type, derived: tuple[str, ...] = ()) -> None:
    """A key of the model node that the architecture does not read is an error, not a silent default
    (``derived``: options the build itself stores, e.g. a pre-trained encoder's layer count)."""
    arch = cfg.get("_name")
    known = model_options(model_cls, arch) | {"_name", "arch", *derived}
    unknown = sorted(str(key) for key in cfg if key not in known)
    if unknown:
        raise PluginConfigError(
            f"model.{unknown[0]}: no option of --arch {arch} has this name"
            + (f" (nor {', '.join(unknown[1:])})" if unknown[1:] else "")
            + f"; its options: fairseq-train --user-dir macaron_fairseq --arch {arch} --help"
        )


def require_plugin_fields(cfg: Any, names: list[str]) -> None:
    """The layer config must still hold the plugin's option fields (``names``): a config path that drops
    them (fairseq's ``TransformerConfig.from_namespace`` of a Hydra node) is an error, never the defaults."""
    lost = [name for name in names if not hasattr(cfg, name)]
    if lost:
        raise PluginConfigError(
            f"the model's config lost the plugin's option(s) {', '.join(lost)} on its way to the layers "
            f"({type(cfg).__name__}); build the model through its build_model (fairseq-train or "
            "fairseq-hydra-train), which keeps them"
        )
