"""``scripts/install.sh`` and ``scripts/missing_requirements.py``, never installing or uninstalling.

Every run of the installer gets a stand-in ``PYTHON`` (a bash script) that hands each call to the real
interpreter, except ``python -m pip ...``: those are written to a log (with the path of the lock
``constraints.txt`` and the content of the other constraints file they name, which the installer deletes
when it exits) and answered with an exit status chosen by the
test (``pip show``: not installed), never run. So the real environment is never changed, and the tests
see exactly which pip calls the installer would make. Runs that need another environment (no torch, an
old torch, a CUDA build, an unknown package, an unparsable requirements file) use a stand-in ``torch``
package on ``PYTHONPATH`` and a copy of the installer in a temporary checkout with its own requirements
files.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from importlib.metadata import distribution, version
from pathlib import Path
from types import ModuleType

import pytest
from helpers import REPO

INSTALL = REPO / "scripts" / "install.sh"

STAND_IN_PYTHON = """#!/usr/bin/env bash
# PYTHON for scripts/install.sh in tests: 'python -m pip ...' is logged, never run
if [ "${1:-}" = "-m" ] && [ "${2:-}" = "pip" ]; then
  printf 'pip %s\\n' "${*:3}" >> "$PIP_LOG"
  [ "${3:-}" = show ] && exit 1  # 'pip show X': no such distribution
  previous=""
  for arg in "$@"; do
    if [ "$previous" = "-c" ]; then
      case "$arg" in
        */constraints.txt) printf 'lock %s\\n' "$arg" >> "$PIP_LOG" ;;  # the checkout's lock: its path
        *) printf 'constraints %s\\n' "$(tr '\\n' ' ' < "$arg")" >> "$PIP_LOG" ;;
      esac
    fi
    previous="$arg"
  done
  exit "${PIP_STATUS:-0}"
fi
exec "$REAL_PYTHON" "$@"
"""


def stand_in_python(tmp_path: Path) -> Path:
    path = tmp_path / "python"
    path.write_text(STAND_IN_PYTHON)
    path.chmod(0o755)
    return path


def fake_torch(tmp_path: Path, torch_version: str | None) -> Path:
    """A directory to put first on PYTHONPATH: a ``torch`` of that version, or one that cannot be
    imported (``None``)."""
    root = tmp_path / "fake_site"
    (root / "torch").mkdir(parents=True)
    body = f"__version__ = {torch_version!r}\n" if torch_version else "raise ImportError('no torch here')\n"
    (root / "torch" / "__init__.py").write_text(body)
    return root


def checkout_with(
    tmp_path: Path, requirements: str, dev_requirements: str = "", lock: str | None = None
) -> Path:
    """A checkout holding only this repository's installer, the given requirements files and a lock (this
    repository's ``constraints.txt`` unless given)."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in ("install.sh", "missing_requirements.py"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    (root / "constraints.txt").write_text((REPO / "constraints.txt").read_text() if lock is None else lock)
    (root / "requirements.txt").write_text(requirements)
    (root / "requirements-dev.txt").write_text(dev_requirements)
    return root


def run_installer(
    tmp_path: Path,
    install: Path = INSTALL,
    *args: str,
    pip_status: int = 0,
    pythonpath: Path | None = None,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[str], float]:
    """Run ``bash install`` with the stand-in python; the result, the pip calls it made, the seconds."""
    log = tmp_path / "pip.log"
    log.write_text("")
    run_env = {name: value for name, value in os.environ.items() if name != "MACARON_TORCH_VERSION"}
    run_env.update(
        PYTHON=str(stand_in_python(tmp_path)),
        REAL_PYTHON=sys.executable,
        PIP_LOG=str(log),
        PIP_STATUS=str(pip_status),
        **(env or {}),
    )
    if pythonpath is not None:
        run_env["PYTHONPATH"] = str(pythonpath)
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", str(install), *args], capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=600
    )
    return proc, log.read_text().splitlines(), time.monotonic() - started


def pip_installs(calls: list[str]) -> list[str]:
    return [call for call in calls if call.startswith("pip install")]


# ---------------------------------------------------------------------------------------------- the installer


