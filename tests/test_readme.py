"""The README is a newcomer's page: short, its commands are the ones CI and the installer run, every link
in it and in docs/ resolves, every measured block lives in exactly one place (what the blocks hold is
tests/test_docs_numbers.py's check)."""

from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_README_LINES = 200
#: README.md + the user pages (docs/*.md; the measurement reports of docs/reports/ are not counted)
MAX_USER_PAGE_WORDS = 25_000

#: a link or image target: ``[text](target)`` / ``![alt](target)``, up to the first space or ``)``
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
#: fenced code blocks, whose brackets are code, not links
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
#: ``<!-- results:NAME:start -->`` and the parity blocks ``<!-- NAME-parity:start -->``
MARKER = re.compile(r"<!-- ((?:results:)?[a-z0-9-]+):(start|end) -->")


def markdown_files() -> list[Path]:
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    result = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    """Relative links of one markdown file whose file (or heading anchor) does not exist."""
    problems = []
    for target in LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}: ({target})"
        if not resolved.exists():
            problems.append(f"{where}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: no heading with that anchor")
    return problems


def test_readme_fits_in_five_minutes() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"


def test_the_user_pages_read_in_an_afternoon() -> None:
    """README + docs/*.md at most 25,000 words (``wc -w``): measurement detail lives in docs/reports/."""
    counts = {
        p.name: len(p.read_text(encoding="utf-8").split()) for p in [README, *(REPO / "docs").glob("*.md")]
    }
    assert sum(counts.values()) <= MAX_USER_PAGE_WORDS, sorted(counts.items(), key=lambda kv: -kv[1])


def test_readme_shows_exactly_the_two_commands_each_installing_what_it_needs() -> None:
    """The two commands: the main job (the quickstart) and the test command CI runs, and nothing else;
    each installs what it needs itself (its wrapper runs scripts/install.sh)."""
    readme = README.read_text(encoding="utf-8")
    section = readme.split("\n## The two commands\n", 1)[1].split("\n## ", 1)[0]
    (code,) = FENCE.findall(section)
    body = [line for line in code.splitlines() if not line.startswith("```")]
    commands = [line.split("#")[0].strip() for line in body if line.strip()]
    assert commands == ["bash pipelines/quickstart.sh", "bash scripts/test.sh"]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^bash scripts/test\.sh$", ci, re.M), "CI no longer runs the README's test command"
    assert "bash scripts/install.sh --dev" in (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    wrapper = (REPO / "pipelines" / "wrapper.sh").read_text(encoding="utf-8")
    assert "install_unless_skipped" in (REPO / "pipelines" / "quickstart.sh").read_text(encoding="utf-8")
    assert 'bash "$here/scripts/install.sh"' in wrapper


def test_does_it_work_is_one_short_table() -> None:
    readme = README.read_text(encoding="utf-8")
    section = readme.split("\n## Does it work?\n", 1)[1].split("\n## ", 1)[0]
    assert len(section.strip().splitlines()) <= 30, "README's 'Does it work?' is longer than 30 lines"
    assert section.count("\n| ") >= 5 and "](docs/" in section


def test_readme_lists_every_console_script_and_no_other() -> None:
    import tomllib

    scripts = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"])
    shown = set(re.findall(r"`(macaron-[a-z0-9-]+)`", README.read_text(encoding="utf-8")))
    assert shown - scripts == set(), "the README names console scripts pyproject.toml does not define"
    assert scripts - shown == set(), "console scripts missing from the README's entry points"


def linked_files(path: Path) -> set[Path]:
    """The files one markdown page links to (resolved)."""
    targets = LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8")))
    return {(path.parent / t.partition("#")[0]).resolve() for t in targets if not re.match(r"[a-z]+:|#", t)}


def test_readme_links_every_docs_page() -> None:
    linked = linked_files(README)
    missing = sorted(p.name for p in (REPO / "docs").glob("*.md") if p.resolve() not in linked)
    assert not missing, f"docs pages the README's map does not link: {missing}"


def test_every_report_is_linked_from_a_page() -> None:
    """The measurement reports (docs/reports/) are reached from the user pages or the README."""
    linked = set().union(*(linked_files(p) for p in markdown_files()))
    reports = sorted((REPO / "docs" / "reports").glob("*.md"))
    assert [p.name for p in reports if p.resolve() not in linked] == []


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path: Path) -> None:
    assert broken_links(path) == []


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere) [web](https://x.org)\n")
    assert broken_links(page, root=tmp_path) == [
        "page.md: (missing.md): no such file",
        "page.md: (#nowhere): no heading with that anchor",
    ]


def test_every_block_marker_exists_exactly_once() -> None:
    """A measured block lives in one file (README.md or docs/*.md): rendered and read in one place."""
    counts: dict[tuple[str, str], list[str]] = {}
    for path in markdown_files():
        for name, end in MARKER.findall(path.read_text(encoding="utf-8")):
            counts.setdefault((name, end), []).append(path.name)
    repeated = {f"{name}:{end}": files for (name, end), files in counts.items() if len(files) != 1}
    assert not repeated, f"markers found more than once: {repeated}"
    unpaired = {name for name, _ in counts} ^ {name for name, end in counts if end == "end"}
    assert not unpaired, f"markers without their other half: {unpaired}"


def test_the_repairs_page_names_every_repair_module() -> None:
    """The plugin's repairs are the modules of macaron_fairseq/repairs/; docs/repairs.md describes each one,
    and no page states another number of them."""
    modules = sorted(
        p.name for p in (REPO / "macaron_fairseq" / "repairs").glob("*.py") if p.stem != "__init__"
    )
    page = (REPO / "docs" / "repairs.md").read_text(encoding="utf-8")
    assert [m for m in modules if m not in page] == [], "docs/repairs.md does not describe every repair"
    numbers = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        for word in re.findall(r"\b(\w+) repairs\b", text, re.I):
            if word.lower() in numbers:
                assert numbers[word.lower()] == len(modules), (
                    f"{path.name}: '{word} repairs', code has {len(modules)}"
                )


def test_readme_shows_the_pictures() -> None:
    readme = README.read_text(encoding="utf-8")
    images = {t for t in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", readme)}
    for picture in ("docs/quickstart_loss_curves.png",):
        assert picture in images, f"README does not show {picture}"


def test_git_tracks_every_linked_file() -> None:
    """A link that resolves only in this working tree (an untracked file) breaks in a fresh clone."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = set(
        subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
    )
    untracked = []
    for path in markdown_files():
        for target in LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
            file_part = target.partition("#")[0]
            if file_part and not re.match(r"[a-z]+:", target):
                resolved = (path.parent / file_part).resolve()
                rel = resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else None
                if rel and resolved.is_file() and rel not in tracked:
                    untracked.append(f"{path.name} -> {rel}")
    assert untracked == [], f"links to files git does not track: {untracked}"
