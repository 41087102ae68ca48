"""Make ``--user-dir macaron_fairseq`` resolve from any directory after an editable install.

fairseq 0.12's ``utils.import_user_module`` takes ``--user-dir X`` as a path; when ``X`` does not exist in
the current directory it tries ``<fairseq package>/X``, then ``<fairseq package>/../X`` (the site-packages
directory fairseq is installed in), then raises ``FileNotFoundError``. A wheel install puts the package there
by itself; an editable install (``pip install -e``) leaves nothing there. This places a symbolic link
``<fairseq's site-packages>/macaron_fairseq`` to the checkout's package (one module name, the package's own,
so nothing is ever imported twice under two names) and records it in the editable install's ``RECORD``, so
that ``pip uninstall`` (and the replacement by a later ``pip install``) removes the link instead of
writing into or deleting from the checkout through it.

    python scripts/user_dir_link.py [PACKAGE_DIR]   # create (or check) the link; scripts/install.sh runs it

Nothing is imported (fairseq is located, not imported). The link is made only inside this interpreter's own
environment (a virtualenv that sees a shared fairseq through ``--system-site-packages`` gets none: other
environments would see it too); ``MACARON_NO_USER_DIR_LINK=1`` makes none. One line on stdout says what was
done; a link that cannot be made is one line on stderr naming the path and the workaround, exit 2.
"""

from __future__ import annotations

import csv
import os
import sys
from importlib.metadata import PackageNotFoundError, distribution
from importlib.util import find_spec
from pathlib import Path

PACKAGE = "macaron_fairseq"
DISTRIBUTION = "macaron-fairseq"


class LinkError(Exception):
    """The link cannot be made (the message is the one line shown)."""


def fairseq_lookup_path() -> Path:
    """Where fairseq looks for ``--user-dir macaron_fairseq`` last: ``<fairseq package>/../macaron_fairseq``
    (as fairseq computes it: the ``..`` is resolved by the file system, after any link of fairseq's own)."""
    spec = find_spec("fairseq")
    if spec is None or spec.origin is None:
        raise LinkError("fairseq is not installed in this environment (scripts/install.sh installs it)")
    return Path(os.path.realpath(Path(spec.origin).parent.parent)) / PACKAGE


def checkout_package() -> Path:
    """The installed package's folder, as an import from elsewhere finds it (the editable install's)."""
    spec = find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise LinkError(f"{PACKAGE} is not installed in this environment (pip install -e . first)")
    return Path(os.path.realpath(Path(spec.origin).parent))


def record_link(link: Path) -> None:
    """Add the link to the editable install's ``RECORD`` (paths relative to the dist-info's parent)."""
    try:
        dist = distribution(DISTRIBUTION)
    except PackageNotFoundError:
        return
    info = getattr(dist, "_path", None)  # the dist-info folder (importlib.metadata.PathDistribution)
    if info is None or not inside_this_environment(Path(os.path.realpath(info))):
        return  # another environment's install (seen through --system-site-packages): not ours to edit
    record, entry = Path(info) / "RECORD", os.path.relpath(link, Path(info).parent)
    rows = list(csv.reader(record.read_text().splitlines())) if record.exists() else []
    if any(row and row[0] == entry for row in rows):
        return
    with open(record, "a", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow([entry, "", ""])


def inside_this_environment(path: Path) -> bool:
    """Whether ``path`` lies in this interpreter's own environment (``sys.prefix``), not in a base
    installation a virtualenv merely sees (``--system-site-packages``), which other environments share."""
    prefix = Path(os.path.realpath(sys.prefix))
    return prefix == path or prefix in path.parents


def ensure_link(package: Path | None = None) -> str:
    """Create or check the link to ``package`` (default: the installed package, as an import finds it);
    the returned line says which. ``scripts/install.sh`` names its checkout's package: in a virtualenv that
    sees another environment's link (``--system-site-packages``), an import would find that one."""
    link = fairseq_lookup_path()
    target = Path(os.path.realpath(package)) if package is not None else checkout_package()
    if os.environ.get("MACARON_NO_USER_DIR_LINK"):
        return f"MACARON_NO_USER_DIR_LINK is set: no link; use --user-dir {target}"
    if not inside_this_environment(link.parent):
        raise LinkError(
            f"fairseq is installed outside this environment ({link.parent}, shared with others): no link is "
            f"made there; give fairseq the path, --user-dir {target}, or install fairseq into this "
            "environment (scripts/install.sh does)"
        )
    if link.is_symlink() and not link.exists():
        link.unlink()  # a link to a checkout that has moved
    if link.exists():
        if os.path.samefile(link, target):
            if link.is_symlink():
                record_link(link)
            return f"--user-dir {PACKAGE} resolves from any directory ({link} is {target})"
        raise LinkError(
            f"{link} exists and is not {target} (another install of {PACKAGE}?): remove it, or give "
            f"fairseq the path, --user-dir {target}"
        )
    try:
        link.symlink_to(target, target_is_directory=True)
    except OSError as err:
        raise LinkError(
            f"cannot link {link} -> {target} ({err.strerror}): fairseq finds --user-dir {PACKAGE} only "
            f"there; give it the path instead, --user-dir {target}"
        ) from None
    record_link(link)
    return f"linked {link} -> {target}: --user-dir {PACKAGE} resolves from any directory"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        print(ensure_link(Path(args[0]) if args else None))
    except LinkError as err:
        print(f"user_dir_link: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
