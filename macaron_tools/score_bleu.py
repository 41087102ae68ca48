"""Score ``fairseq-generate`` output with clearly labelled BLEU variants and write a results JSON.

    python -m macaron_tools.score_bleu --gen generate-test.txt --ref raw/test.de \\
        --tok-ref tok/test.de --lang de --json results/bleu.json --hyp-out results/test.hyp.de

The hypotheses are the ``H-<id>`` lines of the generate output, put back in corpus order by id. They are
expected to be Moses-tokenized text with the BPE already removed (``fairseq-generate --post-process
sentencepiece``) and are

* detokenized with sacremoses (``--no-detokenize`` if they are already plain text) and scored with
  sacreBLEU against the raw references (``--ref``): "sacreBLEU (detokenized)", with its signature;
* scored as they are against the tokenized references (``--tok-ref``, or the generate output's
  ``T-<id>`` lines when no file is given) with sacreBLEU's ``tokenize=none``: "tokenized BLEU", the
  number ``fairseq-generate``/``multi-bleu.perl`` report. ``--compound-split`` applies the
  ``##AT##-##AT##`` rewriting of fairseq's WMT recipe to both sides first;
* ``fairseq``: the ``Generate test with beam=N: BLEU4 = ...`` line ``fairseq-generate`` itself printed
  (its own BLEU on the BPE-removed, tokenized strings): what the Macaron authors' ``test-iwslt14.sh``
  reports;
* ``retokenized``: the Macaron authors' ``test-wmt14-*.sh`` procedure — the hypotheses Moses-detokenized,
  Moses-tokenized again (``tokenizer.perl -l LANG``: no aggressive hyphen splitting, Moses escaping),
  compound-split (``##AT##-##AT##``) and scored like ``multi-bleu.perl`` (sacreBLEU ``tokenize=none``)
  against their reference: the ``raw-test/en-de.de.tok.atat`` of their released archive when given
  (``--atat-ref``), used as it is; otherwise a stand-in — the raw references (``--ref``) tokenized and split
  the way their script treats the hypotheses — and the label says which.

``--lowercase`` makes both scores case-insensitive; ``--metrics`` picks which ones to compute.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import UserError, cannot_read

METRICS = ("sacrebleu", "tokenized", "fairseq", "retokenized")
_LINE = re.compile(r"^(?P<kind>[HT])-(?P<id>\d+)\t(?P<rest>.*)$")
_HYPHEN = re.compile(r"(\S)-(\S)")
#: the last line of fairseq-generate's output when it scored its translations (``--scoring bleu``)
_FAIRSEQ_BLEU = re.compile(
    r"^Generate (?P<subset>\S+) with beam=(?P<beam>\d+): BLEU4 = (?P<score>[\d.]+), (?P<precisions>[\d./]+) "
    r"\(BP=(?P<bp>[\d.]+), ratio=[\d.]+, syslen=(?P<sys>\d+), reflen=(?P<ref>\d+)\)"
)


class ScoreError(UserError, RuntimeError):
    """Raised for inputs that cannot be scored (missing hypotheses, count mismatches): exit 2."""


@dataclass
class GenerateOutput:
    """Hypotheses and targets of a ``fairseq-generate`` output, indexed by sentence id."""

    hypotheses: dict[int, str]
    targets: dict[int, str]


def parse_generate_output(lines: Iterable[str]) -> GenerateOutput:
    """Collect ``H-<id>\\t<score>\\t<text>`` and ``T-<id>\\t<text>`` lines; the first hypothesis of an id
    wins (with ``--nbest > 1`` the best one comes first)."""
    hypotheses: dict[int, str] = {}
    targets: dict[int, str] = {}
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None:
            continue
        sent_id = int(match["id"])
        if match["kind"] == "H":
            parts = match["rest"].split("\t", 1)
            text = parts[1] if len(parts) == 2 else ""
            hypotheses.setdefault(sent_id, text.strip())
        else:
            targets.setdefault(sent_id, match["rest"].strip())
    return GenerateOutput(hypotheses, targets)


def in_corpus_order(by_id: dict[int, str], expected: int, what: str) -> list[str]:
    """Values sorted by id; every id 0..expected-1 must be present exactly once."""
    missing = [i for i in range(expected) if i not in by_id]
    extra = sorted(i for i in by_id if not 0 <= i < expected)
    if missing or extra:
        detail = []
        if missing:
            detail.append(f"{len(missing)} ids missing (first: {missing[:5]})")
        if extra:
            detail.append(f"{len(extra)} ids outside 0..{expected - 1} (first: {extra[:5]})")
        raise ScoreError(f"{what}: expected {expected} sentences, " + "; ".join(detail))
    return [by_id[i] for i in range(expected)]


def detokenize(lines: Sequence[str], lang: str) -> list[str]:
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang=lang)
    return [detok.detokenize(line.split()) for line in lines]


def compound_split(line: str) -> str:
    """fairseq's ``compound_split_bleu.sh``: ``a-b`` → ``a ##AT##-##AT## b`` (and Moses ``@-@`` alike)."""
    tokens = [
        "##AT##-##AT##" if tok == "@-@" else _HYPHEN.sub(r"\1 ##AT##-##AT## \2", tok) for tok in line.split()
    ]
    return " ".join(tokens)


