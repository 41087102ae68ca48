"""WMT14 English->German into a fairseq data-bin, by one of two recipes (``--data``):

Usage::

    python -m macaron_preprocess.wmt14_en_de --dest DIR [--data authors|icml17] [--raw-dir DIR]
        [--workers N] [--force] [--bpe-vocab-size N] [--authors-test-dir DIR]

``--data authors`` (default) is exactly the Macaron authors' ``prepare-wmt14en2de.sh``
(zhuohan123/macaron-net, ``translation/macaron-scripts/data-preprocessing/``, adapted from fairseq 0.6's
script without ``--icml17``):

1. archives: training-parallel-europarl-v7.tgz, training-parallel-commoncrawl.tgz,
   **training-parallel-nc-v12.tgz** (data.statmt.org/wmt17), dev.tgz (wmt17: newstest2013 = valid),
   test-full.tgz (newstest2014 ``.sgm`` = test);
2. training text (europarl-v7 + commoncrawl + news-commentary-v12, in that order):
   ``normalize-punctuation.perl`` → ``remove-non-printing-char.perl`` → ``tokenizer.perl -a`` (sacremoses,
   Moses escaping) → ``clean-corpus-n.perl 1 80`` (no ``-ratio``: the script's default ratio 9);
3. valid: newstest2013 through the *training* normalisation (normalize-punctuation, remove-non-printing,
   ``tokenizer.perl -a``), not length-filtered; test: the ``<seg id>`` lines of newstest2014-deen-src.en.sgm /
   -ref.de.sgm, ``’`` → ``'``, ``tokenizer.perl -a``;
4. joint BPE with the ``subword-nmt`` library: ``learn_bpe -s 32764`` (their ``BPE_TOKENS``;
   ``--bpe-vocab-size`` sets the number of merges) on train.en then train.de, ``apply_bpe -c`` on every split;
   the data-bin of ``fairseq-preprocess --joined-dictionary`` (their README's binarisation command).

Their test script (``test-wmt14-*.sh``) scores against ``raw-test/en-de.de.tok.atat`` of their released
archive, a file no script of theirs makes: with ``--authors-test-dir DIR`` (the ``raw-test`` directory of that
archive: ``en-de.en.bpe``, ``en-de.de.tok.atat``) the file is kept as ``DIR/authors-test/en-de.de.tok.atat``
(checked against newstest2014's segment count) and the translation pipeline scores against it; without it the
pipeline builds its stand-in the way their script treats the hypotheses (Moses tokenizer without ``-a``,
``##AT##`` split) from the raw newstest2014 references, and says so.

``--data icml17`` is this project's earlier recipe, close to fairseq's ``prepare-wmt14en2de.sh --icml17``
(the 4.5M pairs of "Attention is all you need"): news-commentary **v9**, ``clean-corpus-n -ratio 1.5 1 250``,
valid newstest2013 with only ``’`` → ``'`` and ``tokenizer.perl -a`` (fairseq's script holds out every 100th
training pair instead and never uses its dev set), cleaning on Moses tokens (fairseq's cleans after BPE, on
subword counts), joint **sentencepiece** BPE of 37000 pieces instead of subword-nmt's 40000 merges.

Output in DIR::

    DIR/dict.{en,de}.txt, DIR/{train,valid,test}.en-de.{en,de}.{bin,idx}   data-bin: fairseq-train DIR
    DIR/raw/test.{en,de}   newstest2014 segments untokenized: detokenized references for sacreBLEU
    DIR/tok/test.{en,de}   tokenized references for tokenized BLEU (compound-split them for the paper's)
    DIR/subword_nmt.codes (authors) or DIR/spm.model, DIR/spm.vocab (icml17); DIR/bpe/...
    DIR/authors-test/en-de.de.tok.atat (with --authors-test-dir), DIR/work/ (downloads, extracted files),
    DIR/.stages/
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from macaron_preprocess.sources.archives import ArchiveSpec, locate_all
from macaron_preprocess.sources.xml_segments import extract_segments
from macaron_preprocess.text.bitext import BitextFiles
from macaron_preprocess.text.cleaning import CleanConfig
from macaron_preprocess.text.layout import OutputLayout
from macaron_preprocess.text.moses import MosesConfig
from macaron_preprocess.text.options import CorpusCli, bpe_config, start_corpus
from macaron_preprocess.text.summary import line_count_table
from macaron_preprocess.text.to_databin import bpe_and_binarize, subword_nmt_and_binarize
from macaron_preprocess.text.tokenize_stage import TokenizeJob, tokenize_split
from macaron_workflow.cli import program_name, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.files import count_lines
from macaron_workflow.stages import StageReport, StageRunner

SRC, TGT = "en", "de"
TRAIN_CORPORA = ("training/europarl-v7.de-en", "commoncrawl.de-en", "training/news-commentary-v9.de-en")
NC_V12 = "training/news-commentary-v12.de-en"  # their CORPORA's third entry
VALID_PREFIX = "dev/newstest2013"
TEST_SGM = ("test-full/newstest2014-deen-src.en.sgm", "test-full/newstest2014-deen-ref.de.sgm")


def _pair(prefix: str) -> tuple[str, str]:
    return f"{prefix}.{SRC}", f"{prefix}.{TGT}"


def _statmt(path: str) -> tuple[str, str]:
    """The http and https URLs of ``path`` on statmt.org."""
    return f"http://statmt.org/{path}", f"https://www.statmt.org/{path}"


ARCHIVES = (
    ArchiveSpec(
        "training-parallel-europarl-v7.tgz",
        _statmt("wmt13/training-parallel-europarl-v7.tgz"),
        _pair(TRAIN_CORPORA[0]),
    ),
    ArchiveSpec(
        "training-parallel-commoncrawl.tgz",
        _statmt("wmt13/training-parallel-commoncrawl.tgz"),
        _pair(TRAIN_CORPORA[1]),
    ),
    ArchiveSpec(
        "training-parallel-nc-v9.tgz", _statmt("wmt14/training-parallel-nc-v9.tgz"), _pair(TRAIN_CORPORA[2])
    ),
    ArchiveSpec(
        "training-parallel-nc-v12.tgz",
        ("http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz",),
        _pair(NC_V12),
    ),
    ArchiveSpec(
        "dev.tgz",
        ("http://data.statmt.org/wmt17/translation-task/dev.tgz", "http://statmt.org/wmt14/dev.tgz"),
        _pair(VALID_PREFIX),
    ),
    ArchiveSpec("test-full.tgz", _statmt("wmt14/test-full.tgz"), TEST_SGM),
)
CLEAN = CleanConfig(min_len=1, max_len=250, ratio=1.5)
#: ``clean-corpus-n.perl CORPUS en de OUT 1 80`` without ``-ratio``: the script's default ratio is 9
AUTHORS_CLEAN = CleanConfig(min_len=1, max_len=80, ratio=9)
#: their ``BPE_TOKENS``: subword-nmt's ``learn_bpe.py -s``
AUTHORS_MERGES = 32764


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


@dataclass(frozen=True)
class DataRecipe:
    """What differs between the two recipes of ``--data``."""

    name: str
    news_commentary: str  # the corpus prefix inside its archive
    archives: tuple[str, ...]  # the archive file names
    clean: CleanConfig
    valid_config: Callable[[str], MosesConfig]
    bpe: str  # "subword-nmt" (merges) or "sentencepiece" (vocabulary size)
    bpe_size: int


_NAMES = [spec.filename for spec in ARCHIVES]
DATA: dict[str, DataRecipe] = {
    "authors": DataRecipe(
        "authors",
        NC_V12,
        tuple(n for n in _NAMES if n != "training-parallel-nc-v9.tgz"),
        AUTHORS_CLEAN,
        training_config,
        "subword-nmt",
        AUTHORS_MERGES,
    ),
    "icml17": DataRecipe(
        "icml17",
        TRAIN_CORPORA[2],
        tuple(n for n in _NAMES if n != "training-parallel-nc-v12.tgz"),
        CLEAN,
        evaluation_config,
        "sentencepiece",
        37000,
    ),
}
#: the files of their released archive's ``raw-test`` directory that their test script reads
AUTHORS_TEST_FILES = ("en-de.en.bpe", "en-de.de.tok.atat")


CLI = CorpusCli(
    "python -m macaron_preprocess.wmt14_en_de",
    __doc__,
    raw_dir_help="directory holding the five archives of the recipe (training-parallel-europarl-v7.tgz, "
    "training-parallel-commoncrawl.tgz, training-parallel-nc-v12.tgz (--data authors) or "
    "training-parallel-nc-v9.tgz (--data icml17), dev.tgz, test-full.tgz) or their extracted files "
    "(default: download into DEST/work/downloads)",
    default_vocab=0,
    vocab_help="--data authors: subword-nmt merge operations (default: theirs, 32764); --data icml17: "
    "sentencepiece vocabulary size (default 37000)",
)


def parser() -> argparse.ArgumentParser:
    p = CLI.parser()
    p.add_argument(
        "--data",
        choices=sorted(DATA),
        default="authors",
        help="authors: the Macaron authors' prepare-wmt14en2de.sh (default); icml17: this "
        "project's earlier recipe after fairseq's --icml17 (see above)",
    )
    p.add_argument(
        "--authors-test-dir",
        type=Path,
        help="the raw-test directory of the authors' released WMT14 archive (en-de.en.bpe, "
        "en-de.de.tok.atat): their test reference is kept for scoring",
    )
    return p


def keep_authors_test(runner: StageRunner, source: Path, layout: OutputLayout) -> None:
    """Stage "authors-test": their ``en-de.de.tok.atat`` into ``DIR/authors-test/``, after checking that it
    has one line per newstest2014 segment."""
    missing = [name for name in AUTHORS_TEST_FILES if not (source / name).is_file()]
    if missing:
        raise UserError(
            f"--authors-test-dir {source}: no {', '.join(missing)} (the raw-test directory of the authors' "
            "released WMT14 archive holds en-de.en.bpe and en-de.de.tok.atat)"
        )
    reference, kept = source / "en-de.de.tok.atat", layout.root / "authors-test" / "en-de.de.tok.atat"
    expected = count_lines(layout.raw("test").tgt)

    def build(temps: Mapping[Path, Path]) -> StageReport:
        lines = count_lines(reference)
        if lines != expected:
            raise UserError(f"{reference}: {lines} lines, but newstest2014 has {expected} segments")
        shutil.copyfile(reference, temps[kept])
        return {"lines": lines}

    runner.run("authors-test", [reference, layout.raw("test").tgt], [kept], {}, build)


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    data = DATA[args.data]
    args.bpe_vocab_size = args.bpe_vocab_size or data.bpe_size
    layout, runner = start_corpus(CLI, args, SRC, TGT)
    specs = tuple(spec for spec in ARCHIVES if spec.filename in data.archives)
    files = locate_all(specs, args.raw_dir, layout.work, runner)

    def located(prefix: str) -> BitextFiles:
        return BitextFiles(files[f"{prefix}.{SRC}"], files[f"{prefix}.{TGT}"])

    test_text = BitextFiles.from_prefix(layout.work / "newstest2014", SRC, TGT)
    extract_segments(
        runner, "test-segments", [BitextFiles(files[TEST_SGM[0]], files[TEST_SGM[1]])], test_text
    )
    corpora = (*TRAIN_CORPORA[:2], data.news_commentary)

    def job(
        split: str,
        inputs: tuple[BitextFiles, ...],
        config: Callable[[str], MosesConfig],
        clean: CleanConfig | None = None,
    ) -> TokenizeJob:
        return TokenizeJob(
            split, inputs, layout.raw(split), layout.tok(split), config(SRC), config(TGT), clean
        )

    jobs = [
        job("train", tuple(located(prefix) for prefix in corpora), training_config, data.clean),
        job("valid", (located(VALID_PREFIX),), data.valid_config),
        job("test", (test_text,), evaluation_config),
    ]
    for job in jobs:
        tokenize_split(runner, job, args.workers)
    splits = ["train", "valid", "test"]
    if data.bpe == "subword-nmt":
        subword_nmt_and_binarize(runner, layout, splits, args.bpe_vocab_size, args.workers, args.binarizer)
    else:
        bpe_and_binarize(runner, layout, splits, bpe_config(args), args.workers, args.binarizer)
    if args.authors_test_dir is not None:
        keep_authors_test(runner, args.authors_test_dir, layout)
    print(line_count_table(layout, splits, runner.reports))


def cli() -> None:
    """The ``macaron-preprocess-wmt14`` console script (``python -m macaron_preprocess.wmt14_en_de``)."""
    run_cli(main, program_name("macaron_preprocess.wmt14_en_de", "macaron-preprocess-wmt14"))


if __name__ == "__main__":
    cli()
