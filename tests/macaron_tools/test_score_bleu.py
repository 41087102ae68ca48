"""Tests of macaron_tools.score_bleu (parsing fairseq-generate output, labelled BLEU, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from macaron_tools import score_bleu
from macaron_workflow.cli import run_cli

REFS = ["Der Hund schläft.", "Die Frau liest ein Buch, weil sie müde ist.", "Sieht er den Mann?"]
TOK_REFS = ["Der Hund schläft .", "Die Frau liest ein Buch , weil sie müde ist .", "Sieht er den Mann ?"]


def generate_output(hyps: list[str], order: list[int] | None = None) -> list[str]:
    """fairseq-generate style lines (S/T/H/D/P per sentence), in the given id order."""
    lines = ["2026-01-01 | INFO | fairseq_cli.generate | loading model"]
    for i in order if order is not None else range(len(hyps)):
        lines += [
            f"S-{i}\tsource {i}",
            f"T-{i}\t{TOK_REFS[i]}",
            f"H-{i}\t-0.123\t{hyps[i]}",
            f"D-{i}\t-0.123\t{hyps[i]}",
            f"P-{i}\t-0.1 -0.2",
        ]
    lines.append("Generate test with beam=5: BLEU4 = 100.00, 100.0/100.0/100.0/100.0")
    return lines


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_parse_sorts_hypotheses_by_id_and_keeps_first_of_nbest() -> None:
    lines = [*generate_output(TOK_REFS, order=[2, 0, 1]), "H-0\t-9.0\tworse second best"]
    gen = score_bleu.parse_generate_output(lines)
    assert score_bleu.in_corpus_order(gen.hypotheses, 3, "h") == TOK_REFS
    assert gen.targets[1] == TOK_REFS[1]


def test_missing_hypothesis_is_an_error() -> None:
    lines = generate_output(TOK_REFS, order=[0, 2])
    with pytest.raises(score_bleu.ScoreError, match="1 ids missing"):
        score_bleu.score(lines, None, None, "de", ["tokenized"])


def test_perfect_hypotheses_score_100_both_ways(tmp_path: Path) -> None:
    ref = write(tmp_path / "ref.de", REFS)
    tok = write(tmp_path / "tok.de", TOK_REFS)
    results, detok = score_bleu.score(generate_output(TOK_REFS), ref, tok, "de", ["sacrebleu", "tokenized"])
    assert detok == REFS  # Moses detokenization restores the raw text
    assert results["scores"]["sacrebleu"]["score"] == pytest.approx(100.0)
    assert results["scores"]["tokenized"]["score"] == pytest.approx(100.0)
    assert results["scores"]["sacrebleu"]["label"].startswith("sacreBLEU (detokenized")
    assert results["scores"]["tokenized"]["label"].startswith("tokenized BLEU")
    assert "tok:13a" in results["scores"]["sacrebleu"]["signature"]
    assert "tok:none" in results["scores"]["tokenized"]["signature"]


def test_tokenized_reference_falls_back_to_t_lines(tmp_path: Path) -> None:
    results, _ = score_bleu.score(generate_output(TOK_REFS), None, None, "de", ["tokenized"])
    assert results["scores"]["tokenized"]["score"] == pytest.approx(100.0)
    assert "T-lines" in results["tok_ref"]


def test_lowercase_makes_scores_case_insensitive(tmp_path: Path) -> None:
    ref = write(tmp_path / "ref.de", REFS)
    shouting = [h.upper() for h in TOK_REFS]
    cased, _ = score_bleu.score(generate_output(shouting), ref, None, "de", ["sacrebleu"])
    uncased, _ = score_bleu.score(generate_output(shouting), ref, None, "de", ["sacrebleu"], lowercase=True)
    assert cased["scores"]["sacrebleu"]["score"] < 10
    assert uncased["scores"]["sacrebleu"]["score"] == pytest.approx(100.0)
    assert "case-insensitive" in uncased["scores"]["sacrebleu"]["label"]


def test_no_detokenize_scores_hypotheses_as_given(tmp_path: Path) -> None:
    ref = write(tmp_path / "ref.de", REFS)
    results, hyps = score_bleu.score(
        generate_output(REFS), ref, None, "de", ["sacrebleu"], detokenize_hyps=False
    )
    assert hyps == REFS
    assert results["scores"]["sacrebleu"]["score"] == pytest.approx(100.0)


def test_imperfect_hypotheses_score_between_0_and_100(tmp_path: Path) -> None:
    ref = write(tmp_path / "ref.de", REFS)
    hyps = ["Der Hund schläft .", "Die Frau liest das Buch , weil sie müde war .", "Sieht er die Frau ?"]
    results, _ = score_bleu.score(generate_output(hyps), ref, None, "de", ["sacrebleu"])
    assert 0 < results["scores"]["sacrebleu"]["score"] < 100


def test_compound_split() -> None:
    assert score_bleu.compound_split("ein Macaron-Net Modell") == "ein Macaron ##AT##-##AT## Net Modell"
    assert score_bleu.compound_split("ein Macaron @-@ Net") == "ein Macaron ##AT##-##AT## Net"


# A hand-worked example of --compound-split (fairseq's compound_split_bleu.sh: every "a-b" inside a token
# and every Moses "@-@" becomes "a ##AT##-##AT## b"). Hypothesis and reference:
COMPOUND_HYP = "Das Macaron-Net Modell ist gut ."  # 6 tokens
COMPOUND_REF = "Das Macaron @-@ Net @-@ Modell ist gut ."  # Moses -a output of "Das Macaron-Net-Modell ..."
#  split hypothesis, 8 tokens: Das Macaron ##AT##-##AT## Net Modell ist gut .
#  split reference,  9 tokens: Das Macaron ##AT##-##AT## Net ##AT##-##AT## Modell ist gut .
#  1-grams: all 8 hypothesis tokens occur in the reference                                  8/8
#  2-grams: all but "Net Modell" (the reference has "Net ##AT##-##AT##")                    6/7
#  3-grams: all but "##AT##-##AT## Net Modell", "Net Modell ist"                            4/6
#  4-grams: "Das Macaron ##AT##-##AT## Net", "Modell ist gut ."                             2/5
#  brevity penalty exp(1 - 9/8) = 0.8825; BLEU = 100 · 0.8825 · (8/8 · 6/7 · 4/6 · 2/5)^¼ = 61.02
COMPOUND_HYP_SPLIT = "Das Macaron ##AT##-##AT## Net Modell ist gut ."
COMPOUND_REF_SPLIT = "Das Macaron ##AT##-##AT## Net ##AT##-##AT## Modell ist gut ."


def test_compound_split_tokenization_by_hand() -> None:
    assert score_bleu.compound_split(COMPOUND_HYP) == COMPOUND_HYP_SPLIT
    assert score_bleu.compound_split(COMPOUND_REF) == COMPOUND_REF_SPLIT
    assert score_bleu.compound_split("Macaron-Net-Modell") == "Macaron ##AT##-##AT## Net ##AT##-##AT## Modell"
    assert score_bleu.compound_split("ein - Strich , -5 und x-") == "ein - Strich , -5 und x-"  # no a-b


def test_compound_split_bleu_statistics_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = write(tmp_path / "gen.txt", [f"H-0\t-0.1\t{COMPOUND_HYP}", f"T-0\t{COMPOUND_REF}"])
    tok_ref = write(tmp_path / "tok.de", [COMPOUND_REF])
    out = tmp_path / "bleu.json"
    assert (
        score_bleu.main(
            [
                "--gen",
                str(gen),
                "--tok-ref",
                str(tok_ref),
                "--metrics",
                "tokenized",
                "--compound-split",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads(out.read_text(encoding="utf-8"))["scores"]["tokenized"]
    assert (record["sys_len"], record["ref_len"]) == (8, 9)
    assert record["precisions"] == pytest.approx(
        [100 * 8 / 8, 100 * 6 / 7, 100 * 4 / 6, 100 * 2 / 5], abs=0.01
    )
    assert record["brevity_penalty"] == pytest.approx(0.8825, abs=1e-4)
    assert record["score"] == pytest.approx(61.02, abs=0.01)
    assert record["label"] == "tokenized BLEU (Moses-tokenized, case-sensitive, compound-split)"
    assert "compound-split) = 61.02" in capsys.readouterr().out
    # the same sentence pair without --compound-split (reference "Das Macaron-Net-Modell ist gut .", 5
    # tokens; hypothesis 6 tokens): the compound is one token on each side, and they differ
    plain, _ = score_bleu.score(
        [f"H-0\t-0.1\t{COMPOUND_HYP}", "T-0\tDas Macaron-Net-Modell ist gut ."],
        None,
        None,
        "de",
        ["tokenized"],
    )
    record = plain["scores"]["tokenized"]
    # 1-grams 4/6, 2-grams 2/5 (ist gut, gut .), 3-grams 1/4 (ist gut .), 4-grams 0/3 → sacreBLEU's "exp"
    # smoothing counts it as 1/(2·3); BP = 1 (6 > 5); BLEU = 100 · (4/6 · 2/5 · 1/4 · 1/6)^¼ = 32.47
    assert (record["sys_len"], record["ref_len"]) == (6, 5)
    assert record["precisions"] == pytest.approx([100 * 4 / 6, 100 * 2 / 5, 100 / 4, 100 / 6], abs=0.01)
    assert record["score"] == pytest.approx(32.47, abs=0.01)


def test_cli_writes_json_and_hypotheses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = write(tmp_path / "gen.txt", generate_output(TOK_REFS))
    ref = write(tmp_path / "ref.de", REFS)
    out_json, out_hyp = tmp_path / "res" / "bleu.json", tmp_path / "res" / "hyp.de"
    code = score_bleu.main(
        [
            "--gen",
            str(gen),
            "--ref",
            str(ref),
            "--lang",
            "de",
            "--json",
            str(out_json),
            "--hyp-out",
            str(out_hyp),
            "--name",
            "unit",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "sacreBLEU (detokenized, 13a, case-sensitive) = 100.00" in printed
    assert "tokenized BLEU (Moses-tokenized, case-sensitive) = 100.00" in printed
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["name"] == "unit" and data["n_sentences"] == 3
    assert set(data["scores"]) == {"sacrebleu", "tokenized"}
    assert out_hyp.read_text(encoding="utf-8").splitlines() == REFS


def test_cli_reports_missing_h_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = write(tmp_path / "gen.txt", ["nothing useful here"])
    ref = write(tmp_path / "ref.de", REFS)
    # the error rule: one line, exit 2 (macaron_workflow.cli.run_cli)
    with pytest.raises(SystemExit) as ended:
        run_cli(lambda: score_bleu.main(["--gen", str(gen), "--ref", str(ref)]), "score_bleu")
    err = capsys.readouterr().err
    assert ended.value.code == 2 and err.count("\n") == 1
    assert err.startswith("score_bleu: error: no H-<id> lines")


def test_cli_rejects_unknown_metric(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        score_bleu.main(["--gen", "x", "--metrics", "chrf"])


# ------------------------------------------------------------------- the Macaron authors' test scripts
FAIRSEQ_LINE = (
    "Generate test with beam=5: BLEU4 = 35.43, 68.6/43.2/29.3/20.3 (BP=0.973, ratio=0.973, syslen=127659, "
    "reflen=131156)"
)


def test_fairseq_bleu4_is_the_line_fairseq_generate_printed(tmp_path: Path) -> None:
    """Their test-iwslt14.sh reports fairseq-generate's own BLEU4 line (the one in their README here)."""
    lines = [*generate_output(TOK_REFS)[:-1], FAIRSEQ_LINE]
    results, _ = score_bleu.score(lines, None, None, "de", ["fairseq"])
    record = results["scores"]["fairseq"]
    assert record["score"] == 35.43 and record["precisions"] == [68.6, 43.2, 29.3, 20.3]
    assert (record["brevity_penalty"], record["sys_len"], record["ref_len"]) == (0.973, 127659, 131156)
    assert "beam=5" in record["signature"] and record["line"] == FAIRSEQ_LINE
    with pytest.raises(score_bleu.ScoreError, match="printed no BLEU"):
        score_bleu.score(generate_output(TOK_REFS)[:-1], None, None, "de", ["fairseq"])


