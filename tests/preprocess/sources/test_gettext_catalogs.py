"""Real parallel text from compiled gettext catalogs: catalogs compiled by GNU msgfmt (as Debian ships them),
read into pairs; plural, context, untranslated and over-long entries skipped and counted; an undecodable
catalog reported. (The real-text translation benchmark's split by package is tested in
tests/benchmarks/test_macaron_real_text.py.)"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from macaron_preprocess.sources.gettext_catalogs import catalog_paths, read_catalog, read_catalogs

pytestmark = pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is missing")

HEADER = (
    'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
    '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n'
)
ENTRIES = """\
msgid "cannot open '%s'"
msgstr "„%s“ kann nicht geöffnet werden"

msgid ""
"usage: tool [options]\\n"
"  -v   be verbose\\n"
msgstr ""
"Aufruf: tool [Optionen]\\n"
"  -v   ausführliche Ausgabe\\n"

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

msgctxt "menu"
msgid "Open"
msgstr "Öffnen"

msgid "not translated yet"
msgstr ""

msgid "OK"
msgstr "OK"

msgid "one two three four five six seven"
msgstr "eins zwei drei vier fünf sechs sieben"
"""


def compile_catalog(root: Path, package: str, entries: str, lang: str = "de") -> Path:
    target = root / lang / "LC_MESSAGES" / f"{package}.mo"
    target.parent.mkdir(parents=True, exist_ok=True)
    po = target.with_suffix(".po")
    po.write_text(HEADER + entries, encoding="utf-8")
    subprocess.run(["msgfmt", "-o", str(target), str(po)], check=True)
    po.unlink()
    return target


def test_a_compiled_catalog_becomes_pairs_and_counted_skips(tmp_path: Path) -> None:
    catalog = read_catalog(compile_catalog(tmp_path, "tool", ENTRIES), max_words=6)
    assert catalog.package == "tool"
    assert catalog.pairs == [
        ("cannot open '%s'", "„%s“ kann nicht geöffnet werden"),
        ("usage: tool [options] -v be verbose", "Aufruf: tool [Optionen] -v ausführliche Ausgabe"),
    ]
    assert catalog.skipped == {"plural": 1, "context": 1, "untranslated": 1, "too_long": 1}
    # msgfmt leaves the empty msgstr out of the .mo itself; "OK" -> "OK" is the untranslated one counted


def test_an_undecodable_catalog_is_reported_with_its_path(tmp_path: Path) -> None:
    good = compile_catalog(tmp_path, "good", ENTRIES)
    bad = compile_catalog(tmp_path, "bad", ENTRIES)
    data = bad.read_bytes()
    bad.write_bytes(data.replace("geöffnet".encode(), b"ge\xe4ffnet\x20"))  # latin-1 bytes, same length
    catalogs, unreadable = read_catalogs(catalog_paths("de", tmp_path))
    assert [c.package for c in catalogs] == ["good"] and good.exists()
    assert list(unreadable) == [str(bad)] and "UnicodeDecodeError" in unreadable[str(bad)]
