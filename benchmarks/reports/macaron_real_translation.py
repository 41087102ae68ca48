"""The docs blocks of ``docs/results/macaron_real_translation*.json``
(:mod:`benchmarks.macaron_real_translation`): per arm and per seed, test BLEU, validation loss and the
output's length (system/reference length and the brevity penalty, where the run recorded them), the
validation loss per epoch, the protocol; and (:func:`render_paired`) the authors' configuration with their
initialisation beside the same grid with fairseq 0.12's, paired per seed, with the test BLEU at a length
penalty chosen on the validation set (:mod:`benchmarks.lenpen_on_valid`)."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.macaron_real_translation import ARMS, archs_of, finished
from benchmarks.reports import real_text
from benchmarks.reports.real_text import mean_std
from benchmarks.results_file import RESULTS_DIR, provenance, read_results

#: the authors' configuration run with fairseq 0.12's initialisation (before their archs had theirs)
PREVIOUS = "macaron_real_translation_authors_fairseq_init.json"
#: the length-penalty selection on valid of the authors' grid
LENPEN = "macaron_real_translation_authors_lenpen.json"


def epoch_ends(curve: list[list[float]]) -> list[list[float]]:
    """The last validation point of each epoch: the epoch-end one (the last epoch ends at the last
    update)."""
    last: dict[int, list[float]] = {}
    for point in curve:
        last[int(point[0])] = point
    return [last[e] for e in sorted(last)]


def final_valid(row: dict) -> float:
    return row["valid_curve"][-1][2]


def summary_table(r: dict) -> str:
    """Per arm: parameters, test BLEU, final validation loss/nll, training speed (mean ± std over seeds;
    the speed is fairseq's words/s of the last epoch, wall clock on a shared machine)."""
    rows = [row for row in r["rows"] if finished(row)]
    lines = [
        "| model | initialisation | parameters | seeds | test sacreBLEU | length ratio (BP) "
        "| valid loss (end, bits) | valid nll (end, bits) | training words/s (wall clock) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arm, arch in archs_of(r["protocol"]).items():
        mine = [row for row in rows if row["arm"] == arm]
        wps = [row["train_wps_last_epoch"] for row in mine if row.get("train_wps_last_epoch")]
        wps_cell = f"{statistics.mean(wps):.0f}" if wps else "—"
        lines.append(
            f"| {arm} (`{arch}`) | {initialisation(r, arm)} | {r['parameters'][arm]:,} | {len(mine)} | "
            f"{mean_std([row['test_bleu'] for row in mine])} | {length_cell(mine)} | "
            f"{mean_std([final_valid(x) for x in mine])} | "
            f"{mean_std([x['valid_curve'][-1][3] for x in mine])} | {wps_cell} |"
        )
    return "\n".join(lines)


def initialisation(r: dict, arm: str) -> str:
    """The arm's initialisation as the results recorded it; results from before it was recorded ran with
    fairseq 0.12's for every arch."""
    return r.get("initialisation", {}).get(arm, "fairseq 0.12")


def length_cell(rows: list[dict]) -> str:
    """Mean test length ratio (sys/ref) and BP over the rows, or "not recorded" (runs before the length
    was recorded)."""
    recorded = [row for row in rows if "test_length_ratio" in row]
    if not recorded or len(recorded) < len(rows):
        return "not recorded"
    ratio = mean_std([row["test_length_ratio"] for row in recorded], 3)
    return f"{ratio} ({mean_std([row['test_bp'] for row in recorded], 3)})"


#: the paired validation nll is the mean over a run's last validations (both arms validate at the same
#: updates: same data, batches and schedule), less noisy than the last point alone
LAST_VALIDATIONS = 3


def final_nll(row: dict) -> float:
    """The mean validation nll (bits) of a run's last :data:`LAST_VALIDATIONS` validations."""
    points = row["valid_curve"][-LAST_VALIDATIONS:]
    return statistics.mean(point[3] for point in points)


def per_seed_table(r: dict) -> str:
    """Per seed: each arm's test BLEU, final validation loss (label-smoothed, last checkpoint) and
    validation nll (mean of the last validations), and Macaron − Transformer of each."""
    by = {(row["arm"], row["seed"]): row for row in r["rows"] if finished(row)}
    seeds = sorted({seed for _, seed in by})
    lines = [
        "| seed | BLEU Transformer | BLEU Macaron | Δ BLEU | valid loss Transformer | valid loss Macaron "
        f"| Δ valid loss | Δ valid nll (mean of last {LAST_VALIDATIONS}) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    deltas: dict[str, list[float]] = {"bleu": [], "loss": [], "nll": []}
    for seed in seeds:
        t, m = by.get(("transformer", seed)), by.get(("macaron", seed))
        if t is None or m is None:
            continue
        db, dl = m["test_bleu"] - t["test_bleu"], final_valid(m) - final_valid(t)
        dn = final_nll(m) - final_nll(t)
        for key, value in (("bleu", db), ("loss", dl), ("nll", dn)):
            deltas[key].append(value)
        lines.append(
            f"| {seed} | {t['test_bleu']:.2f} | {m['test_bleu']:.2f} | {db:+.2f} | "
            f"{final_valid(t):.3f} | {final_valid(m):.3f} | {dl:+.3f} | {dn:+.3f} |"
        )
    if len(deltas["bleu"]) > 1:
        spread = {k: f"{statistics.mean(v):+.3f} ± {statistics.stdev(v):.3f}" for k, v in deltas.items()}
        lines.append(
            f"| mean ± std | | | {mean_std(deltas['bleu'])} | | | {spread['loss']} | {spread['nll']} |"
        )
    return "\n".join(lines)


def epoch_table(r: dict) -> str:
    """Validation loss at every epoch end, mean ± std over seeds, per arm."""
    rows = [row for row in r["rows"] if finished(row)]
    per: dict[str, dict[int, list[float]]] = {arm: {} for arm in ARMS}
    updates = {}
    for row in rows:
        for epoch, update, loss, _nll in epoch_ends(row["valid_curve"]):
            per[row["arm"]].setdefault(epoch, []).append(loss)
            updates.setdefault(epoch, update)
    epochs = sorted({e for arm in per.values() for e in arm})
    lines = ["| epoch | updates | Transformer | Macaron |", "|---:|---:|---:|---:|"]
    for e in epochs:
        cells = [mean_std(per[arm].get(e, [])) for arm in ARMS]
        lines.append(f"| {e} | {updates[e]} | {' | '.join(cells)} |")
    return "\n".join(lines)


def protocol_line(r: dict) -> str:
    p, c = r["protocol"], r["corpus"]
    inits = sorted({initialisation(r, arm) for arm in archs_of(p)})
    return (
        f"Data: {c['catalogs']} German gettext catalogs of this machine's programs; test = the messages of "
        f"{', '.join(c['test_packages'])} ({r['kept']['test']} pairs), validation = "
        f"{', '.join(c['valid_packages'])} ({r['kept']['valid']}), training = every other package "
        f"({c['pairs']['train']} pairs, {r['kept']['train']} after preprocess.custom's cleaning); joint "
        f"sentencepiece BPE {p['bpe_vocab_size']}. "
        f"Models: d = {p['dim']}, {p['heads']} heads, {p['layers']} + {p['layers']} layers, FFN {p['ffn']} "
        f"(Macaron: 2 × {p['ffn'] // 2}), shared embeddings, dropout {p['dropout']}, {norms_line(p)}, "
        f"initialisation: {' / '.join(inits)}; "
        f"parameters differ by "
        f"{100 * r['parity']:+.3f} %. Training: Adam (0.9, 0.98), η = {p['lr']:g}, inverse-sqrt with "
        f"{p['warmup']} warm-up updates, label smoothing 0.1, {p['max_tokens']} tokens per batch, "
        f"{p['updates']} updates, validation every {p['eval_every']} updates and at every epoch end; test: "
        f"beam {p['beam']}, last checkpoint, sacreBLEU (13a, detokenized)."
    )


def norms_line(p: dict) -> str:
    """Where the LayerNorms are and the other dropouts, as the configuration's architectures set them."""
    if p.get("config", "post-ln") == "authors":
        return "pre-LN with a final LayerNorm per stack, attention and ReLU dropout 0.1 (the authors' *_v2)"
    return "post-LN, attention and ReLU dropout 0 (fairseq's defaults)"


def status_line(r: dict, image: str) -> str:
    """How many of the planned runs have finished, and the plot once there is one."""
    return real_text.status_line(r, ARMS, finished, f"![validation loss of every run over updates]({image})")


def plot_name(r: dict) -> str:
    """The plot's path from the checkout root, in docs/ (one per configuration)."""
    config = r["protocol"].get("config", "post-ln")
    if config == "authors" and "initialisation" not in r:  # the grid run before their initialisation
        return "docs/macaron_real_translation_authors_fairseq_init.png"
    suffix = "" if config == "post-ln" else f"_{config}"
    return f"docs/macaron_real_translation{suffix}.png"


def render(payload: dict) -> str:
    """The docs block: summary, per-seed differences, validation loss per epoch, protocol, provenance."""
    r = payload["results"]
    sections = [
        ("Mean ± std over seeds", summary_table(r)),
        (
            "Per seed (Macaron − Transformer; valid loss: label-smoothed, last checkpoint; valid nll: mean "
            f"of the last {LAST_VALIDATIONS} validations; bits)",
            per_seed_table(r),
        ),
        ("Validation loss (label-smoothed, bits) at each epoch end, mean ± std over seeds", epoch_table(r)),
    ]
    return real_text.report(payload, status_line(r, plot_name(r)), sections, protocol_line(r))


# --------------------------------------------------------------- the authors' grid, paired with the previous


def paired_table(new: dict, old: dict) -> str:
    """Per seed that finished in both grids: BLEU, validation nll (mean of the last validations) and test
    length ratio of each arm, with the authors' initialisation (new) and fairseq 0.12's (old)."""
    by_new = {(row["arm"], row["seed"]): row for row in new["rows"] if finished(row)}
    by_old = {(row["arm"], row["seed"]): row for row in old["rows"] if finished(row)}
    seeds = sorted({s for _, s in by_new} & {s for _, s in by_old})
    lines = [
        "| seed | arm | BLEU (0.12 init → theirs) | valid nll (0.12 init → theirs) "
        "| length ratio (0.12 init → theirs) | Macaron − Transformer BLEU (0.12 → theirs) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for seed in seeds:
        if not all((arm, seed) in by_new and (arm, seed) in by_old for arm in ARMS):
            continue
        delta = {
            name: grid[("macaron", seed)]["test_bleu"] - grid[("transformer", seed)]["test_bleu"]
            for name, grid in (("old", by_old), ("new", by_new))
        }
        for arm in ARMS:
            o, n = by_old[(arm, seed)], by_new[(arm, seed)]
            ratio_old = f"{o['test_length_ratio']:.3f}" if "test_length_ratio" in o else "not recorded"
            ratio_new = f"{n['test_length_ratio']:.3f}" if "test_length_ratio" in n else "not recorded"
            d = f"{delta['old']:+.2f} → {delta['new']:+.2f}" if arm == "macaron" else ""
            lines.append(
                f"| {seed} | {arm} | {o['test_bleu']:.2f} → {n['test_bleu']:.2f} | "
                f"{final_nll(o):.3f} → {final_nll(n):.3f} | {ratio_old} → {ratio_new} | {d} |"
            )
    if len(lines) == 2:
        return "No seed has finished in both grids yet."
    return "\n".join(lines)


def lenpen_table(selection: dict) -> str:
    """Per arm: the length penalty chosen on valid, and per seed the test BLEU and length ratio with it."""
    s = selection["results"]
    lines = [
        f"Length penalty chosen per arm on the validation set from {s['grid']} (the same grid for both; the "
        "best mean validation sacreBLEU over the arm's seeds), then the test set translated once with it "
        f"({s['runs']} of {s['planned_runs']} runs):",
        "",
        "| arm | chosen lenpen | seed | test sacreBLEU | length ratio (BP) |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in sorted(s["test"], key=lambda x: (x["arm"] != "transformer", x["seed"])):
        lines.append(
            f"| {row['arm']} | {s['chosen'][row['arm']]} | {row['seed']} | {row['bleu']:.2f} | "
            f"{row['test_length_ratio']:.3f} ({row['test_bp']:.3f}) |"
        )
    return "\n".join(lines) + "\n\nLength penalty selection measured by " + provenance(selection) + "."


def render_paired(payload: dict, results_dir: Path | None = None) -> str:
    """The authors' configuration with their initialisation (``payload``) beside the previous grid with
    fairseq 0.12's, paired per seed; then the length-penalty row when it has been measured."""
    directory = results_dir or RESULTS_DIR
    new, old = payload["results"], read_results(directory / PREVIOUS)["results"]
    planned = len(new["seeds"]) * len(new["arms"])
    done = sum(finished(row) for row in new["rows"])
    status = f"With the authors' initialisation: {done} of {planned} runs finished" + (
        " — PARTIAL: the rerun is still going, nothing below is final." if done < planned else "."
    )
    text = status + "\n\n" + paired_table(new, old)
    lenpen = directory / LENPEN
    if lenpen.exists():
        text += "\n\n" + lenpen_table(read_results(lenpen))
    else:
        command = "python -m benchmarks.lenpen_on_valid"
        text += f"\n\nLength penalty chosen on valid: not measured yet (`{command}`)."
    return text
