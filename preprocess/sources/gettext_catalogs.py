"""Real parallel text from compiled gettext catalogs: English ``msgid`` → translated ``msgstr``.

Every Debian machine carries the translations of its installed programs' messages as
``/usr/share/locale/LANG/LC_MESSAGES/PACKAGE.mo`` (this project's machines: 86 German catalogs, about 71k
messages). That is a small real-text translation corpus nobody here wrote — UI strings, error messages and
help texts with their ``%s`` placeholders, option names and typographic quotes — used by the real-text
translation benchmark (``benchmarks/macaron_real_translation.py``) and the finished DT-Fixup mixed-setting
study (``benchmarks/dt_fixup_mixed.py`` at commit 7ce07f9), which split it *by package*.

A message becomes one pair: plural entries and entries with a context are skipped (their keys are not
plain strings, or carry ``\\x04``), untranslated ones too; a multi-line message (help texts, re-wrapped by
the translator) is kept whole with its white space folded to single spaces. Catalogs that Python's
:class:`gettext.GNUTranslations` cannot decode are reported, not guessed.
"""

from __future__ import annotations

import gettext
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

LOCALE_ROOT = Path("/usr/share/locale")


@dataclass
class Catalog:
    """The usable pairs of one ``PACKAGE.mo`` and what was skipped."""

    package: str
    pairs: list[tuple[str, str]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def fold(text: str) -> str:
    return " ".join(text.split())


def read_catalog(path: Path, max_words: int = 60) -> Catalog:
    """The (msgid, msgstr) pairs of one compiled catalog, each side with its white space folded; a pair
    whose source has more than ``max_words`` words is skipped as ``too_long``."""
    with path.open("rb") as handle:
        translations = gettext.GNUTranslations(handle)  # raises on a catalog it cannot decode
    catalog = Catalog(path.stem)

    def skip(reason: str) -> None:
        catalog.skipped[reason] = catalog.skipped.get(reason, 0) + 1

    for key, value in translations._catalog.items():  # the parsed catalog; no public accessor exists
        if not isinstance(key, str):  # (msgid, form index): one key per plural form
            if key[1] == 0:
                skip("plural")
        elif key == "":
            continue  # the header entry
        elif "\x04" in key:
            skip("context")
        elif not value.strip() or fold(value) == fold(key):
            skip("untranslated")
        elif len(key.split()) > max_words:
            skip("too_long")
        else:
            catalog.pairs.append((fold(key), fold(value)))
    return catalog


def catalog_paths(lang: str, root: Path = LOCALE_ROOT) -> list[Path]:
    """``root/LANG/LC_MESSAGES/*.mo``, sorted by package name."""
    return sorted((root / lang / "LC_MESSAGES").glob("*.mo"))


def read_catalogs(paths: Iterable[Path], max_words: int = 60) -> tuple[list[Catalog], dict[str, str]]:
    """Every readable catalog, and ``{path: error}`` for those that are not (e.g. a catalog whose bytes
    are not in its declared charset)."""
    catalogs, unreadable = [], {}
    for path in paths:
        try:
            catalogs.append(read_catalog(path, max_words))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            unreadable[str(path)] = f"{type(error).__name__}: {error}"
    return catalogs, unreadable
