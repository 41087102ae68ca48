"""The lock of every version, ``constraints.txt``: what the requirements pull in, as installed here.

    python scripts/lock.py --write    # (re)write constraints.txt from this environment, then commit it
    python scripts/lock.py --check    # exit 1, naming each difference, if this environment is not the lock's
    python scripts/lock.py            # print what --write would write

The lock pins, at the version installed in this environment, every distribution that the requirements files
(``requirements*.txt``: the base and every extra, as ``install.sh --dev`` installs them) need, transitively
through the installed distributions' own requirements (markers evaluated here, extras followed), plus the
fairseq fork ``install.sh`` installs with ``--no-deps`` (its declared requirements are not followed) and the
setuptools it builds this package with. ``scripts/install.sh`` passes it to every pip call (``-c``), so a
fresh machine gets the versions the tests ran with, and ``macaron-gpu-check --wheels`` reads its pins from it.

torch is not in the lock, nor what only torch needs (CUDA libraries, triton, sympy, ...): the installer keeps
an installed torch (a cluster's CUDA build) and otherwise installs the build for the machine, and every pip
call is constrained to that torch besides the lock.

Upgrading: upgrade the environment (``pip install --upgrade ...`` with ``-c`` naming the installed torch, or a
fresh ``install.sh --dev`` after deleting lines of the lock), run ``bash scripts/test.sh``, then
``python scripts/lock.py --write`` and commit ``constraints.txt``.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "constraints.txt"
#: what the installer manages itself: never constrained by the lock (nor followed into its requirements)
UNLOCKED = frozenset({"torch"})
#: installed by scripts/install.sh beside the requirements: the fairseq fork (--no-deps: its declared
#: requirements would pull torchaudio and another torch) and the build backend of this package
EXTRA_ROOTS = (("ve-fairseq", False), ("setuptools", False))

HEADER = """\
# The lock: every package that requirements*.txt pull in (transitively), at the version installed in the
# environment the tests ran in. scripts/install.sh passes it to every pip call (-c) and reads the fairseq
# fork's version from it; macaron-gpu-check's wheel pins are read from it. torch is not here (nor what only
# torch needs): the installer keeps an installed torch, e.g. a cluster's CUDA build. Upgrade: upgrade the
# environment, run the tests, then `python scripts/lock.py --write` (it writes this file) and commit.
# Locked on Python {python}, torch {torch}.
"""


class LockError(Exception):
    """The environment cannot be locked (a requirement that is not installed, an unreadable file)."""


def requirement_lines(path: Path) -> list[Requirement]:
    """The requirements of a requirements file (comments and blank lines skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise LockError(f"{path}: cannot read the requirements: {err}") from err
    found = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            found.append(Requirement(line))
        except InvalidRequirement as err:
            raise LockError(f"{path}:{lineno}: invalid requirement {line!r}: {err}") from err
    return found


def applies(req: Requirement, extras: Iterable[str]) -> bool:
    """Whether ``req`` is needed here when its parent was asked for with ``extras``."""
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": extra}) for extra in ("", *extras))


Installed = Callable[[str], tuple[str, list[str]]]
"""name -> (installed version, its requirement strings); raises PackageNotFoundError."""


def installed(name: str) -> tuple[str, list[str]]:
    dist = distribution(name)
    return dist.version, list(dist.requires or [])


def closure(roots: Iterable[tuple[Requirement, bool]], lookup: Installed = installed) -> dict[str, str]:
    """Canonical name -> installed version of the roots and, for each root whose flag is true, of what it
    requires (transitively; markers evaluated here with the extras asked for). ``UNLOCKED`` names are left
    out and not followed."""
    pinned: dict[str, str] = {}
    followed: set[tuple[str, frozenset[str]]] = set()
    todo = [(req, follow, "requirements") for req, follow in roots]
    while todo:
        req, follow, parent = todo.pop()
        name = canonicalize_name(req.name)
        if name in UNLOCKED:
            continue
        try:
            version, requires = lookup(req.name)
        except PackageNotFoundError:
            raise LockError(
                f"{req.name} (required by {parent}) is not installed here: install the requirements first "
                "(bash scripts/install.sh --dev), then lock"
            ) from None
        pinned[name] = version
        key = (name, frozenset(req.extras))
        if not follow or key in followed:
            continue
        followed.add(key)
        for line in requires:
            child = Requirement(line)
            if applies(child, req.extras):
                todo.append((child, True, f"{name} {version}"))
    return dict(sorted(pinned.items()))


def requirement_files(repo: Path = REPO) -> list[Path]:
    return sorted(repo.glob("requirements*.txt"))


def lock_text(repo: Path = REPO, lookup: Installed = installed) -> str:
    """The lock of this environment for the requirements files of ``repo``."""
    roots = [
        (req, True) for path in requirement_files(repo) for req in requirement_lines(path) if applies(req, ())
    ]
    roots += [(Requirement(name), follow) for name, follow in EXTRA_ROOTS]
    pins = closure(roots, lookup)
    try:
        torch = lookup("torch")[0]
    except PackageNotFoundError:
        torch = "none"
    header = HEADER.format(python=f"{platform.python_version()} {platform.machine()}", torch=torch)
    return header + "".join(f"{name}=={version}\n" for name, version in pins.items())


def read_lock(text: str) -> dict[str, str]:
    """Canonical name -> pinned version of a lock's text."""
    pins = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version
    return pins


def differences(lock: dict[str, str], here: dict[str, str]) -> list[str]:
    """What differs between the lock and this environment's pins, one line each."""
    return [
        f"{name}: locked {lock.get(name, '(not locked)')}, here {here.get(name, '(not needed)')}"
        for name in sorted(set(lock) | set(here))
        if lock.get(name) != here.get(name)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/lock.py", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write the lock to {LOCK.name}")
    mode.add_argument("--check", action="store_true", help=f"compare this environment with {LOCK.name}")
    args = parser.parse_args(argv)
    try:
        text = lock_text()
    except LockError as err:
        print(f"lock: {err}", file=sys.stderr)
        return 2
    if args.check:
        found = differences(read_lock(LOCK.read_text(encoding="utf-8")), read_lock(text))
        for line in found:
            print(f"lock: {line}", file=sys.stderr)
        return 1 if found else 0
    if args.write:
        temp = LOCK.with_name(f".{LOCK.name}.tmp")
        temp.write_text(text, encoding="utf-8")
        temp.replace(LOCK)
        print(f"lock: wrote {LOCK} ({len(read_lock(text))} packages)")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
