"""``fairseq-train --user-dir macaron_fairseq --arch ARCH --help`` lists the architecture's options with
their defaults (:mod:`macaron_fairseq.repairs.arch_help`): fairseq adds them only after the parse in which
``--help`` acts, so they were missing — 479 lines without ``--init-scheme``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import REPO, run_cli


def option_help(text: str, flag: str) -> str:
    """The help entry of ``flag`` (its line and the indented lines that follow)."""
    match = re.search(rf"^  {re.escape(flag)}\b.*?(?=^  -|^\S|\Z)", text, re.M | re.S)
    assert match, f"{flag} is not in the help"
    return " ".join(match.group(0).split())


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
@pytest.mark.parametrize(
    ("arch", "layers"), [("macaron_base", "6"), ("transformer_iwslt_de_en_macaron_v2", "6")]
)
def test_the_help_of_a_plugin_arch_lists_its_options_with_the_archs_defaults(
    arch: str, layers: str, tmp_path: Path
) -> None:
    proc = run_cli(
        ["fairseq-train", "--user-dir", str(REPO / "macaron_fairseq"), "--arch", arch, "--help"], cwd=tmp_path
    )
    text = proc.stdout
    assert f"Model-specific configuration (--arch {arch}):" in text
    assert option_help(text, "--init-scheme").endswith("(default: default)")
    assert "(default: 0)" in option_help(text, "--max-relative-positions")
    assert "--macaron-ffn-step GAMMA" in text and "default 0.5" in option_help(text, "--macaron-ffn-step")
    assert f"(default: {layers})" in option_help(text, "--encoder-layers")  # the arch's value, not None


def test_without_help_the_parse_is_fairseqs_own() -> None:
    from fairseq import options

    import macaron_fairseq  # noqa: F401  (installs the repair)

    assert getattr(options.parse_args_and_arch, "__macaron_arch_help__", False)
    args = options.parse_args_and_arch(
        options.get_training_parser(), input_args=["data", "--arch", "macaron_small", "--init-scheme", "auto"]
    )
    assert args.init_scheme == "auto" and args.encoder_layers == 6
