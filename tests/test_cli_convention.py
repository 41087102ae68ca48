"""One convention for every command (#42 point 6), checked on every console script of ``pyproject.toml`` and
every ``python -m macaron_...`` command the README and docs show or a console script runs, through their
``--help`` run from a directory outside the checkout: exit 0; the usage names the command as the user typed it
(the console script's name, or ``python -m MODULE``; never ``__main__.py``, ``param_parity.py`` or a bare
module name); a console script's help is its module's; no reStructuredText markup (help texts are often
docstrings); every option with a default shows it; and every flag the docs show after a command is one its
parser accepts.

The helps run in one interpreter (``tests/cli_helps.py``): torch, fairseq and DeepSpeed are imported once."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

SCRIPTS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "scripts"
]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
#: a command's options pass through to another program (fairseq-train): the docs' flags are that program's
PASS_THROUGH = {"macaron-train-preemptible", "python -m macaron_tools.train_preemptible"}
MARKUP = re.compile(r"``|:[a-z]+:`")


def documented_modules() -> list[str]:
    """The ``python -m macaron_...`` commands that the README and docs show."""
    found = set()
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r"python -m (macaron_\w+(?:\.\w+)*)\b(?!\.)", text))
    return sorted(found)


def script_module(name: str) -> str:
    """The module ``python -m`` runs for a console script: its target's module (a package's ``__main__``:
    the package)."""
    module = SCRIPTS[name].partition(":")[0]
    return module.removesuffix(".__main__")


ENTRIES = [f"script:{name}" for name in SCRIPTS] + [
    f"module:{name}" for name in sorted(set(documented_modules()) | {script_module(s) for s in SCRIPTS})
]


def typed(entry: str) -> str:
    kind, name = entry.split(":", 1)
    return name if kind == "script" else f"python -m {name}"


@pytest.fixture(scope="module")
def helps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    away = tmp_path_factory.mktemp("my-experiment")
    out = away / "helps.json"
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1", COLUMNS="110")
    command = [sys.executable, str(REPO / "tests" / "cli_helps.py"), str(out), *ENTRIES]
    proc = subprocess.run(command, cwd=away, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {result["entry"]: result for result in json.loads(out.read_text(encoding="utf-8"))}


def test_the_documented_modules_exist() -> None:
    """A ``python -m`` command in the docs is a module that runs (a package: its ``__main__``)."""
    missing = []
    for module in documented_modules():
        spec = importlib.util.find_spec(module)
        if spec is None or (
            spec.submodule_search_locations and importlib.util.find_spec(f"{module}.__main__") is None
        ):
            missing.append(module)
    assert not missing


@pytest.mark.parametrize("entry", ENTRIES)
def test_help_exits_0_and_names_the_command_as_typed(helps: dict[str, dict[str, Any]], entry: str) -> None:
    result = helps[entry]
    assert result["status"] == 0, result["stderr"]
    assert result["stdout"].startswith(f"usage: {typed(entry)} "), result["stdout"][:300]
    assert result["parsers"] and result["parsers"][0]["prog"] == typed(entry)


def after_usage(text: str) -> str:
    """The help text after its usage paragraph, which names the program and wraps by its length."""
    start = text.find("usage:")
    assert start >= 0, text[-2000:]
    return text[text.index("\n\n", start) :]


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_console_scripts_help_is_its_modules_help(helps: dict[str, dict[str, Any]], name: str) -> None:
    """``NAME --help`` and ``python -m MODULE --help`` print the same help but for the program's name."""
    script, module = helps[f"script:{name}"], helps[f"module:{script_module(name)}"]
    assert script["status"] == module["status"] == 0, script["stderr"] + module["stderr"]
    assert after_usage(script["stdout"]) == after_usage(module["stdout"])


@pytest.mark.parametrize("entry", ENTRIES)
def test_help_has_no_rst_markup(helps: dict[str, dict[str, Any]], entry: str) -> None:
    lines = [line for line in helps[entry]["stdout"].splitlines() if MARKUP.search(line)]
    assert not lines


def shown(default: object) -> str:
    if isinstance(default, list):
        return " ".join(str(item) for item in default)
    return "''" if default == "" else str(default)


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("entry", ENTRIES)
def test_help_shows_every_default(helps: dict[str, dict[str, Any]], entry: str) -> None:
    """Every option that takes a value and has a default (not None, not an empty list) shows it in its help
    entry (switches are off unless given: nothing to show)."""
    hidden = []
    for parser in helps[entry]["parsers"]:
        for option in parser["options"]:
            default = option["default"]
            if default is None or default == [] or option["nargs"] == 0:
                continue
            if shown(default) not in words(option["entry"]):
                hidden.append(f"{option['flags'][0]} (default {shown(default)}): {words(option['entry'])}")
    assert not hidden


def doc_commands(text: str) -> list[str]:
    """The command lines of a Markdown text: its code blocks' lines (continuation lines joined) and its
    inline code spans."""
    lines = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.DOTALL):
        lines += block.replace("\\\n", " ").splitlines()
    prose = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.DOTALL)
    lines += re.findall(r"`([^`\n]+)`", prose)
    return lines