@pytest.mark.slow  # imports torch, fairseq and the plugin four times: 12 s here (32 s on a busy machine)
def test_rerun_on_a_provisioned_machine_installs_nothing(tmp_path: Path) -> None:
    """The real installer of this checkout: everything is reported present and pip is never called.
    scripts/test.sh runs ``install.sh --dev`` before the suite, so this is a rerun; a pip call here means
    that the installer does not recognise what it installed itself."""
    torch_before = version("torch")
    proc, calls, seconds = run_installer(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == [], f"install.sh would have run pip: {calls}\n{proc.stdout}"
    assert f"[install] torch {torch_before} present: kept" in proc.stdout
    assert "[install] requirements satisfied" in proc.stdout
    assert "[install] ve-fairseq 0.12.3 present" in proc.stdout
    assert f"[install] macaron_fairseq installed from {REPO}" in proc.stdout
    assert "installing" not in proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith(f"[install] done (torch {torch_before})")
    assert seconds < 120, f"a rerun that installs nothing took {seconds:.0f} s"
    assert version("torch") == torch_before


@pytest.mark.slow  # the installer's checks import torch and fairseq: ~12 s
def test_an_install_whose_other_packages_resolve_elsewhere_is_reinstalled(tmp_path: Path) -> None:
    """An editable install mapping macaron_preprocess to another folder (a moved or other clone) is replaced,
    though macaron_fairseq itself resolves here (through the --user-dir link in site-packages)."""
    shadow = tmp_path / "elsewhere" / "macaron_preprocess"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    proc, calls, _ = run_installer(tmp_path, pythonpath=shadow.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[install] installing macaron_fairseq (editable) from {REPO}" in proc.stdout
    assert any(call.startswith("pip install") and f"-e {REPO}" in call for call in calls), calls


def test_an_existing_torch_is_kept_and_pinned_in_every_pip_call(tmp_path: Path) -> None:
    """An installed torch (here a stand-in CUDA build; this requirements.txt sets no floor) is kept, and every
    pip call that resolves dependencies is constrained to exactly that torch; the others are --no-deps. The
    missing requirement (and only it) goes to pip."""
    checkout = checkout_with(tmp_path, "packaging  # present\nmacaron-test-surely-missing-package==1.0\n")
    proc, calls, _ = run_installer(
        tmp_path, checkout / "scripts" / "install.sh", pythonpath=fake_torch(tmp_path, "2.5.1+cu121")
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[install] torch 2.5.1+cu121 present: kept" in proc.stdout
    assert "[install] installing: macaron-test-surely-missing-package==1.0" in proc.stdout
    installs = pip_installs(calls)
    assert any(call.endswith(" macaron-test-surely-missing-package==1.0") for call in installs), calls
    assert not [arg for call in installs for arg in call.split() if re.match(r"torch\b", arg)], installs
    for index, call in enumerate(calls):
        if call.startswith("pip install") and "--no-deps" not in call.split():
            assert calls[index + 1 : index + 3] == [
                f"lock {checkout / 'constraints.txt'}",
                "constraints torch==2.5.1+cu121 ",
            ], calls
    assert proc.stdout.rstrip().endswith("[install] done (torch 2.5.1+cu121)")
    assert version("torch") != "2.5.1+cu121"  # the real environment did not see any of it


@pytest.mark.parametrize("installs_a_requirement", [False, True])
def test_torch_is_imported_once_unless_something_is_installed_before_the_fork_is_checked(
    tmp_path: Path, installs_a_requirement: bool
) -> None:
    """One interpreter tells torch's version and whether the fork imports (importing fairseq imports torch):
    a run that installs nothing in between imports torch once; one that installs a requirement asks again,
    since what it installed may be what the fork lacked."""
    imports = tmp_path / "torch_imports"
    site = fake_torch(tmp_path, "2.6.0")
    init = site / "torch" / "__init__.py"
    init.write_text(f"open({str(imports)!r}, 'a').write('x')\n" + init.read_text())
    requirements = "packaging\n" + (
        "macaron-test-surely-missing-package==1.0\n" if installs_a_requirement else ""
    )
    checkout = checkout_with(tmp_path, requirements)
    proc, _, _ = run_installer(tmp_path, checkout / "scripts" / "install.sh", pythonpath=site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[install] torch 2.6.0 present: kept" in proc.stdout
    assert imports.read_text() == ("xx" if installs_a_requirement else "x")


def test_every_pip_install_but_torchs_is_constrained_by_the_lock_which_names_the_fork(tmp_path: Path) -> None:
    """The lock (the checkout's constraints.txt) goes to every pip install: the requirements, the fairseq
    fork at the lock's version (here one that is not installed) and this package; torch's own install is
    the one exception (tested below: no lock, the build for the machine)."""
    lock = "# a lock\nmacaron-test-surely-missing-package==1.0\nve-fairseq==9.9.9\n"
    checkout = checkout_with(tmp_path, "macaron-test-surely-missing-package\n", lock=lock)
    proc, calls, _ = run_installer(
        tmp_path, checkout / "scripts" / "install.sh", pythonpath=fake_torch(tmp_path, "2.6.0")
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installs = pip_installs(calls)
    assert [call.split()[-1] for call in installs] == [
        "macaron-test-surely-missing-package",
        "ve-fairseq==9.9.9",
        str(checkout),
    ]
    for index, call in enumerate(calls):
        if call.startswith("pip install"):
            assert " -c " in call and calls[index + 1] == f"lock {checkout / 'constraints.txt'}", calls
    assert "[install] installing ve-fairseq==9.9.9 (--no-deps)" in proc.stdout


@pytest.mark.parametrize("lock", [None, "# no fork\npackaging==1\n"])
def test_a_lock_missing_or_without_the_fork_stops_the_installer_in_one_line(
    tmp_path: Path, lock: str | None
) -> None:
    checkout = checkout_with(tmp_path, "packaging\n", lock=lock or "")
    if lock is None:
        (checkout / "constraints.txt").unlink()
    proc, calls, _ = run_installer(
        tmp_path, checkout / "scripts" / "install.sh", pythonpath=fake_torch(tmp_path, "2.6.0")
    )
    assert (proc.returncode, calls, proc.stdout) == (2, [], "")
    assert proc.stderr.count("\n") == 1
    lock_path = checkout / "constraints.txt"
    if lock is None:
        assert proc.stderr.startswith(
            f"[install] the lock {lock_path} is missing or unreadable (python "
            "scripts/lock.py --write makes it"
        )
    else:
        assert proc.stderr == f"[install] the lock {lock_path} pins no ve-fairseq version\n"


def test_the_repositorys_installer_reads_the_repositorys_lock() -> None:
    """scripts/install.sh's lock is the checkout's constraints.txt, and it pins the fork it installs."""
    text = INSTALL.read_text()
    assert 'LOCK="$here/constraints.txt"' in text
    assert "ve-fairseq==0.12.3" in (REPO / "constraints.txt").read_text().splitlines()


def nvidia_smi(tmp_path: Path, gpus: int) -> dict[str, str]:
    """An environment whose PATH starts with a stub ``nvidia-smi`` listing ``gpus`` GPUs (``-L``)."""
    stub = tmp_path / "stub-bin"
    stub.mkdir(exist_ok=True)
    lines = "".join(f"GPU {i}: NVIDIA A100-SXM4-80GB (UUID: GPU-{i:08d})\\n" for i in range(gpus))
    (stub / "nvidia-smi").write_text(f"#!/usr/bin/env bash\nprintf '{lines}'\n")
    (stub / "nvidia-smi").chmod(0o755)
    return {"PATH": f"{stub}{os.pathsep}{os.environ['PATH']}"}


def test_without_torch_or_gpus_the_cpu_build_is_installed_at_the_pinned_version(tmp_path: Path) -> None:
    """No importable torch and no NVIDIA GPU: the first pip call installs the CPU build
    torch==$MACARON_TORCH_VERSION, saying so; a failing pip stops the installer (non-zero exit)."""
    checkout = checkout_with(tmp_path, "torch>=2.1\n")
    env = {"MACARON_TORCH_VERSION": "2.99.0", **nvidia_smi(tmp_path, 0)}
    proc, calls, _ = run_installer(
        tmp_path,
        checkout / "scripts" / "install.sh",
        pip_status=1,
        pythonpath=fake_torch(tmp_path, None),
        env=env,
    )
    assert proc.returncode != 0
    assert (
        "[install] no torch, no NVIDIA GPU (nvidia-smi): installing the CPU build torch==2.99.0"
        in proc.stdout
    )
    assert calls == ["pip install --disable-pip-version-check -q torch==2.99.0"]


@pytest.mark.parametrize(
    ("found", "kept"),
    [("2.5.1+cu121", False), ("2.6.0a0+ecf3bae40a", True), ("2.6.0", True), ("2.0.1", False)],
)
def test_the_torch_floor_is_read_from_requirements_txt(tmp_path: Path, found: str, kept: bool) -> None:
    """requirements.txt's torch>=X line is the floor: an older torch is refused in one line (and not
    replaced), a pre-release build of the floor itself (NVIDIA's containers) counts as that release."""
    checkout = checkout_with(tmp_path, "torch>=2.6  # the floor\npackaging\n")
    proc, calls, _ = run_installer(
        tmp_path, checkout / "scripts" / "install.sh", pythonpath=fake_torch(tmp_path, found)
    )
    if kept:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"[install] torch {found} present: kept" in proc.stdout
        return
    assert proc.returncode == 2 and pip_installs(calls) == []
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(
        f"[install] torch {found} is older than this project's floor torch>=2.6 "
        "(requirements.txt); the installer never replaces a torch"
    )


@pytest.mark.parametrize("found", ["2.0.1", "2.0.1+cu118"])
def test_a_torch_below_the_floor_stops_the_installer_in_one_line_never_replaced(
    tmp_path: Path, found: str
) -> None:
    """The floor is requirements.txt's torch line; an older torch (a cluster's CUDA build, say) is never
    replaced by another: one line, exit 2, no pip call."""
    checkout = checkout_with(tmp_path, "# the floor\ntorch>=2.1  # why\npackaging\n")
    gpus = nvidia_smi(tmp_path, 8)
    proc, calls, _ = run_installer(
        tmp_path, checkout / "scripts" / "install.sh", pythonpath=fake_torch(tmp_path, found), env=gpus
    )
    assert (proc.returncode, calls, proc.stdout) == (2, [], "")
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(
        f"[install] torch {found} is older than this project's floor torch>=2.1 "
        "(requirements.txt); the installer never replaces a torch"
    )


def test_without_torch_on_a_gpu_machine_a_failed_cuda_install_stops_never_the_cpu_build(
    tmp_path: Path,
) -> None:
    """nvidia-smi sees GPUs, no torch, and the CUDA build cannot be installed: one line naming the command
    to run, exit 2 — the CPU build is never installed in its place."""
    checkout = checkout_with(tmp_path, "torch>=2.1\n")
    gpus = nvidia_smi(tmp_path, 2)
    proc, calls, _ = run_installer(
        tmp_path,
        checkout / "scripts" / "install.sh",
        pip_status=1,
        pythonpath=fake_torch(tmp_path, None),
        env=gpus,
    )
    assert proc.returncode == 2
    assert calls == ["pip install --disable-pip-version-check -q torch==2.13.0"]
    assert (
        "[install] no torch; nvidia-smi sees 2 GPU(s): installing the CUDA build torch==2.13.0" in proc.stdout
    )
    assert proc.stderr.count("\n") == 1 and "never the CPU build in its place" in proc.stderr
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126" in proc.stderr
    assert "+cpu" not in " ".join(calls)


def tiny_wheel(folder: Path, dist: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of ``dist`` ``version`` holding ``files`` (path -> text), made in ``folder``."""
    import base64
    import hashlib
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{dist.replace('-', '_')}-{version}"
    wheel = folder / f"{stem}-py3-none-any.whl"
    info = f"{stem}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return wheel


def fake_cuda_torch_wheel(index: Path, torch_version: str = "2.13.0") -> Path:
    """A local package index holding a tiny "torch" wheel (a CUDA build: ``torch.version.cuda``)."""
    folder = index / "torch"
    wheel = tiny_wheel(
        folder,
        "torch",
        torch_version,
        {
            "torch/__init__.py": f"__version__ = {torch_version!r}\nfrom torch import version\n",
            "torch/version.py": "cuda = '12.6'\n",
        },
    )
    # pip reads a file:// index's project page from its index.html (PEP 503's simple layout)
    (folder / "index.html").write_text(f'<html><body><a href="{wheel.name}">{wheel.name}</a></body></html>\n')
    return wheel


def package_dir(name: str) -> Path:
    """The folder of this interpreter's installed package ``name``, read from its distribution's metadata.

    Not ``importlib.util.find_spec``: finding "pip" through setuptools' distutils shim switches the shim off
    for the rest of the process (``spec_for_pip``), and a later ``import setuptools`` in the same test
    worker (torch.compile's Inductor builds through it) then fails its assertion on the stdlib distutils."""
    return Path(str(distribution(name).locate_file(name)))


def fresh_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A new virtualenv without pip or torch, and a folder for PYTHONPATH holding this interpreter's pip and
    packaging (and nothing else of it)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("pip", "packaging"):
        (tools / name).symlink_to(package_dir(name))
    return venv, tools


def offline_env(venv: Path, pythonpath: list[Path], **pip: str) -> dict[str, str]:
    """The environment of an installer run into ``venv``: no user pip configuration, the given PIP_ ones."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MACARON_TORCH_VERSION", "VIRTUAL_ENV") and not k.startswith("PIP_")
    }
    env.update(
        PYTHON=str(venv / "bin" / "python"),
        PYTHONPATH=os.pathsep.join(map(str, pythonpath)),
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_CACHE_DIR="1",
        **pip,
    )
    return env


@pytest.mark.slow  # a real virtualenv and real pip runs from a local folder of wheels: ~10 s each
@pytest.mark.parametrize("locked", [True, False])
def test_a_fresh_environment_gets_the_locked_versions_not_the_newest(tmp_path: Path, locked: bool) -> None:
    """A fresh virtualenv (a torch of its own kept), offline, with versions 1.0 and 2.0 of a requirement on
    offer: the installer installs the lock's 1.0 and the fork at the lock's version; without the lock's
    line, pip's choice (2.0) is what one gets."""
    venv, tools = fresh_venv(tmp_path)
    wheels = tmp_path / "wheels"
    for offered in ("1.0", "2.0"):
        tiny_wheel(wheels, "macaron-test-locked", offered, {"macaron_test_locked.py": f"V = {offered!r}\n"})
    tiny_wheel(wheels, "ve-fairseq", "0.12.3", {"fairseq/__init__.py": "__version__ = '0.12.3'\n"})
    lock = "# the lock\nve-fairseq==0.12.3\n" + ("macaron-test-locked==1.0\n" if locked else "")
    checkout = checkout_with(tmp_path, "macaron-test-locked>=1\n", lock=lock)
    env = offline_env(
        venv, [tools, fake_torch(tmp_path, "2.6.0")], PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels)
    )
    proc = subprocess.run(
        ["bash", str(checkout / "scripts" / "install.sh")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert "[install] torch 2.6.0 present: kept" in proc.stdout, proc.stdout + proc.stderr
    assert "[install] installing ve-fairseq==0.12.3 (--no-deps)" in proc.stdout, proc.stdout + proc.stderr
    # (the copy of the installer has no package to install editable: it stops there)
    check = (
        "from importlib.metadata import version; print(version('macaron-test-locked'), version('ve-fairseq'))"
    )
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", check],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert found.stdout.split() == ["1.0" if locked else "2.0", "0.12.3"], found.stderr


@pytest.mark.slow  # a real virtualenv and real pip runs against local indexes: ~30 s
@pytest.mark.parametrize("where", ["configured index", "MACARON_TORCH_CUDA_INDEX"])
def test_without_torch_on_a_gpu_machine_the_cuda_build_is_installed(tmp_path: Path, where: str) -> None:
    """A real pip in a fresh virtualenv without torch, a stub nvidia-smi seeing 4 GPUs, and a local index
    holding a CUDA "torch" wheel (from pip's configured index, or from the index MACARON_TORCH_CUDA_INDEX
    names while the configured one has nothing): that build is installed."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    tools = tmp_path / "tools"  # pip and packaging of this interpreter, and nothing else of it (no torch)
    tools.mkdir()
    for name in ("pip", "packaging"):
        (tools / name).symlink_to(package_dir(name))
    cuda_index, empty_index = tmp_path / "cuda-index", tmp_path / "empty-index"
    fake_cuda_torch_wheel(cuda_index)
    empty_index.mkdir()
    checkout = checkout_with(tmp_path, "torch>=2.1\nmacaron-test-surely-missing-package==1.0\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MACARON_TORCH_VERSION", "VIRTUAL_ENV") and not k.startswith("PIP_")
    }
    env.update(
        nvidia_smi(tmp_path, 4),
        PYTHON=str(venv / "bin" / "python"),
        PYTHONPATH=str(tools),
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_CACHE_DIR="1",
        PIP_INDEX_URL=(cuda_index if where == "configured index" else empty_index).as_uri(),
    )
    if where == "MACARON_TORCH_CUDA_INDEX":
        env["MACARON_TORCH_CUDA_INDEX"] = cuda_index.as_uri()
    proc = subprocess.run(
        ["bash", str(checkout / "scripts" / "install.sh")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert (
        "[install] no torch; nvidia-smi sees 4 GPU(s): installing the CUDA build torch==2.13.0" in proc.stdout
    )
    # torch is in; the installer then stops at the requirement no index has
    assert "installing: macaron-test-surely-missing-package==1.0" in proc.stdout, proc.stdout + proc.stderr
    check = "import torch; print(torch.__version__, torch.version.cuda, torch.__file__)"
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", check], capture_output=True, text=True, env={"PATH": env["PATH"]}
    )
    assert found.stdout.split()[:2] == ["2.13.0", "12.6"] and str(venv) in found.stdout, found.stderr


def test_an_unparsable_requirements_file_fails_with_a_clear_message(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, "packaging\nthis is not a requirement!\n")
    proc, calls, _ = run_installer(
        tmp_path, checkout / "scripts" / "install.sh", pythonpath=fake_torch(tmp_path, "2.5.1")
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    requirements = checkout / "requirements.txt"
    assert f"{requirements}:2: invalid requirement 'this is not a requirement!'" in proc.stderr
    assert f"[install] could not check the requirements in {requirements}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert calls == []
    assert "done" not in proc.stdout


def test_an_unreadable_requirements_file_fails_with_a_clear_message(tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, "")
    (checkout / "requirements-dev.txt").unlink()
    proc, calls, _ = run_installer(
        tmp_path, checkout / "scripts" / "install.sh", "--dev", pythonpath=fake_torch(tmp_path, "2.5.1")
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{checkout / 'requirements-dev.txt'}: cannot read the requirements" in proc.stderr
    assert "[install] could not check the requirements" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert calls == []


def test_unknown_option_and_help(tmp_path: Path) -> None:
    proc, calls, _ = run_installer(tmp_path, INSTALL, "--bogus")
    assert proc.returncode == 2 and "install.sh: unknown option '--bogus' (try --help)" in proc.stderr
    shown, calls_help, _ = run_installer(tmp_path, INSTALL, "--help")
    assert shown.returncode == 0 and "bash scripts/install.sh --dev" in shown.stdout
    assert calls == calls_help == []


# ----------------------------------------------------------------------------------- missing_requirements.py


def missing_requirements() -> ModuleType:
    path = REPO / "scripts" / "missing_requirements.py"
    spec = importlib.util.spec_from_file_location("missing_requirements", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_requirements_reports_exactly_the_unsatisfied_lines() -> None:
    unsatisfied = missing_requirements().unsatisfied
    torch_version = version("torch").split("+")[0]
    lines = [
        "# a comment",
        "",
        "packaging  # installed, no specifier",
        f"torch=={torch_version}",  # installed, specifier met
        "torch<1.0",  # installed, specifier not met
        "macaron-test-surely-missing-package>=1",  # not installed
        'macaron-test-other-missing-package; python_version < "3.0"',  # marker does not apply: not needed
        'macaron-test-third-missing-package; python_version >= "3.0"',  # marker applies: missing
    ]
    assert unsatisfied(lines, "reqs.txt") == [
        "torch<1.0",
        "macaron-test-surely-missing-package>=1",
        'macaron-test-third-missing-package; python_version >= "3.0"',
    ]
    with pytest.raises(SystemExit, match=r"reqs\.txt:2: invalid requirement '-r other\.txt'"):
        unsatisfied(["numpy", "-r other.txt"], "reqs.txt")


def test_locating_pip_for_a_fresh_venv_leaves_setuptools_distutils_shim_on() -> None:
    """The fresh-venv helpers find pip without switching off setuptools' distutils shim for the test worker
    (which made a later torch.compile test in the same worker fail inside Inductor)."""
    hack = pytest.importorskip("_distutils_hack")
    assert package_dir("pip").joinpath("__init__.py").is_file()
    assert "spec_for_distutils" not in vars(hack.DISTUTILS_FINDER)
