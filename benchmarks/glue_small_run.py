"""``SMALL=1 bash pipelines/glue.sh`` in a fresh work directory: the table it prints and its wall time.

    python -m benchmarks.glue_small_run [--workdir DIR] [--keep]

Records the results table the pipeline printed (``WORKDIR/glue/results.md``), its ``results.json`` summary
and the wall time of the whole command (tiny pre-training, generated GLUE, preprocessing, the reduced grid,
selection, submission) into ``docs/results/glue_small.json``; ``docs/reports/glue_small.md`` shows it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.results_file import RESULTS_DIR, machine_info, write_results

REPO = Path(__file__).resolve().parents[1]


def run_small(workdir: Path) -> dict[str, Any]:
    env = dict(os.environ, SMALL="1", SKIP_INSTALL="1", WORKDIR=str(workdir), PYTHONWARNINGS="ignore")
    started = time.monotonic()
    proc = subprocess.run(["bash", "pipelines/glue.sh"], cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(
            f"pipelines/glue.sh failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    glue = workdir / "glue"
    summary = json.loads((glue / "results.json").read_text(encoding="utf-8"))
    return {
        "command": "SMALL=1 bash pipelines/glue.sh",
        "seconds": round(seconds, 1),
        "table": (glue / "results.md").read_text(encoding="utf-8"),
        "glue_average_mean": summary["glue_average_mean"],
        "grid": summary["grid"],
        "runs": sum(1 for _ in (glue / "runs").glob("*/*/*/run.json")),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workdir", type=Path, help="default: a temporary directory, removed afterwards")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "glue_small.json")
    args = parser.parse_args(argv)
    machine = machine_info()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="glue_small_"))
    try:
        results = run_small(workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    write_results(args.out, results, machine)
    print(results["table"])


if __name__ == "__main__":
    main()
