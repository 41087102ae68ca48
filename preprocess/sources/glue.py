"""The GLUE benchmark as ``download_glue_data.py`` leaves it on disk: the tasks, their files, reading them.

The layout (``GLUE_DIR/``)::

    CoLA/ SST-2/ MRPC/ STS-B/ QQP/ MNLI/ QNLI/ RTE/ WNLI/   train.tsv dev.tsv test.tsv (MNLI: train.tsv,
                                                            dev_matched.tsv dev_mismatched.tsv,
                                                            test_matched.tsv test_mismatched.tsv)
    diagnostic/diagnostic.tsv                               AX: test only, predicted with the MNLI model

The files are tab-separated *without* any quoting (sentences hold unbalanced ``"``), so a line is split on
tabs and nothing else. Their quirks, each handled here once:

* CoLA's train.tsv and dev.tsv have no header: four columns (source, label, original mark, sentence) that
  are found by position; every other file has a header and its columns are found by name;
* MRPC's train.tsv and dev.tsv start with a UTF-8 byte-order mark (copied by ``download_glue_data.py``
  from ``msr_paraphrase_train.txt``); it is dropped;
* QQP's train.tsv may hold malformed lines (a question broken over two lines gives rows with the wrong
  number of columns): they are dropped and counted, with their line numbers; anywhere else a row of the
  wrong width is an error naming the file and line;
* MNLI's train, dev and test files have 12, 16 and 10 columns;
* empty lines are skipped (they carry no example); a file without any example (only its header, or
  nothing) is an error naming it, as is a NUL byte (a binary or corrupt file: text holds none);
* a last line without its line end is an error naming the file and line: a file cut in the middle of its
  last line can still have the right number of columns (the cut falls inside the last field);
* labels are the files' strings (``"0"``/``"1"``, ``entailment``/``neutral``/...), STS-B's a float in
  [0, 5]; a value outside the task's vocabulary is an error naming file, line and value.

:func:`download_glue` fetches the official distribution (the URLs of ``download_glue_data.py``) and
unpacks it into that layout; see its docstring.
"""

from __future__ import annotations

import hashlib
import math
import shutil
import sys
import urllib.error
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from macaron_preprocess.sources.download import fetch
from macaron_workflow.atomic import atomic_output, remove_stale_temporaries
from macaron_workflow.errors import OutputError, UserError, cannot_read
from macaron_workflow.files import OutputFile, open_input, without_bom

# --- the tasks -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GlueExample:
    """One row of a GLUE file, reduced to what a model sees."""

    index: str  # the file's index/id column; the data row number (from 0) for files without one
    sentence1: str
    sentence2: str | None  # None for single-sentence tasks (CoLA, SST-2)
    label: str | float | None  # the file's label string, a float for STS-B, None for test files


@dataclass(frozen=True)
class TaskSpec:
    """A GLUE task: where its files are, which splits it has, and its label vocabulary."""

    name: str  # "CoLA", "SST-2", ..., "AX"
    directory: str  # the folder under GLUE_DIR ("diagnostic" for AX)
    labels: tuple[str, ...] | None  # the label vocabulary in a fixed order; None = regression (STS-B)
    pair: bool  # two sentences per example
    splits: dict[str, str] = field(hash=False)  # split name -> file name
    dev_splits: tuple[str, ...]
    test_splits: tuple[str, ...]


BINARY = ("0", "1")
NLI_LABELS = ("contradiction", "entailment", "neutral")  # BERT's order (run_classifier.MnliProcessor)
ENTAILMENT = ("entailment", "not_entailment")
_SPLITS = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
_MNLI_SPLITS = {
    "train": "train.tsv",
    "dev_matched": "dev_matched.tsv",
    "dev_mismatched": "dev_mismatched.tsv",
    "test_matched": "test_matched.tsv",
    "test_mismatched": "test_mismatched.tsv",
}


