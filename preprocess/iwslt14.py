"""IWSLT14 German->English as in fairseq's ``examples/translation/prepare-iwslt14.sh``, without its
alignment bug, into a fairseq data-bin.

Usage::

    python -m macaron_preprocess.iwslt14 --dest DIR [--raw-dir DIR] [--workers N] [--force]
        [--bpe-vocab-size 10000]

Recipe (each step a resumable stage):

1. ``de-en.tgz``: downloaded (fairseq's mirror, then the original WIT3 host) or taken from ``--raw-dir``
   (the archive, or its extracted ``de-en/`` folder).
2. talk-text: ``train.tags.de-en.{de,en}`` without the talk metadata lines, removed **pairwise**
   (:mod:`macaron_preprocess.sources.ted_metadata`), ``<title>``/``<description>`` tags stripped.
3. test-segments: the ``<seg id>`` lines of IWSLT14.TED.dev2010, IWSLT14.TEDX.dev2012 and
   IWSLT14.TED.tst2010/2011/2012, concatenated in that order (``’`` becomes ``'`` before tokenization).
4. tokenize: Moses tokenizer (sacremoses, with Moses' default escaping as in the Perl script),
   ``clean-corpus-n -ratio 1.5 1 175`` on the training pairs, lowercasing.
5. valid-split: valid = every 23rd cleaned training pair, train = the others.
6. joint sentencepiece BPE (10k vocabulary as in the paper) learned on train (both sides), applied to
   train/valid/test; the data-bin of ``fairseq-preprocess --joined-dictionary`` (see ``--binarizer``).

Output in DIR::

    DIR/dict.{de,en}.txt, DIR/{train,valid,test}.de-en.{de,en}.{bin,idx}   the data-bin: fairseq-train DIR
    DIR/tok/{train,valid,test}.{de,en}   tokenized lowercased text (references for tokenized BLEU)
    DIR/raw/{train,valid,test}.{de,en}   the same pairs before tokenization (cased)
    DIR/bpe/..., DIR/spm.model, DIR/spm.vocab, DIR/work/ (intermediate files), DIR/.stages/
"""

from __future__ import annotations

from macaron_preprocess.sources.archives import ArchiveSpec, locate_members
from macaron_preprocess.sources.ted_metadata import remove_talk_metadata
from macaron_preprocess.sources.xml_segments import extract_segments
from macaron_preprocess.text.bitext import BitextFiles
from macaron_preprocess.text.cleaning import CleanConfig
from macaron_preprocess.text.holdout import holdout_split
from macaron_preprocess.text.moses import MosesConfig
from macaron_preprocess.text.options import CorpusCli, bpe_config
from macaron_preprocess.text.summary import describe_cleaning, line_count_table
from macaron_preprocess.text.to_databin import bpe_and_binarize
from macaron_preprocess.text.tokenize_stage import TokenizeJob, tokenize_split
from macaron_workflow.cli import program_name, run_cli

SRC, TGT = "de", "en"
TEST_SETS = (
    "IWSLT14.TED.dev2010",
    "IWSLT14.TEDX.dev2012",
    "IWSLT14.TED.tst2010",
    "IWSLT14.TED.tst2011",
    "IWSLT14.TED.tst2012",
)
TRAIN_PREFIX = "de-en/train.tags.de-en"
ARCHIVE = ArchiveSpec(
    filename="de-en.tgz",
    urls=(
        "https://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz",
        "https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz",
    ),
    members=(
        f"{TRAIN_PREFIX}.{SRC}",
        f"{TRAIN_PREFIX}.{TGT}",
        *(f"de-en/{name}.de-en.{lang}.xml" for name in TEST_SETS for lang in (SRC, TGT)),
    ),
)
CLEAN = CleanConfig(min_len=1, max_len=175, ratio=1.5)
VALID_EVERY = 23


CLI = CorpusCli(
    "python -m macaron_preprocess.iwslt14",
    __doc__,
    raw_dir_help="directory holding de-en.tgz or its extracted de-en/ folder (default: download into "
    "DEST/work)",
    default_vocab=10000,
)


def main(argv: list[str] | None = None) -> None:
    args, layout, runner = CLI.start(argv, SRC, TGT)
    members = locate_members(ARCHIVE, args.raw_dir, layout.work, runner)

    train_tags = BitextFiles(members[f"{TRAIN_PREFIX}.{SRC}"], members[f"{TRAIN_PREFIX}.{TGT}"])
    talk_text = BitextFiles.from_prefix(layout.work / "train.tags", SRC, TGT)
    remove_talk_metadata(runner, train_tags, talk_text)

    test_sets = [
        BitextFiles(members[f"de-en/{name}.de-en.{SRC}.xml"], members[f"de-en/{name}.de-en.{TGT}.xml"])
        for name in TEST_SETS
    ]
    test_text = BitextFiles.from_prefix(layout.work / "test", SRC, TGT)
    extract_segments(runner, "test-segments", test_sets, test_text)

    def moses(lang: str, eval_set: bool) -> MosesConfig:
        return MosesConfig(lang=lang, escape=True, lowercase=True, right_quote_to_apostrophe=eval_set)

    cleaned_raw = BitextFiles.from_prefix(layout.work / "train.tags.clean.raw", SRC, TGT)
    cleaned_tok = BitextFiles.from_prefix(layout.work / "train.tags.clean.tok", SRC, TGT)
    train_job = TokenizeJob(
        "train.tags", (talk_text,), cleaned_raw, cleaned_tok, moses(SRC, False), moses(TGT, False), CLEAN
    )
    test_job = TokenizeJob(
        "test", (test_text,), layout.raw("test"), layout.tok("test"), moses(SRC, True), moses(TGT, True)
    )
    for job in (train_job, test_job):
        tokenize_split(runner, job, args.workers)
    holdout_split(
        runner,
        "valid-split",
        sources=[cleaned_raw, cleaned_tok],
        kept=[layout.raw("train"), layout.tok("train")],
        held_out=[layout.raw("valid"), layout.tok("valid")],
        every=VALID_EVERY,
    )
    splits = ["train", "valid", "test"]
    bpe_and_binarize(runner, layout, splits, bpe_config(args), args.workers, args.binarizer)
    print(describe_cleaning("train.tags", runner.reports, extra_key="talk-text"))
    print(
        f"valid = cleaned train.tags pairs {VALID_EVERY}, {2 * VALID_EVERY}, {3 * VALID_EVERY}, ...; "
        "train = the others"
    )
    print(line_count_table(layout, splits, runner.reports))


def cli() -> None:
    """The ``macaron-preprocess-iwslt14`` console script (``python -m macaron_preprocess.iwslt14``)."""
    run_cli(main, program_name("macaron_preprocess.iwslt14", "macaron-preprocess-iwslt14"))


if __name__ == "__main__":
    cli()
