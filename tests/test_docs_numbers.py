"""Numbers in the README and docs are the output of commands: the measured tables are rendered from the
results files the benchmarks write (``docs/results/``), and the distributed μ line is reproduced here."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import pytest
from helpers import DT_FIXUP, REPO, TINY, run_cli

from benchmarks import doc_tables

#: the μ line, without the device it ran on (", on cpu"), which the documented line does not show
MU_LINE = re.compile(r"DT-Fixup μ pass \((\w+)\): (μ\[.*?\(\d+ batches)(?:, on [^)]*)?\)")


#: blocks registered before their benchmark's results file is published (written on main meanwhile)
PENDING = {"authors-eval-cost"}


def test_every_results_block_is_rendered_from_its_results_file() -> None:
    pending = {b.name for b in doc_tables.BLOCKS if b.pending()}
    assert pending <= PENDING, f"results files missing: {sorted(pending - PENDING)}"
    blocks = tuple(b for b in doc_tables.BLOCKS if not b.computed and b.name not in pending)
    assert doc_tables.mismatches(blocks) == [], "run: python -m benchmarks.doc_tables"


@pytest.mark.slow  # builds the big translation and BERT architectures (~1 min)
def test_every_computed_block_is_what_the_code_computes_today() -> None:
    blocks = tuple(b for b in doc_tables.BLOCKS if b.computed)
    assert {b.name for b in blocks} == {
        "architectures",
        "param-parity",
        "bert-parity",
        "authors-recipes",
        "does-it-work",
        "plugin-options",
        "authors-bert-parity",
        "authors-glue-recipe",
    }
    assert doc_tables.mismatches(blocks) == [], "run: python -m benchmarks.doc_tables"


def test_a_changed_results_file_is_detected(tmp_path: Path) -> None:
    block = next(b for b in doc_tables.BLOCKS if not b.computed)
    payload = doc_tables.read_results(doc_tables.RESULTS_DIR / block.results)
    payload["machine"]["date"] = "1970-01-01 00:00 UTC"
    (tmp_path / block.results).write_text(json.dumps(payload))
    [problem] = doc_tables.mismatches((block,), results_dir=tmp_path)
    assert problem.endswith(f"block '{block.name}' differs from docs/results/{block.results}")


def test_a_results_file_elsewhere_is_shown_and_a_missing_one_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = next(b for b in doc_tables.BLOCKS if b.name == "speed")
    copy = tmp_path / block.results
    copy.write_text((doc_tables.RESULTS_DIR / block.results).read_text())
    assert doc_tables.show(copy) == f"<!-- speed -->\n{block.render()}"
    elsewhere = copy.rename(tmp_path / "out.json")  # found by the benchmark its command names
    assert doc_tables.show(elsewhere) == f"<!-- speed -->\n{block.render()}"
    elsewhere.write_text('{"command": "python -m benchmarks.unknown", "machine": {}, "results": {}}')
    with pytest.raises(doc_tables.UserError, match="no docs block is rendered from it"):
        doc_tables.show(elsewhere)
    [problem] = doc_tables.mismatches((block,), results_dir=tmp_path / "nowhere")
    assert problem.endswith(
        "block 'speed': docs/results/speed_macaron_vs_transformer.json does not exist (run its benchmark)"
    )
    repo = _checkout(tmp_path / "repo", _block("speed", "kept"), {})
    assert doc_tables.rewrite((block,), repo, results_dir=tmp_path / "nowhere") == []  # left as it is
    assert "block 'speed' left as it is" in capsys.readouterr().err


def _checkout(root: Path, readme: str, pages: dict[str, str]) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text(readme, encoding="utf-8")
    for name, text in pages.items():
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text, encoding="utf-8")
    return root


def _block(name: str, body: str) -> str:
    return f"<!-- results:{name}:start -->\n{body}\n<!-- results:{name}:end -->\n"


TOY = (doc_tables.DocBlock("toy", lambda: "| a |\n|---|\n| 1 |"),)


def test_a_block_is_found_by_its_marker_wherever_it_lives_and_rewritten_there(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, "# readme\n", {"deep/page.md": "intro\n" + _block("toy", "stale") + "end\n"})
    assert doc_tables.mismatches(TOY, repo) == ["docs/deep/page.md: block 'toy' differs from the code"]
    assert doc_tables.rewrite(TOY, repo) == [repo / "docs/deep/page.md"]
    rendered = _block("toy", "| a |\n|---|\n| 1 |")
    assert (repo / "docs/deep/page.md").read_text() == "intro\n" + rendered + "end\n"
    assert doc_tables.mismatches(TOY, repo) == [] and doc_tables.rewrite(TOY, repo) == []
    assert sorted(p.name for p in (repo / "docs/deep").iterdir()) == ["page.md"]  # no temporary left


LINKS = "![plot](docs/p.png) [q](docs/q.md#a) [w](https://x.org) [h](#h)"
LINKED = (doc_tables.DocBlock("linked", lambda: LINKS),)


def test_each_retired_study_is_gone_and_its_code_is_at_the_commit_its_reports_name() -> None:
    """A finished study's code can go while its results file and report stay (docs/architecture.md): the
    commit the rendered line names holds the file, and the checkout no longer does."""
    from benchmarks.results_file import RETIRED

    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for name, commit in RETIRED.items():
        assert not (REPO / "benchmarks" / f"{name}.py").exists(), name
        probe = ["git", "cat-file", "-e", f"{commit}:benchmarks/{name}.py"]
        assert subprocess.run(probe, cwd=REPO, capture_output=True).returncode == 0, (name, commit)
        shown = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "docs").rglob("*.md"))
        assert f"git show {commit}:benchmarks/{name}.py" in shown, name


def test_a_blocks_links_are_rebased_to_the_page_holding_it(tmp_path: Path) -> None:
    """Renderers link from the checkout root; the block reads right in README.md, docs/ and docs/reports/."""
    for holder, seen in [
        ("README.md", "![plot](docs/p.png) [q](docs/q.md#a)"),
        ("docs/page.md", "![plot](p.png) [q](q.md#a)"),
        ("docs/reports/page.md", "![plot](../p.png) [q](../q.md#a)"),
    ]:
        repo = tmp_path / holder.replace("/", "_")
        pages = {holder.removeprefix("docs/"): _block("linked", "stale")} if holder != "README.md" else {}
        _checkout(repo, _block("linked", "stale") if holder == "README.md" else "# readme\n", pages)
        doc_tables.rewrite(LINKED, repo)
        assert f"{seen} [w](https://x.org) [h](#h)" in (repo / holder).read_text()
        assert doc_tables.mismatches(LINKED, repo) == []


def test_a_missing_duplicated_unclosed_or_unknown_marker_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = _checkout(tmp_path / "missing", "# readme\n", {})
    [problem] = doc_tables.mismatches(TOY, missing)
    assert "block 'toy'" in problem and "found 0 (no file)" in problem
    twice = _checkout(tmp_path / "twice", _block("toy", "x"), {"a.md": _block("toy", "x")})
    [problem] = doc_tables.mismatches(TOY, twice)
    assert "found 2 (README.md (1x), docs/a.md (1x))" in problem
    with pytest.raises(doc_tables.UserError, match="exactly once"):
        doc_tables.rewrite(TOY, twice)
    assert (twice / "README.md").read_text() == _block("toy", "x")  # nothing rewritten
    unclosed = _checkout(tmp_path / "unclosed", "<!-- results:toy:start -->\nx\n", {})
    assert doc_tables.mismatches(TOY, unclosed) == ["README.md: block 'toy' has no <!-- results:toy:end -->"]
    unknown = _checkout(tmp_path / "unknown", _block("toy", "x"), {"b.md": _block("nobody-renders-me", "y")})
    [problem] = doc_tables.mismatches(TOY, unknown)
    assert problem == (
        "docs/b.md: block 'nobody-renders-me' has no renderer in benchmarks/doc_tables.py BLOCKS"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train_argv(data: Path, save_dir: Path) -> list[str]:
    return [
        "fairseq-train",
        str(data),
        "--user-dir",
        str(REPO / "macaron_fairseq"),
        "--task",
        "translation",
        "-s",
        "src",
        "-t",
        "tgt",
        "--arch",
        "macaron_small",
        *TINY,
        *DT_FIXUP,
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        "--max-update",
        "1",
        "--batch-size",
        "16",
        "--criterion",
        "cross_entropy",
        "--save-dir",
        str(save_dir),
        "--no-save",
        "--cpu",
        "--num-workers",
        "0",
        "--disable-validation",
        "--seed",
        "1",
        "--log-format",
        "simple",
    ]


def mu_lines(log: str) -> dict[str, str]:
    return {stack: line + ")" for stack, line in MU_LINE.findall(log)}


@pytest.mark.slow  # two fairseq-train processes over gloo, plus a single-process reference
def test_distributed_mu_equals_the_single_process_mu_and_the_documented_line(
    tiny_data_bin: Path, tmp_path: Path
) -> None:
    proc = run_cli(_train_argv(tiny_data_bin, tmp_path / "single"), cwd=REPO)
    single = mu_lines(proc.stdout + proc.stderr)
    port = _free_port()
    distributed = [
        "--distributed-backend",
        "gloo",
        "--distributed-world-size",
        "2",
        "--distributed-init-method",
        f"tcp://127.0.0.1:{port}",
        "--distributed-no-spawn",
        "--ddp-backend",
        "legacy_ddp",
    ]
    ranks = []
    for r in range(2):
        argv = [*_train_argv(tiny_data_bin, tmp_path / f"rank{r}"), *distributed]
        argv += ["--distributed-rank", str(r)]
        ranks.append(
            subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    logs = [p.communicate(timeout=600)[0] for p in ranks]
    assert [p.returncode for p in ranks] == [0, 0], logs[0][-3000:]
    rank0 = mu_lines(logs[0])
    assert set(rank0) == {"encoder", "decoder"} and rank0 == single  # same μ, counts and batches
    # (fairseq logs INFO on the master rank only; rank 1 used the same all-reduced values)
    doc = (REPO / "docs" / "dt_fixup.md").read_text()
    assert f"`{rank0['encoder']}`" in doc, f"docs/dt_fixup.md should quote: {rank0['encoder']}"