def _task(name: str, labels: tuple[str, ...] | None, pair: bool, directory: str | None = None) -> TaskSpec:
    return TaskSpec(name, directory or name, labels, pair, dict(_SPLITS), ("dev",), ("test",))


TASKS: dict[str, TaskSpec] = {
    "CoLA": _task("CoLA", BINARY, pair=False),
    "SST-2": _task("SST-2", BINARY, pair=False),
    "MRPC": _task("MRPC", BINARY, pair=True),
    "STS-B": _task("STS-B", None, pair=True),
    "QQP": _task("QQP", BINARY, pair=True),
    "MNLI": TaskSpec(
        "MNLI",
        "MNLI",
        NLI_LABELS,
        True,
        dict(_MNLI_SPLITS),
        ("dev_matched", "dev_mismatched"),
        ("test_matched", "test_mismatched"),
    ),
    "QNLI": _task("QNLI", ENTAILMENT, pair=True),
    "RTE": _task("RTE", ENTAILMENT, pair=True),
    "WNLI": _task("WNLI", BINARY, pair=True),
    "AX": TaskSpec("AX", "diagnostic", NLI_LABELS, True, {"test": "diagnostic.tsv"}, (), ("test",)),
}
"""All ten: the nine GLUE tasks and the diagnostic set AX (predicted with the MNLI model)."""

BERT_TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE")
"""The tasks BERT fine-tuned (WNLI got the majority class, AX the MNLI model's predictions)."""


class GlueDataError(UserError):
    """A GLUE file or folder is missing or not in the expected format; the message names it."""


def get_task(name: str) -> TaskSpec:
    """The spec of ``name``; an unknown name is an error listing the known ones."""
    try:
        return TASKS[name]
    except KeyError:
        raise GlueDataError(f"unknown GLUE task {name!r}; the tasks are: {', '.join(TASKS)}") from None


# --- the file formats ------------------------------------------------------------------------------------

Column = str | int  # a header name, or a position in a file without header


@dataclass(frozen=True)
class _Format:
    """How one file is laid out: its header (None: no header line) and where the fields are."""

    header: tuple[str, ...] | None
    width: int
    sentence1: Column
    sentence2: Column | None = None
    label: Column | None = None
    index: Column | None = None  # None: the data row number


def _headed(
    header: tuple[str, ...], s1: str, s2: str | None, label: str | None, index: str | None
) -> _Format:
    return _Format(header, len(header), s1, s2, label, index)


_STSB = ("index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2")
_MNLI = (
    "index",
    "promptID",
    "pairID",
    "genre",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
)
_MNLI_TRAIN = (*_MNLI, "label1", "gold_label")
_MRPC = ("#1 ID", "#2 ID", "#1 String", "#2 String")
_PAIR = ("index", "sentence1", "sentence2")


