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


@pytest.mark.slow  # builds BERT-base and BERT-large twice
def test_readme_bert_parity_table_matches_param_parity_output() -> None:
    from macaron_fairseq.param_parity import BERT_VOCAB, bert_markdown_table, bert_parity_rows

    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- bert-parity:start -->\n(.*?)\n<!-- bert-parity:end -->", readme, re.S)
    assert block, "README lost its bert-parity block"
    assert block.group(1).strip() == bert_markdown_table(bert_parity_rows(), BERT_VOCAB).strip()
