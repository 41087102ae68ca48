"""The real-text Macaron benchmarks (benchmarks/macaron_real_translation.py, benchmarks/macaron_real_bert.py):
the split by package, parameter parity, log parsing, the resume logic and the Python-docs converter."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from benchmarks import macaron_real_bert as bert
from benchmarks import macaron_real_translation as mt
from benchmarks import real_text_grid as grid
from benchmarks.reports import macaron_real_bert as bert_report
from benchmarks.reports import macaron_real_translation as mt_report
from macaron_preprocess.sources.gettext_catalogs import Catalog
from macaron_preprocess.sources.python_docs import convert, page_paragraphs
from macaron_workflow.grid import RowFile


def catalogs() -> list[Catalog]:
    return [
        Catalog("git", [("commit", "Commit"), ("out of memory", "Speicher erschöpft")]),
        Catalog("coreutils", [("out of memory", "Nicht genug Speicher"), ("copy", "kopieren")]),
        Catalog("wget", [("copy", "Kopie"), ("download", "herunterladen")]),
        Catalog("tar", [("archive", "Archiv")]),
    ]


def test_split_by_package_gives_each_source_to_one_split_test_first() -> None:
    splits = mt.split_by_package(catalogs(), valid_packages=("wget",), test_packages=("coreutils",))
    sources = {name: [s for s, _ in pairs] for name, pairs in splits.items()}
    assert sources["test"] == ["copy", "out of memory"]  # both of coreutils' messages
    assert sources["valid"] == ["download"]  # wget's "copy" is a test message
    assert sources["train"] == ["archive", "commit"]  # git's "out of memory" is a test message
    assert dict(splits["test"])["out of memory"] == "Nicht genug Speicher"  # the test package's translation


def test_split_by_package_refuses_missing_or_overlapping_packages() -> None:
    with pytest.raises(ValueError, match="no readable catalog for \\['gimp'\\]"):
        mt.split_by_package(catalogs(), valid_packages=("gimp",), test_packages=("git",))
    with pytest.raises(ValueError, match="both the validation and the test set: \\['git'\\]"):
        mt.split_by_package(catalogs(), valid_packages=("git",), test_packages=("git", "tar"))


def test_translation_arms_are_within_a_tenth_of_a_percent(tmp_path: Path) -> None:
    (tmp_path / "dict.de.txt").write_text("".join(f"tok{i} {9000 - i}\n" for i in range(7996)))
    counts = mt.parameter_counts(tmp_path, mt.TranslationProtocol())
    difference = mt.check_parity(counts)
    assert 0 < difference < 1e-3  # Macaron: one FFN bias and one LayerNorm more per layer
    assert counts["macaron"] - counts["transformer"] == 6 * 3 * mt.TranslationProtocol().dim
    with pytest.raises(SystemExit, match="differ by"):
        mt.check_parity({"transformer": 1000, "macaron": 1002})


def test_the_arms_differ_only_in_arch_and_ffn_width() -> None:
    p = mt.TranslationProtocol()
    t, m = mt.arm_flags(p, "transformer"), mt.arm_flags(p, "macaron")
    differing = [(a, b) for a, b in zip(t, m, strict=True) if a != b]
    assert differing == [("fixup_transformer_iwslt_de_en", "macaron_small"), ("512", "256"), ("512", "256")]
    train_t = mt.train_argv(Path("D"), Path("S"), p, mt.RunKey("transformer", 2))
    train_m = mt.train_argv(Path("D"), Path("S"), p, mt.RunKey("macaron", 2))
    assert len(train_t) == len(train_m) and train_t[train_t.index("--seed") + 1] == "2"


LOG = """\
2026-01-01 | INFO | fairseq_cli.train | num. shared model params: 2,398,208 (num. trained: 2,398,208)
epoch 001 | valid on 'valid' subset | loss 9.1 | nll_loss 8.9 | ppl 477 | bsz 1 | num_updates 200
epoch 001 | valid on 'valid' subset | loss 8.0 | nll_loss 7.8 | ppl 222 | bsz 1 | num_updates 255
| train | epoch 001 | loss 9.9 | nll_loss 9.7 | ppl 1 | wps 1234.5 | ups 0.2 | num_updates 255
epoch 002 | valid on 'valid' subset | loss 7.0 | nll_loss 6.8 | ppl 111 | bsz 1 | num_updates 400
epoch 002 | valid on 'valid' subset | loss 7.0 | nll_loss 6.8 | ppl 111 | bsz 1 | num_updates 400
epoch 002 | valid on 'valid' subset | loss 6.5 | nll_loss 6.3 | ppl 80 | bsz 1 | num_updates 500
"""


def test_train_log_parsing_counts_a_resumed_point_once_and_finds_epoch_ends() -> None:
    parsed = mt.parse_train_log(LOG)
    assert [pt[1] for pt in parsed["valid_curve"]] == [200, 255, 400, 500]
    assert parsed["params_logged"] == 2398208 and parsed["train_wps_last_epoch"] == 1234.5
    assert mt_report.epoch_ends(parsed["valid_curve"]) == [[1, 255, 8.0, 7.8], [2, 500, 6.5, 6.3]]


def test_a_rerun_skips_finished_runs_and_retries_failed_ones(tmp_path: Path) -> None:
    rows = RowFile(tmp_path)
    ok = {"arm": "macaron", "seed": 1, "rc": 0, "test_bleu": 20.0, "valid_curve": [[1, 10, 5.0, 4.0]]}
    failed = {"arm": "transformer", "seed": 1, "rc": 1, "error": "killed", "valid_curve": []}
    rows.path.write_text(json.dumps(ok) + "\n" + json.dumps(failed) + "\n" + '{"arm": "transfor')  # cut row
    assert len(rows.read()) == 2
    assert rows.done(lambda r: (r["arm"], r["seed"]), mt.finished) == {("macaron", 1): ok}


def test_a_run_resumes_from_its_checkpoint_or_starts_cleanly(tmp_path: Path) -> None:
    run = tmp_path / "macaron-s1"
    save = mt.prepare_run_dir(run)
    (save / "checkpoint_1_200.pt").parent.mkdir(parents=True)
    (save / "checkpoint_1_200.pt").write_text("x")  # no checkpoint_last.pt: killed mid-save
    (run / "train.log").write_text("old log\n")
    (run / "attempts.jsonl").write_text('{"rc": -9, "seconds": 5}\n')
    mt.prepare_run_dir(run)
    assert not save.exists() and not (run / "train.log").exists() and not (run / "attempts.jsonl").exists()
    save.mkdir()
    (save / "checkpoint_last.pt").write_text("x")
    (run / "train.log").write_text("old log\n")
    mt.prepare_run_dir(run)
    assert (save / "checkpoint_last.pt").exists() and (run / "train.log").read_text() == "old log\n"


def test_a_bert_run_dir_without_a_complete_checkpoint_starts_cleanly(tmp_path: Path) -> None:
    from macaron_fairseq.pretrain import checkpoints

    run = tmp_path / "vanilla_bert_small-s1"
    save = bert.prepare_run_dir(run)
    (save / "step50").mkdir(parents=True)
    (save / "step50" / "mp_rank_00_model_states.pt").write_text("cut")  # no manifest: the save was cut
    (save / "train_log.jsonl").write_text('{"step": 1}\n')
    (run / "pretrain.log").write_text("old\n")
    bert.prepare_run_dir(run)
    assert not save.exists() and not (run / "pretrain.log").exists()
    (save / "step50").mkdir(parents=True)
    (save / "step50" / "mp_rank_00_model_states.pt").write_text("whole")
    checkpoints.write_manifest(save / "step50", {"step": 50})
    (save / "train_log.jsonl").write_text('{"step": 1}\n')
    bert.prepare_run_dir(run)
    assert (save / "train_log.jsonl").exists()


def test_bert_small_archs_are_parameter_matched() -> None:
    from macaron_fairseq.param_parity import bert_parity_rows

    (row,) = bert_parity_rows(vocab=8000, archs=["macaron_bert_small"])
    assert row.counterpart == "vanilla_bert_small"
    assert 0 < row.relative_difference < 1e-3
    assert row.macaron_params - row.bert_params == 4 * 3 * 256  # one FFN bias + one LayerNorm per layer


def test_bert_log_parsing_and_config() -> None:
    lines = [json.dumps({"step": s, "tokens_per_second": float(s)}) for s in range(1, 21)]
    lines.insert(
        10, json.dumps({"step": 10, "split": "valid", "mlm_loss": 3.0, "ppl": 8.0, "nsp_accuracy": 60.0})
    )
    lines.append('{"step": 21, "tokens_per')  # cut by a kill
    parsed = bert.parse_log(lines, warmup_steps=10)
    assert parsed["valid_curve"] == [[10, 3.0, 8.0, 60.0]]
    assert parsed["last_step"] == 20 and parsed["tokens_per_second"] == 15.5  # median of steps 11..20
    p = bert.BertProtocol(steps=300, warmup=30)
    config = bert.ds_config(p)
    assert config["scheduler"]["params"]["total_num_steps"] == 300
    assert config["scheduler"]["params"]["warmup_num_steps"] == 30
    argv = bert.pretrain_argv(Path("D"), Path("S"), Path("C"), p, bert.RunKey("macaron", 3))
    assert (
        argv[argv.index("--max-update") + 1] == "300"
        and argv[argv.index("--arch") + 1] == "macaron_bert_small"
    )
    assert "--lr" not in argv and "--optimizer" not in argv  # the DeepSpeed config decides those


PAGE = """<html><head><title>os</title><script>var x = 1;</script></head><body>
<div class="related" role="navigation"><a href="x">previous</a></div>
<div class="body" role="main">
<section id="os"><h1>os — Miscellaneous<a class="headerlink" href="#os">¶</a></h1>
<p>This module provides a <code>portable</code> way
of using operating system dependent functionality.</p>
<div class="highlight-python3"><div class="highlight"><pre>import os
os.getcwd()</pre></div></div>
<dl class="py function"><dt class="sig">os.getcwd()<a class="headerlink" href="#a">¶</a></dt>
<dd><p>Return a string representing the current working directory.</p></dd></dl>
<ul><li><p>first item</p></li><li>second item</li></ul>
<table><tr><td>cell</td></tr></table>
</section></div>
<div class="footer">© Copyright</div></body></html>"""


def test_python_docs_pages_become_prose_paragraphs(tmp_path: Path) -> None:
    assert page_paragraphs(PAGE) == [
        "This module provides a portable way of using operating system dependent functionality.",
        "Return a string representing the current working directory.",
        "first item",
        "second item",
    ]
    html = tmp_path / "html"
    (html / "library").mkdir(parents=True)
    (html / "library" / "os.html").write_text(PAGE)
    (html / "genindex.html").write_text(
        '<div role="main"><h1>Index</h1><table><tr><td>a</td></tr></table></div>'
    )
    (html / "_static").mkdir()
    (html / "_static" / "x.html").write_text(PAGE)
    summary = convert(html, tmp_path / "books")
    assert (summary.pages, summary.documents, summary.skipped_no_prose) == (2, 1, 1)
    text = (tmp_path / "books" / "library" / "os.txt").read_text()
    assert text.split("\n\n")[0].startswith("This module provides") and text.count("\n\n") == 3
    assert not (tmp_path / "books.tmp").exists()


def test_documents_are_counted_between_separator_items() -> None:
    assert bert.count_documents([3, 5, 1, 4, 1, 1, 2, 1]) == 3
    assert bert.count_documents([1, 1]) == 0


def translation_payload(rows: list[dict]) -> dict:
    p = mt.TranslationProtocol()
    corpus = {
        "catalogs": 3,
        "test_packages": ["coreutils"],
        "valid_packages": ["wget"],
        "pairs": {"train": 9},
    }
    results = {
        "protocol": asdict(p),
        "corpus": corpus,
        "parity": 0.00096,
        "kept": {"train": 8, "valid": 2, "test": 2},
        "parameters": {"transformer": 100, "macaron": 101},
        "seeds": [1, 2, 3],
        "rows": rows,
    }
    machine = {
        "date": "d",
        "cpu": "c",
        "usable_cores": 2,
        "load_average_1min_at_start": 1,
        "load_average_1min_at_end": 1,
    }
    return {
        "command": "python -m benchmarks.macaron_real_translation",
        "machine": machine,
        "results": results,
    }


def test_translation_report_gives_per_seed_differences_and_epoch_means() -> None:
    def row(arm: str, seed: int, bleu: float, loss: float) -> dict:
        curve = [[1, 255, loss + 1, loss], [2, 510, loss, loss - 0.5]]
        return {
            "arm": arm,
            "seed": seed,
            "rc": 0,
            "test_bleu": bleu,
            "valid_curve": curve,
            "train_seconds": 600.0,
            "train_wps_last_epoch": 100.0,
        }

    rows = [
        row("transformer", 1, 10.0, 5.0),
        row("macaron", 1, 11.0, 4.9),
        row("transformer", 2, 12.0, 5.2),
        row("macaron", 2, 12.5, 5.0),
    ]
    text = mt_report.render(translation_payload(rows))
    assert text.startswith("Finished runs: 4 of 6 (the grid is still running).")
    assert "| 1 | 10.00 | 11.00 | +1.00 | 5.000 | 4.900 | -0.100 |" in text
    assert "| mean ± std | | | 0.75 ± 0.35 | | | -0.150 ± 0.071 |" in text
    assert "| 2 | 510 | 5.10 ± 0.14 | 4.95 ± 0.07 |" in text  # epoch 2 = the last point of epoch 2
    empty = mt_report.render(translation_payload([]))
    assert empty.startswith("Finished runs: 0 of 6") and "![" not in empty and "— min" not in empty


def test_a_built_data_bin_is_reused_until_a_file_changes(tmp_path: Path) -> None:
    data_bin = tmp_path / "data-bin"
    data_bin.mkdir()
    (data_bin / "dict.txt").write_text("a 1\n")
    assert not grid.data_is_frozen(tmp_path, data_bin)
    grid.freeze_data(tmp_path, data_bin)
    assert grid.data_is_frozen(tmp_path, data_bin)
    (data_bin / "dict.txt").write_text("a 1\nb 1\n")  # rebuilt differently: no longer the grid's data
    assert not grid.data_is_frozen(tmp_path, data_bin)


def test_the_bert_command_passes_no_flag_the_trainer_refuses() -> None:
    from macaron_fairseq.pretrain.flags import refuse_ignored, run_length

    p = bert.BertProtocol()
    argv = bert.pretrain_argv(Path("D"), Path("S"), Path("C"), p, bert.RunKey("vanilla", 1))
    refuse_ignored(argv[3:], "C")  # raises on a flag the DeepSpeed config or the trainer decides
    assert run_length(bert.ds_config(p), "C", p.steps) == p.steps  # --max-update = the schedule's length


def test_the_nsp_floor_is_the_majority_class_of_the_seeds_validation_pairs(tmp_path: Path) -> None:
    """The floor is computed from the pairs the task itself builds for the seed (counted here from the task's
    dataset), the data-bin is left as it was (no pair cache written), and the table shows it per seed."""
    from bert_data_bin import write_data_bin
    from fairseq import options, tasks

    write_data_bin(tmp_path, documents=30)
    before = sorted(p.name for p in tmp_path.iterdir())
    p = bert.BertProtocol(tokens_per_sample=32)
    floors = {}
    for seed in (1, 2):
        floors[str(seed)] = got = bert.valid_nsp_pairs(tmp_path, p, seed)
        argv = [
            str(tmp_path),
            "--task",
            "macaron_bert_pretraining",
            "--arch",
            "vanilla_bert_tiny",
            "--seed",
            str(seed),
            "--tokens-per-sample",
            "32",
            "--pair-cache",
            "off",
        ]
        task = tasks.setup_task(options.parse_args_and_arch(options.get_training_parser(), argv))
        task.load_dataset("valid")
        labels = task.datasets["valid"].nsp_targets.tolist()
        assert got["pairs"] == len(labels) > 20 and got["is_next"] == labels.count(0)
        majority = max(labels.count(0), labels.count(1))
        assert got["majority_accuracy"] == pytest.approx(100 * majority / len(labels))
    assert floors["1"] != floors["2"]  # the pairing depends on the seed
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    row = {"rc": 0, "valid_curve": [[100, 9.0, 500.0, 55.0]]}
    rows = [{**row, "arm": arm, "seed": seed} for arm in bert.ARMS for seed in (1, 2)]
    r = {"rows": rows, "valid_nsp": floors}
    lines = bert_report.per_seed_table(r).splitlines()
    assert lines[0].endswith("| NSP floor (majority class) |")
    f1 = floors["1"]
    label = "IsNext" if 2 * f1["is_next"] >= f1["pairs"] else "NotNext"
    majority = max(f1["is_next"], f1["pairs"] - f1["is_next"])
    assert lines[2].endswith(f"| {f1['majority_accuracy']:.1f} ({majority} of {f1['pairs']} {label}) |")
    del r["valid_nsp"]  # a results file written before the floor was recorded
    assert bert_report.per_seed_table(r).splitlines()[2].endswith("| +0.0 | — |")


def test_a_row_records_the_outputs_length_from_sacrebleu() -> None:
    record = {"sys_len": 900, "ref_len": 1000, "brevity_penalty": 0.8948}
    assert mt.length_fields(record, "test") == {
        "test_sys_len": 900,
        "test_ref_len": 1000,
        "test_length_ratio": 0.9,
        "test_bp": 0.8948,
    }


def test_the_authors_config_records_their_initialisation_and_generates_any_split() -> None:
    from macaron_fairseq.models.authors_init import AUTHORS, FAIRSEQ_012

    assert set(mt.initialisations(mt.TranslationProtocol(config="authors")).values()) == {AUTHORS}
    assert set(mt.initialisations(mt.TranslationProtocol()).values()) == {FAIRSEQ_012}
    argv = mt.generate_argv(Path("D"), Path("C.pt"), mt.TranslationProtocol(), "valid", 0.8)
    assert argv[argv.index("--gen-subset") + 1] == "valid" and argv[argv.index("--lenpen") + 1] == "0.8"
    assert "--lenpen" not in mt.generate_argv(Path("D"), Path("C.pt"), mt.TranslationProtocol())


def test_the_length_penalty_is_chosen_per_arm_on_valid_only() -> None:
    from benchmarks.lenpen_on_valid import choose

    valid = {
        "transformer": {0.6: [20.0, 22.0], 1.0: [21.0, 21.5], 1.4: [19.0, 19.0]},
        "macaron": {0.6: [20.0, 20.0], 1.0: [19.0, 19.0], 1.4: [21.0, 21.0]},
        "tie": {0.6: [20.0], 1.2: [20.0], 1.4: [19.0]},
    }
    assert choose(valid) == {"transformer": 1.0, "macaron": 1.4, "tie": 1.2}


def _row(arm: str, seed: int, bleu: float, nll: float, ratio: float | None = None) -> dict:
    row = {"arm": arm, "seed": seed, "rc": 0, "test_bleu": bleu, "valid_curve": [[1, 1000, nll + 0.5, nll]]}
    return row | ({"test_length_ratio": ratio, "test_bp": min(1.0, ratio)} if ratio else {})


def test_the_paired_block_pairs_seeds_and_says_partial(tmp_path: Path) -> None:
    old = {
        "seeds": [1, 2],
        "arms": list(mt.ARMS),
        "rows": [
            _row("transformer", 1, 20.0, 6.0),
            _row("macaron", 1, 21.0, 5.9),
            _row("transformer", 2, 20.5, 6.1),
            _row("macaron", 2, 20.0, 6.2),
        ],
    }
    (tmp_path / mt_report.PREVIOUS).write_text(json.dumps({"results": old}))
    new = {
        "seeds": [1, 2],
        "arms": list(mt.ARMS),
        "rows": [_row("transformer", 1, 22.0, 5.8, 0.95), _row("macaron", 1, 21.5, 5.7, 0.9)],
    }
    text = mt_report.render_paired({"results": new}, tmp_path)
    assert "1 of 4" not in text and "2 of 4 runs finished — PARTIAL" in text
    assert "| 1 | macaron | 21.00 → 21.50 | 5.900 → 5.700 | not recorded → 0.900 | +1.00 → -0.50 |" in text
    assert "| 2 |" not in text  # seed 2 has not finished in the new grid
    assert "not measured yet" in text