def _formats() -> dict[tuple[str, str], _Format]:
    cola = _Format(None, 4, sentence1=3, label=1)
    formats = {
        ("CoLA", "train"): cola,
        ("CoLA", "dev"): cola,
        ("CoLA", "test"): _headed(("index", "sentence"), "sentence", None, None, "index"),
        ("SST-2", "test"): _headed(("index", "sentence"), "sentence", None, None, "index"),
        ("MRPC", "test"): _headed(("index", *_MRPC), "#1 String", "#2 String", None, "index"),
        ("STS-B", "test"): _headed(_STSB, "sentence1", "sentence2", None, "index"),
        ("QQP", "test"): _headed(("id", "question1", "question2"), "question1", "question2", None, "id"),
        ("MNLI", "train"): _headed(_MNLI_TRAIN, "sentence1", "sentence2", "gold_label", "index"),
        ("QNLI", "test"): _headed(("index", "question", "sentence"), "question", "sentence", None, "index"),
        ("RTE", "test"): _headed(_PAIR, "sentence1", "sentence2", None, "index"),
        ("WNLI", "test"): _headed(_PAIR, "sentence1", "sentence2", None, "index"),
        ("AX", "test"): _headed(_PAIR, "sentence1", "sentence2", None, "index"),
    }
    mnli_dev = (*_MNLI, "label1", "label2", "label3", "label4", "label5", "gold_label")
    for split in ("train", "dev"):
        formats[("SST-2", split)] = _headed(("sentence", "label"), "sentence", None, "label", None)
        formats[("MRPC", split)] = _headed(("Quality", *_MRPC), "#1 String", "#2 String", "Quality", None)
        formats[("STS-B", split)] = _headed((*_STSB, "score"), "sentence1", "sentence2", "score", "index")
        qqp = ("id", "qid1", "qid2", "question1", "question2", "is_duplicate")
        formats[("QQP", split)] = _headed(qqp, "question1", "question2", "is_duplicate", "id")
        qnli = ("index", "question", "sentence", "label")
        formats[("QNLI", split)] = _headed(qnli, "question", "sentence", "label", "index")
        for task in ("RTE", "WNLI"):
            formats[(task, split)] = _headed((*_PAIR, "label"), "sentence1", "sentence2", "label", "index")
    for split in ("dev_matched", "dev_mismatched"):
        formats[("MNLI", split)] = _headed(mnli_dev, "sentence1", "sentence2", "gold_label", "index")
    for split in ("test_matched", "test_mismatched"):
        formats[("MNLI", split)] = _headed(_MNLI, "sentence1", "sentence2", None, "index")
    return formats


FORMATS = _formats()
"""(task, split) -> the layout of its file."""

RESTORE = "restore it from the GLUE distribution (download_glue_data.py, or --download into a new directory)"
"""The fix of a damaged GLUE file."""
NUL = b"\x00"

MALFORMED_DROPPED = {("QQP", "train")}
"""Files whose rows of the wrong width are dropped (and counted) instead of being an error."""
_SHOWN_DROPPED = 10


@dataclass
class SplitRead:
    """The examples of one file, and what was dropped from it."""

    examples: list[GlueExample]
    dropped: int = 0  # malformed lines dropped (QQP train)
    dropped_lines: list[int] = field(default_factory=list)  # the first few of their line numbers


def split_path(glue_dir: Path, task: str, split: str) -> Path:
    """Where ``split`` of ``task`` is; an unknown task or split is an error listing the known ones."""
    spec = get_task(task)
    if split not in spec.splits:
        raise GlueDataError(f"GLUE task {task} has no split {split!r}; its splits: {', '.join(spec.splits)}")
    return Path(glue_dir) / spec.directory / spec.splits[split]


def read_split(glue_dir: Path, task: str, split: str) -> SplitRead:
    """All examples of ``split`` of ``task`` in file order (see the module docstring for the checks)."""
    path = split_path(glue_dir, task, split)
    folder = path.parent
    if not folder.is_dir():
        raise GlueDataError(
            f"GLUE task folder {folder} is missing (expected the layout of download_glue_data.py under "
            f"{glue_dir}: {', '.join(s.directory + '/' for s in TASKS.values())})"
        )
    if not path.is_file():
        present = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
        raise GlueDataError(f"GLUE file {path} is missing ({folder} holds: {present})")
    return _Reader(path, task, FORMATS[(task, split)], (task, split) in MALFORMED_DROPPED).read()


