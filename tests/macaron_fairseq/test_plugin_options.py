"""The docs' table of the plugin's options is generated from the dataclass their flags come from: every
field of FixupConfig and both Macaron layer options, each with its default (docs/translation.md's block
``plugin-options``, kept in sync by ``python -m benchmarks.doc_tables --check``)."""

from __future__ import annotations

from macaron_fairseq.init.config import fixup_fields
from macaron_fairseq.plugin_options import markdown_table, rows


def test_every_plugin_option_is_a_row_with_its_default() -> None:
    table = {flag.split()[0].strip("`"): default for flag, default, _ in rows()}
    for fld in fixup_fields():
        flag = "--" + fld.name.replace("_", "-")
        assert table[flag] == ("(none)" if fld.default is None else f"`{fld.default}`"), flag
    assert table["--macaron-ffn-step"] == "`0.5`" and table["--macaron-ffn-impl"] == "`fused`"
    assert len(table) == len(fixup_fields()) + 2
    assert markdown_table().startswith("| option | default | what it does |\n|---|---|---|\n| `--init-scheme")
