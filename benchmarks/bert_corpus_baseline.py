"""The pre-training corpus as a user would otherwise build it: the baseline of
``python -m benchmarks.bert_corpus_throughput``.

Step 1 is the ``wikiextractor`` command line (``--json --no-templates --processes N``); step 2 is this
script's one-process loop over its output: spaCy (``spacy.blank("en")`` + ``sentencizer``) on each
paragraph, then sacremoses (punctuation normalization, tokenization) and lowercasing per sentence, one
sentence per line and a blank line after each document. No BPE, no binarization, no split: it does less
than ``python -m macaron_preprocess.bert_corpus``.

    python -m benchmarks.bert_corpus_baseline EXTRACTED_DIR OUTPUT.txt
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import spacy
from sacremoses import MosesPunctNormalizer, MosesTokenizer


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bert_corpus_baseline",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("extracted", type=Path, help="wikiextractor's --json output directory")
    parser.add_argument("output", type=Path, help="the tokenized text, one sentence a line")
    args = parser.parse_args()
    extracted, output = args.extracted, args.output
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    normalizer, tokenizer = MosesPunctNormalizer(lang="en"), MosesTokenizer(lang="en")
    documents = 0
    with open(output, "w", encoding="utf-8") as out:
        for path in sorted(p for p in extracted.rglob("wiki_*") if p.is_file()):
            with open(path, encoding="utf-8") as lines:
                for line in lines:
                    text = json.loads(line)["text"]
                    paragraphs = [p for p in text.split("\n") if p.strip()]
                    if not paragraphs:
                        continue
                    for doc in nlp.pipe(paragraphs):
                        for sentence in doc.sents:
                            normalized = normalizer.normalize(sentence.text)
                            tokens = tokenizer.tokenize(normalized, escape=False, return_str=True)
                            out.write(tokens.lower() + "\n")
                    out.write("\n")
                    documents += 1
    print(f"{documents} documents", file=sys.stderr)


if __name__ == "__main__":
    main()