class _Reader:
    """One pass over a GLUE file: lines split on ``\\n`` only, fields on tabs only."""

    def __init__(self, path: Path, task: str, form: _Format, drop_malformed: bool) -> None:
        self.path, self.task, self.form, self.drop_malformed = path, task, form, drop_malformed
        self.labels = TASKS[task].labels
        no_header = {i: i for i in range(form.width)}
        self.positions: dict[Column, int] = no_header if form.header is None else {}

    def read(self) -> SplitRead:
        result = SplitRead([])
        first_data = 1 if self.form.header is None else 2
        with open_input(self.path) as handle:
            try:
                for number, raw in enumerate(handle, start=1):
                    if number == 1:
                        raw = without_bom(raw)
                        if self.form.header is not None:
                            self._check_header(self._fields(1, raw))
                            continue
                    if not raw.endswith(b"\n") and raw.strip():
                        raise GlueDataError(
                            f"{self.path}:{number}: the last line has no line end, so the file looks "
                            f"truncated ({_shorten(raw)}); restore it from the GLUE distribution (if that "
                            "line is complete, add the missing newline)"
                        )
                    self._add(result, number, number - first_data, raw)
            except OSError as exc:
                raise cannot_read(self.path, exc) from exc
        if self.form.header is not None and not self.positions:
            raise GlueDataError(
                f"{self.path} is empty; expected the header {_tabbed(self.form.header)}; {RESTORE}"
            )
        if not result.examples:
            only = "only its header" if self.form.header is not None else "no data line"
            raise GlueDataError(f"{self.path} holds no examples ({only}); {RESTORE}")
        return result

    def _add(self, result: SplitRead, number: int, row: int, raw: bytes) -> None:
        if raw in (b"\n", b"\r\n"):
            return  # an empty line carries no example (a stray one at the end of a file)
        if NUL in raw:
            raise GlueDataError(
                f"{self.path}:{number}: a NUL byte at byte {raw.index(NUL) + 1} of the line "
                f"(text holds none: a binary or corrupt file); {RESTORE}"
            )
        fields = self._fields(number, raw)
        if len(fields) == self.form.width:
            result.examples.append(self._example(number, row, fields))
        elif self.drop_malformed:
            result.dropped += 1
            if len(result.dropped_lines) < _SHOWN_DROPPED:
                result.dropped_lines.append(number)
        else:
            raise GlueDataError(
                f"{self.path}:{number}: expected {self.form.width} tab-separated columns, "
                f"found {len(fields)}: {_shorten(raw)}"
            )

    def _fields(self, number: int, raw: bytes) -> list[str]:
        line = raw.removesuffix(b"\n").removesuffix(b"\r")
        try:
            return line.decode("utf-8").split("\t")
        except UnicodeDecodeError as exc:
            reason = f"not UTF-8 ({exc.reason} at byte {exc.start})"
            raise GlueDataError(f"{self.path}:{number}: {reason}") from None

    def _check_header(self, found: list[str]) -> None:
        expected = self.form.header
        assert expected is not None
        if tuple(found) != expected:
            raise GlueDataError(
                f"{self.path}:1: unexpected header (not the GLUE distribution of download_glue_data.py?)\n"
                f"  expected {len(expected)} columns: {_tabbed(expected)}\n"
                f"  found    {len(found)} columns: {_tabbed(found)}"
            )
        self.positions = {name: i for i, name in enumerate(expected)}

    def _example(self, number: int, row: int, fields: list[str]) -> GlueExample:
        form = self.form
        index = str(row) if form.index is None else fields[self.positions[form.index]]
        sentence2 = None if form.sentence2 is None else fields[self.positions[form.sentence2]]
        label = None if form.label is None else self._label(number, fields[self.positions[form.label]])
        return GlueExample(index, fields[self.positions[form.sentence1]], sentence2, label)

    def _label(self, number: int, value: str) -> str | float:
        if self.labels is not None:
            if value not in self.labels:
                raise GlueDataError(
                    f"{self.path}:{number}: unknown {self.task} label {value!r} "
                    f"(expected one of: {', '.join(self.labels)})"
                )
            return value
        try:
            score = float(value)
        except ValueError:
            score = math.nan
        if not 0.0 <= score <= 5.0:  # also refuses nan
            raise GlueDataError(
                f"{self.path}:{number}: bad STS-B score {value!r} (expected a number in [0, 5])"
            )
        return score


def _tabbed(columns: Sequence[str]) -> str:
    return " | ".join(columns)


def _shorten(raw: bytes, limit: int = 120) -> str:
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n").replace("\t", " | ")
    return text if len(text) <= limit else text[:limit] + "..."


# --- downloading the official distribution ---------------------------------------------------------------

