"""Where text comes from: downloads and archives in their upstream layouts, the formats inside them (WIT3
XML, SGML, TED talk metadata), and generated corpora (the quickstart's synthetic English→German grammar,
the toy corpora of tests and benchmarks)."""
