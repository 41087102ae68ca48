"""macaron_workflow.atomic with directories: a new directory replaces an old one whole, a failure keeps the
old one, nothing temporary is left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from macaron_workflow import atomic
from macaron_workflow.atomic import atomic_output, remove_stale_temporaries


def test_a_directory_replaces_the_old_one_whole(tmp_path: Path) -> None:
    final = tmp_path / "books"
    with atomic_output(final) as tmp:
        tmp.mkdir()
        (tmp / "a.txt").write_text("first")
    with atomic_output(final) as tmp:
        tmp.mkdir()
        (tmp / "b.txt").write_text("second")
        assert (final / "a.txt").read_text() == "first"  # the old one stands until the block succeeded
    assert sorted(p.name for p in final.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["books"]


def test_a_failed_block_or_rename_keeps_the_old_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = tmp_path / "task"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_output(final) as tmp:
        tmp.mkdir()
        (tmp / "half.txt").write_text("half")
        raise KeyboardInterrupt
    real_replace = os.replace

    def failing_replace(src: object, dst: object) -> None:
        if Path(str(src)).name.startswith(".task.tmp-"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space"), atomic_output(final) as tmp:
        tmp.mkdir()
    assert [p.name for p in final.iterdir()] == ["old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task"]


def test_a_directory_left_aside_by_a_killed_process_is_stale(tmp_path: Path) -> None:
    (tmp_path / ".task.old.tmp-999999999").mkdir()
    (tmp_path / ".task.tmp-999999999").mkdir()
    remove_stale_temporaries(tmp_path)
    assert list(tmp_path.iterdir()) == []
