"""The Macaron authors' own test command for an upgraded model, as ``macaron-upgrade`` prints it.

Their test scripts (zhuohan123/macaron-net, ``translation/macaron-scripts/test/``):

* ``test-iwslt14.sh`` (IWSLT14 De→En): ``generate.py DATA --batch-size 128 --beam 5 --lenpen 1.0
  --remove-bpe``; the score is the last line, fairseq's own ``BLEU4`` (tokenized, on lowercased data);
* ``test-wmt14-base.sh`` / ``test-wmt14-big.sh`` (WMT14 En→De): ``interactive.py DATA --batch-size 128
  --beam 4 --lenpen 0.6 --remove-bpe --buffer-size 12800 < DATA/raw-test/en-de.en.bpe``, the hypotheses
  Moses-detokenized, tokenized again, ``##AT##``-split and scored with ``multi-bleu.perl`` against
  ``DATA/raw-test/en-de.de.tok.atat`` — ``python -m macaron_tools.score_bleu --metrics retokenized
  --atat-ref`` does those steps.

Which one a model gets: its languages (de→en: IWSLT14; en→de: WMT14). Their scripts cover no other pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AuthorsTest:
    """The benchmark a model was tested on, and the shell lines that test it as their script did."""

    benchmark: str
    lines: tuple[str, ...]


def authors_test(source_lang: str, target_lang: str, data: str | Path, checkpoint: str | Path) -> AuthorsTest:
    """Their test command for a ``source_lang``→``target_lang`` model at ``checkpoint`` on ``data``."""
    data = str(data).rstrip("/") or "/"  # their args store "data-bin/NAME/"
    plugin = f"--user-dir macaron_fairseq --path {checkpoint}"
    langs = f"--source-lang {source_lang} --target-lang {target_lang}"
    if (source_lang, target_lang) == ("en", "de"):
        return AuthorsTest(
            "WMT14 En→De (their test-wmt14-*.sh: beam 4, lenpen 0.6, compound-split BLEU)",
            (
                f"fairseq-interactive {data} {plugin} --batch-size 128 --beam 4 --lenpen 0.6 --remove-bpe "
                f"--buffer-size 12800 {langs} < {data}/raw-test/en-de.en.bpe > res.txt",
                "python -m macaron_tools.score_bleu --gen res.txt --lang de --metrics retokenized "
                f"--atat-ref {data}/raw-test/en-de.de.tok.atat",
            ),
        )
    benchmark = (
        "IWSLT14 De→En (their test-iwslt14.sh: beam 5, --remove-bpe, fairseq's BLEU4)"
        if (source_lang, target_lang) == ("de", "en")
        else f"{source_lang}→{target_lang}: their scripts test only IWSLT14 de→en and WMT14 en→de; "
        "the IWSLT14 command"
    )
    return AuthorsTest(
        benchmark,
        (
            f"fairseq-generate {data} {plugin} --batch-size 128 --beam 5 --lenpen 1.0 --remove-bpe "
            f"{langs} | tail -n 1",
        ),
    )
