"""The MediaWiki XML export format of Wikimedia's ``enwiki-*-pages-articles*.xml*`` dumps (schema 0.11, the
element order and indentation of MediaWiki's ``XmlDumpWriter``): the header with the site information and
namespaces, the footer, text escaping and the revision checksum."""

from __future__ import annotations

import hashlib
from xml.sax.saxutils import escape

from macaron_synthetic.lexicon.tables import pairs, phrases

_NAMESPACE_TABLE = """
-2:Media|-1:Special|0:|1:Talk|2:User|3:User talk|4:Wikipedia|5:Wikipedia talk|6:File|7:File talk|
8:MediaWiki|9:MediaWiki talk|10:Template|11:Template talk|12:Help|13:Help talk|14:Category|
15:Category talk|100:Portal|101:Portal talk|118:Draft|119:Draft talk|710:TimedText|
711:TimedText talk|828:Module|829:Module talk
"""
#: (key, name) of each namespace, in the order of the dumps' ``<namespaces>``
NAMESPACES = tuple((int(key), name) for key, name in pairs(phrases(_NAMESPACE_TABLE)))
NAMESPACE_KEY = {name: key for key, name in NAMESPACES}


def _namespace_line(key: int, name: str) -> str:
    if not name:
        return f'      <namespace key="{key}" case="first-letter" />\n'
    return f'      <namespace key="{key}" case="first-letter">{name}</namespace>\n'


#: Everything before the first ``<page>`` (the first stream of a multistream dump).
HEADER = (
    '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:schemaLocation="http://www.mediawiki.org/xml/export-0.11/ '
    'http://www.mediawiki.org/xml/export-0.11.xsd" version="0.11" xml:lang="en">\n'
    "  <siteinfo>\n"
    "    <sitename>Wikipedia</sitename>\n"
    "    <dbname>enwiki</dbname>\n"
    "    <base>https://en.wikipedia.org/wiki/Main_Page</base>\n"
    "    <generator>MediaWiki 1.45.0-wmf.5</generator>\n"
    "    <case>first-letter</case>\n"
    "    <namespaces>\n"
    + "".join(_namespace_line(key, name) for key, name in NAMESPACES)
    + "    </namespaces>\n"
    "  </siteinfo>\n"
)
#: What follows the last ``</page>`` (MediaWiki's ``XmlDumpWriter::closeStream``; the last stream).
FOOTER = "</mediawiki>\n"


def xml_escape(text: str) -> str:
    """Escape text content as MediaWiki's dumps do (``& < > "``; apostrophes stay)."""
    return escape(text, {'"': "&quot;"})


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def sha1_base36(text: str) -> str:
    """MediaWiki's revision sha1: the SHA-1 of the UTF-8 text in base 36, zero-padded to 31 digits."""
    n = int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest(), "big")
    digits = []
    while n:
        n, r = divmod(n, 36)
        digits.append(_B36[r])
    return "".join(reversed(digits)).rjust(31, "0")