GLUE_MIRROR = "https://dl.fbaipublicfiles.com"


@dataclass(frozen=True)
class RemoteFile:
    """A file of the distribution: its path under the mirror, its size and SHA-256."""

    path: str
    size: int
    sha256: str


REMOTE_FILES: dict[str, RemoteFile] = {
    "CoLA.zip": RemoteFile(
        "glue/data/CoLA.zip", 376971, "f212fcd832b8f7b435fb991f101abf89f96b933ab400603bf198960dfc32cbff"
    ),
    "SST-2.zip": RemoteFile(
        "glue/data/SST-2.zip", 7439277, "d67e16fb55739c1b32cdce9877596db1c127dc322d93c082281f64057c16deaa"
    ),
    "msr_paraphrase_train.txt": RemoteFile(
        "senteval/senteval_data/msr_paraphrase_train.txt",
        1047044,
        "60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89",
    ),
    "msr_paraphrase_test.txt": RemoteFile(
        "senteval/senteval_data/msr_paraphrase_test.txt",
        441275,
        "a04e271090879aaba6423d65b94950c089298587d9c084bf9cd7439bd785f784",
    ),
    "mrpc_dev_ids.tsv": RemoteFile(
        "glue/data/mrpc_dev_ids.tsv", 6222, "971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7"
    ),
    "STS-B.zip": RemoteFile(
        "glue/data/STS-B.zip", 802872, "e60a6393de5a8b5b9bac5020a1554b54e3691f9d600b775bd131e613ac179c85"
    ),
    "QQP-clean.zip": RemoteFile(
        "glue/data/QQP-clean.zip",
        41696084,
        "40e7c862c04eb26ee04b67fd900e76c45c6ba8e6d8fab4f8f1f8072a1a3fbae0",
    ),
    "MNLI.zip": RemoteFile(
        "glue/data/MNLI.zip", 312783507, "e7c1d896d26ed6caf700110645df426cc2d8ebf02a5ab743d5a5c68ac1c83633"
    ),
    "QNLIv2.zip": RemoteFile(
        "glue/data/QNLIv2.zip", 10627589, "e634e78627a29adaecd4f955359b22bf5e70f2cbd93b493f2d624138a0c0e5f5"
    ),
    "RTE.zip": RemoteFile(
        "glue/data/RTE.zip", 697150, "6bf86de103ecd335f3441bd43574d23fef87ecc695977a63b82d5efb206556ee"
    ),
    "WNLI.zip": RemoteFile(
        "glue/data/WNLI.zip", 28999, "ae0e8e4d16f4d46d4a0a566ec7ecceccfd3fbfaa4a7a4b4e02848c0f2561ac46"
    ),
    "AX.tsv": RemoteFile(
        "glue/data/AX.tsv", 222257, "0e13510b1bb14436ff7e2ee82338f0efb0133ecf2e73507a697dc210db3f05fd"
    ),
}
"""The URLs of ``download_glue_data.py`` (nyu-mll/GLUE-baselines; QQP-clean.zip and QNLIv2.zip are the
versions it downloads; MRPC's dev ids at the copy Hugging Face ``datasets`` uses) with the sizes and SHA-256
that ``datasets`` recorded for them (datasets/glue/dataset_infos.json)."""

TASK_DOWNLOADS: dict[str, tuple[str, ...]] = {
    "CoLA": ("CoLA.zip",),
    "SST-2": ("SST-2.zip",),
    "MRPC": ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt", "mrpc_dev_ids.tsv"),
    "STS-B": ("STS-B.zip",),
    "QQP": ("QQP-clean.zip",),
    "MNLI": ("MNLI.zip",),
    "QNLI": ("QNLIv2.zip",),
    "RTE": ("RTE.zip",),
    "WNLI": ("WNLI.zip",),
    "AX": ("AX.tsv",),
}
DOWNLOADS = ".downloads"
"""The folder of GLUE_DIR where files wait until their task is unpacked (then they are deleted)."""


