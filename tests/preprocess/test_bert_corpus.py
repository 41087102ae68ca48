"""``python -m macaron_preprocess.bert_corpus`` end to end on generated inputs in the real formats: a
multistream English-Wikipedia export (siteinfo, namespaces, redirects, templates, tables, references,
headings, lists, disambiguation pages) with its index, numbered part files, and a BookCorpus-style books
directory."""

from __future__ import annotations

import bz2
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, run_module

from macaron_synthetic.wiki.books import write_books
from macaron_synthetic.wiki.dump import write_dump
from macaron_synthetic.wiki.markers import MARKERS

KINDS = {"article": 24, "stub": 2, "empty": 1, "redirect": 5, "other_namespace": 4, "disambiguation": 2}
ARTICLE_WORD = re.compile(r"\bartword(\d+)\b")
BOOK_WORD = re.compile(r"\bbookword(\d+)\b")


def build(dest: Path, *args: str, check: bool = True, workers: int = 2):
    return run_module(
        "macaron_preprocess.bert_corpus",
        "--dest",
        str(dest),
        "--workers",
        str(workers),
        "--bpe-vocab-size",
        "600",
        "--valid-ratio",
        "0.1",
        *args,
        check=check,
        timeout=300,
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("bert_inputs")
    dump = root / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    manifest = write_dump(dump, kinds=KINDS, seed=3, pages_per_stream=4)
    books = root / "books"
    write_books(books, 5, seed=1)
    (books / "scan.txt").write_bytes(b"%PDF-1.4\x00\x00\x01binary")
    (books / "latin1.txt").write_bytes("Un caf\xe9. Deux caf\xe9s.\n".encode("latin-1"))
    return {"root": root, "dump": dump, "manifest": manifest, "books": books}


@pytest.fixture(scope="module")
def built(inputs: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    dest = tmp_path_factory.mktemp("bert_out") / "data-bin"
    proc = build(dest, "--wikipedia", str(inputs["dump"]), "--bookcorpus", str(inputs["books"]))
    return {"dest": dest, "proc": proc, "summary": json.loads((dest / "summary.json").read_text())}


def documents(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n\n") and "\n\n\n" not in text
    return text[:-2].split("\n\n")


@pytest.mark.slow  # the module's corpus build: ~13 s (out of --quick)
def test_document_counts_and_drops_match_the_dump(inputs: dict, built: dict) -> None:
    manifest, wiki = inputs["manifest"], built["summary"]["sources"]["wikipedia"]
    assert wiki["train"]["documents"] + wiki["valid"]["documents"] == len(manifest.articles)
    assert wiki["dropped"] == {
        "redirect": len(manifest.redirects),
        "other_namespace": len(manifest.other_namespace),
        "disambiguation": len(manifest.disambiguation),
        "empty": len(manifest.empty_articles),
        "too_short": len(manifest.stubs),
    }
    assert wiki["pages"] == sum(KINDS.values())
    books = built["summary"]["sources"]["bookcorpus"]
    assert books["train"]["documents"] + books["valid"]["documents"] == 6  # 5 + the Latin-1 book, decoded
    assert books["skipped_files"] == {"binary": 1}
    assert books["decoded_files"] == {"cp1252": 1, "latin-1": 0}
    assert books["decoded_file_names"] == ["latin1.txt (cp1252)"]
    table = built["proc"].stdout
    assert "wikipedia dropped: redirect 5, other namespace 4, disambiguation 2, empty 1, too short 2" in table
    assert "bookcorpus files skipped (not text): binary 1" in table
    assert "bookcorpus files not UTF-8, decoded as: cp1252 1 (e.g. latin1.txt (cp1252))" in table
    text = "".join((built["dest"] / "text" / f"{split}.txt").read_text() for split in ("train", "valid"))
    assert "un café ." in text  # the Latin-1 book's text, decoded


@pytest.mark.slow
def test_text_is_lowercased_prose_without_markup_or_headings(built: dict) -> None:
    text = "".join((built["dest"] / "text" / f"{split}.txt").read_text() for split in ("train", "valid"))
    assert text == text.lower()
    for marker in MARKERS:
        assert marker.lower() not in text, marker
    for leftover in ("[[", "]]", "{{", "}}", "<ref", "&amp;", "&nbsp;", "thumb|", "{|", "|-"):
        assert leftover not in text, leftover
    assert all(line.count(" ") >= 1 for line in text.splitlines() if line)  # sentences, not bare headings


@pytest.mark.slow
def test_the_split_is_by_document_and_counted(built: dict) -> None:
    dest, summary = built["dest"], built["summary"]
    owners = {}
    for split in ("train", "valid"):
        docs = documents(dest / "text" / f"{split}.txt")
        assert len(docs) == summary["total"][split]["documents"]
        assert sum(doc.count("\n") + 1 for doc in docs) == summary["total"][split]["sentences"]
        for doc in docs:
            if doc == "un café .\ndeux cafés .":  # the Latin-1 book (no marker word), decoded
                owners["latin1"] = split
                continue
            words = set(ARTICLE_WORD.findall(doc)) | {f"b{n}" for n in BOOK_WORD.findall(doc)}
            assert len(words) == 1, doc[:200]  # one source document per document
            (word,) = words
            assert word not in owners, f"document {word} is in both splits"
            owners[word] = split
    assert "valid" in owners.values() and "train" in owners.values() and "latin1" in owners


@pytest.mark.slow
def test_fairseq_loads_sentences_and_document_boundaries(built: dict) -> None:
    from fairseq.data import Dictionary, data_utils
    from fairseq.data.legacy.block_pair_dataset import BlockPairDataset

    dest = built["dest"]
    dictionary = Dictionary.load(str(dest / "dict.txt"))

    class PairSymbols:  # BlockPairDataset wants cls/sep/mask ids: RoBERTa-style <s>, </s>, appended <mask>
        def __init__(self, d: Dictionary) -> None:
            self.d, self.mask_id = d, len(d)

        def pad(self) -> int:
            return self.d.pad()

        def eos(self) -> int:
            return self.d.eos()

        def cls(self) -> int:
            return self.d.bos()

        def sep(self) -> int:
            return self.d.eos()

        def mask(self) -> int:
            return self.mask_id

    for split in ("train", "valid"):
        dataset = data_utils.load_indexed_dataset(str(dest / split), dictionary, "mmap")
        bpe_lines = (dest / "work" / "bpe" / f"{split}.bpe").read_text(encoding="utf-8").split("\n")[:-1]
        assert len(dataset) == len(bpe_lines)
        for item, line in zip(dataset, bpe_lines, strict=True):
            assert dictionary.string(item) == line  # empty line <-> an item holding only </s>
        pairs = BlockPairDataset(dataset, PairSymbols(dictionary), dataset.sizes, 128, break_mode="doc")
        assert len(pairs.block_indices) == built["summary"]["total"][split]["documents"]


@pytest.mark.slow
def test_rerun_skips_every_stage(inputs: dict, built: dict) -> None:
    before = {p: p.stat().st_mtime_ns for p in built["dest"].rglob("*") if p.is_file()}
    proc = build(built["dest"], "--wikipedia", str(inputs["dump"]), "--bookcorpus", str(inputs["books"]))
    assert proc.stderr.count("up to date, skipped") == 7
    after = {
        p: p.stat().st_mtime_ns for p in built["dest"].rglob("*") if p.is_file() and p.name != "summary.json"
    }
    assert all(before[p] == t for p, t in after.items())


@pytest.mark.slow
def test_part_files_extracted_as_shards_then_merged_equal_one_run(inputs: dict, tmp_path: Path) -> None:
    parts = [
        tmp_path / "enwiki-20261101-pages-articles1.xml-p1p500.bz2",
        tmp_path / "enwiki-20261101-pages-articles2.xml-p501p1000.bz2",
    ]
    write_dump(parts[0], kinds=KINDS, seed=5, start_id=1)
    write_dump(parts[1], kinds=KINDS, seed=6, start_id=501)
    sharded = tmp_path / "sharded"
    for part in parts:  # as two Slurm array tasks would
        build(sharded, "--wikipedia", str(part), "--extract-only", workers=1)
    merged = build(sharded, "--wikipedia", *map(str, parts))
    assert merged.stderr.count("up to date, skipped") == 2  # the two extract stages
    single = tmp_path / "single"
    build(single, "--wikipedia", *map(str, parts), workers=1)
    for name in ("text/train.txt", "text/valid.txt", "dict.txt", "train.bin", "valid.bin"):
        assert (sharded / name).read_bytes() == (single / name).read_bytes(), name


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_truncated_dump_fails_with_its_name_and_marks_nothing_done(inputs: dict, tmp_path: Path) -> None:
    data = inputs["dump"].read_bytes()
    cut = tmp_path / "enwiki-cut-pages-articles-multistream.xml.bz2"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    proc = build(tmp_path / "out", "--wikipedia", str(cut), check=False)
    assert proc.returncode == 2, proc.stderr
    where = r"error: .*enwiki-cut-pages-articles-multistream\.xml\.bz2: .*after [\d,]+ compressed bytes"
    assert re.search(where, proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "out" / ".stages").glob("extract-*.json"))
    assert not list((tmp_path / "out").rglob("train.txt"))


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _mkdir(path: Path) -> Path:
    path.mkdir()
    (path / "cover.jpg").write_bytes(b"\xff\xd8")
    return path


BAD_INPUTS = [
    (lambda d: [], r"give at least one source"),
    (lambda d: ["--wikipedia", str(_write(d / "feed.xml", "<rss><item/></rss>"))], r"not a MediaWiki XML"),
    (lambda d: ["--wikipedia", str(_write(d / "x.xml.bz2", b"BZh9garbage"))], r"x\.xml\.bz2: invalid bz2"),
    (lambda d: ["--bookcorpus", str(_mkdir(d / "empty"))], r"holds no \.txt files"),
    (lambda d: ["--wikipedia", str(d / "missing.xml.bz2")], r"missing\.xml\.bz2"),
]


@pytest.mark.parametrize(("make", "message"), BAD_INPUTS)
def test_bad_input_is_a_clear_error(tmp_path: Path, make, message: str) -> None:
    proc = build(tmp_path / "out", *make(tmp_path), check=False)
    assert proc.returncode == 2 and re.search(message, proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr


def test_multistream_index_is_used_when_present(inputs: dict) -> None:
    index = inputs["dump"].with_name(inputs["dump"].name.replace(".xml.bz2", "-index.txt.bz2"))
    assert index.exists()
    first = bz2.decompress(index.read_bytes()).decode().splitlines()[0]
    assert re.fullmatch(r"\d+:\d+:.+", first)


def _default_sigint() -> None:
    # background jobs start with SIGINT ignored (see tests/preprocess/test_preprocess_resume.py)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_during_extraction_leaves_nothing_trusted_and_a_rerun_completes(tmp_path: Path) -> None:
    dump = tmp_path / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    manifest = write_dump(dump, target_bytes=4_000_000, seed=9, pages_per_stream=20)
    dest = tmp_path / "out"
    args = ["--dest", str(dest), "--wikipedia", str(dump), "--workers", "2", "--bpe-vocab-size", "600"]
    process = subprocess.Popen(
        [sys.executable, "-m", "macaron_preprocess.bert_corpus", *args],
        cwd=REPO,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    extract_dir = dest / "work" / "extract" / f"wikipedia-{dump.name}"
    deadline = time.monotonic() + 60
    while not list(extract_dir.glob(".train.txt.tmp-*")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "extraction did not start"
        time.sleep(0.01)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted: completed stages are kept" in stderr and "Traceback" not in stderr
    assert not list(dest.rglob("*.tmp-*")) and not (extract_dir / "train.txt").exists()
    assert not list((dest / ".stages").glob("extract-*.json"))
    resumed = run_module("macaron_preprocess.bert_corpus", *args, timeout=300)
    summary = json.loads((dest / "summary.json").read_text())
    assert summary["total"]["train"]["documents"] + summary["total"]["valid"]["documents"] == len(
        manifest.articles
    ), resumed.stderr
    assert not list(dest.rglob("*.tmp-*"))
