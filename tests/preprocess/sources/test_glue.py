"""The GLUE reader on a miniature distribution with every quirk of the real files (``glue_layout``), its
errors, and the download of the official distribution from a local server in the upstream layout."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from glue_layout import (
    BOM,
    EXAMPLES,
    FOLDERS,
    QQP_DROPPED_LINES,
    task_files,
    upstream_files,
    write_glue_dir,
)

from macaron_preprocess.sources.glue import (
    BERT_TASKS,
    FORMATS,
    REMOTE_FILES,
    TASK_DOWNLOADS,
    TASKS,
    GlueDataError,
    RemoteFile,
    download_glue,
    read_split,
)


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_glue_dir(tmp_path_factory.mktemp("glue"))


# --- the specs ---------------------------------------------------------------------------------------------


def test_the_specs_name_every_file_of_the_distribution() -> None:
    assert list(TASKS) == ["CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE", "WNLI", "AX"]
    assert set(BERT_TASKS) <= set(TASKS) and "WNLI" not in BERT_TASKS
    pairs = {(name, split) for name, spec in TASKS.items() for split in spec.splits}
    assert pairs == set(FORMATS) == set(EXAMPLES)
    for name, spec in TASKS.items():
        assert spec.directory == FOLDERS[name]
        assert set(spec.dev_splits) | set(spec.test_splits) | ({"train"} if name != "AX" else set()) == set(
            spec.splits
        )
    assert TASKS["MNLI"].dev_splits == ("dev_matched", "dev_mismatched")
    assert TASKS["AX"].labels == TASKS["MNLI"].labels and TASKS["AX"].dev_splits == ()
    assert TASKS["STS-B"].labels is None and not TASKS["CoLA"].pair and not TASKS["SST-2"].pair


# --- reading ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("task", "split"), sorted(EXAMPLES), ids=lambda value: str(value))
def test_every_split_reads_as_written(glue_dir: Path, task: str, split: str) -> None:
    read = read_split(glue_dir, task, split)
    assert read.examples == EXAMPLES[(task, split)]
    if (task, split) == ("QQP", "train"):
        assert (read.dropped, read.dropped_lines) == (2, QQP_DROPPED_LINES)
    else:
        assert (read.dropped, read.dropped_lines) == (0, [])


def test_the_quirks_are_in_the_files_read(glue_dir: Path) -> None:
    """The generated files really have the quirks the reader is tested on."""
    assert (glue_dir / "MRPC" / "train.tsv").read_bytes().startswith(BOM.encode())
    assert (glue_dir / "MRPC" / "dev.tsv").read_bytes().startswith(BOM.encode())
    cola = (glue_dir / "CoLA" / "train.tsv").read_text().splitlines()
    assert len(cola) == len(EXAMPLES[("CoLA", "train")]) and cola[1].split("\t")[2] == "*"
    mnli = sorted((glue_dir / "MNLI").glob("*.tsv"))
    widths = {path.name: len(path.read_text().splitlines()[0].split("\t")) for path in mnli}
    assert widths == {
        "train.tsv": 12,
        "dev_matched.tsv": 16,
        "dev_mismatched.tsv": 16,
        "test_matched.tsv": 10,
        "test_mismatched.tsv": 10,
    }
    quoted = [e for examples in EXAMPLES.values() for e in examples if e.sentence1.count('"') % 2]
    assert len(quoted) >= 8  # unbalanced quotes in most tasks' files
    assert {e.label for e in EXAMPLES[("STS-B", "train")]} == {5.0, 0.75, 3.8}
    assert EXAMPLES[("SST-2", "train")][0].sentence1.endswith(" ")  # kept as in the file


def test_index_is_the_files_index_column_or_the_row_number(glue_dir: Path) -> None:
    assert [e.index for e in read_split(glue_dir, "QQP", "test").examples] == ["0", "1"]
    assert [e.index for e in read_split(glue_dir, "QQP", "dev").examples] == ["201359", "263843"]
    assert [e.index for e in read_split(glue_dir, "SST-2", "train").examples] == ["0", "1", "2"]


def test_crlf_lines_and_a_trailing_empty_line_are_read(tmp_path: Path) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["RTE"])
    path = glue / "RTE" / "dev.tsv"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n") + b"\n")
    assert read_split(glue, "RTE", "dev").examples == EXAMPLES[("RTE", "dev")]


# --- errors -----------------------------------------------------------------------------------------------


def error_of(glue: Path, task: str, split: str) -> str:
    with pytest.raises(GlueDataError) as caught:
        read_split(glue, task, split)
    return str(caught.value)


def test_a_missing_task_folder_is_named(tmp_path: Path) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["CoLA"])
    message = error_of(glue, "AX", "test")
    assert message.startswith(f"GLUE task folder {glue / 'diagnostic'} is missing") and "MNLI/" in message


def test_a_missing_file_is_named_with_what_the_folder_holds(tmp_path: Path) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["MNLI"])
    (glue / "MNLI" / "dev_mismatched.tsv").unlink()
    message = error_of(glue, "MNLI", "dev_mismatched")
    assert message.startswith(f"GLUE file {glue / 'MNLI' / 'dev_mismatched.tsv'} is missing")
    assert "dev_matched.tsv" in message


def test_unknown_task_and_split_list_the_known_ones(glue_dir: Path) -> None:
    assert "the tasks are: CoLA, SST-2" in error_of(glue_dir, "SST2", "dev")
    assert "its splits: train, dev_matched" in error_of(glue_dir, "MNLI", "dev")


def test_a_wrong_header_names_file_expected_and_found_columns(tmp_path: Path) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["STS-B"])
    path = glue / "STS-B" / "dev.tsv"
    lines = path.read_text().split("\n")
    path.write_text("\n".join(["\t".join(lines[0].split("\t")[:-1]), *lines[1:]]))  # the test file's header
    message = error_of(glue, "STS-B", "dev")
    assert message.startswith(f"{path}:1: unexpected header")
    assert "expected 10 columns: index | genre" in message and "| score" in message
    assert "found    9 columns: index | genre" in message


def test_swapped_task_folders_are_caught_by_the_header(tmp_path: Path) -> None:
    """The original download_glue_data.py had QQP's and STS-B's URLs swapped; a mix-up shows here."""
    glue = write_glue_dir(tmp_path / "glue", ["STS-B"])
    (glue / "STS-B").rename(glue / "QQP")
    assert "unexpected header" in error_of(glue, "QQP", "train")


def test_an_unknown_label_names_file_line_and_value(tmp_path: Path) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["MNLI"])
    path = glue / "MNLI" / "dev_matched.tsv"
    path.write_text(path.read_text().replace("\tcontradiction\n", "\tcontradicton\n"))
    message = error_of(glue, "MNLI", "dev_matched")
    assert message == (
        f"{path}:3: unknown MNLI label 'contradicton' (expected one of: contradiction, entailment, neutral)"
    )


def test_a_cola_file_with_a_header_is_an_unknown_label_on_line_1(tmp_path: Path) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["CoLA"])
    path = glue / "CoLA" / "dev.tsv"
    path.write_text("source\tlabel\tmark\tsentence\n" + path.read_text())
    assert error_of(glue, "CoLA", "dev").startswith(f"{path}:1: unknown CoLA label 'label'")


@pytest.mark.parametrize("score", ["5.2", "-0.1", "high", "nan", ""])
def test_a_bad_stsb_score_is_an_error(tmp_path: Path, score: str) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["STS-B"])
    path = glue / "STS-B" / "train.tsv"
    path.write_text(path.read_text().replace("\t0.750\n", f"\t{score}\n"))
    assert error_of(glue, "STS-B", "train") == (
        f"{path}:3: bad STS-B score {score!r} (expected a number in [0, 5])"
    )


@pytest.mark.parametrize(("task", "split"), [("QQP", "dev"), ("QQP", "test"), ("RTE", "train")])
def test_malformed_lines_are_an_error_outside_qqp_train(tmp_path: Path, task: str, split: str) -> None:
    glue = write_glue_dir(tmp_path / "glue", [task])
    path = glue / task / f"{split}.tsv"
    path.write_text(path.read_text() + "1\tonly two columns\n")
    message = error_of(glue, task, split)
    lines = len(path.read_text().splitlines())
    assert message.startswith(f"{path}:{lines}: expected ") and "found 2: 1 | only two columns" in message


def test_not_utf8_and_empty_files(tmp_path: Path) -> None:
    glue = write_glue_dir(tmp_path / "glue", ["WNLI"])
    path = glue / "WNLI" / "test.tsv"
    path.write_bytes(path.read_bytes() + b"9\tcaf\xe9\tx\n")
    assert error_of(glue, "WNLI", "test").startswith(f"{path}:4: not UTF-8 (invalid continuation byte")
    path.write_bytes(b"")
    assert error_of(glue, "WNLI", "test") == (
        f"{path} is empty; expected the header index | sentence1 | sentence2; restore it from the GLUE "
        "distribution (download_glue_data.py, or --download into a new directory)"
    )


def test_a_file_without_examples_or_with_a_nul_byte_is_refused(tmp_path: Path) -> None:
    """#34: a header-only train.tsv gave "train: 0 examples"; a NUL byte passed as text."""
    glue = write_glue_dir(tmp_path / "glue", ["RTE", "CoLA"])
    train = glue / "RTE" / "train.tsv"
    lines = train.read_bytes().split(b"\n")
    train.write_bytes(lines[0] + b"\n")
    assert error_of(glue, "RTE", "train").startswith(f"{train} holds no examples (only its header); restore")
    (glue / "CoLA" / "dev.tsv").write_bytes(b"")  # no header in CoLA's dev.tsv: nothing at all
    assert error_of(glue, "CoLA", "dev").startswith(f"{glue / 'CoLA' / 'dev.tsv'} holds no examples")
    train.write_bytes(b"\n".join([lines[0], lines[1].replace(b"\t", b"\x00\t", 1), *lines[2:]]))
    assert error_of(glue, "RTE", "train").startswith(f"{train}:2: a NUL byte at byte ")


