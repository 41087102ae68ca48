"""The docs blocks of ``docs/results/macaron_real_translation*.json``
(:mod:`benchmarks.macaron_real_translation`): per arm and per seed, test BLEU and validation loss, the
validation loss per epoch, the protocol."""

from __future__ import annotations

import statistics

from benchmarks.macaron_real_translation import ARMS, archs_of, finished
from benchmarks.reports import real_text
from benchmarks.reports.real_text import mean_std


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
        "| model | parameters | seeds | test sacreBLEU | valid loss (end, bits) | valid nll (end, bits) "
        "| training words/s (wall clock) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for arm, arch in archs_of(r["protocol"]).items():
        mine = [row for row in rows if row["arm"] == arm]
        wps = [row["train_wps_last_epoch"] for row in mine if row.get("train_wps_last_epoch")]
        wps_cell = f"{statistics.mean(wps):.0f}" if wps else "—"
        lines.append(
            f"| {arm} (`{arch}`) | {r['parameters'][arm]:,} | {len(mine)} | "
            f"{mean_std([row['test_bleu'] for row in mine])} | {mean_std([final_valid(x) for x in mine])} | "
            f"{mean_std([x['valid_curve'][-1][3] for x in mine])} | {wps_cell} |"
        )
    return "\n".join(lines)


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
        db, dl, dn = (
            m["test_bleu"] - t["test_bleu"],
            final_valid(m) - final_valid(t),
            final_nll(m) - final_nll(t),
        )
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
    for row in rows:
        for epoch, _update, loss, _nll in epoch_ends(row["valid_curve"]):
            per[row["arm"]].setdefault(epoch, []).append(loss)
    epochs = sorted({e for arm in per.values() for e in arm})
    updates = {}
    for row in rows:
        for epoch, update, _loss, _nll in epoch_ends(row["valid_curve"]):
            updates.setdefault(epoch, update)
    lines = ["| epoch | updates | Transformer | Macaron |", "|---:|---:|---:|---:|"]
    for e in epochs:
        cells = [mean_std(per[arm].get(e, [])) for arm in ARMS]
        lines.append(f"| {e} | {updates[e]} | {' | '.join(cells)} |")
    return "\n".join(lines)


def protocol_line(r: dict) -> str:
    p, c = r["protocol"], r["corpus"]
    return (
        f"Data: {c['catalogs']} German gettext catalogs of this machine's programs; test = the messages of "
        f"{', '.join(c['test_packages'])} ({r['kept']['test']} pairs), validation = "
        f"{', '.join(c['valid_packages'])} ({r['kept']['valid']}), training = every other package "
        f"({c['pairs']['train']} pairs, {r['kept']['train']} after preprocess.custom's cleaning); joint "
        f"sentencepiece BPE {p['bpe_vocab_size']}. "
        f"Models: d = {p['dim']}, {p['heads']} heads, {p['layers']} + {p['layers']} layers, FFN {p['ffn']} "
        f"(Macaron: 2 × {p['ffn'] // 2}), shared embeddings, dropout {p['dropout']}, {norms_line(p)}; "
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
    """The plot's file name under docs/ (one per configuration)."""
    config = r["protocol"].get("config", "post-ln")
    return "macaron_real_translation.png" if config == "post-ln" else f"macaron_real_translation_{config}.png"


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