def download_glue(
    glue_dir: Path,
    tasks: Sequence[str],
    *,
    mirror: str = GLUE_MIRROR,
    remote_files: Mapping[str, RemoteFile] = REMOTE_FILES,
) -> None:
    """Download and unpack ``tasks`` into ``glue_dir`` in the layout of ``download_glue_data.py``.

    A task whose folder already holds all its split files is skipped, so a rerun continues where an
    interrupted one stopped. Each download goes to a temporary file and is kept under
    ``glue_dir/.downloads/`` only once its size and SHA-256 match; a kept file is reused by the next run.
    A task's folder is built under a temporary name and renamed into place complete, so a folder that
    exists is whole. A task folder that exists but lacks split files is an error (it is not touched).

    The per-task zips are unpacked as they are (their ``TASK/`` folder); MRPC is built from the MSR
    paraphrase files and the GLUE dev ids exactly as ``download_glue_data.py`` builds it; AX.tsv becomes
    ``diagnostic/diagnostic.tsv``.
    """
    glue_dir = Path(glue_dir)
    specs = [get_task(task) for task in tasks]
    downloads = glue_dir / DOWNLOADS
    for folder in (glue_dir, downloads):
        remove_stale_temporaries(folder)
    for spec in specs:
        if _complete(glue_dir, spec):
            print(f"GLUE {spec.name}: {glue_dir / spec.directory} is complete", file=sys.stderr)
            continue
        files = {name: downloads / name for name in TASK_DOWNLOADS[spec.name]}
        for name, path in files.items():
            _download(remote_files[name], mirror, path, glue_dir)
        _unpack(spec, files, glue_dir)
        for path in files.values():
            path.unlink(missing_ok=True)
        print(f"GLUE {spec.name}: unpacked into {glue_dir / spec.directory}", file=sys.stderr)
    if downloads.is_dir() and not any(downloads.iterdir()):
        downloads.rmdir()


def _complete(glue_dir: Path, spec: TaskSpec) -> bool:
    folder = glue_dir / spec.directory
    if not folder.exists():
        return False
    missing = [name for name in spec.splits.values() if not (folder / name).is_file()]
    if missing:
        raise GlueDataError(
            f"{folder} exists but lacks {', '.join(missing)}; delete the folder to download {spec.name} again"
        )
    return True


def _download(remote: RemoteFile, mirror: str, destination: Path, glue_dir: Path) -> None:
    """``destination`` holds ``remote`` afterwards (a kept, matching copy is reused)."""
    if destination.is_file():
        try:
            _verify(destination, remote)
            return
        except UserError as exc:
            print(f"{destination}: {exc}; downloading it again", file=sys.stderr)
            destination.unlink()
    destination.parent.mkdir(parents=True, exist_ok=True)
    url = f"{mirror.rstrip('/')}/{remote.path}"
    print(f"downloading {url}", file=sys.stderr, flush=True)
    try:
        with atomic_output(destination) as temp:
            fetch(url, temp)
            _verify(temp, remote)
    except OutputError:
        raise
    except (OSError, urllib.error.URLError, UserError) as exc:
        raise GlueDataError(
            f"could not download {url}: {exc}\n"
            f"put the GLUE distribution (the layout of download_glue_data.py) into {glue_dir} yourself, "
            f"or try again later"
        ) from exc


def _verify(path: Path, remote: RemoteFile) -> None:
    size = path.stat().st_size
    if size != remote.size:
        raise UserError(f"size {size} bytes, expected {remote.size}")
    with open_input(path) as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    if digest != remote.sha256:
        raise UserError(f"SHA-256 {digest}, expected {remote.sha256}")


