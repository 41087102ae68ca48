"""Fresh installs of this project for the front-door tests: the wheel, and the editable install as
``scripts/install.sh`` makes it, each in a throwaway virtualenv whose fairseq lives in its own
site-packages (as after the README's install), so that what fairseq finds next to itself is that
environment's, never the machine's.

The virtualenvs see the machine's packages (``--system-site-packages``: torch and the rest are not
reinstalled; pip and setuptools are the machine's, ``--without-pip``). fairseq and fairseq_cli are copied in
as hard links (no download; a process that rewrites a ``.pyc`` replaces the file, the machine's copy is
untouched), with fairseq's console scripts written as pip writes them."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import distribution
from pathlib import Path

from helpers import REPO

#: the checkout folders the wheel is built from
PACKAGES = (
    "macaron_fairseq",
    "preprocess",
    "pipelines",
    "slurm",
    "macaron_workflow",
    "macaron_tools",
    "macaron_synthetic",
)


def build_wheel(tmp_path: Path) -> Path:
    """The wheel, built from a copy of the sources (the checkout gets no build/ folder; ~10 s)."""
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PACKAGES:
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    for path in REPO.glob("requirements*.txt"):
        shutil.copy2(path, source / path.name)
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "tests", source / "tests", ignore=ignore)  # present, and must stay out
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = (tmp_path / "dist").glob("macaron_fairseq-*.whl")
    return built


@dataclass
class Install:
    """A virtualenv with fairseq in its own site-packages and this project installed one way."""

    kind: str  # "editable" or "wheel"
    venv: Path
    site: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def env(self) -> dict[str, str]:
        """The environment of a user's shell: no PYTHONPATH, the venv's bin first, one torch thread."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(
            PATH=f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            PYTHONWARNINGS="ignore",
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
        )
        return env

    def run(self, argv: list[str], cwd: Path, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            argv, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=900, **kwargs
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"[{self.kind}] failed ({proc.returncode}): {' '.join(map(str, argv))}\n--- stdout\n"
                f"{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
            )
        return proc


def venv_with_fairseq(root: Path) -> tuple[Path, Path]:
    """(venv, its site-packages) holding fairseq, fairseq_cli, ve-fairseq's metadata and console scripts."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(root)],
        check=True,
        timeout=300,
    )
    site = Path(
        subprocess.run(
            [str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    import fairseq

    machine = Path(fairseq.__file__).resolve().parents[1]
    dist = distribution("ve-fairseq")
    info = Path(dist._path)  # type: ignore[attr-defined]
    for name in ("fairseq", "fairseq_cli"):
        shutil.copytree(
            machine / name, site / name, copy_function=os.link, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copytree(info, site / info.name)
    entry_points = configparser.ConfigParser()
    entry_points.read_string(dist.read_text("entry_points.txt") or "")
    for name, target in entry_points["console_scripts"].items():
        module, func = target.split(":")
        script = root / "bin" / name
        script.write_text(
            f"#!{root / 'bin' / 'python'}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n"
        )
        script.chmod(0o755)
    return root, site


def editable_install(root: Path) -> Install:
    """The README's install: ``scripts/install.sh`` (torch and the requirements are found satisfied)."""
    venv, site = venv_with_fairseq(root)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHON"] = str(venv / "bin" / "python")
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "install.sh")],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Install("editable", venv, site)


def wheel_install(root: Path, wheel: Path) -> Install:
    venv, site = venv_with_fairseq(root)
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Install("wheel", venv, site)
