"""The import contract of docs/architecture.md ("Layers"), checked over the source.

Every ``.py`` file of the project's packages is parsed with :mod:`ast`; every import in it — at module level
and inside functions (a lazy import that goes up a layer is still a dependency on that layer) — is mapped to
the top-level package it names, and each edge between two packages must be in :data:`ALLOWED`, the table
that docs/architecture.md holds (read from there: the contract is written once). The same imports, as
edges between modules, must form no cycle (inside a package or across packages; a cycle is named with the
file and line of each import), and only the renderer imports the benchmarks' reports. A last
check runs fresh interpreters: importing the plugin (what ``fairseq-train --user-dir macaron_fairseq`` does),
the shared base and the tools loads none of DeepSpeed, spaCy, transformers, matplotlib.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DOC = ROOT / "docs" / "architecture.md"

#: a row of the table in docs/architecture.md, section "Layers": | `package` | layer | `a`, `b` or — |
_ROW = re.compile(r"^\| `(?P<package>\w+)` \| (?P<layer>\d+|—) \| (?P<allowed>.*) \|$")


def layer_table(text: str) -> dict[str, frozenset[str]]:
    """package -> the packages of the project it may import, from the table of the "Layers" section."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        if row := _ROW.match(line):
            table[row["package"]] = frozenset(re.findall(r"`(\w+)`", row["allowed"]))
    return table


#: the contract: docs/architecture.md's table, written there once
ALLOWED: dict[str, frozenset[str]] = layer_table(DOC.read_text(encoding="utf-8"))