def test_retokenized_bleu_follows_the_authors_wmt14_script(tmp_path: Path) -> None:
    """detok → tokenizer.perl -l de (no -a: "US-Regierung" stays one token) → ##AT## split → multi-bleu;
    the references go through the same tokenizer and split. A hypothesis tokenized with -a (our data's
    "@-@") scores 100 against its own raw text, and the ##AT## split is visible in the n-gram counts."""
    raw = ["Die US-Regierung sagt, er sei müde."]
    hyp = ["Die US @-@ Regierung sagt , er sei müde ."]
    assert score_bleu.retokenize(raw, "de") == ["Die US ##AT##-##AT## Regierung sagt , er sei müde ."]
    ref = write(tmp_path / "ref.de", raw)
    lines = [f"H-0\t-0.1\t{hyp[0]}"]
    results, _ = score_bleu.score(lines, ref, None, "de", ["retokenized"])
    record = results["scores"]["retokenized"]
    assert record["score"] == 100.0 and record["sys_len"] == record["ref_len"] == 10
    worse, _ = score_bleu.score(
        ["H-0\t-0.1\tDie US-Regierung sagt , sie sei müde ."], ref, None, "de", ["retokenized"]
    )
    assert worse["scores"]["retokenized"]["score"] < 100
    with pytest.raises(score_bleu.ScoreError, match="needs --ref"):
        score_bleu.score(lines, None, None, "de", ["retokenized"])


