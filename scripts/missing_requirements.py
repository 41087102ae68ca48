"""Print, one per line, the requirements from the given files that the environment does not satisfy.

Used by ``scripts/install.sh`` so that a fully provisioned machine never calls pip's resolver.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement


def unsatisfied(lines: list[str], origin: str) -> list[str]:
    missing = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as err:
            sys.exit(f"{origin}:{lineno}: invalid requirement {line!r}: {err}")
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            missing.append(line)
            continue
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            missing.append(line)
    return missing


def main(paths: list[str]) -> None:
    for path in paths:
        for req in unsatisfied(Path(path).read_text().splitlines(), path):
            print(req)


if __name__ == "__main__":
    main(sys.argv[1:])
