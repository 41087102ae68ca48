"""The one table of architectures (models/arch_table.py): everything registered is a row, and every Macaron
row is its counterpart's dimensions with each FFN half as wide (Lu et al. §4: parameters match)."""

from __future__ import annotations

import pytest
from fairseq.models import ARCH_MODEL_NAME_REGISTRY

import macaron_fairseq  # noqa: F401  (registers the plugin)
from macaron_fairseq.models import arch_table
from macaron_fairseq.models.architectures import ALIASES, BERT_COUNTERPARTS, COUNTERPARTS

PLUGIN_MODELS = {"macaron", "fixup_transformer", "macaron_bert", "vanilla_bert", "authors_bert"}


def test_every_arch_of_the_plugins_models_is_a_row_or_an_alias_of_one() -> None:
    registered = {arch for arch, model in ARCH_MODEL_NAME_REGISTRY.items() if model in PLUGIN_MODELS}
    rows = {row.name for row in arch_table.ROWS if row.model in PLUGIN_MODELS}
    assert registered == rows | {alias for alias, target in ALIASES.items() if target in rows}
    for row in arch_table.ROWS:
        assert ARCH_MODEL_NAME_REGISTRY[row.name] == (row.model or "transformer"), row.name


MACARON_ROWS = [row for row in arch_table.ROWS if row.ffn_per_half or row.same_as]


@pytest.mark.parametrize("row", MACARON_ROWS, ids=lambda row: row.name)
def test_a_macaron_row_is_its_counterpart_with_ffn_halves(row: arch_table.Arch) -> None:
    assert row.counterpart is not None
    ours, theirs = arch_table.settings(row.name), arch_table.settings(row.counterpart)
    for name in ("encoder_embed_dim", "encoder_attention_heads", "encoder_layers"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert 2 * ours.encoder_ffn_embed_dim == theirs.encoder_ffn_embed_dim
    assert ours.macaron_ffn_step == 0.5


def test_the_counterpart_maps_leave_out_the_authors_names_of_another_row() -> None:
    assert "transformer_iwslt_de_en_macaron" not in COUNTERPARTS
    assert COUNTERPARTS["transformer_wmt_en_de_macaron_v2"] == "transformer_wmt_en_de_v2"
    assert set(BERT_COUNTERPARTS) == {f"macaron_bert_{size}" for size in ("tiny", "small", "base", "large")}


def test_the_docs_table_has_a_line_per_translation_macaron_row() -> None:
    lines = arch_table.markdown_table().splitlines()[2:]
    expected = [r.name for r in arch_table.ROWS if not r.is_bert and (r.ffn_per_half or r.same_as)]
    assert [line.split("`")[1] for line in lines] == expected
