"""The row file of every benchmark grid (the DT-Fixup grids, the real-text grids): ``OUT_DIR/results.jsonl``,
one JSON row per run, appended as each run ends, and ``OUT_DIR/protocol.json``, the protocol the out-dir's
rows were measured with. A rerun of a grid reads the rows and does only the runs without a finished one."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from macaron_workflow.atomic import write_text_atomically

Row = dict[str, Any]


def read_rows(path: Path) -> list[Row]:
    """The rows of a results.jsonl; a line that is not JSON (a run killed while writing) is skipped with a
    warning naming it, so that run is done again."""
    rows = []
    if not path.exists():
        return rows
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            print(f"warning: {path}:{number}: not a JSON row, ignored (its run is redone)", file=sys.stderr)
    return rows


def append_row(path: Path, row: Row) -> None:
    """Append one row in one write, on a line of its own (also after a line a kill cut short, which
    :func:`read_rows` skips)."""
    cut_short = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    with path.open("a", encoding="utf-8") as f:
        f.write(("\n" if cut_short else "") + json.dumps(row) + "\n")


def claim_out_dir(out_dir: Path, protocol: Any) -> None:
    """Record the protocol (a dataclass) in ``out_dir/protocol.json``; refuse an out-dir holding runs of
    another protocol (its rows would be mixed with this protocol's)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "protocol.json"
    wanted = json.loads(json.dumps(asdict(protocol)))
    if path.exists() and json.loads(path.read_text()) != wanted:
        raise SystemExit(f"{path}: this out-dir holds runs of another protocol; use a new --out-dir")
    write_text_atomically(path, json.dumps(wanted, indent=2) + "\n")
