"""Where text comes from: downloads and archives in their upstream layouts, the formats inside them (WIT3
XML, SGML, TED talk metadata, MediaWiki exports, GLUE), and real text on the machine (generated corpora are
:mod:`macaron_synthetic`'s)."""
