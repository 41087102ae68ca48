"""The README's computed numbers are what the code computes today."""

from __future__ import annotations

import re

import pytest
from helpers import REPO

from macaron_fairseq.param_parity import markdown_table, parity_rows


@pytest.mark.slow  # builds the big architectures
def test_readme_parameter_table_matches_param_parity_output() -> None:
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- param-parity:start -->\n(.*?)\n<!-- param-parity:end -->", readme, re.S)
    assert block, "README lost its param-parity block"
    assert block.group(1).strip() == markdown_table(parity_rows(32768), 32768).strip()
