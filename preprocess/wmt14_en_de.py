"""WMT14 English->German as in the Macaron-Net / "Attention is all you need" setup (4.5M pairs), following
fairseq's ``examples/translation/prepare-wmt14en2de.sh --icml17``, into a fairseq data-bin.

Usage::

    python -m macaron_preprocess.wmt14_en_de --dest DIR [--raw-dir DIR] [--workers N] [--force]
                                     [--bpe-vocab-size 37000]

Recipe (each step a resumable stage):

1. archives (downloaded from statmt.org, or from ``--raw-dir`` holding them or their extracted files):
   training-parallel-europarl-v7.tgz, training-parallel-commoncrawl.tgz, training-parallel-nc-v9.tgz
   (training data), dev.tgz (newstest2013 = valid), test-full.tgz (newstest2014 full, ``.sgm`` = test).
2. training text (europarl-v7 + commoncrawl + news-commentary-v9, streamed in that order):
   ``normalize-punctuation.perl`` -> ``remove-non-printing-char.perl`` -> ``tokenizer.perl -a`` (sacremoses,
   Moses default escaping) -> ``clean-corpus-n -ratio 1.5 1 250``.
3. test: the ``<seg id>`` lines of newstest2014-deen-src.en.sgm / -ref.de.sgm; valid: newstest2013.{en,de};
   both ``’`` -> ``'`` then ``tokenizer.perl -a``, as fairseq's script does for its test set (it does not
   normalize punctuation there). Never length-filtered.
4. joint sentencepiece BPE (about 37k pieces as in the paper) learned on the tokenized training text of
   both sides (a random sample of ``--spm-input-sentence-size`` sentences), applied to every split;
   the data-bin of ``fairseq-preprocess --joined-dictionary`` (see ``--binarizer``).

Differences from fairseq's script, on purpose: valid is newstest2013 (the script holds out every 100th
training pair instead and never uses its downloaded dev set); cleaning counts Moses tokens before BPE
(the script cleans after BPE, on subword counts); BPE is sentencepiece instead of subword-nmt.

Output in DIR::

    DIR/dict.{en,de}.txt, DIR/{train,valid,test}.en-de.{en,de}.{bin,idx}   data-bin: fairseq-train DIR
    DIR/raw/test.{en,de}   newstest2014 segments untokenized: detokenized references for sacreBLEU
    DIR/tok/test.{en,de}   tokenized references for tokenized BLEU (compound-split them for the paper's)
    DIR/bpe/..., DIR/spm.model, DIR/spm.vocab, DIR/work/ (downloads and extracted files), DIR/.stages/
"""

from __future__ import annotations

from macaron_preprocess.sources.archives import ArchiveSpec, locate_all
from macaron_preprocess.sources.xml_segments import extract_segments
from macaron_preprocess.text.bitext import BitextFiles
from macaron_preprocess.text.cleaning import CleanConfig
from macaron_preprocess.text.moses import MosesConfig
from macaron_preprocess.text.options import CorpusCli, bpe_config
from macaron_preprocess.text.summary import line_count_table
from macaron_preprocess.text.to_databin import bpe_and_binarize
from macaron_preprocess.text.tokenize_stage import TokenizeJob, tokenize_split
from macaron_workflow.cli import program_name, run_cli

SRC, TGT = "en", "de"
TRAIN_CORPORA = (
    "training/europarl-v7.de-en",
    "commoncrawl.de-en",
    "training/news-commentary-v9.de-en",
)
VALID_PREFIX = "dev/newstest2013"
TEST_SGM = ("test-full/newstest2014-deen-src.en.sgm", "test-full/newstest2014-deen-ref.de.sgm")


def _pair(prefix: str) -> tuple[str, str]:
    return f"{prefix}.{SRC}", f"{prefix}.{TGT}"


ARCHIVES = (
    ArchiveSpec(
        "training-parallel-europarl-v7.tgz",
        (
            "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz",
            "https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        ),
        _pair(TRAIN_CORPORA[0]),
    ),
    ArchiveSpec(
        "training-parallel-commoncrawl.tgz",
        (
            "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz",
            "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        ),
        _pair(TRAIN_CORPORA[1]),
    ),
    ArchiveSpec(
        "training-parallel-nc-v9.tgz",
        (
            "http://statmt.org/wmt14/training-parallel-nc-v9.tgz",
            "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz",
        ),
        _pair(TRAIN_CORPORA[2]),
    ),
    ArchiveSpec(
        "dev.tgz",
        (
            "http://data.statmt.org/wmt17/translation-task/dev.tgz",
            "http://statmt.org/wmt14/dev.tgz",
        ),
        _pair(VALID_PREFIX),
    ),
    ArchiveSpec(
        "test-full.tgz",
        ("http://statmt.org/wmt14/test-full.tgz", "https://www.statmt.org/wmt14/test-full.tgz"),
        TEST_SGM,
    ),
)
CLEAN = CleanConfig(min_len=1, max_len=250, ratio=1.5)


def training_config(lang: str) -> MosesConfig:
    return MosesConfig(
        lang=lang,
        normalize_punctuation=True,
        remove_non_printing=True,
        aggressive_dash_splits=True,
        escape=True,
    )


def evaluation_config(lang: str) -> MosesConfig:
    return MosesConfig(lang=lang, aggressive_dash_splits=True, escape=True, right_quote_to_apostrophe=True)


CLI = CorpusCli(
    "python -m macaron_preprocess.wmt14_en_de",
    __doc__,
    raw_dir_help="directory holding the five archives (training-parallel-europarl-v7.tgz, "
    "training-parallel-commoncrawl.tgz, training-parallel-nc-v9.tgz, dev.tgz, test-full.tgz) or "
    "their extracted files (default: download into DEST/work/downloads)",
    default_vocab=37000,
)


def main(argv: list[str] | None = None) -> None:
    args, layout, runner = CLI.start(argv, SRC, TGT)
    files = locate_all(ARCHIVES, args.raw_dir, layout.work, runner)

    def located(prefix: str) -> BitextFiles:
        return BitextFiles(files[f"{prefix}.{SRC}"], files[f"{prefix}.{TGT}"])

    test_text = BitextFiles.from_prefix(layout.work / "newstest2014", SRC, TGT)
    extract_segments(
        runner, "test-segments", [BitextFiles(files[TEST_SGM[0]], files[TEST_SGM[1]])], test_text
    )

    jobs = [
        TokenizeJob(
            "train",
            tuple(located(prefix) for prefix in TRAIN_CORPORA),
            layout.raw("train"),
            layout.tok("train"),
            training_config(SRC),
            training_config(TGT),
            CLEAN,
        ),
        TokenizeJob(
            "valid", (located(VALID_PREFIX),), layout.raw("valid"), layout.tok("valid"),
            evaluation_config(SRC), evaluation_config(TGT),
        ),
        TokenizeJob(
            "test", (test_text,), layout.raw("test"), layout.tok("test"),
            evaluation_config(SRC), evaluation_config(TGT),
        ),
    ]  # fmt: skip
    for job in jobs:
        tokenize_split(runner, job, args.workers)
    splits = ["train", "valid", "test"]
    bpe_and_binarize(runner, layout, splits, bpe_config(args), args.workers, args.binarizer)
    print(line_count_table(layout, splits, runner.reports))


def cli() -> None:
    """The ``macaron-preprocess-wmt14`` console script (``python -m macaron_preprocess.wmt14_en_de``)."""
    run_cli(main, program_name("macaron_preprocess.wmt14_en_de", "macaron-preprocess-wmt14"))


if __name__ == "__main__":
    cli()