def _unpack(spec: TaskSpec, files: Mapping[str, Path], glue_dir: Path) -> None:
    with atomic_output(glue_dir / spec.directory) as temp:
        temp.mkdir()
        if spec.name == "MRPC":
            _build_mrpc(files, temp)
        elif spec.name == "AX":
            _copy(files["AX.tsv"], temp / "diagnostic.tsv")
        else:
            (archive,) = files.values()
            _extract_folder(archive, spec.directory, temp)
        missing = [name for name in spec.splits.values() if not (temp / name).is_file()]
        if missing:
            expected = ", ".join(f"{spec.directory}/{name}" for name in missing)
            raise GlueDataError(f"{', '.join(files)} did not give {expected}")


def _extract_folder(archive: Path, folder: str, destination: Path) -> None:
    """Copy the members under ``folder/`` of the zip ``archive`` into ``destination``."""
    prefix = folder + "/"
    try:
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.infolist():
                name = PurePosixPath(member.filename)
                if member.is_dir() or not member.filename.startswith(prefix):
                    continue
                if name.is_absolute() or ".." in name.parts:
                    raise GlueDataError(
                        f"{archive}: refusing the member {member.filename!r} (outside {folder})"
                    )
                target = destination.joinpath(*name.parts[1:])
                target.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(member) as source, OutputFile(target) as out:
                    shutil.copyfileobj(source, out, 1 << 20)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise GlueDataError(f"{archive} is truncated or corrupt ({exc}); delete it and run again") from exc


def _build_mrpc(files: Mapping[str, Path], folder: Path) -> None:
    """MRPC's train/dev/test.tsv from the MSR paraphrase files, as ``download_glue_data.py`` writes them:
    train and dev keep the training file's header line (byte-order mark included), a pair listed in the
    dev ids goes to dev.tsv; test.tsv gets the header ``index #1 ID ...`` and the row number as index;
    every row is stripped of surrounding whitespace and rejoined with tabs."""
    copies = (
        ("msr_paraphrase_train.txt", "msr_paraphrase_train.txt"),
        ("msr_paraphrase_test.txt", "msr_paraphrase_test.txt"),
        ("mrpc_dev_ids.tsv", "dev_ids.tsv"),
    )
    for source, target in copies:
        _copy(files[source], folder / target)
    dev_ids = {tuple(row.strip().split("\t")) for row in _text_lines(folder / "dev_ids.tsv")}
    train_lines = _text_lines(folder / "msr_paraphrase_train.txt")
    train, dev = [train_lines[0]], [train_lines[0]]
    for number, row in enumerate(train_lines[1:], start=2):
        fields = _msr_fields(folder / "msr_paraphrase_train.txt", number, row)
        (dev if (fields[1], fields[2]) in dev_ids else train).append("\t".join(fields) + "\n")
    test = ["index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"]
    test_lines = _text_lines(folder / "msr_paraphrase_test.txt")
    for index, row in enumerate(test_lines[1:]):
        fields = _msr_fields(folder / "msr_paraphrase_test.txt", index + 2, row)
        test.append("\t".join([str(index), *fields[1:]]) + "\n")
    for name, lines in (("train.tsv", train), ("dev.tsv", dev), ("test.tsv", test)):
        with OutputFile(folder / name) as out:
            out.write("".join(lines).encode("utf-8"))


def _copy(source: Path, target: Path) -> None:
    with open_input(source) as handle, OutputFile(target) as out:
        shutil.copyfileobj(handle, out, 1 << 20)


def _text_lines(path: Path) -> list[str]:
    """The lines of ``path`` as the script's ``io.open(path, encoding='utf-8')`` yields them (universal
    newlines: ``\\r\\n`` and ``\\r`` end lines too; a byte-order mark is kept)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.readlines()
    except UnicodeDecodeError as exc:
        raise GlueDataError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise cannot_read(path, exc) from exc
    if not lines:
        raise GlueDataError(f"{path} is empty")
    return lines


def _msr_fields(path: Path, number: int, row: str) -> list[str]:
    fields = row.strip().split("\t")
    if len(fields) != 5:
        raise GlueDataError(
            f"{path}:{number}: expected 5 tab-separated columns (Quality, #1 ID, #2 ID, #1 String, "
            f"#2 String), found {len(fields)}"
        )
    return fields
