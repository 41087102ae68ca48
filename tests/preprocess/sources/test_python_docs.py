"""python -m macaron_preprocess.sources.python_docs: the books directory is written atomically (a rerun
replaces it whole), --dest is the option and --out its deprecated spelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from macaron_preprocess.sources import python_docs

PAGE = '<div role="main"><p>{text}</p></div>'


def html_dir(root: Path, pages: dict[str, str]) -> Path:
    for name, text in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(PAGE.format(text=text), encoding="utf-8")
    return root


def test_a_rerun_replaces_the_books_directory_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    books = tmp_path / "books"
    first = html_dir(tmp_path / "v1", {"library/os.html": "Old prose.", "gone.html": "Removed later."})
    python_docs.main(["--dest", str(books), "--html", str(first)])
    assert sorted(p.relative_to(books).as_posix() for p in books.rglob("*.txt")) == [
        "gone.txt",
        "library/os.txt",
    ]
    second = html_dir(tmp_path / "v2", {"library/os.html": "New prose."})
    python_docs.main(["--out", str(books), "--html", str(second)])  # the old spelling still works
    assert "--out is deprecated, use --dest" in capsys.readouterr().err
    assert [p.relative_to(books).as_posix() for p in books.rglob("*.txt")] == ["library/os.txt"]
    assert (books / "library" / "os.txt").read_text(encoding="utf-8") == "New prose.\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["books", "v1", "v2"]  # no temporary left


def test_no_pages_is_a_user_error_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "html").mkdir()
    with pytest.raises(python_docs.UserError, match="no HTML pages"):
        python_docs.main(["--dest", str(tmp_path / "books"), "--html", str(tmp_path / "html")])
    assert not (tmp_path / "books").exists()
