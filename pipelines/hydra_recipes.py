"""The recipes as YAML configs for ``fairseq-hydra-train`` (fairseq 0.12's entry for configs, the way
RoBERTa's recipes ship), generated from the command lines they are: the Macaron authors' training scripts
(:data:`macaron_pipelines.authors_recipes.AUTHORS`, flag for flag under fairseq 0.12's names) and the
quickstart's training command at its default size. They cannot drift: ``--check`` (run by the tests)
regenerates every file and fails on any difference.

    python -m macaron_pipelines.hydra_recipes            # (re)write configs/hydra/*.yaml
    python -m macaron_pipelines.hydra_recipes --check    # exit 1 if a file differs from its recipe
    python -m macaron_pipelines.hydra_recipes --config-dir   # print the installed configs' folder

    fairseq-hydra-train --config-dir "$(python -m macaron_pipelines.hydra_recipes --config-dir)" \\
        --config-name iwslt14 task.data=data-bin/iwslt14 checkpoint.save_dir=checkpoints/iwslt14

How a command line becomes a config (:func:`config_from_flags`): fairseq's own parser reads it (with the
plugin's architectures), fairseq's ``convert_namespace_to_omegaconf`` sorts the options into its config
groups, and every option the command line gives is written in its group with the value fairseq parsed
(defaults and what an architecture derives from the given values stay fairseq's). The data-bin
(``task.data``) is left to the command line, ``common.user_dir`` is the plugin by name, and the output
options of a recipe's command (its ``--save-dir``) are left out.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macaron_pipelines.authors_recipes import AUTHORS, fairseq_012, parse_training
from macaron_pipelines.fairseq_steps import without_options

CONFIG_DIR = Path(__file__).resolve().parent / "hydra_configs"
"""The configs (``configs/hydra`` in a checkout; installed with the package)."""
PLUGIN = "macaron_fairseq"
PLACEHOLDER_DATA = "data-bin"  # parsed as the data-bin; written as MISSING ("???": task.data=... required)
#: a recipe command's options that say where it writes, not what it trains (left to the command line)
OUTPUT_FLAGS = ("--save-dir",)


def quickstart_flags() -> list[str]:
    """The quickstart's ``fairseq-train`` flags at its default size (no environment, data or output)."""
    from macaron_pipelines.quickstart.options import build_parser
    from macaron_pipelines.quickstart.training import train_command
    from macaron_pipelines.quickstart.workdir import Workdir

    args = build_parser().parse_args([])
    command = train_command(args, Workdir(Path("work")))
    return command[command.index("fairseq-train") + 2 :]


def recipes() -> dict[str, list[str]]:
    """name -> the ``fairseq-train`` flags (after the data-bin) of each shipped config."""
    shipped = {name: fairseq_012(scripts.train) for name, scripts in AUTHORS.items()}
    shipped["quickstart"] = quickstart_flags()
    return shipped


def given_options(flags: Sequence[str], args: argparse.Namespace) -> list[str]:
    """The option names (dests) the command line sets itself, in order."""
    names = (word[2:].split("=", 1)[0].replace("-", "_") for word in flags if word.startswith("--"))
    return [name for name in dict.fromkeys(names) if hasattr(args, name)]


def config_from_flags(flags: Sequence[str]) -> dict[str, Any]:
    """The Hydra config (as plain data) whose run is ``fairseq-train DATA --user-dir macaron_fairseq
    FLAGS``: the components by name, and each option the command line sets, in the first group of fairseq's
    config that holds it (``--lr`` in ``optimization``: the optimizer's and the scheduler's ``lr`` follow it
    by fairseq's own interpolations), with the value fairseq parsed."""
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.models import ARCH_MODEL_REGISTRY
    from omegaconf import DictConfig, OmegaConf

    from macaron_fairseq.models.hydra_config import NAMED_GROUPS, model_options

    flags = without_options(flags, (*OUTPUT_FLAGS, "--user-dir"))  # --user-dir: set by the config itself
    args = parse_training([PLACEHOLDER_DATA, *flags])  # the plugin is imported by module name (any directory)
    cfg = convert_namespace_to_omegaconf(args)
    groups = {
        group: OmegaConf.to_container(cfg._get_node(group), resolve=True)
        for group in cfg
        if group != "model" and isinstance(cfg._get_node(group), DictConfig)
    }
    out: dict[str, Any] = {"common": {"user_dir": PLUGIN}, "task": {"_name": args.task, "data": "???"}}
    for group in NAMED_GROUPS:
        if group != "task" and getattr(args, group, None) is not None:
            out.setdefault(group, {})["_name"] = getattr(args, group)
    model: dict[str, Any] = {"_name": args.arch}
    in_model = model_options(ARCH_MODEL_REGISTRY[args.arch], args.arch)
    for name in given_options(flags, args):
        if name in ("arch", *NAMED_GROUPS):
            continue
        group = next((g for g, values in groups.items() if name in values), None)
        if group is None and name in in_model:
            value = getattr(args, name)
            model[name] = list(value) if isinstance(value, tuple) else value
        elif group is not None:
            out.setdefault(group, {})[name] = groups[group][name]
        else:
            raise ValueError(f"--{name.replace('_', '-')}: fairseq's config has no place for it")
    out["model"] = model
    return out


def render(name: str, flags: Sequence[str]) -> str:
    from omegaconf import OmegaConf

    header = (
        f"# {name}: generated by python -m macaron_pipelines.hydra_recipes from its fairseq-train command "
        "line; do not edit\n# (the test suite regenerates it and fails on any difference). Run with:\n"
        f"#   fairseq-hydra-train --config-dir DIR --config-name {name} task.data=DATA-BIN "
        "checkpoint.save_dir=DIR\n"
    )
    return header + OmegaConf.to_yaml(OmegaConf.create(config_from_flags(flags)))


def main(argv: Sequence[str] | None = None) -> int:
    logging.getLogger("hydra").setLevel(logging.WARNING)  # fairseq's config conversion composes with Hydra
    parser = argparse.ArgumentParser(
        prog="python -m macaron_pipelines.hydra_recipes",
        description="Write (or --check) the fairseq-hydra-train configs of the recipes.",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a config differs from its recipe")
    parser.add_argument("--config-dir", action="store_true", help="print the configs' folder and exit")
    args = parser.parse_args(argv)
    if args.config_dir:
        print(CONFIG_DIR)
        return 0
    stale = []
    for name, flags in recipes().items():
        path, text = CONFIG_DIR / f"{name}.yaml", render(name, flags)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(
            f"hydra_recipes: {', '.join(stale)} differ from their recipes: run python -m "
            "macaron_pipelines.hydra_recipes",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
