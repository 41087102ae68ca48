"""Print, one per line, the requirements from the given files that the environment does not satisfy.

Used by ``scripts/install.sh`` so that a fully provisioned machine never calls pip's resolver. A
requirement whose environment marker does not apply here (``foo; python_version < "3.10"``) is never
missing. A file that cannot be read or a line that is not a requirement (pip options such as ``-r`` are
not supported either) is an error: the message names the file and line, and the exit status is 1.
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
        if req.marker is not None and not req.marker.evaluate():
            continue
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
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            sys.exit(f"{path}: cannot read the requirements: {err}")
        for req in unsatisfied(lines, path):
            print(req)


if __name__ == "__main__":
    main(sys.argv[1:])
