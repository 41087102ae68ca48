"""The package as a library sees it: ``pyproject.toml``'s metadata, the dependencies every imported module
needs (declared in the base or in the extra that owns the importing code), the console scripts (each one
exactly its ``python -m`` module), the wheel's contents, and what ``scripts/install.sh`` asks pip for
(``--extras``, ``--dev``, the CPU-only torch, the refusal of unsupported interpreters).

install.sh runs here with a stand-in ``PYTHON`` that logs ``python -m pip ...`` instead of running it (as in
``tests/scripts/test_install.py``), so the real environment is never changed."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from helpers import REPO
from installs import PACKAGES, build_wheel
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
#: folder -> the name it is installed and imported as, where they differ (pyproject's package-dir)
IMPORT_NAMES = {folder: name for name, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items()}
#: the top-level import names of the wheel
TOP_LEVEL = tuple(IMPORT_NAMES.get(folder, folder) for folder in PACKAGES)
#: installed separately by scripts/install.sh: the fairseq fork, with --no-deps (its declared pins need
#: torchaudio, which would replace torch), so it cannot be a declared dependency
FORK = {"fairseq": "ve-fairseq", "fairseq_cli": "ve-fairseq"}
#: modules used only behind ``except ImportError`` with a message saying what to install (not declared)
OPTIONAL = {"wandb": "python -m macaron_fairseq.pretrain --wandb-project (pip install wandb)"}
#: the code each extra owns (a path under the checkout, a folder ending in /); the rest is the base
OWNERS = {
    "macaron_fairseq/pretrain/": ("pretrain",),
    "macaron_fairseq/hf/": ("hf",),
    "preprocess/text/wordpiece_encode.py": ("hf",),  # GLUE on an imported model's WordPiece vocabulary
    "preprocess/bert_corpus.py": ("corpus",),
    "preprocess/text/sentences.py": ("corpus",),
    "preprocess/text/wikitext.py": ("corpus",),
    "pipelines/glue/": ("glue",),
    "pipelines/pretrain.py": ("pretrain", "corpus"),  # builds the corpus, then pre-trains
}
#: console script -> the module ``python -m`` runs (issue #31's list, #35's upgrade, #36's GPU check)
SCRIPTS = {
    "macaron-pretrain": "macaron_fairseq.pretrain",
    "macaron-export": "macaron_fairseq.pretrain.export",
    "macaron-hf": "macaron_fairseq.hf",
    "macaron-upgrade": "macaron_fairseq.upgrade",
    "macaron-glue": "macaron_pipelines.glue",
    "macaron-translate": "macaron_pipelines.translation",
    "macaron-quickstart": "macaron_pipelines.quickstart",
    "macaron-pretrain-pipeline": "macaron_pipelines.pretrain",
    "macaron-gpu-check": "macaron_pipelines.gpu_check",
    "macaron-preprocess-iwslt14": "macaron_preprocess.iwslt14",
    "macaron-preprocess-wmt14": "macaron_preprocess.wmt14_en_de",
    "macaron-preprocess-custom": "macaron_preprocess.custom",
    "macaron-preprocess-glue": "macaron_preprocess.glue",
    "macaron-preprocess-bert-corpus": "macaron_preprocess.bert_corpus",
    "macaron-submit": "macaron_slurm.submit",
    "macaron-average-checkpoints": "macaron_tools.average_checkpoints",
    "macaron-score-bleu": "macaron_tools.score_bleu",
    "macaron-plot-curves": "macaron_tools.plot_curves",
    "macaron-train-preemptible": "macaron_tools.train_preemptible",
}


# ------------------------------------------------------------------------------------------ declared deps
def requirements_of(files: list[str]) -> set[str]:
    names = set()
    for name in files:
        for line in (REPO / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(canonicalize_name(Requirement(line).name))
    return names


@cache
def declared() -> dict[str, set[str]]:
    """Distribution names (canonical) per extra, ``""`` for the base, read as setuptools reads them."""
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]
    result = {"": requirements_of(dynamic["dependencies"]["file"])}
    for extra, spec in dynamic["optional-dependencies"].items():
        result[extra] = requirements_of(spec["file"])
    return result


@dataclass(frozen=True)
class Import:
    module: str  # the top-level name
    path: str  # relative to the checkout
    line: int
    guarded: bool  # inside ``try: ... except ImportError``


def catches_import_error(node: ast.Try) -> bool:
    names = {"ImportError", "ModuleNotFoundError"}
    for handler in node.handlers:
        caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(c, ast.Name) and c.id in names for c in caught):
            return True
    return False


def imports_in(path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    guarded_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and catches_import_error(node):
            guarded_nodes.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            yield Import(
                module.split(".")[0],
                path.relative_to(REPO).as_posix(),
                node.lineno,
                id(node) in guarded_nodes,
            )


def third_party(roots: list[Path], local: set[str]) -> list[Import]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            found += [i for i in imports_in(path) if i.module not in sys.stdlib_module_names | local]
    return found


def owners(path: str) -> tuple[str, ...]:
    return tuple(
        extra
        for prefix, extras in OWNERS.items()
        for extra in extras
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix))
    )


@cache
def installed_modules() -> dict[str, list[str]]:
    return packages_distributions()


@cache
def distribution(module: str) -> str | None:
    dists = installed_modules().get(module)
    return canonicalize_name(dists[0]) if dists else None


def test_every_third_party_import_is_declared_in_the_base_or_in_the_extra_owning_the_code() -> None:
    """An import of the installed packages needs a distribution declared in the base dependencies or in the
    extra that owns the importing file (OWNERS); fairseq is the fork install.sh adds; an OPTIONAL module is
    imported only under ``except ImportError``."""
    problems = []
    found = third_party([REPO / p for p in PACKAGES], set(TOP_LEVEL))
    assert {i.module for i in found} >= {"torch", "fairseq", "deepspeed", "spacy", "scipy", "transformers"}
    for imp in found:
        where = f"{imp.path}:{imp.line} imports {imp.module}"
        if imp.module in FORK:
            continue
        if imp.module in OPTIONAL:
            if not imp.guarded:
                problems.append(f"{where} outside try/except ImportError ({OPTIONAL[imp.module]})")
            continue
        dist = distribution(imp.module)
        if dist is None:
            problems.append(f"{where}: no installed distribution provides it")
            continue
        allowed = ("", *owners(imp.path))
        if not any(dist in declared()[extra] for extra in allowed):
            problems.append(
                f"{where} ({dist}): declare it in "
                + " or ".join(
                    f"requirements-{extra}.txt" if extra else "requirements.txt" for extra in allowed
                )
            )
    assert not problems, "\n".join(problems)


def test_each_extra_is_used_by_the_code_it_owns_and_the_base_needs_neither_deepspeed_nor_spacy() -> None:
    """No extra declares what its code does not import (so no extra drags in more than it needs), and a
    translation user (the base) gets none of DeepSpeed, spaCy, transformers."""
    imported: dict[str, set[str | None]] = {}
    for imp in third_party([REPO / p for p in PACKAGES], set(TOP_LEVEL)):
        for extra in owners(imp.path):
            imported.setdefault(extra, set()).add(distribution(imp.module))
    for extra in ("pretrain", "corpus", "glue", "hf"):
        unused = declared()[extra] - imported.get(extra, set())
        assert not unused, f"extra {extra} declares {sorted(unused)}, which its code ({extra}) never imports"
    assert not declared()[""] & {"deepspeed", "spacy", "wikiextractor", "transformers", "scipy"}


def test_dev_is_every_extra_plus_the_tools_and_covers_the_tests_and_benchmarks_imports() -> None:
    """scripts/test.sh installs [dev] (install.sh --dev): it must hold every extra, and whatever the test
    suite and the benchmarks import."""
    extras = set(declared()) - {"", "dev"}
    assert extras == {"pretrain", "corpus", "glue", "hf"}
    for extra in extras:
        assert declared()[extra] <= declared()["dev"], extra
    files = {p.name for p in REPO.glob("requirements-*.txt")}
    assert files == {f"requirements-{extra}.txt" for extra in (*extras, "dev")}  # install.sh's --extras
    checkout_files = [*(REPO / "tests").rglob("*"), *(REPO / "benchmarks").rglob("*")]
    local = {p.stem for p in checkout_files if p.suffix == ".py"}
    local |= {p.name for p in checkout_files if p.is_dir()}
    local |= {*TOP_LEVEL, "benchmarks", "tests"}
    needed = declared()[""] | declared()["dev"]
    problems = []
    for imp in third_party([REPO / "tests", REPO / "benchmarks"], local):
        if imp.module in FORK or imp.module in OPTIONAL:
            continue
        dist = distribution(imp.module)
        if dist not in needed:
            problems.append(f"{imp.path}:{imp.line} imports {imp.module} ({dist}): declare it in [dev]")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------------ metadata
def test_metadata_names_the_supported_pythons_platform_and_license() -> None:
    trove_classifiers = pytest.importorskip("trove_classifiers")
    project = PYPROJECT["project"]
    assert project["name"] == "macaron-fairseq"
    assert project["requires-python"] == ">=3.11,<3.13"
    assert project["license"] == "MIT" and (REPO / "LICENSE").read_text().startswith("MIT License")
    assert (REPO / project["readme"]).is_file()
    classifiers = project["classifiers"]
    unknown = [c for c in classifiers if c not in trove_classifiers.classifiers]
    assert not unknown, unknown
    assert {
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: Implementation :: CPython",
        "Operating System :: POSIX :: Linux",
    } <= set(classifiers)
    versions = {c.rsplit(" ", 1)[1] for c in classifiers if re.fullmatch(r".*Python :: 3\.\d+", c)}
    assert versions == {"3.11", "3.12"}
    assert PYPROJECT["build-system"]["build-backend"] == "setuptools.build_meta"
    assert not (REPO / "setup.py").exists()


def test_the_console_scripts_are_the_issue_list_and_each_runs_its_modules_main_by_the_error_rule() -> None:
    """Each target is a callable taking no argument, defined in the module ``python -m`` runs (for a
    package: its ``__main__``), and that module's ``__main__`` block calls exactly it."""
    scripts = PYPROJECT["project"]["scripts"]
    assert set(scripts) == set(SCRIPTS)
    for name, target in scripts.items():
        module_name, _, attr = target.partition(":")
        assert module_name in (SCRIPTS[name], SCRIPTS[name] + ".__main__"), (name, target)
        top, _, rest = module_name.partition(".")
        folder = {name: f for f, name in IMPORT_NAMES.items()}.get(top, top)
        path = REPO / folder / (rest.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert attr in defined, f"{name}: {target} is not defined in {path}"
        func = defined[attr]
        assert len(func.args.args) == len(func.args.defaults) and not func.args.kwonlyargs, target
        main_block = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        assert len(main_block) == 1 and ast.unparse(main_block[0].body[0]) == f"{attr}()", (
            f"{path}: its __main__ block must call {attr}() (the console script runs exactly that)"
        )


# ---------------------------------------------------------------------------------------- console scripts
def script_path(name: str) -> Path:
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(
            f"{path} is missing: run bash scripts/install.sh (it installs the package with "
            f"pip install --no-deps -e ., which creates the console scripts)"
        )
    return path


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)  # the installed package, not the checkout on the path
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO.parent, timeout=300)


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("macaron-translate", [], "error: the following arguments are required"),
        (
            "macaron-score-bleu",
            ["--gen", "/nonexistent/gen.txt", "--ref", "/nonexistent/ref.txt"],
            "error: cannot read /nonexistent/gen.txt",
        ),
        (
            "macaron-average-checkpoints",
            ["--inputs", "/nonexistent/a.pt", "--out", "/nonexistent/b.pt"],
            "error: checkpoint files not found",
        ),
    ],
)
def test_a_user_error_in_a_console_script_is_one_line_and_exit_2(
    name: str, args: list[str], message: str
) -> None:
    """The one line names the command as the user typed it: the console script, or ``python -m MODULE``."""
    script = run([str(script_path(name)), *args])
    assert (script.returncode, script.stdout) == (2, ""), script.stderr[-3000:]
    assert script.stderr.count("\n") == 1 and script.stderr.startswith(f"{name}: {message}"), script.stderr
    module = run([sys.executable, "-m", SCRIPTS[name], *args])
    assert module.returncode == 2
    assert module.stderr == script.stderr.replace(f"{name}: ", f"python -m {SCRIPTS[name]}: ", 1)


