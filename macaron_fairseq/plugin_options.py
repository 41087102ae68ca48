"""The plugin's own options, as one table for the docs (``docs/translation.md``, block ``plugin-options``,
rendered by ``python -m benchmarks.doc_tables``): the DT-Fixup/T-Fixup and new-layer options of
:class:`macaron_fairseq.init.config.FixupConfig` (the dataclass their flags are generated from) and the
Macaron layers' options, each with its default and its help — the flags ``fairseq-train --user-dir
macaron_fairseq --arch macaron_base --help`` shows under these groups."""

from __future__ import annotations

import argparse

from macaron_fairseq.init.config import add_fixup_args
from macaron_fairseq.modules.macaron_layer import (
    DEFAULT_FFN_STEP,
    DEFAULT_IMPLEMENTATION,
    add_macaron_layer_args,
)

#: defaults the Macaron layers fill in at build time (their flags default to "not given")
BUILD_DEFAULTS = {"macaron_ffn_step": DEFAULT_FFN_STEP, "macaron_ffn_impl": DEFAULT_IMPLEMENTATION}


def plugin_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    add_fixup_args(parser)
    add_macaron_layer_args(parser)
    return parser


def _flag(action: argparse.Action) -> str:
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return f"`{flag}`"
    if action.choices:
        return f"`{flag} {{{','.join(map(str, action.choices))}}}`"
    return f"`{flag} {action.metavar or action.dest.upper()}`"


def rows() -> list[tuple[str, str, str]]:
    """(flag, default, help) of every plugin option, in the order of ``--help``."""
    out = []
    for action in plugin_parser()._actions:
        default = BUILD_DEFAULTS.get(action.dest, action.default)
        shown = "(none)" if default is None else f"`{default}`"
        out.append((_flag(action), shown, " ".join(str(action.help).split()).replace("|", "\\|")))
    return out


def markdown_table() -> str:
    lines = ["| option | default | what it does |", "|---|---|---|"]
    lines += [f"| {flag} | {default} | {text} |" for flag, default, text in rows()]
    return "\n".join(lines) + "\n"
