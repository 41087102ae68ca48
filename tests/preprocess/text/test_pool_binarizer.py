"""The parallel binarizer writes exactly the files of ``fairseq-preprocess --joined-dictionary``.

The corpus is built to hit every place where a re-implementation could drift from fairseq: tied counts
(dictionary order), tokens that only occur in valid/test (``<unk>``, replaced counts), literal special
symbols in the text, empty lines, non-ASCII tokens, Unicode whitespace inside a line, ``\\r\\n`` line
ends, a last line without a newline, and chunk boundaries (tiny chunks, 1 and 2 workers).
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from helpers import fairseq_preprocess_here

from macaron_preprocess.text import pool_binarizer
from macaron_preprocess.text.binarize import binarize, binarized_files, run_binarizer, temporary_path
from macaron_preprocess.text.pool_binarizer import (
    ByteRange,
    binarize_joined,
    count_range,
    encode_text,
    line_ranges,
    read_blocks,
)
from macaron_workflow.errors import UserError
from macaron_workflow.files import count_lines
from macaron_workflow.stages import StageRunner

SPLITS = ("train", "valid", "test")


def tricky_corpus(directory: Path, seed: int = 0) -> dict[str, Path]:
    """BPE-like text for train/valid/test, ``en``/``de`` sides, with the edge cases listed above."""
    rng = random.Random(seed)
    words = [f"▁w{i}" for i in range(40)] + ["▁Straße", "ß", "▁日本", "é", "▁naïve", "<unk>", "</s>", "<pad>"]
    prefixes = {}
    for split, n in (("train", 120), ("valid", 17), ("test", 13)):
        prefix = directory / split
        for lang in ("en", "de"):
            lines = []
            for i in range(n):
                if i % 29 == 5:
                    lines.append("")  # empty line: only eos
                    continue
                line = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
                if split != "train" and i % 4 == 0:
                    line += f" ▁only{split}{i}"  # not in the dictionary -> <unk>
                if i % 11 == 3:
                    line = line.replace(" ", "\u00a0", 1).replace(" ", "\u2028", 1)  # Unicode whitespace
                if i % 13 == 7:
                    line = "  " + line.replace(" ", "\t ", 1) + " "
                lines.append(line)
            ending = "\r\n" if split == "valid" else "\n"
            text = ending.join(lines) + ("" if split == "test" else ending)  # test: no final newline
            Path(f"{prefix}.{lang}").write_text(text, encoding="utf-8")
        prefixes[split] = prefix
    return prefixes


def fairseq_preprocess(prefixes: dict[str, Path], destdir: Path) -> None:
    """fairseq's own preprocess of the three splits (joined dictionary, one worker), in this process."""
    splits = [flag for split in SPLITS for flag in (f"--{split}pref", str(prefixes[split]))]
    flags = ["--source-lang", "en", "--target-lang", "de", *splits, "--destdir", str(destdir)]
    fairseq_preprocess_here([*flags, "--joined-dictionary", "--workers", "1"])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], Path]:
    """The tricky corpus and the data-bin the real fairseq-preprocess makes of it."""
    root = tmp_path_factory.mktemp("tricky")
    prefixes = tricky_corpus(root)
    fairseq_preprocess(prefixes, root / "fairseq")
    return prefixes, root / "fairseq"


def data_files() -> list[str]:
    return [name for name in binarized_files(SPLITS, "en", "de") if name != "preprocess.log"]