# ---------------------------------------------------------------------------------------------------- wheel
@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources (the checkout gets no build/ folder; ~10 s)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_pyproject_lists_every_package_folder() -> None:
    """pyproject.toml lists the packages by hand (package-dir renames three folders, which find cannot):
    the list is every folder with an ``__init__.py`` under the installed packages, by its import name."""
    found = set()
    for folder in PACKAGES:
        for init in (REPO / folder).rglob("__init__.py"):
            parts = list(init.parent.relative_to(REPO).parts)
            parts[0] = IMPORT_NAMES.get(parts[0], parts[0])
            found.add(".".join(parts))
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == found


@pytest.mark.slow
def test_the_wheel_holds_the_seven_packages_their_data_and_the_metadata(wheel: Path) -> None:
    """Exactly the seven top-level packages under names no other distribution claims (no preprocess,
    pipelines or slurm; no tests, no benchmarks), the Slurm scripts that ``macaron_slurm.submit`` hands to
    sbatch, the DeepSpeed configs, the console scripts, and base requirements without DeepSpeed or spaCy."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        metadata = archive.read(f"{dist_info}/METADATA").decode()
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    assert {n.split("/")[0] for n in names} == {*TOP_LEVEL, dist_info}
    assert not {"preprocess", "pipelines", "slurm"} & {n.split("/")[0] for n in names}
    for sbatch in (REPO / "slurm").glob("*.sbatch"):
        assert f"macaron_slurm/{sbatch.name}" in names
    assert "macaron_slurm/preemptible.sh" in names
    assert "macaron_fairseq/hf/modeling_macaron_bert.py" in names  # copied next to an exported model
    assert "macaron_fairseq/pretrain/configs/bert_phase1.json" in names  # the GPU check runs it
    assert "macaron_pipelines/gpu_check/constraints.txt" in names  # the lock: the GPU check's wheel pins
    for name, target in PYPROJECT["project"]["scripts"].items():
        assert f"{name} = {target}" in entry_points
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    base = [line for line in requires if "extra ==" not in line]
    assert any("torch>=2.6" in line for line in base) and len(base) == len(declared()[""])
    assert not [line for line in base if re.search(r"deepspeed|spacy|transformers", line)]
    assert 'Requires-Dist: deepspeed>=0.14; extra == "pretrain"' in metadata
    assert "Requires-Python: <3.13,>=3.11" in metadata


DUMMY = "WHO = 'the other distribution'\n"


@pytest.mark.slow
def test_installed_next_to_a_package_called_preprocess_every_console_script_runs(
    wheel: Path, tmp_path: Path
) -> None:
    """The wheel in a fresh virtualenv (the machine's torch and fairseq visible through its system site
    packages) beside another distribution's top-level ``preprocess``: neither shadows the other, and every
    console script answers ``--help`` from a directory without a checkout (the entry points in one
    interpreter, one wrapper file as its own process)."""
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300
    )
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "preprocess").mkdir()
    (site / "preprocess" / "__init__.py").write_text(DUMMY)  # the other distribution's module
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (site / "preprocess" / "__init__.py").read_text() == DUMMY
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONWARNINGS"] = "ignore"
    away = tmp_path / "elsewhere"
    away.mkdir()
    check = "import preprocess, macaron_preprocess; print(preprocess.WHO, macaron_preprocess.__file__)"
    who = subprocess.run([str(python), "-c", check], capture_output=True, text=True, cwd=away, env=env)
    assert who.returncode == 0 and who.stdout.startswith("the other distribution"), who.stderr[-2000:]
    assert str(site) in who.stdout  # ours comes from the wheel, not from the checkout
    scripts = list(PYPROJECT["project"]["scripts"])
    assert [name for name in scripts if not (venv / "bin" / name).is_file()] == []
    bleu = venv / "bin" / "macaron-score-bleu"  # a file pip wrote, run as its own process
    wrapper = subprocess.run([str(bleu), "--help"], capture_output=True, text=True, cwd=away, env=env)
    assert wrapper.returncode == 0 and wrapper.stdout.startswith("usage: macaron-score-bleu"), wrapper.stderr
    # every entry point in one interpreter of the venv (tests/cli_helps.py, copied: no checkout beside it)
    runner = shutil.copy(REPO / "tests" / "cli_helps.py", tmp_path / "cli_helps.py")
    out = tmp_path / "helps.json"
    command = [str(python), str(runner), str(out), *(f"script:{name}" for name in scripts)]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=away, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    failed = [
        f"{result['entry']}: exit {result['status']}\n{result['stderr'][-800:]}"
        for result in json.loads(out.read_text(encoding="utf-8"))
        if result["status"] != 0 or "usage" not in result["stdout"].lower()
    ]
    assert not failed, "\n".join(failed)


# --------------------------------------------------------------------------------------------- install.sh
STAND_IN_PYTHON = """#!/usr/bin/env bash
# PYTHON for scripts/install.sh: 'python -m pip ...' is logged, never run; FAKE_PLATFORM answers the
# interpreter check
if [ "${1:-}" = "-m" ] && [ "${2:-}" = "pip" ]; then
  printf 'pip %s\\n' "${*:3}" >> "$PIP_LOG"
  [ "${3:-}" = show ] && exit 1
  exit "${PIP_STATUS:-0}"
