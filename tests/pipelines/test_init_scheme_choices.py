"""``--init-scheme auto`` is accepted wherever ``--init-scheme`` is: fairseq-train (the plugin's flag), the
translation pipeline (passed to fairseq-train) and the GLUE pipeline (the extra layers on the pre-trained
encoder, where ``auto`` applies DT-Fixup). The README recommends it; macaron-glue refused it ("invalid
choice") and macaron-translate did not offer it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import REPO

from macaron_fairseq.init.config import SCHEMES
from macaron_pipelines.commands import INIT_SCHEMES


def test_the_pipelines_choices_are_fairseq_trains() -> None:
    assert set(INIT_SCHEMES) == set(SCHEMES)


@pytest.mark.parametrize("module", ["macaron_pipelines.glue", "macaron_pipelines.translation"])
def test_each_pipeline_offers_auto(module: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = " ".join(proc.stdout.split())
    assert "--init-scheme {default,dt-fixup,t-fixup,auto}" in text


def test_glue_parses_auto() -> None:
    from macaron_pipelines.glue.__main__ import parse_args

    argv = ["--workdir", "w", "--checkpoint", "c.pt", "--extra-layers", "2", "--init-scheme", "auto"]
    args = parse_args(argv)
    assert args.init_scheme == "auto"