def package_dirs() -> dict[str, str]:
    """Import name -> folder where they differ: pyproject.toml's ``[tool.setuptools] package-dir`` (the
    checkout's preprocess/, pipelines/, slurm/ are imported as macaron_preprocess, ...)."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return dict(setuptools.get("package-dir", {}))


#: import name -> folder, and back
FOLDER: dict[str, str] = package_dirs()
IMPORT_NAME: dict[str, str] = {folder: name for name, folder in FOLDER.items()}

#: inside the plugin: what fairseq loads with ``--user-dir`` (everything but these) never imports the
#: plugin's own commands beside it: the DeepSpeed trainer, the HuggingFace bridge, the upgrade of the authors'
#: checkpoints, the parameter-count table and the model builder it uses (docs/architecture.md)
PLUGIN_EDGES: tuple[str, ...] = (
    "macaron_fairseq.pretrain",
    "macaron_fairseq.hf",
    "macaron_fairseq.upgrade",
    "macaron_fairseq.param_parity",
    "macaron_fairseq.build_without_data",
)

#: third-party packages that load only where they are used
HEAVY: tuple[str, ...] = ("deepspeed", "spacy", "transformers", "matplotlib")


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str
    """The absolute module name the statement imports (relative imports resolved)."""
    kind: str = "import"
    """``import`` (``import a.b``, ``import_module("a.b")``), ``from`` (the ``a`` of ``from a import b``) or
    ``name`` (its ``a.b``: a module, or a name defined in ``a``)."""

    @property
    def package(self) -> str:
        return self.module.split(".")[0]

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def module_name(path: Path) -> str:
    """The name a file is imported by (its folder's import name first)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = IMPORT_NAME.get(parts[0], parts[0])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module an ``ImportFrom`` names, a relative one resolved against ``path``'s package."""
    if not node.level:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(path: Path, source: str | None = None) -> Iterator[Import]:
    """Every import statement of the file (module level, functions, classes, ``if``/``try`` blocks) and every
    ``importlib.import_module("literal")``, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source, filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            yield Import(path, node.lineno, module, "from")
            for alias in node.names:  # "from macaron_fairseq import pretrain" imports a subpackage
                yield Import(path, node.lineno, f"{module}.{alias.name}", "name")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield Import(path, node.lineno, node.args[0].value)


def source_files() -> list[Path]:
    return sorted(p for package in ALLOWED for p in (ROOT / FOLDER.get(package, package)).rglob("*.py"))


def _within(module: str, packages: tuple[str, ...]) -> str | None:
    """The package of ``packages`` that ``module`` is or lies in."""
    return next((p for p in packages if module == p or module.startswith(p + ".")), None)


def violations(path: Path, source: str | None = None) -> list[str]:
    """The forbidden edges of one file, as ``file:line: a -> b (import x.y) ...``, one per line and edge."""
    own = module_name(path).split(".")[0]
    in_core = own == "macaron_fairseq" and _within(module_name(path), PLUGIN_EDGES) is None
    found: dict[tuple[int, str], str] = {}
    for imp in imports_of(path, source):
        target = imp.package
        if target in ALLOWED and target != own and target not in ALLOWED[own]:
            found.setdefault(
                (imp.line, target),
                f"{imp.where()}: {own} -> {target} (import {imp.module}) is not an allowed edge",
            )
        if in_core and (sub := _within(imp.module, PLUGIN_EDGES)) is not None:
            found.setdefault(
                (imp.line, sub),
                f"{imp.where()}: plugin core -> {sub} (import {imp.module}): the plugin's commands are not "
                "loaded with --user-dir",
            )
    return list(found.values())


def module_graph(sources: dict[str, str] | None = None) -> dict[str, dict[str, Import]]:
    """module -> {module of the project it imports: the first import statement doing so}, over every file of
    the project's packages (``sources``: file → source text replacing the file's). ``import a.b.c`` is an
    edge to the longest of ``a.b.c``, ``a.b``, ``a`` that is a module of the project; ``from a import b`` one
    to ``a.b`` when that is a module, else to ``a``."""
    files = {module_name(path): path for path in source_files()}

    def module_of(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, Import]] = {}
    for name, path in files.items():
        edges: dict[str, Import] = {}
        for imp in imports_of(path, (sources or {}).get(str(path.relative_to(ROOT)))):
            if imp.kind == "from":  # its names say what it imports
                continue
            target = imp.module if imp.kind == "name" and imp.module in files else None
            target = target or module_of(imp.module.rpartition(".")[0] if imp.kind == "name" else imp.module)
            if target is not None and target != name:
                edges.setdefault(target, imp)
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, dict[str, Import]]) -> list[str]:
    """One cycle of each group of modules that import each other (a strongly connected component), the
    shortest through its first module, as ``a (file:line) -> b (file:line) -> a``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for group in sorted(groups):
        start, members = group[0], set(group)
        came_from: dict[str, str | None] = {start: None}
        queue, last = deque([start]), start
        while queue:  # breadth first from start, until a module that imports start
            last = queue.popleft()
            if start in graph[last]:
                break
            for target in sorted(graph[last]):
                if target in members and target not in came_from:
                    came_from[target] = last
                    queue.append(target)
        path: list[str] = []
        node: str | None = last
        while node is not None:
            path.insert(0, node)
            node = came_from[node]
        cycle = [*path, start]
        steps = [f"{a} ({graph[a][b].where()})" for a, b in itertools.pairwise(cycle)]
        found.append(" -> ".join([*steps, start]))
    return found


def test_the_table_of_the_document_is_read() -> None:
    """Every package of the project has a row; each names only packages of the table, and never itself."""
    packages = {
        "macaron_workflow",
        "macaron_fairseq",
        "macaron_tools",
        "macaron_preprocess",
        "macaron_synthetic",
        "macaron_pipelines",
        "macaron_slurm",
    }
    assert packages | {"benchmarks", "scripts"} == set(ALLOWED)
    assert ALLOWED["macaron_workflow"] == frozenset() and ALLOWED["macaron_fairseq"] == {"macaron_workflow"}
    for package, allowed in ALLOWED.items():
        assert (ROOT / FOLDER.get(package, package)).is_dir(), package
        assert allowed <= set(ALLOWED) - {package}, (package, allowed)
    assert len(source_files()) > 150


def test_the_document_names_every_repair_and_every_base_module() -> None:
    """docs/architecture.md lists the plugin's repairs and the base layer's modules (no stale count)."""
    text = DOC.read_text(encoding="utf-8")
    for folder in ("macaron_fairseq/repairs", "macaron_workflow"):
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.name != "__init__.py":
                assert path.name in text, f"docs/architecture.md does not name {folder}/{path.name}"


def test_no_import_goes_up_a_layer() -> None:
    found = [v for path in source_files() for v in violations(path)]
    assert not found, "imports against docs/architecture.md (Layers):\n" + "\n".join(found)


def test_no_modules_import_each_other() -> None:
    """No import cycle, inside a package or across packages (module level and lazy imports alike)."""
    cycles = import_cycles(module_graph())
    assert not cycles, "modules that import each other:\n" + "\n".join(cycles)


def test_a_cycle_is_named_with_its_files_and_lines() -> None:
    """The check can fail: a lazy import closing a circle, and a module-level one, are named."""
    lazy = {"benchmarks/results_file.py": "def f():\n    from benchmarks import doc_tables\n"}
    [cycle] = import_cycles(module_graph(lazy))  # the renderer imports results_file
    assert "benchmarks.results_file (benchmarks/results_file.py:2) -> benchmarks.doc_tables" in cycle, cycle
    direct = {"macaron_workflow/errors.py": "from macaron_workflow.cli import run_cli\n"}
    [cycle] = import_cycles(module_graph(direct))
    named = r"macaron_workflow\.cli \(macaron_workflow/cli\.py:\d+\) -> macaron_workflow\.errors "
    assert re.fullmatch(named + r"\(macaron_workflow/errors\.py:1\) -> macaron_workflow\.cli", cycle), cycle


RENDERER = ("benchmarks.doc_tables", "benchmarks.reports")


def test_benchmarks_write_results_files_and_only_the_renderer_renders_them() -> None:
    """Nothing imports the renderer (``benchmarks.doc_tables``); a benchmark imports no report
    (``benchmarks.reports``: what a results file renders to), a report may import the benchmark it reads."""
    graph = module_graph()
    found = [
        f"{imp.where()}: {name} -> {target}"
        for name, edges in graph.items()
        for target, imp in edges.items()
        if target == "benchmarks.doc_tables"
        or (target.startswith("benchmarks.reports") and not name.startswith(RENDERER))
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("file", "source", "edge"),
    [
        (
            "macaron_fairseq/pretrain/trainer.py",
            "def f():\n    from macaron_tools import plot_curves\n",
            "macaron_fairseq/pretrain/trainer.py:2: macaron_fairseq -> macaron_tools",
        ),
        (
            "macaron_workflow/stages.py",
            "import macaron_preprocess.text\n",
            "macaron_workflow/stages.py:1: macaron_workflow -> macaron_preprocess",
        ),
        (
            "macaron_tools/average_checkpoints.py",
            "if True:\n    import macaron_fairseq.repairs\n",
            "macaron_tools/average_checkpoints.py:2: macaron_tools -> macaron_fairseq",
        ),
        (
            "preprocess/glue.py",
            "import importlib\nimportlib.import_module('macaron_pipelines.glue')\n",
            "preprocess/glue.py:2: macaron_preprocess -> macaron_pipelines",
        ),
        (
            "pipelines/glue/grid.py",
            "from benchmarks import results_file\n",
            "pipelines/glue/grid.py:1: macaron_pipelines -> benchmarks",
        ),
        (
            "macaron_fairseq/models/bert.py",
            "from ..pretrain import trainer\n",
            "macaron_fairseq/models/bert.py:1: plugin core -> macaron_fairseq.pretrain",
        ),
        (
            "macaron_fairseq/models/authors.py",
            "def f():\n    from macaron_fairseq.upgrade import convert\n",
            "macaron_fairseq/models/authors.py:2: plugin core -> macaron_fairseq.upgrade",
        ),
    ],
)
def test_a_forbidden_edge_is_reported_with_file_and_line(file: str, source: str, edge: str) -> None:
    """The check can fail: an upward import (module level, lazy, relative, by name) is named."""
    found = violations(ROOT / file, source)
    assert any(v.startswith(edge) for v in found), found


def test_allowed_edges_pass() -> None:
    source = "import macaron_fairseq\nimport macaron_preprocess\n"
    assert violations(ROOT / "pipelines/glue/grid.py", source) == []
    inside_hf = "from macaron_fairseq.pretrain import export\n"
    assert violations(ROOT / "macaron_fairseq/hf/exporter.py", inside_hf) == []


#: run by a fresh interpreter: import argv[2:] in turn; print, for each of argv[1] (comma-separated) that got
#: loaded, the module whose import loaded it
_PROBE = """
import importlib, json, sys
heavy, loaded_by = sys.argv[1].split(","), {}
for name in sys.argv[2:]:
    importlib.import_module(name)
    loaded_by.update({h: name for h in heavy if h in sys.modules and h not in loaded_by})
