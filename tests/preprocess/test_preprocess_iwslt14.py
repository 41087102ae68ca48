"""``python -m macaron_preprocess.iwslt14`` on small archives in the exact WIT3 layout, built here."""

from __future__ import annotations

import random
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import mmap_index_length, read_lines, remove_bpe, run_module
from upstream_layouts import IWSLT_TEST_SETS, iwslt_members, iwslt_train_tags, write_tgz

from macaron_preprocess.iwslt14 import ARCHIVE, TRAIN_PREFIX
from macaron_preprocess.iwslt14 import main as iwslt_main
from macaron_preprocess.sources.archives import extract_members, locate_members, verify_tar
from macaron_preprocess.sources.ted_metadata import is_metadata, write_talk_text
from macaron_preprocess.sources.xml_segments import segments
from macaron_preprocess.text.bitext import BitextFiles
from macaron_synthetic.toy_bitext import Lexicon, sentence_pair, sentence_pairs
from macaron_workflow.cli import run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.files import UTF8_BOM
from macaron_workflow.stages import StageRunner

TAG_LIKE_PAIRS = [
    ("Geben Sie <url> in das Feld ein.", "Type the address into the field."),  # tag inside, one side
    ("<url> steht für Adresse.", "URL stands for address."),  # one side *starts* like a metadata line
    ("Die <keywords> dieses Vortrags.", "The keywords of this talk."),
]


def make_talks(n_talks: int, seed: int) -> list[list[tuple[str, str]]]:
    rng = random.Random(seed)
    talks = []
    for _ in range(n_talks):
        lexicon = Lexicon.words()
        talks.append([tuple(reversed(sentence_pair(rng, lexicon))) for _ in range(rng.randint(15, 30))])
    return talks


def make_tests(per_set: int) -> dict[str, list[tuple[str, str]]]:
    tests = {
        name: [(de, en) for en, de in sentence_pairs(per_set, seed=100 + i)]
        for i, name in enumerate(IWSLT_TEST_SETS)
    }
    tests["IWSLT14.TED.tst2010"][0] = ("Das ist’s, Öl!", "That’s it, Oil!")
    return tests


@pytest.fixture(scope="module")
def iwslt_input(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list, dict]:
    talks = make_talks(30, seed=7)
    talks[2][4], talks[5][1], talks[9][0] = TAG_LIKE_PAIRS
    talks[3][2] = ("Ja.", "Well, this is a much longer answer than the German one.")  # ratio-filtered
    tests = make_tests(20)
    raw = tmp_path_factory.mktemp("iwslt_raw")
    write_tgz(raw / "de-en.tgz", iwslt_members(talks, tests))
    return raw, talks, tests


