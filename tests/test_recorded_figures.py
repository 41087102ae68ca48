"""A measured score quoted in prose goes stale when the code changes, silently. So every sacreBLEU figure in
README.md and docs/*.md outside a rendered results block (those are re-rendered from their results files,
tests/test_docs_numbers.py) says which code it was measured with: its paragraph, or the one just before
it (the sentence that introduces a table or a code block), carries ``measured at commit <hash>``, and the
hash is a commit of this repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: a rendered block, ``<!-- results:NAME:start --> ... <!-- results:NAME:end -->`` (or ``NAME-results``)
BLOCK = re.compile(r"<!-- ((?:results:)?[a-z0-9-]+):start -->.*?<!-- \1:end -->", re.S)
#: a sacreBLEU score: the word, then within 60 characters a decimal number
FIGURE = re.compile(r"sacreBLEU.{0,60}?(?<![\w.])(\d+\.\d+)(?![\w.])", re.S | re.I)
MARK = re.compile(r"measured\s+at\s+commit\s+([0-9a-f]{7,40})\b")  # wrapped lines too


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; a fenced code block is one paragraph, blank lines and all."""
    parts, current, fenced = [], [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                parts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        parts.append("\n".join(current))
    return parts


def unmarked_figures(text: str) -> list[str]:
    """The sacreBLEU figures whose paragraph and the paragraph before it carry no commit mark."""
    units = paragraphs(BLOCK.sub("", text))
    found = []
    for i, para in enumerate(units):
        context = para if i == 0 else units[i - 1] + "\n" + para
        if not MARK.search(context):
            found += [f"sacreBLEU … {m.group(1)}: {para[:80]!r}" for m in FIGURE.finditer(para)]
    return found


def marked_commits(text: str) -> set[str]:
    return set(MARK.findall(text))


def markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_quoted_score_says_which_commit_measured_it(path: Path) -> None:
    assert unmarked_figures(path.read_text(encoding="utf-8")) == []


def test_every_commit_mark_names_a_commit_of_this_repository() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    commits = set().union(*(marked_commits(p.read_text(encoding="utf-8")) for p in markdown_files()))

    def known(commit: str) -> bool:
        probe = ["git", "cat-file", "-e", f"{commit}^{{commit}}"]
        return subprocess.run(probe, cwd=REPO, capture_output=True).returncode == 0

    unknown = [c for c in sorted(commits) if not known(c)]
    assert unknown == [], f"'measured at commit' marks naming no commit of this repository: {unknown}"


def test_the_check_finds_an_unmarked_figure_and_accepts_a_marked_one() -> None:
    page = (
        "Intro.\n\nThe model scores sacreBLEU 87.34 on the test set.\n\n"
        "The default run prints (measured at commit 45b8046):\n\n"
        "```\nsacreBLEU (13a) = 87.34\n\nmore\n```\n\n"
        "<!-- results:x:start -->\nsacreBLEU 1.23\n<!-- results:x:end -->\n"
    )
    assert unmarked_figures(page) == [
        "sacreBLEU … 87.34: 'The model scores sacreBLEU 87.34 on the test set.'"
    ]
    assert marked_commits(page) == {"45b8046"}
