"""End-to-end tests of ``python -m macaron_preprocess.custom`` on tiny generated corpora."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import mmap_index_length, read_lines, remove_bpe, run_module

from macaron_preprocess.custom import main as custom_main
from macaron_synthetic.toy_bitext import sentence_pairs, write_bitext
from macaron_workflow.cli import run_cli
from macaron_workflow.files import UTF8_BOM

SPLITS = ("train", "valid", "test")


def custom_args(raw: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--src",
        "en",
        "--tgt",
        "de",
        "--trainpref",
        str(raw / "train"),
        "--validpref",
        str(raw / "valid"),
        "--testpref",
        str(raw / "test"),
        "--dest",
        str(out),
        "--bpe-vocab-size",
        "150",
        "--workers",
        "2",
        *extra,
    ]


@pytest.fixture(scope="module")
def custom_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("custom")
    raw = root / "RAW"
    train = sentence_pairs(1500, seed=1)
    train.append(("This one is far too long for its short partner " * 3, "Kurz."))  # ratio filter
    train.append(("   ", "Nur Leerzeichen links."))  # whitespace-only side: dropped pairwise
    write_bitext(raw / "train", train)
    with open(raw / "train.en", "ab") as en, open(raw / "train.de", "ab") as de:
        en.write(b"Invalid \xc3\x28 UTF-8 here.\n")  # dropped together with its partner
        de.write(b"Gutes UTF-8 hier.\n")
    write_bitext(
        raw / "valid",
        [*sentence_pairs(60, seed=2), ("Short.", "Dies ist ein viel zu langer Satz, aber nie gefiltert.")],
    )
    write_bitext(raw / "test", sentence_pairs(50, seed=3))
    out = root / "OUT"
    completed = run_module("macaron_preprocess.custom", *custom_args(raw, out, "--lowercase"))
    return raw, out, completed.stdout + completed.stderr


@pytest.mark.slow  # reads the module's whole macaron-preprocess-custom run
def test_outputs_exist_and_sides_align(custom_run: tuple[Path, Path, str]) -> None:
    _, out, _ = custom_run
    expected = {"train": 1500, "valid": 61, "test": 50}
    for split in SPLITS:
        for folder in ("raw", "tok", "bpe"):
            en, de = read_lines(out / folder / f"{split}.en"), read_lines(out / folder / f"{split}.de")
            assert len(en) == len(de) == expected[split], (folder, split, len(en), len(de))
        for lang in ("en", "de"):
            assert mmap_index_length(out / f"{split}.en-de.{lang}.idx") == expected[split]
            assert (out / f"{split}.en-de.{lang}.bin").stat().st_size > 0
    assert (out / "dict.en.txt").read_bytes() == (out / "dict.de.txt").read_bytes()
    assert (out / "spm.model").stat().st_size > 0 and (out / "spm.vocab").is_file()


@pytest.mark.slow  # reads the module's whole macaron-preprocess-custom run
def test_dest_is_the_data_bin_as_for_iwslt14_and_wmt14(custom_run: tuple[Path, Path, str]) -> None:
    """One convention for the three preprocessors: ``--dest`` is the data-bin (``fairseq-train DEST``), its
    text in ``raw/``, ``tok/``, ``bpe/`` beside the binaries; no ``DEST/data-bin``."""
    _, out, log = custom_run
    assert sorted(path.name for path in out.glob("dict.*.txt")) == ["dict.de.txt", "dict.en.txt"]
    binaries = {path.name for path in out.glob("*.en-de.*.*")}
    assert binaries == {
        f"{s}.en-de.{lang}.{ext}" for s in SPLITS for lang in ("en", "de") for ext in ("bin", "idx")
    }
    assert not (out / "data-bin").exists()
    assert f"data-bin: {out}\n" in log


@pytest.mark.slow  # reads the module's whole macaron-preprocess-custom run
def test_raw_copies_the_kept_pairs_and_tok_is_lowercased(custom_run: tuple[Path, Path, str]) -> None:
    raw, out, _ = custom_run
    kept_en = read_lines(out / "raw" / "train.en")
    raw_en = (raw / "train.en").read_bytes().split(b"\n")
    assert kept_en == [line.decode() for line in raw_en[:1500]]  # the three bad pairs at the end are gone
    assert read_lines(out / "raw" / "valid.de")[-1] == "Dies ist ein viel zu langer Satz, aber nie gefiltert."
    tok = read_lines(out / "tok" / "train.en")
    assert tok[0] == tok[0].lower() and tok[0].endswith(", isn 't it ?")


@pytest.mark.slow  # reads the module's whole macaron-preprocess-custom run
def test_bpe_round_trip_gives_tokenized_text(custom_run: tuple[Path, Path, str]) -> None:
    _, out, _ = custom_run
    for split in SPLITS:
        for lang in ("en", "de"):
            bpe = read_lines(out / "bpe" / f"{split}.{lang}")
            assert [remove_bpe(line) for line in bpe] == read_lines(out / "tok" / f"{split}.{lang}")
            assert any(len(line.split()) > len(remove_bpe(line).split()) for line in bpe)  # really split


@pytest.mark.slow  # reads the module's whole macaron-preprocess-custom run
def test_summary_reports_counts_and_drops(custom_run: tuple[Path, Path, str]) -> None:
    _, _, log = custom_run
    train_row = next(line for line in log.splitlines() if line.startswith("train "))
    assert train_row.split()[:6] == ["train", "1503", "1500", "1500", "1500", "1500"]
    assert "1 empty" in train_row and "1 length/ratio" in train_row and "1 invalid UTF-8" in train_row
    assert "dropped 1 pair(s) with invalid UTF-8" in log and "train.en:1503: invalid UTF-8 at byte 8" in log


@pytest.mark.slow  # reads the module's whole macaron-preprocess-custom run
def test_rerun_skips_every_stage(custom_run: tuple[Path, Path, str]) -> None:
    raw, out, _ = custom_run
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and ".stages" not in p.parts}
    rerun = run_module("macaron_preprocess.custom", *custom_args(raw, out, "--lowercase"))
    assert rerun.stderr.count("up to date, skipped") == 8, rerun.stderr
    assert "running" not in rerun.stderr
    assert {p: p.read_bytes() for p in before} == before
    assert "train         1503      1500" in rerun.stdout  # the summary survives a rerun


def test_missing_inputs_are_all_listed(tmp_path: Path) -> None:
    raw = tmp_path / "RAW"
    write_bitext(raw / "train", sentence_pairs(10, seed=1))
    (raw / "train.de").unlink()
    result = run_module("macaron_preprocess.custom", *custom_args(raw, tmp_path / "OUT"), check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = [line.removeprefix(PROG) for line in result.stderr.splitlines() if line.startswith(PROG)]
    listed = line.removeprefix("error: missing input files: ").split("; ")
    expected = ("train.de", "valid.en", "valid.de", "test.en", "test.de")
    assert listed == [str(raw / name) for name in expected]
    assert not (tmp_path / "OUT").exists()  # checked before anything is written


def test_mismatched_valid_is_refused_before_any_work(tmp_path: Path) -> None:
    raw = tmp_path / "RAW"
    for split in SPLITS:
        write_bitext(raw / split, sentence_pairs(10, seed=1))
    (raw / "valid.de").write_text("only one line\n")
    result = run_module("macaron_preprocess.custom", *custom_args(raw, tmp_path / "OUT"), check=False)
    assert result.returncode == 2
    assert f"{raw / 'valid.en'} has 10 lines but {raw / 'valid.de'} has 1 lines" in result.stderr
    assert not (tmp_path / "OUT" / "tok").exists()


def test_unwritable_destination(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a directory")
    write_bitext(tmp_path / "RAW" / "train", sentence_pairs(10, seed=1))
    result = run_module(
        "macaron_preprocess.custom",
        "--src",
        "en",
        "--tgt",
        "de",
        "--trainpref",
        str(tmp_path / "RAW" / "train"),
        "--dest",
        str(blocker / "out"),
        check=False,
    )
    assert result.returncode == 2 and f"destination {blocker / 'out'} is not writable" in result.stderr


# ------------------------------------------------------------------ documented checks, exit status 2
def small_corpus(raw: Path, n_pairs: int = 10) -> Path:
    for split in SPLITS:
        write_bitext(raw / split, sentence_pairs(n_pairs, seed=1))
    return raw


PROG = "python -m macaron_preprocess.custom: "
"""How the command's one error line starts (its program name)."""


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The ``error: ...`` line of a failed run (exactly one, exit status 2, no traceback), after the program
    name that starts it."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line.removeprefix(PROG) for line in result.stderr.splitlines() if line.startswith(PROG)]
    assert len(errors) == 1 and errors[0].startswith("error: "), result.stderr
    return errors[0]


