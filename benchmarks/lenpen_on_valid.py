"""The real-text grid's second row: test BLEU with a length penalty chosen on the validation set, per arm.

    python -m benchmarks.lenpen_on_valid --out-dir runs/macaron_real_translation_authors \\
        --results docs/results/macaron_real_translation_authors.json \\
        --write docs/results/macaron_real_translation_authors_lenpen.json

For every finished run of a grid (:mod:`benchmarks.macaron_real_translation`; its final checkpoint
``checkpoint_last.pt`` stays in the run's save dir), the validation set is translated with beam search at
each length penalty of ``--grid`` (the same grid for both arms; default 0.6 0.8 1.0 1.2 1.4) and scored with
sacreBLEU against the raw validation references. Each arm gets the penalty with the highest validation BLEU
averaged over its seeds (a tie: the one nearest 1.0, fairseq's default); the test set is then translated
once per run with that penalty. Nothing of the test set is seen before the choice. Each decode is kept in
``RUN/lenpen/`` (a rerun skips what is there); the results file is rewritten at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

from benchmarks import macaron_real_translation as mrt
from benchmarks.results_file import REPO, machine_info, read_results, write_results
from macaron_workflow.atomic import write_text_atomically

GRID = (0.6, 0.8, 1.0, 1.2, 1.4)


def decode_and_score(out: Path, row: dict, p: mrt.TranslationProtocol, split: str, lenpen: float) -> dict:
    """sacreBLEU (and the length) of one run's ``split`` translated with ``lenpen``; cached in the run."""
    from macaron_tools.score_bleu import score_file

    key = mrt.RunKey(row["arm"], row["seed"])
    run_dir = out / "runs" / key.name
    cache = run_dir / "lenpen" / f"{split}-{lenpen}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    data_bin = mrt.data_bin_in(out)
    argv = mrt.generate_argv(data_bin, run_dir / "checkpoints" / "checkpoint_last.pt", p, split, lenpen)
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} ... failed for {key.name}: {proc.stderr[-800:]}")
    generated = run_dir / "lenpen" / f"generate-{split}-{lenpen}.txt"
    write_text_atomically(generated, proc.stdout)
    pre = out / "pre"  # raw/ (next to the data-bin, or above the old layout's pre/data-bin)
    scores, _ = score_file(str(generated), pre / "raw" / f"{split}.{p.lang}", None, p.lang, ("sacrebleu",))
    record = scores["scores"]["sacrebleu"]
    result = {"bleu": record["score"], **mrt.length_fields(record, split)}
    write_text_atomically(cache, json.dumps(result) + "\n")
    return result


def choose(valid: dict[str, dict[float, list[float]]]) -> dict[str, float]:
    """arm -> the penalty with the best mean validation BLEU over its seeds (tie: nearest 1.0)."""
    return {
        arm: max(by_lenpen, key=lambda lp: (statistics.mean(by_lenpen[lp]), -abs(lp - 1.0)))
        for arm, by_lenpen in valid.items()
    }


def select(out: Path, results: dict, grid: tuple[float, ...]) -> dict[str, Any]:
    """The selection and the test rows of every finished run of a grid's results."""
    r = results["results"]
    protocol = r["protocol"]
    fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in protocol.items()}
    p = mrt.TranslationProtocol(**fields)
    rows = [row for row in r["rows"] if mrt.finished(row)]
    valid: dict[str, dict[float, list[float]]] = {}
    valid_rows = []
    for row in rows:
        for lenpen in grid:
            scored = decode_and_score(out, row, p, "valid", lenpen)
            valid.setdefault(row["arm"], {}).setdefault(lenpen, []).append(scored["bleu"])
            valid_rows.append({"arm": row["arm"], "seed": row["seed"], "lenpen": lenpen, **scored})
            print(f"{row['arm']}-s{row['seed']} valid lenpen {lenpen}: BLEU {scored['bleu']}", flush=True)
    chosen = choose(valid)
    test_rows = []
    for row in rows:
        lenpen = chosen[row["arm"]]
        scored = decode_and_score(out, row, p, "test", lenpen)
        test_rows.append({"arm": row["arm"], "seed": row["seed"], "lenpen": lenpen, **scored})
        print(f"{row['arm']}-s{row['seed']} test lenpen {lenpen}: BLEU {scored['bleu']}", flush=True)
    return {
        "grid": list(grid),
        "chosen": chosen,
        "valid": valid_rows,
        "test": test_rows,
        "runs": len(rows),
        "planned_runs": len(r["seeds"]) * len(r["arms"]),
        "grid_commit": results.get("commit"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, required=True, help="the grid's --out-dir")
    ap.add_argument("--results", type=Path, required=True, help="the grid's results file")
    ap.add_argument("--write", type=Path, required=True, help="this selection's results file")
    ap.add_argument("--grid", type=float, nargs="+", default=list(GRID))
    a = ap.parse_args()
    results = read_results(a.results)
    machine = machine_info()
    selection = select(a.out_dir, results, tuple(a.grid))
    write_results(a.write, selection, machine)
    print(f"chosen on valid: {selection['chosen']}")


if __name__ == "__main__":
    from macaron_workflow.cli import run_cli

    run_cli(main, "python -m benchmarks.lenpen_on_valid")