def test_their_released_reference_is_used_as_it_is_and_named(tmp_path: Path) -> None:
    """--atat-ref: their raw-test/en-de.de.tok.atat is the reference, not rebuilt; the label says whose."""
    atat = write(tmp_path / "en-de.de.tok.atat", ["Die US ##AT##-##AT## Regierung sagt , er sei müde ."])
    lines = ["H-0\t-0.1\tDie US @-@ Regierung sagt , er sei müde ."]
    results, _ = score_bleu.score(lines, None, None, "de", ["retokenized"], atat_ref_path=atat)
    record = results["scores"]["retokenized"]
    assert record["score"] == 100.0 and "their released raw-test/en-de.de.tok.atat" in record["label"]
    assert record["length_ratio"] == 1.0 and results["atat_ref"] == str(atat)
    other = write(tmp_path / "other.atat", ["Die Regierung sagt , er sei sehr müde ."])
    worse, _ = score_bleu.score(lines, None, None, "de", ["retokenized"], atat_ref_path=other)
    assert worse["scores"]["retokenized"]["score"] < 100
    raw = write(tmp_path / "ref.de", ["Die US-Regierung sagt, er sei müde."])
    standin, _ = score_bleu.score(lines, raw, None, "de", ["retokenized"])
    assert "stand-in reference" in standin["scores"]["retokenized"]["label"]


def test_every_bleu_record_has_the_length_ratio(tmp_path: Path) -> None:
    record = score_bleu.bleu_record(["a b c"], ["a b c d"], "none", False, "x")
    assert (record["sys_len"], record["ref_len"], record["length_ratio"]) == (3, 4, 0.75)
    assert record["brevity_penalty"] == round(2.718281828 ** (1 - 4 / 3), 4)