@pytest.mark.parametrize(
    "options, message",
    [
        (["--tgt", "en"], "error: --src and --tgt must differ"),
        (["--ratio", "0.5"], "error: --ratio must be >= 1, got 0.5"),
        (["--max-len", "3", "--min-len", "5"], "error: --max-len 3 is smaller than --min-len 5"),
    ],
    ids=["same-languages", "ratio-below-1", "max-len-below-min-len"],
)
def test_contradictory_options_are_refused_before_any_work(
    tmp_path: Path, options: list[str], message: str
) -> None:
    raw = small_corpus(tmp_path / "RAW")
    result = run_module(
        "macaron_preprocess.custom", *custom_args(raw, tmp_path / "OUT"), *options, check=False
    )
    assert one_error_line(result) == message
    assert not (tmp_path / "OUT").exists()


def test_a_directory_given_as_input_file(tmp_path: Path) -> None:
    raw = small_corpus(tmp_path / "RAW")
    (raw / "valid.de").unlink()
    (raw / "valid.de").mkdir()
    result = run_module("macaron_preprocess.custom", *custom_args(raw, tmp_path / "OUT"), check=False)
    assert one_error_line(result) == (
        f"error: cannot read {raw / 'valid.de'} (one of the input files): it is a directory, not a file"
    )