@pytest.fixture
def tiny_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many ranges per file and blocks of a few lines: every boundary case happens on the tiny corpus."""
    monkeypatch.setattr(pool_binarizer, "MIN_RANGE_BYTES", 64)
    monkeypatch.setattr(pool_binarizer, "BLOCK_BYTES", 50)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("ranges", ["whole files", "tiny ranges"])
def test_files_identical_to_fairseq_preprocess(
    corpus, tmp_path: Path, workers: int, ranges: str, request: pytest.FixtureRequest
) -> None:
    if ranges == "tiny ranges":
        request.getfixturevalue("tiny_ranges")
    prefixes, reference = corpus
    temps = {
        tmp_path / "final" / name: tmp_path / f"tmp-{name}" for name in binarized_files(SPLITS, "en", "de")
    }
    report = run_binarizer("pool", prefixes, "en", "de", temps, tmp_path, workers)
    assert report["sentences"] == {"train": 120, "valid": 17, "test": 13}
    assert not temporary_path(tmp_path / "binarize").exists()
    for name in data_files():
        assert (tmp_path / f"tmp-{name}").read_bytes() == (reference / name).read_bytes(), name
    log = (tmp_path / "tmp-preprocess.log").read_text()
    assert "valid.de: 17 sents" in log


def test_summaries_count_sentences_tokens_and_replaced_words(corpus, tmp_path: Path, tiny_ranges) -> None:
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    prefixes, reference = corpus
    train = [Path(f"{prefixes['train']}.{lang}") for lang in ("en", "de")]
    jobs = [(Path(f"{prefixes['valid']}.de"), tmp_path / "valid")]
    _, (summary,) = binarize_joined(train, jobs, tmp_path, 2)
    theirs = MMapIndexedDataset(str(reference / "valid.en-de.de"))
    assert summary.sentences == len(theirs) == 17
    assert summary.tokens == sum(len(theirs[i]) for i in range(len(theirs)))
    text = jobs[0][0].read_text(encoding="utf-8")
    assert sum(summary.replaced.values()) == text.count("▁onlyvalid") == 5
    assert sorted(path.name for path in tmp_path.iterdir()) == ["valid.bin", "valid.idx"]  # parts removed


def test_line_ranges_cover_the_file_in_whole_lines(tmp_path: Path) -> None:
    rng = random.Random(3)
    path = tmp_path / "lines.txt"
    lines = ["x" * rng.choice([0, 1, 5, 40, 300]) for _ in range(200)]
    path.write_bytes(("\n".join(lines) + "\n").encode())
    data = path.read_bytes()
    for parts in (1, 2, 3, 7, 50, 1000):
        ranges = line_ranges(path, parts, min_bytes=1)
        assert 1 <= len(ranges) <= parts
        assert ranges[0].start == 0 and ranges[-1].end == len(data)
        for before, after in itertools.pairwise(ranges):
            assert before.end == after.start and data[after.start - 1 : after.start] == b"\n"
            assert after.start < after.end
    assert len(line_ranges(path, 8, min_bytes=len(data))) == 1  # small files are not split


@pytest.mark.parametrize("ending", ["\n", ""])
def test_read_blocks_give_back_every_line_once(tmp_path: Path, ending: str) -> None:
    path = tmp_path / "lines.txt"
    lines = ["ä" * (i % 23) + f" {i}" for i in range(100)] + ["y" * 500]  # one line longer than a block
    path.write_text("\n".join(lines) + ending, encoding="utf-8")
    text, n = "", 0
    for byte_range in line_ranges(path, 5, min_bytes=1):
        for block, lines_in_block in read_blocks(byte_range, block_bytes=16):
            assert block.endswith("\n") or byte_range.end == path.stat().st_size
            text += block
            n += lines_in_block
    assert text == path.read_text(encoding="utf-8")
    assert n == count_lines(path) == 101


def test_invalid_utf8_names_the_file_and_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.de"
    path.write_bytes(b"gut\nsch\xf6n\n")
    with pytest.raises(UserError, match=r"bad.de: invalid UTF-8 at byte 7"):
        count_range(ByteRange(path, 0, path.stat().st_size))


def test_encode_text_matches_fairseq_encode_line(corpus) -> None:
    from fairseq.data import Dictionary

    _, reference = corpus
    dictionary = Dictionary.load(str(reference / "dict.en.txt"))
    lines = ["▁w1 ▁w2", "", "  ▁w3\u00a0<unk>  ▁nowhere </s>\r", "▁日本\u2028é"]
    flat, sizes, replaced = encode_text(
        "\n".join(lines) + "\n", dictionary.indices, dictionary.unk(), dictionary.eos()
    )
    expected = [dictionary.encode_line(line, add_if_not_exist=False).tolist() for line in lines]
    assert sizes == [len(ids) for ids in expected]
    assert flat == [i for ids in expected for i in ids]
    assert replaced == {"▁nowhere": 1}  # a literal <unk> is not "replaced"


def test_count_range_counts_one_eos_per_line(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("a b a\n\nc\u00a0a", encoding="utf-8")
    assert count_range(ByteRange(path, 0, path.stat().st_size)) == {"a": 3, "b": 1, "c": 1, "</s>": 3}


@pytest.mark.slow  # runs fairseq-preprocess (about 9 s)
def test_binarize_stage_with_either_binarizer_gives_the_same_data_bin(corpus, tmp_path: Path) -> None:
    prefixes, _ = corpus
    data = {}
    for binarizer in ("pool", "fairseq-preprocess"):
        dest = tmp_path / binarizer
        report = binarize(
            StageRunner(tmp_path / f"state-{binarizer}"), prefixes, "en", "de", dest, 2, binarizer
        )
        assert report["binarizer"] == binarizer
        data[binarizer] = {name: (dest / name).read_bytes() for name in data_files()}
    assert data["pool"] == data["fairseq-preprocess"]


def test_a_failing_worker_leaves_no_output(corpus, tmp_path: Path) -> None:
    prefixes, _ = corpus
    broken = dict(prefixes)
    broken["test"] = tmp_path / "broken"
    for lang in ("en", "de"):
        Path(f"{broken['test']}.{lang}").write_bytes(b"\xff\xfe\n")
    dest = tmp_path / "out"
    with pytest.raises(UserError, match=r"broken\.en: invalid UTF-8 at byte 0"):
        binarize(StageRunner(tmp_path / "state"), broken, "en", "de", dest, 2)
    assert not dest.exists() or not any(dest.iterdir())


def test_unknown_binarizer_and_missing_train_split_are_clear_errors(corpus, tmp_path: Path) -> None:
    prefixes, _ = corpus
    with pytest.raises(UserError, match="unknown binarizer 'fast'"):
        binarize(StageRunner(tmp_path / "state"), prefixes, "en", "de", tmp_path / "out", 1, "fast")
    valid_only = {"valid": prefixes["valid"]}
    temps = {tmp_path / "x" / name: tmp_path / name for name in binarized_files(["valid"], "en", "de")}
    with pytest.raises(UserError, match="training split, which is missing"):
        run_binarizer("pool", valid_only, "en", "de", temps, tmp_path, 1)


def test_streaming_index_is_fairseqs_index_byte_for_byte_across_blocks_and_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    from macaron_preprocess.text.pool_binarizer import StreamingMMapWriter, sizes_file

    monkeypatch.setattr(StreamingMMapWriter, "SIZES_PER_BLOCK", 1000)  # many blocks, one ending mid-part
    sizes = np.random.default_rng(0).integers(1, 300, size=4321).astype(np.int32)
    writer = StreamingMMapWriter(tmp_path / "streamed.bin", np.uint16)
    for i, (lo, hi) in enumerate([(0, 1500), (1500, 1500), (1500, 4321)]):  # an empty part too
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(np.arange(int(sizes[lo:hi].sum()), dtype=np.uint16).tobytes())
        sizes_file(part).write_bytes(sizes[lo:hi].tobytes())
        writer.add_part(part, hi - lo)
    writer.finalize(tmp_path / "streamed.idx")
    with MMapIndexedDataset.Index.writer(str(tmp_path / "fairseq.idx"), np.uint16) as index:
        index.write(sizes.tolist())
    assert (tmp_path / "streamed.idx").read_bytes() == (tmp_path / "fairseq.idx").read_bytes()
    assert not (tmp_path / "streamed.bin.sizes").exists()