cpu_adam = sys.modules.get("fairseq.optim.cpu_adam")
print(json.dumps({"heavy": loaded_by, "has_deepspeed": getattr(cpu_adam, "has_deepspeed", None)}))
"""


def _probe(*modules: str, heavy: tuple[str, ...] = HEAVY) -> dict:
    command = [sys.executable, "-c", _PROBE, ",".join(heavy), *modules]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: modules that are transformers code by nature: written into an exported HuggingFace model directory
HF_MODEL_FILES: frozenset[str] = frozenset(
    {
        "macaron_fairseq.hf.modeling_macaron_bert",
        "macaron_fairseq.hf.modeling_authors_bert",
        "macaron_fairseq.hf.tokenization_macaron",
        "macaron_fairseq.hf.modeling_macaron_mt",
        "macaron_fairseq.hf.tokenization_macaron_mt",
    }
)


def modules_of(*packages: str) -> tuple[str, ...]:
    """Every importable module of ``packages`` (``__main__`` modules, which run on import, left out)."""
    names = (
        module_name(p)
        for package in packages
        for p in sorted((ROOT / FOLDER.get(package, package)).rglob("*.py"))
    )
    return tuple(n for n in names if not n.endswith("__main__") and n not in HF_MODEL_FILES)


FRESH_PLUGIN = pytest.mark.slow  # imports the plugin (fairseq, torch) in a fresh interpreter: ~6 s each
"""Out of --quick: the probes of the plugin; the other layers' probes are fast and stay in."""