def read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def bleu_record(
    hyps: Sequence[str], refs: Sequence[str], tokenize: str, lowercase: bool, label: str
) -> dict[str, Any]:
    import sacrebleu

    # force: tokenized BLEU is meant to be computed on tokenized text (no "forgot to detokenize" warning)
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize, lowercase=lowercase, force=tokenize == "none")
    result = metric.corpus_score(list(hyps), [list(refs)])
    return {
        "label": label,
        "score": round(result.score, 2),
        "signature": str(metric.get_signature()),
        "precisions": [round(p, 2) for p in result.precisions],
        "brevity_penalty": round(result.bp, 4),
        "sys_len": result.sys_len,
        "ref_len": result.ref_len,
        "length_ratio": length_ratio(result.sys_len, result.ref_len),
    }


def length_ratio(sys_len: int, ref_len: int) -> float | None:
    """System / reference length (BLEU's brevity penalty is min(1, exp(1 − 1/ratio)))."""
    return round(sys_len / ref_len, 4) if ref_len else None


def fairseq_bleu_record(gen_lines: Sequence[str]) -> dict[str, Any]:
    """The BLEU4 line ``fairseq-generate`` printed (the last one, if a file holds several runs)."""
    found = [m for line in gen_lines if (m := _FAIRSEQ_BLEU.match(line.strip()))]
    if not found:
        raise ScoreError(
            "no 'Generate ... with beam=N: BLEU4 = ...' line: fairseq-generate printed no BLEU "
            "(it needs references in the data-bin and --scoring bleu, its default)"
        )
    m = found[-1]
    return {
        "label": "fairseq BLEU4 (fairseq-generate's own, on the BPE-removed tokenized text; the authors' "
        "test-iwslt14.sh)",
        "score": float(m["score"]),
        "signature": f"fairseq-generate --scoring bleu, {m['subset']}, beam={m['beam']}",
        "precisions": [float(p) for p in m["precisions"].split("/")],
        "brevity_penalty": float(m["bp"]),
        "sys_len": int(m["sys"]),
        "ref_len": int(m["ref"]),
        "length_ratio": length_ratio(int(m["sys"]), int(m["ref"])),
        "line": m.group(0),
    }


def retokenize(lines: Sequence[str], lang: str) -> list[str]:
    """``tokenizer.perl -l LANG`` then the ``##AT##`` split of the authors' test-wmt14 scripts."""
    from sacremoses import MosesTokenizer

    tokenizer = MosesTokenizer(lang=lang)
    return [compound_split(tokenizer.tokenize(line, return_str=True, escape=True)) for line in lines]


