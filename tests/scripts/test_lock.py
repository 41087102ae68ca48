"""The lock ``constraints.txt`` and ``scripts/lock.py``, which writes it: it pins every requirement, never
torch, and the generator follows exactly the requirements the installer would install (checked on made-up
distributions, so that nothing here depends on what this machine has installed)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from types import ModuleType

import pytest
from helpers import REPO
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def lock_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lock", REPO / "scripts" / "lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lock = lock_module()


def test_the_lock_pins_every_requirement_within_its_specifier_and_never_torch() -> None:
    """Each requirement of requirements*.txt (but torch) has exactly one pin, inside the requirement's range:
    a requirement added or tightened without relocking fails here (and pip would refuse the install)."""
    text = (REPO / "constraints.txt").read_text(encoding="utf-8")
    pins = lock.read_lock(text)
    names = [line.split("==")[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert names == sorted(pins) and all(name == canonicalize_name(name) for name in names)
    for path in lock.requirement_files(REPO):
        for req in lock.requirement_lines(path):
            name = canonicalize_name(req.name)
            if name == "torch":
                continue
            assert name in pins, f"{path.name}: {req} is not in the lock (python scripts/lock.py --write)"
            assert req.specifier.contains(pins[name], prereleases=True), (path.name, str(req), pins[name])
    assert "ve-fairseq" in pins and "setuptools" in pins  # what install.sh installs beside them
    # a cluster's torch is never forced: neither torch nor what only torch pulls in
    assert not [name for name in pins if name in ("torch", "triton", "sympy") or name.startswith("nvidia-")]


FAKE = {
    "app": ("1.0", ["lib>=1", 'extra-lib; extra == "more"', 'win-lib; sys_platform == "win32"', "torch>=2"]),
    "lib": ("1.5", ["base"]),
    "extra-lib": ("0.3", []),
    "base": ("2.0", []),
    "torch": ("2.13.0+cpu", ["sympy", "nvidia-cublas"]),
    "fork": ("0.12.3", ["torchaudio"]),
}


def fake_lookup(name: str) -> tuple[str, list[str]]:
    try:
        return FAKE[canonicalize_name(name)]
    except KeyError:
        raise PackageNotFoundError(name) from None


def test_the_closure_follows_requirements_markers_and_extras_but_not_torch_or_a_no_deps_root() -> None:
    roots = [(Requirement("App[more]"), True), (Requirement("fork"), False)]
    assert lock.closure(roots, fake_lookup) == {
        "app": "1.0",
        "base": "2.0",
        "extra-lib": "0.3",
        "fork": "0.12.3",
        "lib": "1.5",
    }
    assert "extra-lib" not in lock.closure([(Requirement("app"), True)], fake_lookup)  # extra not asked
    with pytest.raises(
        lock.LockError, match=r"^torchaudio \(required by fork 0\.12\.3\) is not installed here"
    ):
        lock.closure([(Requirement("fork"), True)], fake_lookup)


def test_lock_text_of_a_checkout_and_the_differences_check(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "requirements.txt").write_text("torch>=2.6  # the floor\napp  # ours\n")
    (tmp_path / "requirements-x.txt").write_text('lib\nwin-only; sys_platform == "win32"\n')
    monkeypatch.setattr(lock, "EXTRA_ROOTS", (("fork", False),))
    text = lock.lock_text(tmp_path, fake_lookup)
    assert text.startswith("# The lock: every package that requirements*.txt pull in (transitively)")
    assert "torch 2.13.0+cpu." in text
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        "app==1.0",
        "base==2.0",
        "fork==0.12.3",
        "lib==1.5",
    ]
    pins = lock.read_lock(text)
    assert lock.differences(pins, pins) == []
    assert lock.differences(pins, {**pins, "lib": "1.6", "new": "1"}) == [
        "lib: locked 1.5, here 1.6",
        "new: locked (not locked), here 1",
    ]
    (tmp_path / "requirements-x.txt").write_text("not a requirement!\n")
    with pytest.raises(
        lock.LockError, match=r"requirements-x\.txt:1: invalid requirement 'not a requirement!'"
    ):
        lock.lock_text(tmp_path, fake_lookup)


def test_the_command_prints_the_lock_of_this_environment() -> None:
    """``python scripts/lock.py`` prints a lock without writing one (no comparison with this machine's
    versions: those are what the installer left here, not what the lock must be)."""
    before = (REPO / "constraints.txt").read_bytes()
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "lock.py")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    printed = lock.read_lock(proc.stdout)
    assert "ve-fairseq" in printed and "torch" not in printed
    assert (REPO / "constraints.txt").read_bytes() == before