@pytest.mark.parametrize(
    "modules",
    [
        pytest.param(("macaron_fairseq",), marks=FRESH_PLUGIN),
        pytest.param(modules_of("macaron_fairseq"), marks=FRESH_PLUGIN),
        modules_of("macaron_workflow", "macaron_tools"),
        modules_of("macaron_preprocess", "macaron_synthetic"),
    ],
    ids=["plugin", "every-plugin-module", "base-and-tools", "preprocess-and-generators"],
)
def test_importing_loads_nothing_heavy(modules: tuple[str, ...]) -> None:
    """DeepSpeed, spaCy, transformers and matplotlib load where they are used (the trainer's start, the
    sentence splitter, the HF conversion, a plot), not when a module is imported: not with the plugin
    (``--user-dir``), nor with any module of the plugin, the base, the tools, the preprocessors or the
    generators."""
    loaded = _probe(*modules)["heavy"]
    assert not loaded, "; ".join(f"importing {module} loaded {heavy}" for heavy, module in loaded.items())


def test_the_base_layer_imports_no_ml_at_all() -> None:
    """``macaron_workflow`` is imported by every command, also before anything is installed: no torch, numpy,
    fairseq (the checkpoint reader and the plot import torch and matplotlib when they run)."""
    loaded = _probe(*modules_of("macaron_workflow"), heavy=("torch", "numpy", "fairseq", *HEAVY))["heavy"]
    assert not loaded, "; ".join(f"importing {module} loaded {heavy}" for heavy, module in loaded.items())


@pytest.mark.slow  # imports the plugin in a fresh interpreter: ~6 s (out of --quick)
def test_the_plugin_keeps_fairseq_cpu_adam_usable() -> None:
    """fairseq's ``cpu_adam`` still knows that DeepSpeed is installed (``repairs.lazy_deepspeed``)."""
    import importlib.util

    found = _probe("macaron_fairseq")
    assert found["has_deepspeed"] is (importlib.util.find_spec("deepspeed") is not None)


def test_the_tools_do_not_import_fairseq() -> None:
    """Stand-alone tools need neither the plugin nor fairseq (only torch, to read checkpoints)."""
    code = (
        "import sys, macaron_tools.average_checkpoints, macaron_tools.score_bleu, macaron_tools.plot_curves;"
        "print(sorted(m for m in ('fairseq', 'macaron_fairseq') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr[-2000:]
