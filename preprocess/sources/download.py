"""Downloading corpus archives: mirrors tried in order, progress bar, temp file + integrity check + rename.

An archive only appears under its final name after it was downloaded completely (the size matches
``Content-Length`` when the server sends one) and read end to end as a tar archive, so a file that is
present can be trusted by later runs. A failure to write the download (disk full, ...) ends the download at
once with an error naming the file: another mirror would not help.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from tqdm import tqdm

from macaron_workflow.atomic import atomic_output
from macaron_workflow.errors import OutputError, UserError
from macaron_workflow.files import OutputFile

_BLOCK = 1 << 20


def fetch(url: str, target: Path, timeout: float = 60) -> None:
    """Stream ``url`` into ``target`` with a progress bar; checks the announced length."""
    request = urllib.request.Request(url, headers={"User-Agent": "macaron-fairseq-preprocess"})
    with urllib.request.urlopen(request, timeout=timeout) as response, OutputFile(target) as out:
        length = response.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        with tqdm(
            total=expected,
            desc=f"download {target.name.split('.tmp-')[0].lstrip('.')}",
            unit="B",
            unit_scale=True,
            file=sys.stderr,
        ) as progress:
            while block := response.read(_BLOCK):
                out.write(block)
                progress.update(len(block))
    size = target.stat().st_size
    if expected is not None and size != expected:
        raise OSError(f"incomplete download: got {size} of {expected} bytes")


def download_archive(urls: Sequence[str], destination: Path, verify: Callable[[Path], object]) -> Path:
    """Download the first URL that works into ``destination`` and return it.

    ``verify(temp_file)`` must raise (OSError or UserError) if the download is unusable.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in urls:
        print(f"downloading {url}", file=sys.stderr, flush=True)
        try:
            with atomic_output(destination) as temp:
                fetch(url, temp)
                verify(temp)
            return destination
        except OutputError:
            raise
        except (OSError, urllib.error.URLError, UserError) as exc:
            errors.append(f"{url}: {exc}")
    raise UserError(
        f"could not download {destination.name}:\n  "
        + "\n  ".join(errors)
        + "\ndownload it yourself and pass its folder with --raw-dir"
    )
