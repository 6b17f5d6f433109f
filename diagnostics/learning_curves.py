"""Learning curves and final-quarter figures of a policy over seeds, from stored run rows.

A run row keeps each arrival's regret and floor (``per_user``), so the excess regret of
arrival n is regret_n - floor_n. The learning curve of one seed is its centred moving mean
over `window` arrivals (arrivals n - window//2 .. n + window//2, only where the window fits);
the curve plotted is the mean over seeds with a 95% band (a t-interval across seeds).
The final quarter is the summed excess regret of the last quarter of arrivals, per seed.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diagnostics.stats import mean_se, paired_gain, t_quantile
from tdmodels.errors import InputError
from tdmodels.run_inputs import checked_count

WINDOW = 25


class Curve(NamedTuple):
    """Excess regret per user against arrival: centred moving means, averaged over seeds, with a 95% band."""
    arrival: np.ndarray   # [M] arrival index at the centre of each window
    mean: np.ndarray      # [M] mean over seeds of the centred moving mean of excess regret per user
    lo: np.ndarray        # [M] 95% band
    hi: np.ndarray
    n_seeds: int


def per_user_excess(row: dict) -> np.ndarray:
    """Excess regret [N] of each arrival of a run row."""
    pu = row["per_user"]
    return np.asarray(pu["regret"], dtype=float) - np.asarray(pu["floor"], dtype=float)


def moving_mean(x: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Centred moving mean over `window` entries, where the window fits: [len(x) - window + 1]."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or not len(x):
        raise InputError(f"a moving mean needs a non-empty 1-d series, got shape {x.shape}")
    checked_count(window, "window (entries averaged per point)", 1, len(x))
    c = np.concatenate([[0.0], np.cumsum(x)])
    return (c[window:] - c[:-window]) / window


def learning_curve(rows: list[dict], window: int = WINDOW) -> Curve:
    """The curve of one policy on one roster over the seeds of `rows` (all full runs of equal length)."""
    if not rows:
        raise InputError("no run rows to draw a learning curve from")
    checked_count(window, "window (arrivals averaged per point)", 1, 10**9)
    lengths = {len(r["per_user"]["regret"]) for r in rows}
    if len(lengths) != 1:
        raise InputError(f"runs of different lengths {sorted(lengths)}: compare runs over the same arrivals")
    N = lengths.pop()
    w = min(window, N)
    curves = np.stack([moving_mean(per_user_excess(r), w) for r in rows])
    mean = curves.mean(0)
    half = (t_quantile(len(rows)) * curves.std(0, ddof=1) / np.sqrt(len(rows)) if len(rows) > 1
            else np.zeros_like(mean))
    return Curve(np.arange(len(mean)) + (w - 1) / 2, mean, mean - half, mean + half, len(rows))


def final_quarter(rows: list[dict]) -> np.ndarray:
    """Summed excess regret of the last quarter of arrivals, one entry per row (seed)."""
    out = []
    for r in rows:
        ex = per_user_excess(r)
        if len(ex) < 4:
            raise InputError(f"a run of {len(ex)} arrival(s) has no final quarter (it needs 4 arrivals or more)")
        out.append(ex[len(ex) - len(ex) // 4:].sum())
    return np.asarray(out)


def final_quarter_table(by_policy: dict[str, list[dict]], against: str | None = None) -> list[dict]:
    """Per policy: mean +- s.e. of the final quarter's excess over seeds and, with `against`, the paired
    gain (relative reduction of the final quarter's excess) on the seeds both share."""
    lines = []
    base = {int(r["seed"]): r for r in by_policy.get(against, [])} if against else {}
    for name, rows in sorted(by_policy.items()):
        fq = final_quarter(rows)
        line = {"name": name, "n": len(rows), "final_quarter": mean_se(fq)}
        if base and name != against:
            common = sorted(set(base) & {int(r["seed"]) for r in rows})
            if len(common) >= 2:
                mine = {int(r["seed"]): r for r in rows}
                theirs = final_quarter([base[s] for s in common])
                if theirs.mean() > 0:        # else no relative reduction is defined
                    line["gain"] = paired_gain(final_quarter([mine[s] for s in common]), theirs)
        lines.append(line)
    return lines


def plot_learning_curves(curves: dict[str, Curve], title: str, path, published: dict | None = None) -> None:
    """One PNG: each policy's curve with its 95% band; with `published` ({policy: a curve with mean, lo and hi
    by arrival, ``diagnostics.published_curves.PublishedCurve``}) the reference's curve of that policy dashed
    in the same colour, with its band."""
    from diagnostics.figures import new_figure

    fig, ax = new_figure(figsize=(8, 4.5))
    for name, c in sorted(curves.items(), key=lambda kv: -kv[1].mean[-1]):
        line, = ax.plot(c.arrival, c.mean, lw=1.4, label=f"{name} ({c.n_seeds} seeds)")
        ax.fill_between(c.arrival, c.lo, c.hi, color=line.get_color(), alpha=0.18, lw=0)
        p = (published or {}).get(name)
        if p is not None:
            x = np.arange(len(p.mean))
            ax.plot(x, p.mean, lw=1.1, ls="--", color=line.get_color(), label=f"{name}, published ({p.seeds} seeds)")
            ax.fill_between(x, p.lo, p.hi, color=line.get_color(), alpha=0.08, lw=0)
    ax.set(xlabel="arrival", ylabel="excess regret per user (centred 25-arrival mean)", title=title)
    ax.legend(fontsize=7, ncol=2)
    from tdmodels.atomic_file import atomic_save

    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=100, bbox_inches="tight", format="png"))