# --- downloading ------------------------------------------------------------------------------------------


class RecordingHandler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        """No access log in the test output."""


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """A local server in the dl.fbaipublicfiles.com layout: (URL, served folder, requested paths)."""
    root = tmp_path / "served"
    root.mkdir()
    requests: list[str] = []
    handler = type("Handler", (RecordingHandler,), {"requests": requests})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root, requests
    finally:
        httpd.shutdown()
        httpd.server_close()


def serve_upstream(root: Path) -> dict[str, RemoteFile]:
    """Put the generated upstream files in place; their RemoteFile entries (sizes and checksums of these)."""
    remote = {}
    for name, (path, data) in upstream_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
        remote[name] = RemoteFile(path, len(data), hashlib.sha256(data).hexdigest())
    return remote


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_served_layout_is_the_one_of_the_real_urls() -> None:
    assert {name: path for name, (path, _) in upstream_files().items()} == {
        name: remote.path for name, remote in REMOTE_FILES.items()
    }
    assert sorted(n for names in TASK_DOWNLOADS.values() for n in names) == sorted(REMOTE_FILES)
    assert list(TASK_DOWNLOADS) == list(TASKS)


def test_download_unpacks_the_exact_layout_and_a_rerun_downloads_nothing(
    mirror: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    url, root, requests = mirror
    remote = serve_upstream(root)
    glue = tmp_path / "glue"
    download_glue(glue, list(TASKS), mirror=url, remote_files=remote)
    expected = {
        f"{folder}/{name}": data for folder, files in task_files().items() for name, data in files.items()
    }
    assert tree(glue) == expected  # MRPC built byte for byte as download_glue_data.py builds it; nothing else
    assert len(requests) == len(REMOTE_FILES)
    for task, split in EXAMPLES:
        assert read_split(glue, task, split).examples == EXAMPLES[(task, split)]
    requests.clear()
    download_glue(glue, list(TASKS), mirror=url, remote_files=remote)
    assert requests == [] and tree(glue) == expected


def test_a_kept_download_is_reused_and_a_damaged_one_fetched_again(
    mirror: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    url, root, requests = mirror
    remote = serve_upstream(root)
    glue = tmp_path / "glue"
    (glue / ".downloads").mkdir(parents=True)
    (glue / ".downloads" / "RTE.zip").write_bytes(
        (root / "glue/data/RTE.zip").read_bytes()
    )  # interrupted run
    (glue / ".downloads" / "WNLI.zip").write_bytes(b"half a zip")
    download_glue(glue, ["RTE", "WNLI"], mirror=url, remote_files=remote)
    assert requests == ["/glue/data/WNLI.zip"]
    assert sorted(p.name for p in glue.iterdir()) == ["RTE", "WNLI"]  # .downloads removed once empty


def test_a_checksum_mismatch_leaves_nothing_behind(
    mirror: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    url, root, _ = mirror
    remote = serve_upstream(root)
    (root / "glue/data/CoLA.zip").write_bytes(b"an error page, not the zip")
    glue = tmp_path / "glue"
    with pytest.raises(GlueDataError) as caught:
        download_glue(glue, ["SST-2", "CoLA"], mirror=url, remote_files=remote)
    message = str(caught.value)
    assert message.startswith(f"could not download {url}/glue/data/CoLA.zip: size 26 bytes, expected ")
    assert f"into {glue} yourself" in message
    assert sorted(p.name for p in glue.iterdir()) == [".downloads", "SST-2"]  # SST-2 done before CoLA failed
    assert list((glue / ".downloads").iterdir()) == []


def test_a_wrong_checksum_of_the_right_size_is_named(
    mirror: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    url, root, _ = mirror
    remote = serve_upstream(root)
    remote["AX.tsv"] = RemoteFile(remote["AX.tsv"].path, remote["AX.tsv"].size, "0" * 64)
    with pytest.raises(GlueDataError, match=f"AX.tsv: SHA-256 [0-9a-f]{{64}}, expected {'0' * 64}"):
        download_glue(tmp_path / "glue", ["AX"], mirror=url, remote_files=remote)


def test_an_unreachable_mirror_is_named(tmp_path: Path) -> None:
    with pytest.raises(GlueDataError) as caught:
        download_glue(tmp_path / "glue", ["RTE"], mirror="http://127.0.0.1:9")
    assert str(caught.value).startswith(
        "could not download http://127.0.0.1:9/glue/data/RTE.zip: <urlopen error"
    )


def test_an_incomplete_task_folder_is_not_touched(
    mirror: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    url, root, requests = mirror
    remote = serve_upstream(root)
    glue = write_glue_dir(tmp_path / "glue", ["QNLI"])
    (glue / "QNLI" / "test.tsv").unlink()
    with pytest.raises(GlueDataError) as caught:
        download_glue(glue, ["QNLI"], mirror=url, remote_files=remote)
    assert (
        str(caught.value)
        == f"{glue / 'QNLI'} exists but lacks test.tsv; delete the folder to download QNLI again"
    )
    assert requests == [] and sorted(p.name for p in (glue / "QNLI").iterdir()) == ["dev.tsv", "train.tsv"]