def test_an_input_without_read_permission(
    tmp_path: Path, deny_reading: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    raw = small_corpus(tmp_path / "RAW")
    deny_reading(raw / "test.en")  # in-process: chmod 000 does not stop root, who runs the tests
    with pytest.raises(SystemExit) as caught:
        run_cli(lambda: custom_main(custom_args(raw, tmp_path / "OUT")))
    assert caught.value.code == 2
    assert capsys.readouterr().err == (
        f"error: cannot read {raw / 'test.en'} (one of the input files): Permission denied (EACCES)\n"
    )


@pytest.mark.parametrize(
    "train, reason",
    [
        ([], "the input has no lines: {raw}/train.en, {raw}/train.de"),
        (
            [("Far too long for its partner, far too long.", "Kurz.")] * 10 + [("   ", "Leer.")] * 2,
            "cleaning dropped 12 of 12 pairs: 2 empty, 10 length/ratio; "
            "the length filter keeps 1-250 tokens per side and a length ratio <= 1.5",
        ),
    ],
    ids=["empty-input", "every-pair-filtered"],
)
def test_no_training_pair_left_names_the_stage_and_why(
    tmp_path: Path, train: list[tuple[str, str]], reason: str
) -> None:
    raw = small_corpus(tmp_path / "RAW")
    write_bitext(raw / "train", train)
    result = run_module("macaron_preprocess.custom", *custom_args(raw, tmp_path / "OUT"), check=False)
    assert one_error_line(result) == (
        f"error: no training pair left after stage tokenize-train ({reason.format(raw=raw)}); "
        "nothing to learn BPE from"
    )
    assert not (tmp_path / "OUT" / "spm.model").exists()


# ------------------------------------------------------------------------------ byte-order marks
def test_a_byte_order_mark_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = {}
    for variant, prefix in (("plain", b""), ("bom", UTF8_BOM)):
        raw = small_corpus(tmp_path / variant / "RAW", n_pairs=40)
        for path in raw.iterdir():
            path.write_bytes(prefix + path.read_bytes())
        out = tmp_path / variant / "OUT"
        custom_main(custom_args(raw, out, "--workers", "1"))  # in-process: fairseq is imported already
        outputs[variant] = {
            path.relative_to(out): path.read_bytes()
            for folder in ("raw", "tok", "bpe", ".")
            for path in sorted((out / folder).glob("*"))
            if path.is_file() and path.suffix != ".log" and not path.name.startswith("spm.")  # spm: its paths
        }
    capsys.readouterr()
    assert (tmp_path / "bom" / "RAW" / "train.en").read_bytes().startswith(UTF8_BOM)
    assert "\ufeff" not in outputs["bom"][Path("dict.en.txt")].decode()
    assert outputs["bom"] == outputs["plain"]


# ------------------------------------------------------------------ the old layout (DEST/data-bin)
def old_layout_run(raw: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``OUT`` as the command wrote it before ``--dest`` was the data-bin: the same run with its data-bin in
    ``OUT/data-bin`` (the layout the old code asked for), in-process."""
    from macaron_preprocess import custom

    with monkeypatch.context() as patch:
        patch.setattr(custom, "legacy_data_bin", lambda dest: dest / "data-bin")
        custom_main(custom_args(raw, out, "--workers", "1"))
    assert (out / "data-bin" / "dict.en.txt").is_file() and not (out / "dict.en.txt").exists()


def test_an_old_layout_dest_is_continued_and_read_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DEST of the old layout: a rerun says so in one line, skips every finished stage and leaves the
    data-bin where it is; what reads a DEST (the quickstart's work directory, the benchmarks,
    :func:`data_bin_of`) reads ``DEST/data-bin``, saying so in one line; ``--force`` writes the new layout."""
    from benchmarks import macaron_real_translation as mrt
    from macaron_pipelines.quickstart.workdir import Workdir
    from macaron_preprocess.text.layout import data_bin_of

    raw, out = small_corpus(tmp_path / "RAW", n_pairs=40), tmp_path / "OUT"
    old_layout_run(raw, out, monkeypatch)
    capsys.readouterr()
    files = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and ".stages" not in p.parts}

    custom_main(custom_args(raw, out, "--workers", "1"))
    err = capsys.readouterr().err
    notices = [line for line in err.splitlines() if "old layout" in line]
    assert notices == [
        f"{out} has the old layout (its data-bin in {out / 'data-bin'}): continuing it there "
        f"(--force redoes it with the data-bin in {out} itself)"
    ], err
    assert "running" not in err and err.count("up to date, skipped") == 8, err
    assert {p: p.read_bytes() for p in files} == files and not (out / "dict.en.txt").exists()

    def read_with_one_line(read: Callable[[], Path]) -> None:
        assert read() == out / "data-bin"
        (line,) = capsys.readouterr().err.splitlines()
        old = out / "data-bin"
        assert line.startswith(
            f"[data-bin] {out} has the old layout of macaron-preprocess-custom (its data-bin in {old}): "
            "reading it there"
        ), line

    read_with_one_line(lambda: data_bin_of(out))
    (tmp_path / "workdir").mkdir()
    out.rename(tmp_path / "workdir" / "data")  # the quickstart's custom DEST
    out = tmp_path / "workdir" / "data"
    read_with_one_line(lambda: Workdir(tmp_path / "workdir").data_bin)
    out = (tmp_path / "workdir" / "data").rename(tmp_path / "workdir" / "pre")  # the benchmarks'
    read_with_one_line(lambda: mrt.data_bin_in(tmp_path / "workdir"))

    custom_main(custom_args(raw, out, "--workers", "1", "--force"))
    err = capsys.readouterr().err
    old = out / "data-bin"
    assert [line for line in err.splitlines() if "old layout" in line] == [
        f"{old}: the data-bin of the old layout, left as it was: --force writes the data-bin into {out} "
        f"itself (delete {old})"
    ]
    assert (out / "dict.en.txt").read_bytes() == (out / "data-bin" / "dict.en.txt").read_bytes()
    assert data_bin_of(out) == out and capsys.readouterr().err == ""