@pytest.fixture(scope="module")
def iwslt_run(
    iwslt_input: tuple[Path, list, dict], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    raw, _, _ = iwslt_input
    out = tmp_path_factory.mktemp("iwslt_out")
    completed = run_module(
        "macaron_preprocess.iwslt14",
        "--dest",
        str(out),
        "--raw-dir",
        str(raw),
        "--bpe-vocab-size",
        "200",
        "--workers",
        "2",
    )
    return out, completed.stdout + completed.stderr


def expected_train_pairs(talks: list[list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """Content pairs in order, minus the one pair the 1.5 ratio filter removes."""
    return [pair for talk in talks for pair in talk if pair[0] != "Ja."]


@pytest.mark.slow  # reads the module's whole macaron-preprocess-iwslt14 run
def test_counts_valid_every_23rd_and_test_concatenation(iwslt_input, iwslt_run) -> None:
    _, talks, tests = iwslt_input
    out, log = iwslt_run
    content = expected_train_pairs(talks)
    n_titles = len(talks) * 2  # <title> and <description> lines stay as text (tags stripped)
    total = len(content) + n_titles
    n_valid = total // 23
    counts = {"train": total - n_valid, "valid": n_valid, "test": 5 * 20}
    for split, n in counts.items():
        for lang in ("de", "en"):
            for folder in ("raw", "tok", "bpe"):
                assert len(read_lines(out / folder / f"{split}.{lang}")) == n, (folder, split, lang)
            assert mmap_index_length(out / f"{split}.de-en.{lang}.idx") == n
            assert (out / f"{split}.de-en.{lang}.bin").stat().st_size > 0  # --dest is the data-bin
    assert (out / "dict.de.txt").read_bytes() == (out / "dict.en.txt").read_bytes()
    test_en = read_lines(out / "raw" / "test.en")
    assert test_en == [en for name in IWSLT_TEST_SETS for _, en in tests[name]]  # order of the five sets
    assert "1 pair(s) where only one side looked like a metadata tag" in log
    assert f"train.tags: {total + 4 * len(talks) + 1} input pairs" in log


@pytest.mark.slow  # reads the module's whole macaron-preprocess-iwslt14 run
def test_alignment_survives_tag_like_content(iwslt_run) -> None:
    out, _ = iwslt_run
    raw_de, raw_en = read_lines(out / "raw" / "train.de"), read_lines(out / "raw" / "train.en")
    raw_de += read_lines(out / "raw" / "valid.de")
    raw_en += read_lines(out / "raw" / "valid.en")
    pairs = dict(zip(raw_de, raw_en, strict=True))
    for de, en in TAG_LIKE_PAIRS:
        assert pairs[de] == en
    assert pairs["Talk 1 title de"] == "Talk 1 title en"  # <title> stripped, kept as a pair
    assert not any(line.startswith(("<url>", "<talkid>", "<speaker>", "<keywords>")) for line in raw_en)
    # every generated pair has the same number of words on both sides: a single shifted line breaks this
    for de, en in zip(
        read_lines(out / "tok" / "train.de"), read_lines(out / "tok" / "train.en"), strict=True
    ):
        if de.endswith(", nicht wahr ?"):
            assert len(de.split()) == len(en.split()) - 1, (de, en)  # "is n't" vs "nicht"


@pytest.mark.slow  # reads the module's whole macaron-preprocess-iwslt14 run
def test_tokenized_lowercased_escaped_like_the_perl_scripts(iwslt_run) -> None:
    out, _ = iwslt_run
    test_de, test_en = read_lines(out / "tok" / "test.de"), read_lines(out / "tok" / "test.en")
    start = 2 * 20  # tst2010 is the third set
    assert test_en[start] == "that &apos;s it , oil !"  # ’ -> ' (upstream sed), escaping, lowercasing
    assert test_de[start] == "das ist &apos; s , öl !"  # Moses splits ' off on both sides for German
    assert read_lines(out / "raw" / "test.en")[start] == "That’s it, Oil!"  # raw reference untouched
    assert "geben sie &lt; url &gt; in das feld ein ." in read_lines(out / "tok" / "train.de") + read_lines(
        out / "tok" / "valid.de"
    )


@pytest.mark.slow  # reads the module's whole macaron-preprocess-iwslt14 run
def test_bpe_round_trip(iwslt_run) -> None:
    out, _ = iwslt_run
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            pieces = read_lines(out / "bpe" / f"{split}.{lang}")
            assert [remove_bpe(line) for line in pieces] == read_lines(out / "tok" / f"{split}.{lang}")


def test_extracted_folder_is_used_in_place(iwslt_input, tmp_path: Path) -> None:
    raw, _, _ = iwslt_input
    shutil.unpack_archive(raw / "de-en.tgz", tmp_path / "raw")
    runner = StageRunner(tmp_path / ".stages")
    for raw_dir in (tmp_path / "raw", tmp_path / "raw" / "de-en"):  # the folder holding de-en/, or de-en/
        located = locate_members(ARCHIVE, raw_dir, tmp_path / "work", runner)
        assert located[f"{TRAIN_PREFIX}.de"] == tmp_path / "raw" / "de-en" / "train.tags.de-en.de"
        assert len(located) == len(ARCHIVE.members) == 12
    assert not (tmp_path / "work").exists()  # nothing copied or extracted
    (tmp_path / "raw" / "de-en" / "IWSLT14.TED.tst2012.de-en.en.xml").unlink()
    with pytest.raises(UserError, match=r"holds neither de-en\.tgz nor its extracted files") as info:
        locate_members(ARCHIVE, tmp_path / "raw" / "de-en", tmp_path / "work", runner)  # and no archive
    assert "IWSLT14.TED.tst2012.de-en.en.xml" in str(info.value)


# ----------------------------------------------------------------------------- pairwise metadata
def test_per_side_grep_would_misalign_but_pairwise_removal_does_not(tmp_path: Path) -> None:
    talks = [[("Eins.", "One."), ("Geben Sie <url> ein.", "Type it."), ("Drei.", "Three.")]]
    de_lines, en_lines = iwslt_train_tags(talks)
    upstream_de = [line for line in de_lines if "<url>" not in line and "<talkid>" not in line]
    upstream_en = [line for line in en_lines if "<url>" not in line and "<talkid>" not in line]
    assert len(upstream_de) != len(upstream_en)  # the bug this module exists for
    source = BitextFiles.from_prefix(tmp_path / "tags", "de", "en")
    source.src.write_text("\n".join(de_lines) + "\n")
    source.tgt.write_text("\n".join(en_lines) + "\n")
    target = BitextFiles.from_prefix(tmp_path / "text", "de", "en")
    report = write_talk_text(source, target)
    assert report["metadata_pairs_dropped"] == 4
    assert list(zip(read_lines(target.src), read_lines(target.tgt), strict=True))[2:] == talks[0]
    assert is_metadata(b"  <doc docid='1'>") and is_metadata(b"</doc>") and not is_metadata(b"a <url> b")


def test_segments_are_extracted_like_grep_and_sed(tmp_path: Path) -> None:
    xml = tmp_path / "set.xml"
    xml.write_text('<doc>\n<seg id="1">  Hello there. </seg>\n<title>x</title>\n<seg id="22">Bye</seg>  \n')
    assert list(segments(xml)) == [b"Hello there.", b"Bye"]


# --------------------------------------------------------------------------------------- bad input
@pytest.fixture
def good_archive(tmp_path: Path) -> Path:
    return write_tgz(tmp_path / "raw" / "de-en.tgz", iwslt_members(make_talks(3, seed=1), make_tests(3)))


def test_truncated_archive_is_reported_and_leaves_nothing(good_archive: Path, tmp_path: Path) -> None:
    data = good_archive.read_bytes()
    good_archive.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="truncated or corrupt"):
        verify_tar(good_archive)
    result = run_iwslt("--dest", str(tmp_path / "o"), "--raw-dir", str(good_archive.parent))
    assert result.returncode == 2 and "truncated or corrupt" in result.stderr
    assert "Traceback" not in result.stderr
    leftovers = [p for p in (tmp_path / "o").rglob("*") if p.is_file()]
    assert leftovers == [], leftovers


def test_corrupt_archive_is_reported(good_archive: Path, tmp_path: Path) -> None:
    good_archive.write_bytes(b"this is not a gzip file at all" * 100)
    result = run_iwslt("--dest", str(tmp_path / "o"), "--raw-dir", str(good_archive.parent))
    assert result.returncode == 2 and f"archive {good_archive} is truncated or corrupt" in result.stderr


def test_missing_members_are_all_listed(tmp_path: Path) -> None:
    members = iwslt_members(make_talks(3, seed=1), make_tests(3))
    del members["de-en/IWSLT14.TED.tst2011.de-en.en.xml"], members["de-en/train.tags.de-en.de"]
    archive = write_tgz(tmp_path / "de-en.tgz", members)
    wanted = {
        name: tmp_path / "x" / name.replace("/", "_") for name in [*members, "de-en/train.tags.de-en.de"]
    }
    (tmp_path / "x").mkdir()
    with pytest.raises(UserError, match=r"lacks expected files:\n  de-en/train\.tags\.de-en\.de$"):
        extract_members(archive, wanted)
    result = run_iwslt("--dest", str(tmp_path.parent / f"{tmp_path.name}-o"), "--raw-dir", str(tmp_path))
    assert result.returncode == 2
    assert "de-en/IWSLT14.TED.tst2011.de-en.en.xml" in result.stderr
    assert "de-en/train.tags.de-en.de" in result.stderr


def test_raw_dir_without_the_archive(tmp_path: Path) -> None:
    result = run_iwslt("--dest", str(tmp_path.parent / f"{tmp_path.name}-o"), "--raw-dir", str(tmp_path))
    assert result.returncode == 2 and "holds neither de-en.tgz nor its extracted files" in result.stderr


def test_train_tags_with_different_line_counts(tmp_path: Path) -> None:
    members = iwslt_members(make_talks(3, seed=1), make_tests(3))
    members["de-en/train.tags.de-en.en"] += b"one extra line\n"
    write_tgz(tmp_path / "de-en.tgz", members)
    result = run_iwslt("--dest", str(tmp_path.parent / f"{tmp_path.name}-o"), "--raw-dir", str(tmp_path))
    assert result.returncode == 2
    assert "train.tags.de-en.de has" in result.stderr and "train.tags.de-en.en has" in result.stderr
    n_de = members["de-en/train.tags.de-en.de"].count(b"\n")
    assert f"has {n_de} lines but" in result.stderr and f"has {n_de + 1} lines" in result.stderr


def test_unwritable_destination(good_archive: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        target = locked / "out" if not _is_root() else Path("/proc/iwslt-out")
        result = run_iwslt("--dest", str(target), "--raw-dir", str(good_archive.parent))
    finally:
        locked.chmod(stat.S_IRWXU)
    assert result.returncode == 2 and f"destination {target} is not writable" in result.stderr


def run_iwslt(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI expecting failure (returns the completed process)."""
    return run_module("macaron_preprocess.iwslt14", *args, check=False)


def _is_root() -> bool:
    import os

    return os.geteuid() == 0


@pytest.mark.parametrize(
    "member, what",
    [
        ("train.tags.de-en.en", "IWSLT training files"),
        ("IWSLT14.TED.tst2011.de-en.de.xml", "evaluation files for test-segments"),
    ],
)
def test_an_unreadable_extracted_file_is_named(
    good_archive: Path,
    tmp_path: Path,
    member: str,
    what: str,
    deny_reading: Callable[[Path], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    shutil.unpack_archive(good_archive, tmp_path / "extracted")
    unreadable = tmp_path / "extracted" / "de-en" / member
    deny_reading(unreadable)  # in-process: chmod 000 does not stop root, who runs the tests
    with pytest.raises(SystemExit) as caught:
        run_cli(lambda: iwslt_main(["--dest", str(tmp_path / "o"), "--raw-dir", str(tmp_path / "extracted")]))
    assert caught.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == f"error: cannot read {unreadable} (one of the {what}): Permission denied (EACCES)"


def test_a_byte_order_mark_does_not_hide_talk_metadata(tmp_path: Path) -> None:
    talks = [[("Eins.", "One."), ("Zwei.", "Two.")]]
    de_lines, en_lines = iwslt_train_tags(talks)
    reports = {}
    for variant, bom in (("plain", b""), ("bom", UTF8_BOM)):
        source = BitextFiles.from_prefix(tmp_path / f"{variant}.tags", "de", "en")
        source.src.write_bytes(bom + ("\n".join(de_lines) + "\n").encode())  # starts with "<url>"
        source.tgt.write_bytes(bom + ("\n".join(en_lines) + "\n").encode())
        target = BitextFiles.from_prefix(tmp_path / f"{variant}.text", "de", "en")
        reports[variant] = write_talk_text(source, target)
        assert read_lines(target.src)[-2:] == ["Eins.", "Zwei."]
        assert not target.src.read_bytes().startswith(UTF8_BOM)
    assert reports["bom"] == reports["plain"]
    assert reports["bom"]["one_sided_tag_lines_kept"] == 0