def flags_after(line: str, command: str) -> list[str]:
    """The ``--flags`` given to ``command`` on ``line`` (up to the end of that command: a pipe, ``&&``,
    ``;``, a comment, or ``--`` that hands the rest to another program)."""
    flags = []
    for match in re.finditer(rf"(?<![\w./-]){re.escape(command)}(?=\s|$)", line):
        for token in line[match.end() :].split():
            if token in ("|", "||", "&&", ";", "--", "\\") or token.startswith("#") or token.endswith(";"):
                break
            flag = re.match(r"[\[(]*(--[a-z][\w-]*)", token)  # --flag, [--flag ...], (--flag)
            if flag:
                flags.append(flag.group(1))
    return flags


def test_every_flag_the_docs_show_is_accepted(helps: dict[str, dict[str, Any]]) -> None:
    """The README's and docs' commands, and the examples in the helps themselves (after their usage
    paragraph): every ``--flag`` given to one of the commands is one its parser accepts (before: the help of
    ``param_parity`` showed a ``--markdown`` it refused)."""
    sources = {str(path.relative_to(REPO)): doc_commands(path.read_text(encoding="utf-8")) for path in DOCS}
    for entry, result in helps.items():
        text = result["stdout"]
        sources[f"{typed(entry)} --help"] = text[text.find("\n\n") :].splitlines()
    refused = []
    for entry in ENTRIES:
        command = typed(entry)
        if command in PASS_THROUGH or not helps[entry]["parsers"]:
            continue
        accepted = set(helps[entry]["parsers"][0]["accepted"])
        for source, lines in sources.items():
            for line in lines:
                refused += [
                    f"{source}: {command} {flag}"
                    for flag in flags_after(line, command)
                    if flag not in accepted
                ]
    assert not sorted(set(refused))


def test_gpu_check_takes_workdir_and_still_the_old_spelling_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--workdir`` as in every pipeline (before: only ``--work-dir``); the old spelling does the same after
    one line on stderr."""
    from macaron_pipelines.gpu_check.__main__ import parse_args

    assert parse_args(["--workdir", str(tmp_path)]).workdir == tmp_path
    assert capsys.readouterr().err == ""
    assert parse_args(["--work-dir", str(tmp_path)]).workdir == tmp_path
    (note,) = capsys.readouterr().err.splitlines()
    assert note.endswith("note: --work-dir is deprecated, use --workdir (it will be removed)"), note


def test_the_console_script_name_is_the_program_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``python -m MODULE`` program name becomes the console script's when that is what runs (its entry
    point is in MODULE or MODULE's ``__main__``); a module's own file, another program or a sub-command's
    name are kept."""
    from macaron_workflow.cli import ArgumentParser, typed_name

    monkeypatch.setattr(sys, "argv", [str(Path(sys.executable).parent / "macaron-export"), "--help"])
    assert typed_name("python -m macaron_fairseq.pretrain.export") == "macaron-export"
    assert ArgumentParser(prog="python -m macaron_fairseq.pretrain.export").prog == "macaron-export"
    assert typed_name("python -m macaron_tools.score_bleu") == "python -m macaron_tools.score_bleu"
    assert typed_name("python -m macaron_fairseq.hf import") == "python -m macaron_fairseq.hf import"
    monkeypatch.setattr(sys, "argv", ["/somewhere/macaron_fairseq/hf/__main__.py"])
    assert typed_name("python -m macaron_fairseq.hf") == "python -m macaron_fairseq.hf"
    monkeypatch.setattr(sys, "argv", ["/venv/bin/macaron-hf"])
    assert typed_name("python -m macaron_fairseq.hf") == "macaron-hf"


def _deprecated_and_current_spellings(trees: list[ast.Module]) -> tuple[set[str], set[int], set[str]]:
    """The deprecated spellings our parsers accept, the ids of the string nodes that declare them, and every
    spelling some parser of ours accepts as current (``add_argument``'s and ``Option``'s first strings)."""
    deprecated: set[str] = set()
    declaring: set[int] = set()
    current: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if name == "add_deprecated_alias" and len(strings) == 2:
                deprecated.add(strings[0])
                declaring.update(id(a) for a in node.args)
            elif name in ("add_argument", "Option"):
                current.update(s for s in strings if s.startswith("--"))
            for keyword in node.keywords:
                if keyword.arg == "deprecated" and isinstance(keyword.value, ast.Tuple):
                    deprecated.update(e.value for e in keyword.value.elts if isinstance(e, ast.Constant))
                    declaring.update(id(e) for e in keyword.value.elts)
    return deprecated, declaring, current


def test_our_own_commands_pass_no_deprecated_spelling() -> None:
    """A command our code runs spells its flags the current way: a deprecated spelling (kept for users'
    scripts, one note on stderr each time) stands only where it is declared (before: the GPU check built its
    corpus with ``--vocab-size`` and printed the note to every GPU owner)."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True
    )
    sources = {p: REPO / p for p in tracked.stdout.split() if not p.startswith("tests/")}
    trees = {p: ast.parse(path.read_text(encoding="utf-8")) for p, path in sources.items()}
    deprecated, declaring, current = _deprecated_and_current_spellings(list(trees.values()))
    assert {"--vocab-size", "--bpe-sample-sentences", "--work-dir"} <= deprecated
    only_old = deprecated - current
    used = [
        f"{path}:{node.lineno}: {node.value}"
        for path, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in only_old and id(node) not in declaring
    ]
    assert used == []
