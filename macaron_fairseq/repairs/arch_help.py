"""``fairseq-train --arch ARCH --help`` lists the architecture's own options.

fairseq 0.12's ``options.parse_args_and_arch`` parses the command line twice: once with the base parser, to
learn ``--arch``/``--task``/..., then again after adding the chosen components' options. ``--help`` acts in
the first parse, so the help never shows a model's options — neither the plugin's (``--init-scheme``,
``--macaron-ffn-step``...) nor fairseq's own (``--encoder-layers``...). Every fairseq command imports the
``--user-dir`` plugin while it builds its parser (``options.get_parser``), before it parses: :func:`install`
wraps ``options.parse_args_and_arch`` so that, when the command line asks for help, the architecture's
options are added first, in the group fairseq itself gives them ("Model-specific configuration"), each with
its default. Without ``--help`` the original runs untouched.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import Any

HELP_FLAGS = ("-h", "--help")
GROUP = "Model-specific configuration"


def add_arch_options(parser: argparse.ArgumentParser, argv: list[str]) -> bool:
    """Add the options of ``argv``'s ``--arch`` to ``parser`` (once), in their own groups, each with the
    default the architecture gives it; True if it did."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    probe = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    probe.add_argument("--arch", "-a")
    known, _ = probe.parse_known_args(argv)
    model = ARCH_MODEL_REGISTRY.get(known.arch)
    if model is None or not hasattr(model, "add_args"):
        return False
    if any(group.title.startswith(GROUP) for group in parser._action_groups if group.title):
        return False
    options = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    model.add_args(options)
    arch_defaults = argparse.Namespace()
    if known.arch in ARCH_CONFIG_REGISTRY:
        ARCH_CONFIG_REGISTRY[known.arch](arch_defaults)
    for source in options._action_groups:
        if not source._group_actions:
            continue
        plain = source.title in ("options", "optional arguments", "positional arguments")
        group = parser.add_argument_group(f"{GROUP} (--arch {known.arch})" if plain else source.title)
        for action in source._group_actions:
            if action.default is None and action.dest in vars(arch_defaults):
                action.default = getattr(arch_defaults, action.dest)
            if action.help and "(default" not in action.help and action.help is not argparse.SUPPRESS:
                action.help = f"{action.help} (default: %(default)s)"
            group._add_action(action)
    return True


def with_arch_help(parse_args_and_arch: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(parse_args_and_arch)
    def parse_args_and_arch_with_arch_help(
        parser: Any, input_args: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        argv = list(sys.argv[1:] if input_args is None else input_args)
        if isinstance(parser, argparse.ArgumentParser) and any(flag in argv for flag in HELP_FLAGS):
            add_arch_options(parser, argv)
        return parse_args_and_arch(parser, input_args, *args, **kwargs)

    parse_args_and_arch_with_arch_help.__macaron_arch_help__ = True  # type: ignore[attr-defined]
    return parse_args_and_arch_with_arch_help


def install() -> None:
    """Idempotent."""
    from fairseq import options

    if not getattr(options.parse_args_and_arch, "__macaron_arch_help__", False):
        options.parse_args_and_arch = with_arch_help(options.parse_args_and_arch)