fi
if [ -n "${FAKE_PLATFORM:-}" ] && [ "${1:-}" = "-c" ] && [[ "${2:-}" == *python_implementation* ]]; then
  echo "$FAKE_PLATFORM"; exit 0
fi
exec "$REAL_PYTHON" "$@"
"""


def checkout(tmp_path: Path) -> Path:
    """A copy of the installer and of requirements files each naming one missing package per extra."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    for name in ("install.sh", "missing_requirements.py"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    shutil.copy2(REPO / "constraints.txt", root / "constraints.txt")  # the lock
    (root / "requirements.txt").write_text("packaging\nmacaron-missing-base==1\n")
    for extra in ("dev", "pretrain", "corpus", "glue", "hf"):
        (root / f"requirements-{extra}.txt").write_text(f"# {extra}\nmacaron-missing-{extra}==1\n")
    return root


def install(
    tmp_path: Path,
    root: Path,
    *args: str,
    torch: str | None = "2.5.1",
    pip_status: int = 0,
    fake_platform: str = "",
    python: str | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run the installer with the stand-in python and (optionally) a stand-in torch of that version."""
    log = tmp_path / "pip.log"
    log.write_text("")
    stand_in = tmp_path / "python"
    stand_in.write_text(STAND_IN_PYTHON)
    stand_in.chmod(0o755)
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True, exist_ok=True)
    (site / "torch" / "__init__.py").write_text(
        f"__version__ = {torch!r}\n" if torch else "raise ImportError('no torch here')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MACARON_TORCH_VERSION"}
    env.update(
        PYTHON=python or str(stand_in),
        REAL_PYTHON=sys.executable,
        PIP_LOG=str(log),
        PIP_STATUS=str(pip_status),
        FAKE_PLATFORM=fake_platform,
        PYTHONPATH=str(site),
    )
    proc = subprocess.run(
        ["bash", str(root / "scripts" / "install.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    return proc, log.read_text().splitlines()


def installed_by_name(calls: list[str]) -> set[str]:
    args = [arg for call in calls for arg in call.split()]
    return {arg.split("==")[0] for arg in args if arg.startswith("macaron-missing-")}


@pytest.mark.parametrize(
    ("args", "extras"),
    [
        ((), set()),
        (("--extras", "pretrain,glue"), {"pretrain", "glue"}),
        (("--extras=hf",), {"hf"}),
        (("--extras", "corpus", "--extras", "corpus"), {"corpus"}),
        (("--dev",), {"dev", "pretrain", "corpus", "glue", "hf"}),
    ],
)
def test_install_sh_installs_the_base_and_exactly_the_extras_asked_for(
    tmp_path: Path, args: tuple[str, ...], extras: set[str]
) -> None:
    proc, calls = install(tmp_path, checkout(tmp_path), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert installed_by_name(calls) == {"macaron-missing-base", *(f"macaron-missing-{e}" for e in extras)}
    (call,) = [c for c in calls if "macaron-missing-base==1" in c]
    assert " -c " in call  # constrained to the installed torch


def test_install_sh_refuses_an_unknown_extra_in_one_line(tmp_path: Path) -> None:
    proc, calls = install(tmp_path, checkout(tmp_path), "--extras", "pretrain,gpu")
    assert proc.returncode == 2 and calls == []
    assert proc.stderr == (
        "install.sh: unknown extra 'gpu' (extras: corpus dev glue hf pretrain) (try --help)\n"
    )


@pytest.mark.parametrize(
    "found",
    [
        "CPython 3.10.13 Linux x86_64",
        "CPython 3.13.0 Linux x86_64",
        "PyPy 3.11.13 Linux x86_64",
        "CPython 3.11.7 Linux aarch64",
        "CPython 3.12.1 Darwin x86_64",
    ],
)
def test_install_sh_refuses_an_unsupported_python_in_one_line(tmp_path: Path, found: str) -> None:
    proc, calls = install(tmp_path, checkout(tmp_path), fake_platform=found)
    assert (proc.returncode, proc.stdout, calls) == (2, "", [])
    assert proc.stderr == (
        f"[install] unsupported Python: found {found} ({tmp_path / 'python'}); supported: "
        "CPython 3.11 or 3.12 on x86-64 Linux (the fairseq fork ve-fairseq ships wheels "
        "only for those)\n"
    )


def test_install_sh_accepts_cpython_312_and_names_a_missing_interpreter(tmp_path: Path) -> None:
    proc, _ = install(tmp_path, checkout(tmp_path), fake_platform="CPython 3.12.1 Linux x86_64")
    assert proc.returncode == 0, proc.stderr
    proc, calls = install(tmp_path, checkout(tmp_path), python=str(tmp_path / "no-such-python"))
    assert (proc.returncode, calls) == (2, [])
    assert proc.stderr == (
        f"[install] cannot run Python '{tmp_path / 'no-such-python'}'; supported: CPython "
        "3.11 or 3.12 on x86-64 Linux (set PYTHON=...)\n"
    )


def test_install_sh_installs_only_a_cpu_torch_trying_the_pytorch_cpu_index_second(tmp_path: Path) -> None:
    """Without torch: torch==2.13.0+cpu (a local version PyPI never has, so never its CUDA wheel); when the
    configured indexes lack it, the PyTorch CPU index is asked; a failure there stops the installer."""
    proc, calls = install(tmp_path, checkout(tmp_path), torch=None, pip_status=1)
    assert proc.returncode != 0
    assert calls == [
        "pip install --disable-pip-version-check -q torch==2.13.0+cpu",
        "pip install --disable-pip-version-check -q --index-url https://download.pytorch.org/whl/cpu "
        "torch==2.13.0+cpu",
    ]
    said = "[install] no torch, no NVIDIA GPU (nvidia-smi): installing the CPU build torch==2.13.0+cpu"
    assert said in proc.stdout