def score(
    gen_lines: Iterable[str],
    ref_path: Path | None,
    tok_ref_path: Path | None,
    lang: str,
    metrics: Sequence[str],
    detokenize_hyps: bool = True,
    lowercase: bool = False,
    split_compounds: bool = False,
    atat_ref_path: Path | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Compute the requested BLEU variants. Returns (results dict, detokenized hypotheses)."""
    gen_lines = list(gen_lines)
    gen = parse_generate_output(gen_lines)
    if not gen.hypotheses:
        raise ScoreError("no H-<id> lines found: is this the stdout of fairseq-generate?")
    refs = read_lines(ref_path) if ref_path is not None else None
    atat_refs = read_lines(atat_ref_path) if atat_ref_path is not None else None
    expected = len(refs) if refs is not None else len(atat_refs or gen.hypotheses)
    hyps_tok = in_corpus_order(gen.hypotheses, expected, "hypotheses (H-lines)")
    hyps_plain = detokenize(hyps_tok, lang) if detokenize_hyps else list(hyps_tok)
    case = "case-insensitive" if lowercase else "case-sensitive"
    results: dict[str, Any] = {
        "n_sentences": expected,
        "lang": lang,
        "lowercase": lowercase,
        "detokenized_hypotheses": detokenize_hyps,
        "scores": {},
    }
    if "sacrebleu" in metrics:
        if refs is None:
            raise ScoreError("sacreBLEU needs --ref (the raw, untokenized references)")
        label = f"sacreBLEU (detokenized, 13a, {case})"
        results["scores"]["sacrebleu"] = bleu_record(hyps_plain, refs, "13a", lowercase, label)
        results["ref"] = str(ref_path)
    if "tokenized" in metrics:
        if tok_ref_path is not None:
            tok_refs = read_lines(tok_ref_path)
            if len(tok_refs) != expected:
                raise ScoreError(f"--tok-ref has {len(tok_refs)} lines, expected {expected}")
            results["tok_ref"] = str(tok_ref_path)
        else:
            tok_refs = in_corpus_order(gen.targets, expected, "targets (T-lines, used without --tok-ref)")
            results["tok_ref"] = "T-lines of the generate output"
        tok_hyps = list(hyps_tok)
        label = f"tokenized BLEU (Moses-tokenized, {case}"
        if split_compounds:
            tok_hyps = [compound_split(h) for h in tok_hyps]
            tok_refs = [compound_split(r) for r in tok_refs]
            label += ", compound-split"
        results["scores"]["tokenized"] = bleu_record(tok_hyps, tok_refs, "none", lowercase, label + ")")
    if "fairseq" in metrics:
        results["scores"]["fairseq"] = fairseq_bleu_record(gen_lines)
    if "retokenized" in metrics:
        detok = hyps_plain if detokenize_hyps else detokenize(hyps_tok, lang)
        if atat_refs is not None:
            if len(atat_refs) != expected:
                raise ScoreError(f"{atat_ref_path} has {len(atat_refs)} lines, expected {expected}")
            reference = "their released raw-test/en-de.de.tok.atat"
            results["atat_ref"] = str(atat_ref_path)
        elif refs is None:
            raise ScoreError("the retokenized BLEU needs --ref (the raw references) or --atat-ref (theirs)")
        else:
            atat_refs = retokenize(refs, lang)
            reference = "stand-in reference: the raw references tokenized and split the same way"
        label = (
            f"BLEU as the authors' test-wmt14 (Moses detok → tok, ##AT## split, multi-bleu; {case}; "
            f"{reference})"
        )
        results["scores"]["retokenized"] = bleu_record(
            retokenize(detok, lang), atat_refs, "none", lowercase, label
        )
    results["scores"] = {m: results["scores"][m] for m in metrics if m in results["scores"]}  # asked order
    return results, hyps_plain


def score_file(
    gen: str,
    ref_path: Path | None,
    tok_ref_path: Path | None,
    lang: str,
    metrics: Sequence[str],
    detokenize_hyps: bool = True,
    lowercase: bool = False,
    split_compounds: bool = False,
    name: str = "",
    atat_ref_path: Path | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """:func:`score` on a ``fairseq-generate`` output file (``"-"`` reads stdin); the results also record
    ``name`` and the file they were computed from."""
    gen_lines = sys.stdin.readlines() if gen == "-" else read_lines(Path(gen))
    results, hyps_plain = score(
        gen_lines,
        ref_path,
        tok_ref_path,
        lang,
        metrics,
        detokenize_hyps=detokenize_hyps,
        lowercase=lowercase,
        split_compounds=split_compounds,
        atat_ref_path=atat_ref_path,
    )
    results["name"] = name
    results["generate_output"] = str(gen)
    return results, hyps_plain


def hypotheses_text(hyps: Sequence[str]) -> str:
    """The ``--hyp-out`` file: one detokenized hypothesis per line, in corpus order."""
    return "".join(h + "\n" for h in hyps)


def results_text(results: dict[str, Any]) -> str:
    """The ``--json`` file."""
    return json.dumps(results, indent=2, ensure_ascii=False) + "\n"


def format_report(results: dict[str, Any]) -> str:
    lines = []
    for record in results["scores"].values():
        lines.append(f"{record['label']} = {record['score']:.2f}   [{record['signature']}]")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m macaron_tools.score_bleu",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--gen", required=True, help="fairseq-generate stdout ('-' reads stdin)")
    parser.add_argument("--ref", type=Path, help="raw (detokenized) references, one per line")
    parser.add_argument("--tok-ref", type=Path, help="tokenized references (default: the T-lines)")
    parser.add_argument("--lang", default="en", help="target language for the Moses detokenizer")
    parser.add_argument(
        "--metrics",
        default="sacrebleu,tokenized",
        help=f"comma-separated subset of {','.join(METRICS)} (default: sacrebleu,tokenized)",
    )
    parser.add_argument(
        "--no-detokenize",
        action="store_true",
        help="hypotheses are plain text already (e.g. generate --tokenizer moses)",
    )
    parser.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU")
    parser.add_argument(
        "--compound-split",
        action="store_true",
        help="split hyphenated compounds (##AT##-##AT##) before tokenized BLEU",
    )
    parser.add_argument(
        "--atat-ref",
        type=Path,
        help="retokenized: the authors' released reference (raw-test/en-de.de.tok.atat), "
        "used as it is instead of the stand-in built from --ref",
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--hyp-out", type=Path, help="write the detokenized hypotheses here")
    parser.add_argument("--name", default="", help="free-form label stored in the JSON (e.g. 'test')")
    args = parser.parse_args(argv)
    args.metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    unknown = sorted(set(args.metrics) - set(METRICS))
    if unknown or not args.metrics:
        parser.error(f"--metrics: unknown {unknown}; choose from {', '.join(METRICS)}")
    for metric in ("sacrebleu", "retokenized"):
        if metric in args.metrics and args.ref is None and not (metric == "retokenized" and args.atat_ref):
            parser.error(f"--ref is required for the {metric} metric")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        results, hyps_plain = score_file(
            args.gen,
            args.ref,
            args.tok_ref,
            args.lang,
            args.metrics,
            detokenize_hyps=not args.no_detokenize,
            lowercase=args.lowercase,
            split_compounds=args.compound_split,
            name=args.name,
            atat_ref_path=args.atat_ref,
        )
    except OSError as err:
        raise cannot_read(err.filename or args.gen, err) from err
    if args.hyp_out is not None:
        write_text_atomically(args.hyp_out, hypotheses_text(hyps_plain))
        results["hypotheses_file"] = str(args.hyp_out)
    if args.json is not None:
        write_text_atomically(args.json, results_text(results))
    print(format_report(results))
    return 0


def cli() -> None:
    """The ``macaron-score-bleu`` console script: what ``python -m macaron_tools.score_bleu`` runs."""
    run_cli(main, "python -m macaron_tools.score_bleu")


if __name__ == "__main__":
    cli()
